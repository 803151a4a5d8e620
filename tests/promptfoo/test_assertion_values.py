"""Assertion values as promptfoo 0.121.20's ``runAssertion`` and handlers read them.

Each expected value is worked out by hand from promptfoo's code (``runAssertion``,
``processFileReference``, ``normalizeScriptResult``, the ``equals``/``contains*`` handlers and
``AssertionsResult``), and was checked by running promptfoo on the same assertions; the parity
folder ``fixtures/parity/assertion_values`` runs them three ways.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from coalmine.graders.base import grader_configs
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.assertions import map_assertion
from coalmine.promptfoo.handlers import HandlerCall, handle
from coalmine.promptfoo.matrix.filerefs import load_file_refs
from coalmine.promptfoo.node import NodeRuntime
from coalmine.promptfoo.python_calls import PythonScriptError, script_verdict
from coalmine.promptfoo.verdicts import HandlerError, Verdict
from coalmine.specs.suite import load_suite
from tests.promptfoo.test_run import NEEDS_NODE, evaluate, fixed

pytestmark = pytest.mark.usefixtures("fast_python")


def grade(assertion: dict[str, Any], output: str) -> Verdict:
    """The verdict of promptfoo's handler (``value`` left out of ``assertion``: undefined)."""
    parsed = Assertion.model_validate(assertion)

    async def go() -> Verdict:
        call = HandlerCall(
            assertion=parsed, value=parsed.value, output=output, text=output, provider={},
            provider_response={"output": output}, prompt="", variables={}, latency_ms=0,
            cost=None, base_dir=Path.cwd(), node=NodeRuntime(), env={},
        )  # fmt: skip
        return await handle(call)

    return anyio.run(go)


def verdict_of(assertion: dict[str, Any], output: str) -> tuple[bool, float]:
    found = grade(assertion, output)
    return found.passed, found.score


# --- file:// values of an inline test -----------------------------------------------------------


def test_a_txt_value_is_trimmed_and_json_yaml_values_are_parsed(tmp_path: Path) -> None:
    (tmp_path / "greeting.txt").write_text("  Hello Ada \n\n", encoding="utf-8")
    (tmp_path / "words.yaml").write_text("- Hello\n- Ada\n", encoding="utf-8")
    (tmp_path / "object.json").write_text('{"a": [1, 2]}', encoding="utf-8")
    row = fixed(
        {"type": "equals", "value": "file://greeting.txt"},  # "Hello Ada", trimmed
        {"type": "contains-all", "value": "file://words.yaml"},  # ["Hello", "Ada"]
        {"type": "contains-all", "value": ["file://greeting.txt", "{{ name }}"]},
        base_dir=tmp_path,
    )
    result = evaluate(row)
    assert [c.passed for c in result.outcome.grading.component_results] == [True, True, True]
    as_json = evaluate(fixed({"type": "equals", "value": "file://object.json"},
                             output='{"a":[1,2]}', base_dir=tmp_path))  # fmt: skip
    assert as_json.outcome.success is True  # the parsed object, deep-equal to the output's JSON


@pytest.mark.parametrize("value", ["file://notes.md", ["x", "file://notes.md"]])
def test_a_value_file_of_another_type_is_an_error(tmp_path: Path, value: Any) -> None:
    (tmp_path / "notes.md").write_text("Hello Ada", encoding="utf-8")
    result = evaluate(fixed({"type": "contains-any", "value": value}, base_dir=tmp_path))
    assert result.outcome.status == "error"
    assert result.outcome.error == f"Error: Unsupported file type: {tmp_path / 'notes.md'}"


def test_a_value_in_a_tests_file_is_read_whole_and_untrimmed(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text(" Hello \n", encoding="utf-8")
    test = {"assert": [{"type": "equals", "value": "file://notes.md"}]}
    assert load_file_refs(test, base_dir=tmp_path) == {
        "assert": [{"type": "equals", "value": " Hello \n"}]
    }


# --- a JavaScript file's answer as the value ---------------------------------------------------

EXPECTED_JS = """\
module.exports = (output, context) => `Hello ${context.vars.name}`;
module.exports.words = () => ['Hello', 'Ada'];
module.exports.nothing = () => undefined;
module.exports.yes = () => true;
module.exports.fails = () => { throw new Error('boom'); };
"""


@NEEDS_NODE
def test_a_javascript_file_gives_the_value_of_any_type(tmp_path: Path) -> None:
    (tmp_path / "expected.js").write_text(EXPECTED_JS, encoding="utf-8")
    row = fixed(
        {"type": "equals", "value": "file://expected.js"},  # "Hello Ada"
        {"type": "contains-all", "value": "file://expected.js:words"},
        {"type": "not-equals", "value": "file://expected.js:nothing"},  # stays the reference
        base_dir=tmp_path,
    )
    result = evaluate(row)
    assert [c.passed for c in result.outcome.grading.component_results] == [True, True, True]


@NEEDS_NODE
@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("yes", 'Error: Script for "equals" assertion returned a boolean. Only '),
        ("fails", "Error: boom"),
    ],
)
def test_a_javascript_value_that_throws_or_is_boolean_is_an_error(
    tmp_path: Path, function: str, error: str
) -> None:
    (tmp_path / "expected.js").write_text(EXPECTED_JS, encoding="utf-8")
    row = fixed({"type": "equals", "value": f"file://expected.js:{function}"}, base_dir=tmp_path)
    result = evaluate(row)
    assert result.outcome.status == "error"
    assert result.outcome.error.startswith(error)


# --- what a python assertion may answer ----------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        ([1], ' Got instead:\n{\n  "0": 1\n}'),  # a list is an object: {...[1]}
        ((1, 2), ' Got instead:\n{\n  "0": 1,\n  "1": 2\n}'),
        ([], " Got instead:\n{}"),
        ({"score": 1, "reason": "x"}, ' Got instead:\n{\n  "score": 1,\n  "reason": "x"\n}'),
        (None, " Instead got:\nnull"),  # parseFloat("null") is NaN
    ],
)
def test_a_python_answer_that_is_no_verdict_fails(answer: Any, shown: str) -> None:
    with pytest.raises(PythonScriptError) as info:
        script_verdict(answer, threshold=None, inverse=False, suffix=None)
    shape = "Python assertion must return a boolean, number, or {pass, score, reason} object."
    assert str(info.value) == shape + shown


# --- equals and the contains family in compat ---------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("contains-any", (False, 0.0)),  # some() of nothing
        ("contains-all", (True, 1.0)),  # every() of nothing
        ("icontains-any", (False, 0.0)),
        ("icontains-all", (True, 1.0)),
        ("not-contains-any", (True, 1.0)),
        ("not-contains-all", (False, 0.0)),
        ("not-icontains-any", (True, 1.0)),
        ("not-icontains-all", (False, 0.0)),
    ],
)
def test_an_empty_list_is_a_value(kind: str, expected: tuple[bool, float]) -> None:
    assert verdict_of({"type": kind, "value": []}, "anything") == expected


def test_the_reasons_are_promptfoos() -> None:
    assert grade({"type": "contains-any", "value": []}, "x").reason == (
        'Expected output to contain one of ""'
    )
    assert grade({"type": "not-contains-all", "value": [1, None]}, "1 null").reason == (
        "Expected output to not contain all of [1, ]. Missing: []"
    )


def test_equals_null_compares_with_the_outputs_json() -> None:
    assert verdict_of({"type": "equals", "value": None}, "null") == (True, 1.0)
    failed = grade({"type": "equals", "value": None}, "undefined")
    assert (failed.passed, failed.reason) == (False, 'Expected output "undefined" to equal "null"')
    assert verdict_of({"type": "equals"}, "undefined") == (True, 1.0)  # no value: undefined
    assert verdict_of({"type": "equals", "value": [1, 2]}, "[1, 2.0]") == (True, 1.0)
    assert verdict_of({"type": "equals", "value": 1.0}, "1") == (True, 1.0)


@pytest.mark.parametrize(
    ("kind", "value", "output", "passed"),
    [
        ("icontains", "straße", "STRASSE", False),  # toLowerCase keeps ß; casefold would not
        ("icontains", "FINE", "\ufb01ne", False),  # the ligature lower-cases to itself
        ("icontains", "ÉTÉ", "un été", True),
        ("icontains-any", ["straße", "x"], "STRASSE", False),
        ("icontains-all", ["ß", "ss"], "STRASSE Maß", True),
    ],
)
def test_icontains_lowercases_as_javascript(
    kind: str, value: Any, output: str, passed: bool
) -> None:
    assert grade({"type": kind, "value": value}, output).passed is passed


@pytest.mark.parametrize(
    ("assertion", "error"),
    [
        ({"type": "contains", "value": True}, '"contains" assertion type must have a string'),
        ({"type": "contains-any", "value": 0}, '"contains-any" assertion type must have a value'),
        ({"type": "icontains-all", "value": {"a": 1}}, "must have an array value"),
    ],
)
def test_values_promptfoo_rejects_make_the_row_an_error(
    assertion: dict[str, Any], error: str
) -> None:
    with pytest.raises(HandlerError) as info:
        grade(assertion, "true 0")
    assert error in info.value.message


# --- negative weights ---------------------------------------------------------------------------


def test_a_negative_weight_is_graded_and_weighs_as_promptfoo_weighs_it() -> None:
    assert map_assertion(Assertion(type="equals", value="x", weight=-1)).runtime == "promptfoo"
    assert map_assertion(Assertion(type="starts-with", value="x", weight=-1)).runtime == "grader"
    alone = evaluate(fixed({"type": "equals", "value": "Hello Ada", "weight": -1}))
    # total weight -1 <= 0: score 0, and the row passes (no assertion failed)
    assert (alone.outcome.success, alone.outcome.score) == (True, 0.0)
    mixed = evaluate(
        fixed(
            {"type": "equals", "value": "Hello Ada", "weight": 2},
            {"type": "equals", "value": "Bye", "weight": -1},
        )
    )
    # (2 * 1 + -1 * 0) / (2 - 1) = 2; the failing equals fails the row
    assert (mixed.outcome.success, mixed.outcome.score) == (False, 2.0)


def test_a_native_suites_negative_weight_is_a_clean_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    lines = [
        {"id": "fine", "prompt": "x", "graders": [{"type": "is-json"}]},
        {"id": "heavy", "prompt": "x", "graders": [{"type": "is-json", "weight": -1}]},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    suite = load_suite(path, grader_configs=grader_configs())
    [bad] = suite.bad
    assert str(bad) == (
        f"{path}:2: case 'heavy': graders.0.weight: Input should be greater than or equal to 0"
    )
