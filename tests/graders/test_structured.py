"""Structured graders: is-json, contains-json, json-path, rouge-n, bleu, latency, cost (and not-)."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

import coalmine.graders.structured  # noqa: F401  (registers the graders before builtins list it)
from coalmine.errors import GradeError
from coalmine.graders.base import GradeContext, registry
from coalmine.graders.overlap import bleu_score, rouge_n, treebank_tokens
from coalmine.results import Grade

NAMES = ["is-json", "contains-json", "json-path", "rouge-n", "bleu", "latency", "cost"]
PERSON = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
}


def grade(name: str, config: dict[str, Any], output: str, **context: Any) -> Grade:
    """Validate ``config`` as the loader does, then grade ``output`` through the registry."""
    item = registry.get(name)
    parsed = item.config.model_validate(config)
    ctx = GradeContext(case_id="case-1", prompt="the prompt", **context)
    return anyio.run(item.grade, parsed, output, ctx)


def test_every_grader_and_its_not_form_is_registered() -> None:
    for name in NAMES:
        assert registry.get(name).name == name
        assert registry.get(f"not-{name}").name == f"not-{name}"


# ---------------------------------------------------------------- is-json


def test_is_json_passes_a_whole_json_output() -> None:
    result = grade("is-json", {}, ' {"answer": 42}\n')
    assert (result.score, result.passed, result.explain()) == (1.0, True, "")


def test_is_json_passes_a_scalar_as_json_parse_does() -> None:
    assert grade("is-json", {}, "42").passed is True


@pytest.mark.parametrize(
    "output", ['```json\n{"a": 1}\n```', 'Sure! {"a": 1}', "{'a': 1}", "NaN", ""]
)
def test_is_json_fails_anything_else(output: str) -> None:
    result = grade("is-json", {}, output)
    assert (result.score, result.passed) == (0.0, False)
    assert result.explain().startswith("the output is not JSON: ")


def test_not_is_json_inverts() -> None:
    prose = grade("not-is-json", {}, "plain words")
    assert (prose.score, prose.passed) == (1.0, True)
    json_output = grade("not-is-json", {}, "[]")
    assert (json_output.score, json_output.passed) == (0.0, False)


def test_is_json_with_a_schema() -> None:
    ok = grade("is-json", {"value": PERSON}, '{"name": "Ada", "age": 36}')
    assert ok.passed is True
    bad = grade("is-json", {"value": PERSON}, '{"name": "Ada", "age": "36"}')
    assert (bad.score, bad.passed) == (0.0, False)
    assert bad.explain() == "the JSON does not fit the schema: $.age: '36' is not of type 'integer'"
    missing = grade("is-json", {"value": PERSON}, "{}")
    assert missing.explain() == "the JSON does not fit the schema: $: 'name' is a required property"


def test_not_is_json_with_a_schema_passes_json_that_does_not_fit() -> None:
    assert grade("not-is-json", {"value": PERSON}, '{"age": 1}').passed is True
    assert grade("not-is-json", {"value": PERSON}, '{"name": "x"}').passed is False


def test_boolean_schemas() -> None:
    assert grade("is-json", {"value": True}, "1").passed is True
    assert grade("is-json", {"value": False}, "1").passed is False


def test_format_is_an_annotation_not_a_check() -> None:
    schema = {"type": "string", "format": "email"}
    assert grade("is-json", {"value": schema}, '"not an address"').passed is True


def test_schema_defaults_to_draft_2020_12_and_honours_its_schema_keyword() -> None:
    tuple_items = {"items": [{"type": "string"}]}  # draft-07 tuple form; invalid in 2020-12
    with pytest.raises(ValidationError, match="invalid JSON Schema"):
        registry.get("is-json").config.model_validate({"value": tuple_items})
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **tuple_items}
    assert grade("is-json", {"value": draft7}, '["a", 2]').passed is True
    assert grade("is-json", {"value": draft7}, "[1]").passed is False
    prefix = {"prefixItems": [{"type": "string"}]}
    assert grade("is-json", {"value": prefix}, "[1]").passed is False


@pytest.mark.parametrize("name", ["is-json", "contains-json"])
def test_invalid_schema_is_a_config_error(name: str) -> None:
    with pytest.raises(ValidationError, match=r"invalid JSON Schema at \$.type: 'objekt'"):
        registry.get(name).config.model_validate({"value": {"type": "objekt"}})
    with pytest.raises(ValidationError):
        registry.get(name).config.model_validate({"value": "a string is no schema"})
    with pytest.raises(ValidationError, match="Extra inputs"):
        registry.get(name).config.model_validate({"schema": PERSON})


def test_a_ref_outside_the_schema_is_never_fetched() -> None:
    schema = {"$ref": "https://example.com/person.json"}
    with pytest.raises(GradeError, match=r"\$ref cannot be resolved") as caught:
        grade("is-json", {"value": schema}, "{}")
    assert caught.value.grader == "is-json"
    local = {"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}
    assert grade("is-json", {"value": local}, "3").passed is True


# ---------------------------------------------------------------- contains-json


def test_contains_json_finds_an_object_in_prose_and_fences() -> None:
    result = grade("contains-json", {}, 'Result:\n```json\n{"ok": true}\n```\nDone.')
    assert (result.score, result.passed) == (1.0, True)
    assert result.model_dump()["found"] == 1


def test_contains_json_finds_arrays_unlike_promptfoo() -> None:
    result = grade("contains-json", {}, 'The ids: [{"id": 1}, {"id": 2}].')
    assert result.passed is True
    assert result.model_dump()["found"] == 1  # one outermost array; its objects are inside it
    # The documented catch: a bracketed citation is a JSON array too.
    assert grade("contains-json", {}, "As shown in [1].").passed is True
    assert grade("contains-json", {"value": {"type": "object"}}, "In [1].").passed is False


def test_contains_json_fails_without_json() -> None:
    result = grade("contains-json", {}, "no structure {here} at all")
    assert (result.score, result.passed) == (0.0, False)
    assert result.explain() == "the output holds no JSON object or array"


def test_contains_json_passes_when_any_value_fits_the_schema() -> None:
    output = 'First {"name": 1}, then {"name": "Ada"}.'
    result = grade("contains-json", {"value": PERSON}, output)
    assert result.passed is True
    assert result.model_dump()["found"] == 2


def test_contains_json_names_the_first_schema_error_when_none_fits() -> None:
    two = grade("contains-json", {"value": PERSON}, '{"name": 1} and {"age": 2}')
    assert two.passed is False
    assert two.explain() == (
        "none of the 2 JSON values fits the schema; first: $.name: 1 is not of type 'string'"
    )
    one = grade("contains-json", {"value": PERSON}, '{"age": 2}')
    assert one.explain() == "the JSON does not fit the schema: $: 'name' is a required property"


def test_not_contains_json() -> None:
    assert grade("not-contains-json", {}, "just words").passed is True
    assert grade("not-contains-json", {}, 'a {"b": 1}').passed is False


# ---------------------------------------------------------------- json-path


@pytest.mark.parametrize(
    ("path", "equals", "output"),
    [
        ("score", 75, '{"score": 75.0}'),
        ("$.score", 75.0, '{"score": 75}'),
        ("a.b", {"x": 1, "y": [1, 2]}, '{"a": {"b": {"y": [1, 2], "x": 1}}}'),
        ("$.items[-1].id", "z", '{"items": [{"id": "a"}, {"id": "z"}]}'),
        ("$['a b']", None, '{"a b": null}'),
        ("0.ok", True, '[{"ok": true}]'),
    ],
)
def test_json_path_equals(path: str, equals: Any, output: str) -> None:
    result = grade("json-path", {"path": path, "equals": equals}, output)
    assert (result.score, result.passed, result.explain()) == (1.0, True, "")


@pytest.mark.parametrize(
    ("equals", "value", "shown"),
    [
        ("5", "5", "5"),
        (5, '"5"', '"5"'),
        (1, "true", "true"),
        (True, "1", "1"),
        (None, "0", "0"),
        ([1, 2], "[2, 1]", "[2,1]"),
        ({"a": None}, "{}", "{}"),
    ],
)
def test_json_path_equality_is_strict_about_types(equals: Any, value: str, shown: Any) -> None:
    result = grade("json-path", {"path": "v", "equals": equals}, f'{{"v": {value}}}')
    assert (result.score, result.passed) == (0.0, False)
    assert result.explain().startswith(f"v is {shown}, which does not equal ")


def test_json_path_matches_the_string_form() -> None:
    text = grade("json-path", {"path": "msg", "matches": "^hel+o"}, '{"msg": "hello"}')
    assert text.passed is True
    number = grade("json-path", {"path": "n", "matches": r"^75\.0$"}, '{"n": 75.0}')
    assert number.passed is True
    nested = grade("json-path", {"path": "o", "matches": '"k":"é"'}, '{"o": {"k": "é"}}')
    assert nested.passed is True
    miss = grade("json-path", {"path": "msg", "matches": "^bye"}, '{"msg": "hello"}')
    assert miss.explain() == "msg is hello, which does not match /^bye/"
    typed = grade("json-path", {"path": "v", "equals": "5"}, '{"v": 5}')
    assert typed.explain() == 'v is 5, which does not equal "5"'


def test_json_path_keeps_the_value_found() -> None:
    result = grade("json-path", {"path": "a", "equals": 2}, '{"a": [1]}')
    assert result.model_dump()["value"] == [1]


def test_json_path_reports_where_the_path_stopped() -> None:
    result = grade("json-path", {"path": "a.x.y", "equals": 1}, '{"a": {"b": 1}}')
    assert (result.score, result.passed) == (0.0, False)
    assert result.explain() == "path 'a.x.y' not found: at 'a', no key 'x'; keys there: 'b'"
    top = grade("json-path", {"path": "$.q", "equals": 1}, "[]")
    assert top.explain() == "path '$.q' not found: at the top level, cannot take 'q' of a list"


def test_json_path_needs_json_output() -> None:
    result = grade("json-path", {"path": "a", "equals": 1}, 'text {"a": 1}')
    assert result.passed is False
    assert result.explain().startswith("the output is not JSON")


def test_not_json_path() -> None:
    assert grade("not-json-path", {"path": "a", "equals": 1}, '{"a": 2}').passed is True
    assert grade("not-json-path", {"path": "a", "equals": 1}, '{"a": 1.0}').passed is False


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"path": "a", "equals": 1, "matches": "x"}, "one of 'equals' and 'matches', not both"),
        ({"path": "a", "matches": "(unclosed"}, "invalid regex '\\(unclosed'"),
        ({"path": "$..a", "equals": 1}, "unsupported JSONPath"),
        ({"path": "a..b", "equals": 1}, "empty part"),
        ({"path": "", "equals": 1}, "at least 1 character"),
        ({"path": "a", "equals": 1, "value": 1}, "Extra inputs"),
    ],
)
def test_json_path_config_errors(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        registry.get("json-path").config.model_validate(config)


# ---------------------------------------------------------------- rouge-n


def test_treebank_tokens() -> None:
    assert treebank_tokens("The cat sat on the mat.") == [
        "The",
        "cat",
        "sat",
        "on",
        "the",
        "mat",
        ".",
    ]
    assert treebank_tokens("Hello, world!  It's 12,000 (really).") == [
        "Hello", ",", "world", "!", "It", "'s", "12,000", "(", "really", ")", ".",
    ]  # fmt: skip
    assert treebank_tokens("I can't... gonna") == ["I", "ca", "n't", "...", "gon", "na"]
    assert treebank_tokens("Alpha. Beta.") == ["Alpha", ".", "Beta", "."]
    assert treebank_tokens(" \n ") == []


def test_rouge_1_recall_hand_computed() -> None:
    # reference tokens: the cat sat on the mat (6); output: the cat is on the mat.
    # clipped overlap: the 2, cat 1, on 1, mat 1 = 5 -> recall 5/6 = 0.8333 >= 0.75.
    result = grade("rouge-n", {"value": "the cat sat on the mat"}, "the cat is on the mat")
    assert result.score == pytest.approx(5 / 6)
    assert result.passed is True
    assert result.explain() == ""


def test_rouge_2_recall_hand_computed() -> None:
    # reference bigrams: the-cat cat-sat sat-on on-the the-mat (5); the output shares
    # the-cat, on-the, the-mat = 3 -> 3/5 = 0.6 < 0.75.
    config = {"value": "the cat sat on the mat", "n": 2}
    result = grade("rouge-n", config, "the cat is on the mat")
    assert result.score == pytest.approx(0.6)
    assert result.passed is False
    assert result.explain() == "ROUGE-2 recall 0.6000 < 0.75"


def test_rouge_clips_repeated_ngrams_where_old_promptfoo_scored_below_one() -> None:
    # distinct-n-gram counting (js-rouge <= 3.0) gives |{the, cat, dog}| / 4 = 0.75 here.
    assert rouge_n("the cat the dog", "the cat the dog") == 1.0
    # the output's two "the" match the reference's one "the" only once: 1 / 2.
    assert rouge_n("the the", "the cat") == 0.5


def test_rouge_is_case_sensitive_and_counts_punctuation() -> None:
    assert rouge_n("The Cat", "the cat") == 0.0
    # reference: Hello , world . (4 tokens); the output shares only "world": 1/4.
    assert rouge_n("hello world", "Hello, world.") == 0.25


def test_rouge_f1_measure() -> None:
    # recall 3/3 = 1, precision 3/7; F1 = 2 * 3/7 * 1 / (3/7 + 1) = 0.6
    config = {"value": "the cat sat", "measure": "f1"}
    result = grade("rouge-n", config, "the cat sat on the mat today")
    assert result.score == pytest.approx(0.6)
    assert result.explain() == "ROUGE-1 f1 0.6000 < 0.75"


def test_rouge_threshold_and_empty_output() -> None:
    config = {"value": "the cat sat on the mat", "threshold": 0.5}
    assert grade("rouge-n", config, "a cat on a rug").passed is False  # cat, on: 2/6
    assert grade("rouge-n", config, "the cat on a mat").passed is True  # the, cat, on, mat: 4/6
    assert grade("rouge-n", config, "").score == 0.0


def test_not_rouge_n_inverts_the_score() -> None:
    result = grade("not-rouge-n", {"value": "the cat sat on the mat"}, "the cat is on the mat")
    assert result.score == pytest.approx(1 / 6)
    assert result.passed is False


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"value": "one two", "n": 3}, "fewer than n=3 tokens"),
        ({"value": "  "}, "should match pattern"),
        ({"value": "x", "n": 0}, "greater than or equal to 1"),
        ({"value": "x", "threshold": 1.5}, "less than or equal to 1"),
        ({"value": "x", "measure": "precision"}, "'recall' or 'f1'"),
        ({"value": None}, "leave 'value' out to use the case's 'expected'"),
    ],
)
def test_rouge_config_errors(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        registry.get("rouge-n").config.model_validate(config)


# ---------------------------------------------------------------- bleu


def test_bleu_hand_computed_equal_lengths() -> None:
    # output "the cat sat on the mat", reference "the cat sat on a mat": c = r = 6, BP = 1.
    # p1 = 5/6 (the x2 clipped to 1), p2 = 3/5, p3 = 2/4, p4 = 1/3;
    # BLEU = (5/6 * 3/5 * 2/4 * 1/3) ** (1/4) = (1/12) ** 0.25 = 0.537285 >= 0.5.
    result = grade("bleu", {"value": "the cat sat on a mat"}, "The cat sat on the mat")
    assert result.score == pytest.approx((1 / 12) ** 0.25)
    assert round(result.score or 0, 6) == 0.537285
    assert result.passed is True


def test_bleu_brevity_penalty_and_short_output_reweighting() -> None:
    # c = 3 < r = 6: BP = exp(1 - 6/3) = e**-1. p1 = p2 = p3 = 1; a 3-word output has no
    # 4-grams, so order 4 is dropped and the rest share its weight: BLEU = e**-1 = 0.367879.
    assert bleu_score("the cat sat", ["the cat sat on the mat"]) == pytest.approx(math.exp(-1))


def test_bleu_smooths_a_zero_precision() -> None:
    # p1 = 5/6, p2 = 3/5, p3 = 1/4, p4 = 0 -> 1e-7; BP = 1 (c = r = 6).
    # BLEU = (5/6 * 3/5 * 1/4 * 1e-7) ** 0.25 = (1.25e-8) ** 0.25 = 0.0105737
    score = bleu_score("the cat ran on the mat", ["the cat sat on the mat"])
    assert score == pytest.approx((1.25e-8) ** 0.25)
    assert round(score, 6) == 0.010574


def test_bleu_several_references() -> None:
    # Lengths 3 and 5 are equally close to c = 4: the shorter wins, c > 3 so BP = 1; the
    # 5-word reference holds every n-gram of the output: BLEU = 1, in either order.
    assert bleu_score("a b c d", ["a b c", "a b c d e"]) == 1.0
    assert bleu_score("a b c d", ["a b c d e", "a b c"]) == 1.0


def test_bleu_clips_each_reference_on_its_own() -> None:
    # Per reference, "a x" matches 1 unigram and "y b" 1: p1 = max(1, 1)/2 = 0.5 (Papineni's
    # per-n-gram maximum would give 2/2). p2 = 0 -> 1e-7; orders 3, 4 dropped; BP = 1.
    # BLEU = (0.5 * 1e-7) ** (1/2) = 2.236068e-4
    assert bleu_score("a b", ["a x", "y b"]) == pytest.approx(math.sqrt(0.5e-7))


def test_bleu_list_config_threshold_and_not_bleu() -> None:
    config = {"value": ["the cat sat on a mat", "a dog sat"], "threshold": 0.6}
    result = grade("bleu", config, "the cat sat on the mat")
    assert result.passed is False
    assert result.explain() == "BLEU 0.5373 < 0.6"
    negated = grade("not-bleu", {"value": "the cat sat on a mat"}, "the cat sat on the mat")
    assert negated.score == pytest.approx(1 - (1 / 12) ** 0.25)
    assert negated.passed is False


def test_bleu_of_an_empty_output_is_zero() -> None:
    assert grade("bleu", {"value": "x"}, "  \n").score == 0.0


@pytest.mark.parametrize(
    "config", [{"value": []}, {"value": ["ok", " "]}, {"value": ""}, {"value": "x", "n": 2}]
)
def test_bleu_config_errors(config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        registry.get("bleu").config.model_validate(config)


# ---------------------------------------------------------------- latency, cost


@pytest.mark.parametrize(("seconds", "passed"), [(0.25, True), (0.5, True), (0.75, False)])
def test_latency_in_milliseconds(seconds: float, passed: bool) -> None:
    result = grade("latency", {"threshold": 500}, "x", latency_seconds=seconds)
    assert (result.score, result.passed) == (float(passed), passed)
    assert result.explain() == ("" if passed else "750 ms > 500 ms")


def test_not_latency() -> None:
    assert grade("not-latency", {"threshold": 500}, "x", latency_seconds=0.75).passed is True
    assert grade("not-latency", {"threshold": 500}, "x", latency_seconds=0.25).passed is False


@pytest.mark.parametrize("name", ["latency", "not-latency"])
def test_unknown_latency_is_skipped(name: str) -> None:
    result = grade(name, {"threshold": 500}, "x")
    assert (result.score, result.passed, result.skipped) == (None, None, True)
    assert result.reason == "latency unknown (a cached answer)"
    assert result.explain() == ""


@pytest.mark.parametrize(("spent", "passed"), [(0.0025, True), (0.01, True), (0.0125, False)])
def test_cost(spent: float, passed: bool) -> None:
    result = grade("cost", {"threshold": 0.01}, "x", cost=spent)
    assert (result.score, result.passed) == (float(passed), passed)
    assert result.explain() == ("" if passed else "0.0125 > 0.01")


@pytest.mark.parametrize("name", ["cost", "not-cost"])
def test_unknown_cost_is_skipped(name: str) -> None:
    result = grade(name, {"threshold": 0.01}, "x")
    assert (result.score, result.skipped) == (None, True)
    assert result.reason == "cost unknown (the model has no price)"


def test_not_cost() -> None:
    assert grade("not-cost", {"threshold": 0.01}, "x", cost=0.02).passed is True


@pytest.mark.parametrize("name", ["latency", "cost"])
@pytest.mark.parametrize(
    ("config", "message"),
    [({}, "Field required"), ({"threshold": -1}, "greater than or equal to 0")],
)
def test_budget_config_errors(name: str, config: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        registry.get(name).config.model_validate(config)
