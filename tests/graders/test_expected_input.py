"""Graders that compare with a value fall back to an eval suite case's ``expected``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

import coalmine.graders.overlap  # noqa: F401 - registers the graders before the builtins list does
import coalmine.graders.structured  # noqa: F401
import coalmine.graders.text  # noqa: F401
from coalmine.errors import GradeError
from coalmine.graders.base import GradeContext, registry, value_or_expected
from coalmine.results import Grade

# Every grader that compares the output with a value (each also has a not- form).
NAMES = [
    "equals", "contains", "icontains", "starts-with", "contains-any", "contains-all",
    "icontains-any", "icontains-all", "levenshtein", "rouge-n", "bleu", "json-path",
]  # fmt: skip
# The config each grader needs besides its value.
BASE: dict[str, dict[str, Any]] = {"json-path": {"path": "a.b"}}


def grade(name: str, config: dict[str, Any], output: str, inputs: Mapping[str, Any]) -> Grade:
    """Validate ``config`` as the loader does, then grade through the registry."""
    item = registry.get(name)
    parsed = item.config.model_validate(config)
    ctx = GradeContext(case_id="c1", prompt="p", inputs=inputs)
    return anyio.run(item.grade, parsed, output, ctx)


def config_error(name: str, config: dict[str, Any], inputs: Mapping[str, Any]) -> GradeError:
    with pytest.raises(GradeError) as caught:
        grade(name, config, "some output", inputs)
    error = caught.value
    assert error.config is True
    assert error.grader == name
    return error


# (grader, expected, an output that passes, one that fails), each checked by hand:
# levenshtein: kitten -> sitting is 3 edits (<= 5); "abc" shares no letter with "kitten": 6.
# rouge-n: "the cat is on the mat" has 5 of the reference's 6 unigrams (0.83 >= 0.75).
# bleu: (5/6 * 3/5 * 2/4 * 1/3) ** (1/4) = 0.537 >= 0.5; "a dog" scores ~1e-5.
# json-path: the value at a.b equals {"x": 1} as JSON (1 == 1.0), not {"x": 2}.
CASES = [
    ("equals", "Paris", "Paris", "Paris\n"),
    ("equals", {"a": 1, "b": [1, 2]}, '{"b": [1, 2], "a": 1.0}', '{"a": 1}'),
    ("equals", ["x", "y"], '["x","y"]', '["y","x"]'),
    ("contains", "cat", "the cat sat", "the dog sat"),
    ("icontains", "CAT", "the cat sat", "the dog sat"),
    ("starts-with", "The", "The end", "the end"),
    ("contains-any", "cat, dog", "a dog", "a bird"),
    ("contains-any", ["cat", "dog"], "a cat", "a bird"),
    ("contains-all", ["cat", "dog"], "cat and dog", "cat only"),
    ("contains-all", 'cat, "a, b"', "cat: a, b", "cat: a b"),
    ("icontains-any", ["CAT", "Dog"], "a DOG", "a bird"),
    ("icontains-all", "CAT, dog", "Cat and DOG", "cat only"),
    ("levenshtein", "kitten", "sitting", "abc"),
    ("rouge-n", "the cat sat on the mat", "the cat is on the mat", "a dog"),
    ("bleu", "the cat sat on a mat", "the cat sat on the mat", "a dog"),
    ("bleu", ["the cat sat on a mat", "x y z"], "the cat sat on the mat", "a dog"),
    ("json-path", {"x": 1}, '{"a": {"b": {"x": 1.0}}}', '{"a": {"b": {"x": 2}}}'),
]


def test_every_value_grader_is_covered() -> None:
    assert {case[0] for case in CASES} == set(NAMES)


@pytest.mark.parametrize(("name", "expected", "good", "bad"), CASES)
def test_without_a_value_the_case_expected_is_used(
    name: str, expected: Any, good: str, bad: str
) -> None:
    inputs = {"expected": expected}
    config = BASE.get(name, {})
    passed = grade(name, config, good, inputs)
    assert passed.passed is True
    assert passed.explain() == ""
    failed = grade(name, config, bad, inputs)
    assert failed.passed is False
    assert failed.explain() != ""
    # not- wraps the same function, so it falls back too and inverts the verdict
    assert grade(f"not-{name}", config, good, inputs).passed is False
    assert grade(f"not-{name}", config, bad, inputs).passed is True


def test_fallback_scores_are_the_hand_checked_values() -> None:
    inputs = {"expected": "the cat sat on the mat"}
    rouge = grade("rouge-n", {}, "the cat is on the mat", inputs)
    assert rouge.score == pytest.approx(5 / 6)
    bleu = grade("bleu", {}, "the cat sat on a mat", inputs)
    assert bleu.score == pytest.approx((1 / 12) ** 0.25)
    lev = grade("levenshtein", {}, "the cat sat on a mat", inputs)
    # "the" -> "a" at the same place: delete 2, substitute 1 = 3 edits
    assert lev.model_dump()["distance"] == 3
    equals = grade("equals", {}, "the cat sat", inputs)
    assert equals.explain() == (
        'output differs from the value at character 11: expected "the cat sat on the mat", '
        'got "the cat sat"'
    )


# (grader, config with a value, expected, an output that only the config's value passes)
WINS = [
    ("equals", {"value": "Rome"}, "Paris", "Rome"),
    ("contains", {"value": "dog"}, "cat", "a dog"),
    ("icontains", {"value": "DOG"}, "cat", "a dog"),
    ("starts-with", {"value": "A"}, "The", "A dog"),
    ("contains-any", {"value": "dog, bird"}, ["cat"], "a dog"),
    ("contains-all", {"value": ["dog"]}, ["cat", "dog"], "a dog"),
    ("icontains-any", {"value": ["DOG"]}, ["cat"], "a dog"),
    ("icontains-all", {"value": "DOG"}, "cat, dog", "a dog"),
    ("levenshtein", {"value": "dog"}, "a very different sentence", "dog"),
    ("rouge-n", {"value": "a dog ran"}, "the cat sat on the mat", "a dog ran"),
    ("bleu", {"value": "a dog ran far"}, "the cat sat on the mat", "a dog ran far"),
    ("json-path", {"path": "a", "equals": 1}, 2, '{"a": 1}'),
    ("json-path", {"path": "a", "matches": "^1$"}, 2, '{"a": 1}'),
    ("json-path", {"path": "a", "equals": None}, 2, '{"a": null}'),
]


@pytest.mark.parametrize(("name", "config", "expected", "output"), WINS)
def test_the_config_value_wins_over_expected(
    name: str, config: dict[str, Any], expected: Any, output: str
) -> None:
    assert grade(name, config, output, {"expected": expected}).passed is True


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("inputs", [{}, {"relevant": ["d1"], "vars": {"x": 1}}])
def test_no_value_and_no_expected_is_a_config_error(name: str, inputs: dict[str, Any]) -> None:
    error = config_error(name, BASE.get(name, {}), inputs)
    field = "an 'equals'" if name == "json-path" else "a 'value'"
    assert error.reason == f"no value: give the grader {field} or the case an 'expected'"
    assert str(error) == f"{name}: {error.reason}"


@pytest.mark.parametrize("name", NAMES)
def test_not_forms_raise_the_same_config_error(name: str) -> None:
    with pytest.raises(GradeError, match="no value") as caught:
        grade(f"not-{name}", BASE.get(name, {}), "x", {})
    assert caught.value.config is True


def test_a_canary_context_has_no_expected() -> None:
    # A canary's context has no inputs: a grader left without a value fails when grading.
    item = registry.get("contains")
    with pytest.raises(GradeError, match="give the grader a 'value'") as caught:
        anyio.run(item.grade, item.config.model_validate({}), "x", GradeContext("c", "p"))
    assert caught.value.config is True


# (grader, extra config, an invalid expected, part of the reason)
INVALID = [
    ("equals", {}, 42, "valid string"),
    ("equals", {}, None, "null is not a value"),
    ("contains", {}, "", "at least 1 character"),
    ("icontains", {}, ["cat"], "valid string"),
    ("starts-with", {}, "", "at least 1 character"),
    ("contains-any", {}, "", "at least 1 item"),
    ("contains-all", {}, ["ok", ""], "at least 1 character"),
    ("icontains-any", {}, '"unclosed, b', "a quoted value must be closed"),
    ("icontains-all", {}, [], "at least 1 item"),
    ("levenshtein", {}, ["kitten"], "valid string"),
    ("rouge-n", {}, "  ", "should match pattern"),
    ("rouge-n", {"n": 3}, "one two", "the reference has fewer than n=3 tokens"),
    ("bleu", {}, [], "at least 1 item"),
    ("bleu", {}, ["ok", " "], "should match pattern"),
    ("json-path", {"path": "a"}, {1, 2}, "valid"),
]


@pytest.mark.parametrize(("name", "config", "expected", "reason"), INVALID)
def test_an_invalid_expected_is_a_config_error(
    name: str, config: dict[str, Any], expected: Any, reason: str
) -> None:
    error = config_error(name, config, {"expected": expected})
    assert error.reason.startswith(f"the case's 'expected' is not a valid value for {name}: ")
    assert reason in error.reason
    assert "Value error," not in error.reason


def test_invalid_expected_message_in_full() -> None:
    error = config_error("contains", {}, {"expected": ""})
    assert str(error) == (
        "contains: the case's 'expected' is not a valid value for contains: "
        "String should have at least 1 character"
    )


def test_other_config_fields_are_kept() -> None:
    inputs = {"expected": "abc"}
    assert grade("levenshtein", {"threshold": 0}, "abc", inputs).passed is True
    strict = grade("levenshtein", {"threshold": 0}, "abd", inputs)
    assert strict.passed is False
    assert strict.explain() == "edit distance 1 > 0"
    # bigrams of "the cat sat": the-cat, cat-sat; "the cat ran" shares one: 0.5 < 0.75
    rouge = grade("rouge-n", {"n": 2}, "the cat ran", {"expected": "the cat sat"})
    assert rouge.score == pytest.approx(0.5)
    assert rouge.explain() == "ROUGE-2 recall 0.5000 < 0.75"
    bleu = grade("bleu", {"threshold": 0.9}, "the cat sat on the mat", {"expected": "the cat sat"})
    assert bleu.explain().endswith("< 0.9")


def test_json_path_null_expected_compares_with_null() -> None:
    assert grade("json-path", {"path": "a"}, '{"a": null}', {"expected": None}).passed is True
    assert grade("json-path", {"path": "a"}, '{"a": 0}', {"expected": None}).passed is False


@pytest.mark.parametrize("name", NAMES)
def test_a_config_without_a_value_loads(name: str) -> None:
    registry.get(name).config.model_validate(BASE.get(name, {}))


@pytest.mark.parametrize("name", [n for n in NAMES if n != "json-path"])
def test_an_explicit_null_value_is_rejected_when_loading(name: str) -> None:
    with pytest.raises(ValidationError, match="leave 'value' out to use the case's 'expected'"):
        registry.get(name).config.model_validate({"value": None})


def test_value_or_expected_helper() -> None:
    model = registry.get("levenshtein").config
    given = model.model_validate({"value": "a"})
    ctx = GradeContext(case_id="c1", prompt="p", inputs={"expected": "b"})
    assert value_or_expected(given, ctx, "levenshtein") is given
    filled = value_or_expected(model.model_validate({"threshold": 2}), ctx, "levenshtein")
    assert filled.model_dump() == {"value": "b", "threshold": 2}
    path = registry.get("json-path").config.model_validate({"path": "a"})
    with pytest.raises(GradeError, match="an 'equals'"):
        value_or_expected(path, GradeContext("c1", "p"), "json-path", field="equals")
