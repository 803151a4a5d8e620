"""promptfoo's own handlers, by hand-computed cases and live against promptfoo 0.121.20.

The threshold family, the JSON family, finish-reason, the tools call and the markup/SQL types;
the parity folders run three ways (directly, imported, exported back).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.handlers import HandlerCall, handle
from coalmine.promptfoo.json_compat import (
    contains_json,
    convert_slash_comments,
    extract_json_objects,
    is_json,
)
from coalmine.promptfoo.node import NodeRuntime
from coalmine.promptfoo.own_code import promptfoo_install
from coalmine.promptfoo.verdicts import HandlerError, Verdict
from tests.promptfoo.test_run import NEEDS_NODE


def grade(
    kind: str,
    value: Any = None,
    output: Any = "",
    *,
    threshold: float | None = None,
    response: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
) -> Verdict:
    async def go() -> Verdict:
        async with NodeRuntime() as runtime:  # closed: its worker's stderr file too
            return await handle(_call_of(kind, value, output, threshold, response, config, runtime))

    return anyio.run(go)


def _call_of(
    kind: str,
    value: Any,
    output: Any,
    threshold: float | None,
    response: dict[str, Any] | None,
    config: dict[str, Any] | None,
    node: NodeRuntime,
) -> HandlerCall:
    assertion = Assertion(type=kind, value=value, threshold=threshold)
    return HandlerCall(
        assertion=assertion,
        value=value,
        output=output,
        text=output if isinstance(output, str) else json.dumps(output),
        provider={"id": "echo", "label": "", "config": config or {}},
        provider_response=response or {"output": output},
        prompt="the prompt",
        variables={},
        latency_ms=12,
        cost=0.0,
        base_dir=Path.cwd(),
        node=node,
        env={},
    )


# --- the threshold family ------------------------------------------------------------------


def test_a_fractional_levenshtein_threshold_is_compared_as_promptfoo_compares_it() -> None:
    # the CSV default 0.75: distance 1 is not <= 0.75 (the native grader refuses 0.75)
    assert grade("levenshtein", "kittens", "kitten", threshold=0.75).passed is False
    assert grade("levenshtein", "kitten", "kitten", threshold=0.75).passed is True
    assert grade("levenshtein", "sitting", "kitten", threshold=3.5).passed is True
    assert grade("levenshtein", "sitting", "kitten").passed is True  # default 5
    assert grade("levenshtein", "kittens", "kitten", threshold=0).passed is False  # ?? keeps 0
    assert grade("not-levenshtein", "kittens", "kitten", threshold=0.5).passed is True


def test_levenshtein_counts_utf16_units() -> None:
    # an emoji is two UTF-16 units: promptfoo's distance from "" is 2
    assert grade("levenshtein", "", "😀", threshold=1).passed is False
    assert grade("levenshtein", "", "😀", threshold=2).passed is True


def test_score_thresholds_outside_zero_to_one_are_kept() -> None:
    same = "the quick brown fox jumps"
    assert grade("bleu", same, same, threshold=1.5).passed is False
    assert grade("bleu", "a slow red dog", same, threshold=-0.5).passed is True
    inverted = grade("not-gleu", same, same, threshold=0.5)
    assert (inverted.passed, inverted.score) == (False, 0.0)


def test_rouge_n_is_promptfoos_lower_cased_unigram_f1() -> None:
    # candidate "The Cat" vs "the cat sat": overlap 2, precision 1, recall 2/3, F1 0.8
    verdict = grade("rouge-n", "the cat sat", "The Cat", threshold=0.8)
    assert verdict.passed is True and math.isclose(verdict.score, 0.8)


def test_latency_and_cost_need_their_threshold() -> None:
    assert grade("latency", threshold=12).passed is True
    assert grade("latency", threshold=11).passed is False
    assert grade("not-cost", threshold=-1).passed is True
    with pytest.raises(HandlerError, match="must have a threshold"):
        grade("latency")


def test_gleu_throws_on_an_empty_output_as_promptfoo_does() -> None:
    with pytest.raises(HandlerError, match="Invalid inputs"):
        grade("gleu", "x", "")
    with pytest.raises(HandlerError, match="string or array of strings"):
        grade("gleu", 42, "x")


# --- the JSON family -----------------------------------------------------------------------


def test_extract_json_objects_finds_what_promptfoo_finds() -> None:
    assert extract_json_objects("[1, 2, 3]") == []
    assert extract_json_objects('[{"id": 1}, {"id": 2}]') == [{"id": 1}, {"id": 2}]
    assert extract_json_objects("x {name: Bob} y") == [{"name": "Bob"}]
    assert extract_json_objects('{"open": {"a": 1}') == [{"open": {"a": 1}}]  # closed for it
    assert extract_json_objects('{broken: [ {"id": 7} ] ,,}') == [{"id": 7}]
    assert extract_json_objects('{"a": "}"}') == []  # braces are counted inside strings
    assert extract_json_objects('{"a": 1, "a": 2}') == [{"a": 2}]  # the last key wins


def test_slash_comments_become_hash_comments_outside_strings_and_urls() -> None:
    assert convert_slash_comments('{"a": 1} // note') == '{"a": 1} # note'
    assert convert_slash_comments('{"u": "http://x"}') == '{"u": "http://x"}'
    assert convert_slash_comments("{a: 1} //// two") == "{a: 1} ## two"
    assert convert_slash_comments('{"s": "//"}') == '{"s": "//"}'


def test_contains_json_takes_the_first_object_that_fits() -> None:
    schema = {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}}
    assert contains_json('{"id": "x"} then {"id": 5}', schema, inverse=False).passed is True
    assert contains_json('{"id": "x"}', schema, inverse=False).passed is False
    assert contains_json('{"id": "x"}', schema, inverse=True).passed is True
    assert contains_json("[1]", None, inverse=True).passed is True


def test_is_json_reads_a_string_schema_as_yaml_and_checks_formats() -> None:
    assert is_json("[1, 2]", "type: array", inverse=False).passed is True
    assert is_json('{"e": "bob@example"}', {"properties": {"e": {"format": "email"}}},
                   inverse=False).passed is False  # fmt: skip
    assert is_json('{"d": "2024-02-29"}', {"properties": {"d": {"format": "date"}}},
                   inverse=False).passed is True  # fmt: skip
    assert is_json("not json", {"type": "object"}, inverse=True).passed is True


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "example": 1},
        {"$schema": "https://json-schema.org/draft/2020-12/schema"},
        {"properties": {"a": {"format": "colour"}}},
        42,
    ],
)
def test_schemas_ajv_would_not_compile_throw(schema: Any) -> None:
    with pytest.raises(HandlerError):
        is_json('{"a": 1}', schema, inverse=False)


# --- finish-reason and the tools call ------------------------------------------------------


def test_finish_reason_compares_lower_cased_and_fails_without_one() -> None:
    assert grade("finish-reason", "STOP", response={"finishReason": "stop"}).passed is True
    assert grade("finish-reason", "stop", response={"finishReason": "length"}).passed is False
    assert grade("finish-reason", "stop", response={}).passed is False
    assert grade("not-finish-reason", "stop", response={}).passed is True
    with pytest.raises(HandlerError, match="string value"):
        grade("finish-reason", 1, response={"finishReason": "stop"})


TOOLS = {
    "tools": [
        {"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    ]
}  # fmt: skip


def _call(arguments: str, name: str = "get_weather") -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": name, "arguments": arguments}}]


def test_a_tools_call_is_checked_against_the_providers_tools() -> None:
    assert grade(
        "is-valid-openai-tools-call", output=_call('{"city": "Paris"}'), config=TOOLS
    ).passed
    assert not grade("is-valid-openai-tools-call", output=_call("{}"), config=TOOLS).passed
    assert not grade("is-valid-openai-tools-call", output=_call("{", "x"), config=TOOLS).passed
    nested = {"tool_calls": _call('{"city": "Oslo"}')}
    assert grade("is-valid-openai-tools-call", output=nested, config=TOOLS).passed
    assert not grade("is-valid-openai-tools-call", output="get_weather()", config=TOOLS).passed
    assert not grade("is-valid-openai-tools-call", output=_call("{}"), config={}).passed


def test_the_not_form_of_the_tools_call_gives_the_same_verdict_as_promptfoo() -> None:
    # promptfoo's handler never reads ``inverse``: kept
    good, bad = _call('{"city": "Paris"}'), _call("{}")
    assert grade("not-is-valid-openai-tools-call", output=good, config=TOOLS).passed is True
    assert grade("not-is-valid-openai-tools-call", output=bad, config=TOOLS).passed is False


# --- markup and SQL in Node.js -------------------------------------------------------------


@NEEDS_NODE
def test_a_missing_npm_package_is_an_error_that_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COALMINE_PROMPTFOO", raising=False)
    monkeypatch.setenv("PATH", str(Path(shutil.which("node") or "node").parent))
    monkeypatch.delenv("NODE_PATH", raising=False)
    promptfoo_install.cache_clear()
    try:
        with pytest.raises(HandlerError, match=r"npm install promptfoo@0\.121\.20"):
            grade("is-sql", None, "SELECT 1")
    finally:
        promptfoo_install.cache_clear()
