"""``providers:`` kept as data, each with its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from coalmine.errors import ConfigError
from coalmine.promptfoo.matrix import load_matrix
from coalmine.promptfoo.matrix.provider_refs import ProviderRef, provider_matches

FIXTURES = Path(__file__).parent / "fixtures" / "matrix"


def test_every_provider_form() -> None:
    folder = FIXTURES / "provider_forms"
    matrix = load_matrix(folder / "promptfooconfig.yaml", environ={"OPENAI_KEY": "sk-test"})

    got = [
        (p.index, p.id, p.label, p.implementation, p.path.name, p.line) for p in matrix.providers
    ]

    assert got == [
        (0, "echo", None, "echo", "promptfooconfig.yaml", 3),
        (1, "openai:gpt-4o-mini", None, "openai:gpt-4o-mini", "promptfooconfig.yaml", 4),
        (2, "openai:chat:gpt-4o-mini", None, "openai:chat:gpt-4o-mini", "promptfooconfig.yaml", 5),
        (
            3,
            "anthropic:messages:claude-sonnet-4-20250514",
            None,
            "anthropic:messages:claude-sonnet-4-20250514",
            "promptfooconfig.yaml",
            6,
        ),
        (4, "exec:python agent.py", None, "exec:python agent.py", "promptfooconfig.yaml", 7),
        (5, "file://provider.py", None, "file://provider.py", "promptfooconfig.yaml", 8),
        (6, "python:provider.py", None, "python:provider.py", "promptfooconfig.yaml", 9),
        (7, "openai:gpt-4o", "Careful", "openai:gpt-4o", "promptfooconfig.yaml", 10),
        (
            8,
            "haiku",
            None,
            "anthropic:messages:claude-3-5-haiku-latest",
            "promptfooconfig.yaml",
            17,
        ),
        (9, "echo", "from-file", "echo", "more-providers.yaml", 1),
        (10, "http://localhost:8080/chat", "Local HTTP", "http://localhost:8080/chat",
         "more-providers.yaml", 4),
    ]  # fmt: skip
    careful = matrix.providers[7]
    assert careful.config == {"temperature": 0, "apiKey": "sk-test"}
    assert (careful.transform, careful.delay, careful.key) == ("output.trim()", 50, "Careful")
    assert matrix.providers[8].config == {"max_tokens": 100}
    assert matrix.providers[9].prompts == ("Hi*",)
    assert matrix.warnings == (
        f"{folder / 'more-providers.yaml'}:6: key 'unknownKey' of provider "
        "'http://localhost:8080/chat' is not supported: ignored",
    )


def _providers(tmp_path: Path, providers: str) -> Path:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(
        f"prompts: [A, B]\nproviders:\n{providers}\ntests:\n  - vars: {{}}\n", encoding="utf-8"
    )
    return path


def test_a_provider_needs_an_id(tmp_path: Path) -> None:
    path = _providers(tmp_path, "  - label: no id\n  - ''\n  - echo")

    with pytest.raises(ConfigError) as caught:
        load_matrix(path)

    assert [line.split(": ", 1)[0].strip() for line in str(caught.value).splitlines()[1:]] == [
        f"{path}:3",
        f"{path}:4",
    ]
    assert "Invalid provider at index 0" in str(caught.value)


def test_no_provider_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="You must specify at least 1 provider"):
        load_matrix(_providers(tmp_path, "  []"))


def _columns(path: Path) -> list[tuple[str, str]]:
    return [(c.provider.key, c.prompt.label) for c in load_matrix(path).columns]


def test_a_providers_prompts_choose_its_columns(tmp_path: Path) -> None:
    path = _providers(tmp_path, "  - id: echo\n    label: only-b\n    prompts: [B]\n  - echo")

    # the second provider's key is its id, "echo", under which promptfoo stored the first
    # provider's prompts too: it runs only B as well
    assert _columns(path) == [("only-b", "B"), ("echo", "B")]

    later = _providers(tmp_path, "  - id: echo\n    label: only-b\n    prompts: [B]\n  - id: echo")
    # a later provider with the same id stores "every prompt" under it instead
    assert _columns(later) == [("only-b", "B"), ("echo", "A"), ("echo", "B")]


def test_the_map_forms_prompts_are_ignored_when_it_has_a_label(tmp_path: Path) -> None:
    labelled = _providers(tmp_path, "  - echo:\n      label: L\n      prompts: [B]")
    assert _columns(labelled) == [("L", "A"), ("L", "B")]

    plain = _providers(tmp_path, "  - echo:\n      prompts: [B]")
    assert _columns(plain) == [("echo", "B")]


def _ref(provider_id: str, label: str | None = None) -> ProviderRef:
    return ProviderRef(
        id=provider_id, label=label, config=None, transform=None, index=0, path=Path("x"), line=1
    )


@pytest.mark.parametrize(
    ("ref", "provider", "matches"),
    [
        ("Careful", _ref("openai:gpt-4o", "Careful"), True),
        ("openai:gpt-4o", _ref("openai:gpt-4o", "Careful"), True),
        ("openai", _ref("openai:gpt-4o"), True),  # "ref:" prefix
        ("openai:*", _ref("openai:gpt-4o"), True),
        ("Care*", _ref("openai:gpt-4o", "Careful"), True),
        ("openai:gpt", _ref("openai:gpt-4o"), False),
        ("file://./agent.py", _ref("file://agent.py"), True),  # both made absolute
        ("exec:./run.sh", _ref("exec:run.sh"), False),  # no slash in the id: left as it is
        ("anthropic", _ref("openai:gpt-4o"), False),
    ],
)
def test_a_tests_provider_filter_matches_as_promptfoo(
    ref: str, provider: ProviderRef, matches: bool
) -> None:
    assert provider_matches(ref, provider, base_dir=Path("/project")) is matches
