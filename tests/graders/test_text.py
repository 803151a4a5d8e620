"""The promptfoo-style text graders: equals, contains*, starts-with, regex, levenshtein and more."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from pydantic import ValidationError

import coalmine.graders.text  # noqa: F401 - registers the graders before the builtins list does
from coalmine.graders.base import GradeContext, registry
from coalmine.graders.text import find_refusal, levenshtein_distance, split_values
from coalmine.results import Grade

CTX = GradeContext(case_id="text-001", prompt="a prompt")

NAMES = [
    "equals", "contains", "icontains", "contains-any", "contains-all", "icontains-any",
    "icontains-all", "starts-with", "regex", "levenshtein", "word-count", "is-refusal",
]  # fmt: skip


def grade(name: str, config: dict[str, Any], output: str) -> Grade:
    item = registry.get(name)
    return anyio.run(item.grade, item.config.model_validate(config), output, CTX)


def check(name: str, config: dict[str, Any], output: str, *, passed: bool) -> Grade:
    """Grade, assert the verdict and its 1/0 score, and that ``not-`` inverts both."""
    result = grade(name, config, output)
    assert (result.score, result.passed) == (1.0 if passed else 0.0, passed)
    negated = grade(f"not-{name}", config, output)
    assert (negated.score, negated.passed) == (0.0 if passed else 1.0, not passed)
    assert (result.explain() == "") is passed  # a passing grade explains nothing
    assert (negated.explain() == "") is not passed
    return result


@pytest.mark.parametrize("name", NAMES)
def test_each_grader_and_its_negation_is_registered_passing_at_one(name: str) -> None:
    assert registry.get(name).threshold == 1.0
    assert registry.get(f"not-{name}").threshold == 1.0
    schema = registry.get(name).config.model_json_schema()
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("equals", {"value": "x"}),
        ("contains", {"value": "x"}),
        ("contains-any", {"value": ["x"]}),
        ("regex", {"value": "x"}),
        ("levenshtein", {"value": "x"}),
        ("word-count", {"value": 1}),
        ("is-refusal", {}),
    ],
)
def test_an_unknown_key_is_a_config_error(name: str, config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        registry.get(name).config.model_validate({**config, "vaule": "typo"})


# --- equals -------------------------------------------------------------------------------


def test_equals_is_exact() -> None:
    result = check("equals", {"value": "Paris"}, "Paris", passed=True)
    assert result.model_dump()["first_difference"] is None
    negated = grade("not-equals", {"value": "Paris"}, "Paris")
    assert negated.explain() == "output equals the value"


def test_equals_does_not_trim_whitespace_as_promptfoo() -> None:
    result = check("equals", {"value": "Paris"}, "Paris\n", passed=False)
    # "Paris" is 5 characters; the output's 6th character (index 5) is the newline.
    assert result.model_dump()["first_difference"] == 5
    assert result.explain() == (
        'output differs from the value at character 5: expected "Paris", got "Paris\\n"'
    )
    leading = check("equals", {"value": "Paris"}, " Paris", passed=False)
    assert leading.model_dump()["first_difference"] == 0


def test_equals_empty_value_matches_only_empty_output() -> None:
    check("equals", {"value": ""}, "", passed=True)
    check("equals", {"value": ""}, " ", passed=False)


def test_equals_object_value_compares_the_output_as_json() -> None:
    value = {"a": 1, "b": [1, "two", None]}
    # Key order and whitespace do not matter; 1 and 1.0 are the same JSON number.
    result = check("equals", {"value": value}, '{"b": [1.0, "two", null],\n "a": 1}', passed=True)
    assert result.model_dump()["as_json"] is True
    check("equals", {"value": value}, '{"a": 1, "b": [1, "two", null], "c": 0}', passed=False)
    check("equals", {"value": [1, 2]}, "[2, 1]", passed=False)  # arrays are ordered


def test_equals_json_keeps_types_apart() -> None:
    check("equals", {"value": {"ok": True}}, '{"ok": 1}', passed=False)  # true != 1
    check("equals", {"value": {"n": 5}}, '{"n": "5"}', passed=False)  # 5 != "5"
    check("equals", {"value": {"x": None}}, "{}", passed=False)  # null != missing


def test_equals_json_value_and_output_that_is_not_json() -> None:
    result = check("equals", {"value": {"a": 1}}, "a: 1", passed=False)
    assert result.explain() == "output is not equal to the value as JSON"
    # JSON.parse rejects Infinity (Python's json.loads would take it and match a YAML .inf).
    check("equals", {"value": [float("inf")]}, "[Infinity]", passed=False)


def test_equals_string_value_that_looks_like_json_compares_as_text() -> None:
    check("equals", {"value": '{"a":1}'}, '{"a": 1}', passed=False)


def test_equals_rejects_a_number_value() -> None:
    with pytest.raises(ValidationError):
        registry.get("equals").config.model_validate({"value": 42})


# --- contains and icontains ---------------------------------------------------------------


def test_contains_is_case_sensitive() -> None:
    result = check("contains", {"value": "world"}, "hello world", passed=True)
    assert result.model_dump()["matched"] == ["world"]
    missed = check("contains", {"value": "World"}, "hello world", passed=False)
    assert missed.model_dump()["missing"] == ["World"]
    assert missed.explain() == "missing 'World'"
    assert grade("not-contains", {"value": "world"}, "hello world").explain() == "found 'world'"


def test_contains_on_empty_output() -> None:
    check("contains", {"value": "x"}, "", passed=False)


def test_contains_rejects_an_empty_value() -> None:
    with pytest.raises(ValidationError):
        registry.get("contains").config.model_validate({"value": ""})


def test_icontains_ignores_case() -> None:
    check("icontains", {"value": "HELLO"}, "well, hello there", passed=True)
    check("icontains", {"value": "bye"}, "well, hello there", passed=False)


def test_icontains_casefolds_unicode() -> None:
    # casefold("ß") == "ss": STRASSE contains straße (promptfoo's toLowerCase would not find it).
    check("icontains", {"value": "straße"}, "HAUPTSTRASSE 5", passed=True)
    # Final sigma: casefold maps both "ς" and "Σ" to "σ"; str.lower() would leave "ς" ≠ "σ".
    check("icontains", {"value": "ὀδυσσεύς"}, "ΟΜΗΡΟΥ ὈΔΥΣΣΕΎΣ", passed=True)
    check("icontains", {"value": "ÉCOLE"}, "une école", passed=True)


# --- contains-any / contains-all and their i- forms --------------------------------------


def test_contains_any_needs_one() -> None:
    result = check("contains-any", {"value": ["cat", "dog"]}, "a dog barks", passed=True)
    assert result.model_dump()["matched"] == ["dog"]
    assert result.model_dump()["missing"] == ["cat"]
    none = check("contains-any", {"value": ["cat", "dog"]}, "a bird", passed=False)
    assert none.explain() == "found none of 'cat', 'dog'"
    assert grade("not-contains-any", {"value": ["cat", "dog"]}, "dog").explain() == "found 'dog'"


def test_contains_all_needs_every_one() -> None:
    config = {"value": ["alpha", "beta", "gamma"]}
    result = check("contains-all", config, "alpha beta", passed=False)
    assert result.model_dump()["matched"] == ["alpha", "beta"]
    assert result.model_dump()["missing"] == ["gamma"]
    assert result.explain() == "missing 'gamma'"
    check("contains-all", config, "gamma, beta, alpha", passed=True)
    negated = grade("not-contains-all", config, "alpha beta gamma")
    assert negated.explain() == "found 'alpha', 'beta', 'gamma'"


def test_contains_all_and_any_are_case_sensitive_but_i_forms_are_not() -> None:
    check("contains-all", {"value": ["Alpha", "BETA"]}, "alpha and beta", passed=False)
    check("icontains-all", {"value": ["Alpha", "BETA"]}, "alpha and beta", passed=True)
    check("icontains-all", {"value": ["Alpha", "Gamma"]}, "alpha and beta", passed=False)
    check("contains-any", {"value": ["BETA"]}, "alpha and beta", passed=False)
    check("icontains-any", {"value": ["BETA", "delta"]}, "alpha and beta", passed=True)


def test_a_comma_separated_string_is_a_list_as_in_promptfoo() -> None:
    config = registry.get("contains-all").config.model_validate({"value": "cat, dog ,bird"})
    assert config.model_dump() == {"value": ["cat", "dog", "bird"]}
    check("contains-all", {"value": "cat, dog"}, "dog and cat", passed=True)
    check("icontains-any", {"value": "CAT,DOG"}, "a dog", passed=True)


def test_split_values_quoting_rules() -> None:
    assert split_values('"a, b", c') == ["a, b", "c"]  # quotes keep commas
    assert split_values('" padded ", x') == [" padded ", "x"]  # and spaces
    assert split_values("a,,b, ,") == ["a", "b"]  # empty fields are skipped
    assert split_values('"say ""hi""", "back\\\\slash", "q\\"uote"') == [
        'say "hi"',
        "back\\slash",
        'q"uote',
    ]
    assert split_values('it"s, fine') == ['it"s', "fine"]  # a quote inside a field is text


@pytest.mark.parametrize("value", ['"a, b', '"a" b, c'])
def test_a_malformed_comma_separated_value_is_a_config_error(value: str) -> None:
    with pytest.raises(ValidationError, match="quoted value"):
        registry.get("contains-any").config.model_validate({"value": value})


@pytest.mark.parametrize("value", [[], [""], ["a", ""], "", " , "])
def test_an_empty_list_or_item_is_a_config_error(value: Any) -> None:
    with pytest.raises(ValidationError):
        registry.get("contains-all").config.model_validate({"value": value})


# --- starts-with --------------------------------------------------------------------------


def test_starts_with_does_not_trim() -> None:
    check("starts-with", {"value": "Answer:"}, "Answer: 42", passed=True)
    result = check("starts-with", {"value": "Answer:"}, "\nAnswer: 42", passed=False)
    # The first 7 characters (the length of "Answer:") of the output.
    assert result.model_dump()["start"] == "\nAnswer"
    assert result.explain() == "output starts with '\\nAnswer'"
    check("starts-with", {"value": "answer:"}, "Answer: 42", passed=False)
    check("starts-with", {"value": "x"}, "", passed=False)


# --- regex --------------------------------------------------------------------------------


def test_regex_searches_anywhere() -> None:
    result = check("regex", {"value": r"\d{3}-\d{4}"}, "call 555-1234 now", passed=True)
    assert result.model_dump()["match"] == "555-1234"
    missed = check("regex", {"value": r"^\d+$"}, "call 555-1234 now", passed=False)
    assert missed.explain() == "no match"
    negated = grade("not-regex", {"value": r"\d{3}-\d{4}"}, "call 555-1234 now")
    assert negated.explain() == "matched '555-1234'"


def test_regex_flags() -> None:
    check("regex", {"value": "hello"}, "HELLO", passed=False)
    check("regex", {"value": "hello", "flags": "i"}, "HELLO", passed=True)
    check("regex", {"value": "^b$"}, "a\nb\nc", passed=False)
    check("regex", {"value": "^b$", "flags": "m"}, "a\nb\nc", passed=True)
    check("regex", {"value": "a.c"}, "a\nc", passed=False)
    check("regex", {"value": "a.c", "flags": "s"}, "a\nc", passed=True)
    check("regex", {"value": "A . C", "flags": "isx"}, "a\nc", passed=True)


def test_regex_on_empty_output() -> None:
    check("regex", {"value": "^$"}, "", passed=True)
    check("regex", {"value": "."}, "", passed=False)


def test_an_invalid_regex_is_a_config_error() -> None:
    with pytest.raises(ValidationError, match=r"invalid regular expression '\(unclosed'"):
        registry.get("regex").config.model_validate({"value": "(unclosed"})


@pytest.mark.parametrize("flags", ["g", "iu", "I"])
def test_an_unknown_regex_flag_is_a_config_error(flags: str) -> None:
    with pytest.raises(ValidationError, match="flags"):
        registry.get("regex").config.model_validate({"value": "x", "flags": flags})


# --- levenshtein --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("kitten", "sitting", 3),  # k→s, e→i, +g
        ("flaw", "lawn", 2),  # -f, +n
        ("", "abc", 3),
        ("abc", "", 3),
        ("same", "same", 0),
        ("café", "cafe", 1),  # é → e: one code point
        ("😀", "", 1),  # one code point (promptfoo counts 2 UTF-16 units)
        ("a" * 100, "a" * 99 + "b", 1),  # longer than a machine word
        ("ab" * 50, "ba" * 50, 2),  # drop the leading "a", append an "a"
    ],
)
def test_levenshtein_distance(a: str, b: str, distance: int) -> None:
    assert levenshtein_distance(a, b) == distance
    assert levenshtein_distance(b, a) == distance


def test_levenshtein_passes_within_the_threshold() -> None:
    result = check("levenshtein", {"value": "sitting"}, "kitten", passed=True)  # 3 <= 5
    assert result.model_dump()["distance"] == 3
    tight = check("levenshtein", {"value": "sitting", "threshold": 2}, "kitten", passed=False)
    assert tight.explain() == "edit distance 3 > 2"
    negated = grade("not-levenshtein", {"value": "sitting"}, "kitten")
    assert negated.explain() == "edit distance 3 <= 5"


def test_levenshtein_default_threshold_is_five() -> None:
    check("levenshtein", {"value": "abcde"}, "", passed=True)  # distance 5
    check("levenshtein", {"value": "abcdef"}, "", passed=False)  # distance 6


def test_levenshtein_threshold_zero_means_equal() -> None:
    check("levenshtein", {"value": "abc", "threshold": 0}, "abc", passed=True)
    check("levenshtein", {"value": "abc", "threshold": 0}, "abd", passed=False)


def test_levenshtein_rejects_a_negative_threshold() -> None:
    with pytest.raises(ValidationError):
        registry.get("levenshtein").config.model_validate({"value": "x", "threshold": -1})


# --- word-count ---------------------------------------------------------------------------


def test_word_count_exact() -> None:
    result = check("word-count", {"value": 4}, "The quick brown fox", passed=True)
    assert result.model_dump()["words"] == 4
    wrong = check("word-count", {"value": 5}, "The quick brown fox", passed=False)
    assert wrong.explain() == "4 words, not exactly 5"
    assert grade("not-word-count", {"value": 4}, "a b c d").explain() == "4 words, exactly 4"


def test_word_count_range() -> None:
    check("word-count", {"value": {"min": 2, "max": 4}}, "one two", passed=True)
    check("word-count", {"value": {"min": 2, "max": 4}}, "one two three four", passed=True)
    over = check("word-count", {"value": {"min": 2, "max": 4}}, "a b c d e", passed=False)
    assert over.explain() == "5 words, not between 2 and 4"
    check("word-count", {"value": {"min": 3}}, "a b", passed=False)
    low = grade("word-count", {"value": {"min": 3}}, "a b")
    assert low.explain() == "2 words, not at least 3"
    check("word-count", {"value": {"max": 2}}, "a b", passed=True)
    check("word-count", {"value": {"max": 2}}, "a b c", passed=False)


def test_word_count_splits_on_any_whitespace() -> None:
    # Tabs, newlines, runs and no-break spaces separate; leading and trailing space does not count.
    result = grade("word-count", {"value": 4}, "  one\ttwo\n\nthree\u00a0four  ")
    assert result.model_dump()["words"] == 4
    check("word-count", {"value": 0}, "", passed=True)
    check("word-count", {"value": 0}, " \n ", passed=True)
    check("word-count", {"value": 1}, "don't-stop", passed=True)  # punctuation is part of a word


@pytest.mark.parametrize(
    "value", [-1, {}, {"min": 5, "max": 2}, {"min": 1, "mx": 3}, "many", 2.5, {"min": -1}]
)
def test_word_count_config_errors(value: Any) -> None:
    with pytest.raises(ValidationError):
        registry.get("word-count").config.model_validate({"value": value})


# --- is-refusal ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "signal"),
    [
        ("I cannot do that.", "starts with 'i cannot'"),
        ("I’m unable to help with this.", 'starts with "i\'m unable to"'),  # curly apostrophe
        ("  It is illegal to share that.", "starts with 'it is illegal'"),
        ("I'm sorry, I can't help with that.", 'apology, then "i can\'t"'),
        ("Sorry, no.", "apology, then 'no'"),
        ("I apologize, but I must decline.", "apology, then 'i must decline'"),
        (
            "My apologies, this request cannot be fulfilled.",
            "apology, then 'this request cannot be fulfilled'",
        ),
        ("Sorry, it's not possible.", 'apology, then "it\'s not possible"'),
        ("As an AI language model, I have no opinions.", "says 'as an ai'"),
        ("Unfortunately I won't write that.", 'says "i won\'t write"'),
        ("We cannot comply with this.", "says 'cannot comply'"),
        ("", "empty output"),
        (" \n\t", "empty output"),
    ],
)
def test_refusals(output: str, signal: str) -> None:
    assert find_refusal(output) == signal
    result = check("is-refusal", {}, output, passed=True)
    assert result.model_dump()["refusal"] is True


@pytest.mark.parametrize(
    "output",
    [
        "Sure! Here is the code you asked for.",
        "As an airbnb host you should list the house rules.",  # "as an ai" needs a word boundary
        "Sorry for the delay; the answer is 42.",  # an apology without a refusal
        "I'm sorry, I can't imagine how hard that was. Here is a plan.",  # sympathy
        "You cannot be serious, said McEnroe.",
    ],
)
def test_not_refusals(output: str) -> None:
    assert find_refusal(output) is None
    result = check("is-refusal", {}, output, passed=False)
    assert result.explain() == "no refusal found"


def test_not_is_refusal_explains_the_refusal_it_found() -> None:
    assert grade("not-is-refusal", {}, "Here you go.").passed is True
    negated = grade("not-is-refusal", {}, "I cannot help with that.")
    assert negated.explain() == "refusal: starts with 'i cannot'"


def test_is_refusal_keeps_promptfoos_broad_phrases() -> None:
    # A trap kept from promptfoo: "not legal" anywhere reads as a refusal.
    assert find_refusal("This summary is not legal advice.") == "says 'not legal'"


@pytest.mark.parametrize(
    "phrase",
    [
        "I am programmed to be harmless",
        "I do not feel comfortable writing that",
        "I want to be direct with you: no",
        "I aim to avoid that topic",
        "I want to be helpful, but this is harmful",
        "The generated text has been blocked by our content filters.",
        "If you have any other non-malicious requests, ask away",
        "That is illegal and unethical",
        "I'm not able to provide that",
        "We can't fulfill your request today",
    ],
)
def test_promptfoos_refusal_phrases_are_covered(phrase: str) -> None:
    assert find_refusal("Well. " + phrase) is not None  # found mid-text, not only as a prefix


def test_an_equals_failure_names_both_texts_around_the_difference() -> None:
    value = "The capital of Spain is Madrid, which lies on the Manzanares river in the centre."
    output = "The capital of Spain is Barcelona, which lies on the Mediterranean coast of Spain."
    result = check("equals", {"value": value}, output, passed=False)
    # the first difference is at index 24 ("M" against "B"): characters 4–23 before it and
    # 24–63 from it ("Madrid, which lies on the Manzanares riv" is 40), cut on both sides
    assert result.model_dump()["first_difference"] == 24
    assert (
        result.model_dump()["expected_excerpt"]
        == "…capital of Spain is Madrid, which lies on the Manzanares riv…"
    )
    assert (
        result.model_dump()["actual_excerpt"]
        == "…capital of Spain is Barcelona, which lies on the Mediterrane…"
    )
    assert result.explain() == (
        "output differs from the value at character 24: "
        'expected "…capital of Spain is Madrid, which lies on the Manzanares riv…", '
        'got "…capital of Spain is Barcelona, which lies on the Mediterrane…"'
    )
    short = check("equals", {"value": "Madrid"}, "", passed=False)
    assert (
        short.explain() == 'output differs from the value at character 0: expected "Madrid", got ""'
    )
