"""promptfoo's calling conventions: JSON as Node writes it, exec answers, result rules."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from coalmine.providers._promptfoo import (
    ConventionError,
    call_arguments,
    call_context,
    call_options,
    exec_output,
    js_json,
    js_number,
    read_answer,
)
from coalmine.providers.base import CallContext


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"), (0.2, "0.2"), (-2.5, "-2.5"), (0.0, "0"), (-0.0, "0"), (123.0, "123"),
        (1e21, "1e+21"), (1.5e300, "1.5e+300"), (1e20, "100000000000000000000"),
        (1e16, "10000000000000000"), (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (1e-6, "0.000001"),
        (0.00001, "0.00001"), (123.456, "123.456"), (float("nan"), "null"),
        (float("inf"), "null"),
    ],
)  # fmt: skip
def test_numbers_are_written_as_javascript_writes_them(value: float, text: str) -> None:
    assert js_number(value) == text


def test_json_is_compact_keeps_non_ascii_and_order() -> None:
    value = {"b": [1, 2.0, True, None], "a": {"é": 'ü\n"✓\u001f'}, 3: (0.5,)}
    assert js_json(value) == '{"b":[1,2,true,null],"a":{"é":"ü\\n\\"✓\\u001f"},"3":[0.5]}'
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        js_json({"x": {1}})


@pytest.mark.parametrize(
    ("stdout", "answer"),
    [
        ("  answer \n\n", "answer"),
        ("\x1b[32m  inside \x1b[0m\n", "  inside "),  # trimmed first, then stripped
        ("\ufeff\u00a0x\u3000", "x"),  # JavaScript's whitespace
        ("\x1c x \x1c", "\x1c x \x1c"),  # not JavaScript whitespace (Python's strip would take it)
        ("\x1b[1;31mred\x1b[0m \x1bMx", "red x"),
        ("", ""),
    ],
)
def test_exec_answer_is_trimmed_then_stripped_of_ansi(stdout: str, answer: str) -> None:
    assert exec_output(stdout) == answer


def test_a_relative_base_path_is_resolved_against_the_config_folder(tmp_path: Path) -> None:
    options = {"id": "x", "config": {"t": 1, "basePath": "sub/.."}, "env": {}}
    assert call_options(options, tmp_path) == {
        "id": "x",
        "config": {"t": 1, "basePath": str(tmp_path.resolve())},
        "env": {},
    }
    absolute = {"config": {"basePath": "/elsewhere"}}
    assert call_options(absolute, tmp_path) == absolute
    assert call_options({}, tmp_path) == {}


def test_the_context_holds_the_vars() -> None:
    assert call_context(CallContext("c", "A")) == {"vars": {}}
    assert call_context(CallContext("c", "A", vars={"q": [1]})) == {"vars": {"q": [1]}}


def test_a_promptfoo_rows_context_adds_its_prompt_test_and_repeat_after_the_vars() -> None:
    extra = {"prompt": {"raw": "{{q}}", "label": "p"}, "test": {"vars": {"q": 1}}, "repeatIndex": 1}
    context = call_context(CallContext("c", "A", vars={"q": 1}, promptfoo=extra))
    assert context == {"vars": {"q": 1}, **extra}
    assert list(context) == ["vars", "prompt", "test", "repeatIndex"]


def test_a_yaml_date_crosses_as_the_empty_object_promptfoo_makes_of_it() -> None:
    when = {"day": date(2024, 5, 1), "at": datetime(2024, 5, 1, 10, 20, tzinfo=UTC)}
    assert js_json(when) == '{"day":{},"at":{}}'


def test_a_value_json_cannot_hold_is_a_convention_error() -> None:
    with pytest.raises(ConventionError, match="cannot be passed as JSON: Object of type set"):
        call_arguments("p", {}, {"vars": {"tags": {"a"}}})


def test_arguments_go_through_json() -> None:
    args = call_arguments("p", {"config": {"t": 1.0, "k": (1, 2)}}, {"vars": {}})
    assert args == ["p", {"config": {"t": 1, "k": [1, 2]}}, {"vars": {}}]
    assert isinstance(args[1]["config"]["t"], int)


@pytest.mark.parametrize(
    ("result", "text", "usage"),
    [
        ({"output": "hi"}, "hi", None),
        ({"output": ""}, "", None),
        ({"output": {"a": 1.0, "b": [None]}}, '{"a":1,"b":[null]}', None),
        ({"output": 2.5}, "2.5", None),
        ({"output": "ok", "error": ""}, "ok", None),
        ({"output": "ok", "error": None}, "ok", None),
        ({"output": "ok", "error": 0}, "ok", None),
        ({"output": "ok", "error": False}, "ok", None),
        ({"output": "t", "tokenUsage": {"total": 7, "prompt": 3, "completion": 4, "cached": 1,
                                        "numRequests": 1, "x": "y"}}, "t",
         {"total_tokens": 7, "prompt_tokens": 3, "completion_tokens": 4, "cached_tokens": 1}),
        ({"output": "t", "tokenUsage": {"prompt": True}}, "t", None),
    ],
)  # fmt: skip
def test_answers(result: Any, text: str, usage: dict[str, int] | None) -> None:
    answer = read_answer(result, "call_api")
    assert (answer.text, answer.usage) == (text, usage)


@pytest.mark.parametrize(
    ("output", "data"),
    [("hi", None), ({"a": [1, None]}, {"a": [1, None]}), (0, 0), (False, False), ([], [])],
)
def test_an_output_that_is_not_a_string_is_kept_as_its_data(output: Any, data: Any) -> None:
    answer = read_answer({"output": output}, "call_api")
    assert answer.data == data and type(answer.data) is type(data)


def test_the_other_fields_of_a_response_are_kept_as_they_came() -> None:
    result = {"output": "ok", "cost": 0.5, "finishReason": "stop", "guardrails": {"flagged": True},
              "logProbs": [-0.1, -0.2], "metadata": {"source": "kb"}, "error": None}  # fmt: skip
    answer = read_answer(result, "call_api")
    assert answer.fields == {
        "guardrails": {"flagged": True}, "logProbs": [-0.1, -0.2], "metadata": {"source": "kb"},
    }  # fmt: skip
    assert read_answer({"output": "ok", "tokenUsage": {"total": 1}}, "call_api").fields is None


@pytest.mark.parametrize(
    ("result", "message", "kind"),
    [
        ({"error": "bad input", "output": "ignored"}, "bad input", "crash"),
        ({"error": {}}, "{}", "crash"),  # an empty object is truthy in JavaScript
        ({"error": ["x"]}, '["x"]', "crash"),
        ({"output": None}, "No output", "bad_output"),
        ({"error": ""}, "No output", "bad_output"),
        ("just text", 'instead got: "just text"', "bad_output"),
        ({"result": 1}, 'instead got: {"result":1}', "bad_output"),
        (None, "instead got: null", "bad_output"),
        ({"output": {1, 2}}, "Python error: Object of type set is not JSON serializable",
         "bad_output"),
    ],
)  # fmt: skip
def test_failures(result: Any, message: str, kind: str) -> None:
    with pytest.raises(ConventionError) as info:
        read_answer(result, "call_api")
    assert message in str(info.value)
    assert info.value.kind == kind


def test_the_result_goes_through_json_first() -> None:
    answer = read_answer({"output": ("a", 1), 5: "x"}, "f")
    assert json.loads(answer.text) == ["a", 1]
