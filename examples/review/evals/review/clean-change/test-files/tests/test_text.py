import pytest

from app.text import slugify


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Hello, World!", "hello-world"),
        ("  Crème brûlée  recipes ", "creme-brulee-recipes"),
        ("2024: a review", "2024-a-review"),
        ("---", ""),
    ],
)
def test_slugify(title: str, slug: str) -> None:
    assert slugify(title) == slug


def test_slugify_cuts_at_a_word_boundary_hyphen() -> None:
    assert slugify("a" * 59 + " b", max_length=60) == "a" * 59
