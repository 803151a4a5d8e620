"""The ``python`` grader: a project function the config enables, called with the output."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

import coalmine.graders.python  # noqa: F401  (registers the grader before builtins list it)
from coalmine.errors import GradeError
from coalmine.graders.base import GradeContext, registry
from coalmine.graders.python import PythonConfig, PythonGrade
from coalmine.results import Grade, ToolCall


def grade(
    function: Callable[..., Any],
    output: str = "the output",
    config: dict[str, Any] | None = None,
    *,
    name: str = "check",
    **context: Any,
) -> Grade:
    """Validate ``config`` as a suite does, then grade ``output`` with ``function`` enabled."""
    item = registry.get("python")
    parsed = item.config.model_validate({"function": name, **(config or {})})
    ctx = GradeContext(
        case_id=context.pop("case_id", "case-1"),
        prompt=context.pop("prompt", "the prompt"),
        functions=context.pop("functions", {name: function}),
        **context,
    )
    return anyio.run(item.grade, parsed, output, ctx)


def grade_error(function: Callable[..., Any], **kwargs: Any) -> GradeError:
    with pytest.raises(GradeError) as caught:
        grade(function, **kwargs)
    return caught.value


def returning(value: Any) -> Callable[[str, dict[str, Any]], Any]:
    def function(output: str, context: dict[str, Any]) -> Any:
        return value

    return function


def test_it_is_registered_with_threshold_one_half_and_no_judge() -> None:
    item = registry.get("python")
    assert (item.name, item.threshold, item.needs_judge, item.config) == (
        "python",
        0.5,
        False,
        PythonConfig,
    )


# -- what the function returns ----------------------------------------------------------------


@pytest.mark.parametrize(("value", "score", "passed"), [(True, 1.0, True), (False, 0.0, False)])
def test_a_bool_is_a_score_of_1_or_0(value: bool, score: float, passed: bool) -> None:
    result = grade(returning(value))
    assert isinstance(result, PythonGrade)
    assert (result.score, result.passed, result.function, result.explain()) == (
        score,
        passed,
        "check",
        "",
    )
    assert isinstance(result.score, float)


@pytest.mark.parametrize(
    ("value", "threshold", "passed"),
    [
        (0.7, 0.5, True),
        (0.7, 0.8, False),
        (0.5, None, True),  # the default threshold is 0.5, and reaching it passes
        (0.49, None, False),
        (0.7, 0.7, True),  # exactly at the threshold
        (0, 0.0, True),  # a threshold of 0 passes everything
        (1, 1.0, True),  # an int is a number too
        (0.999, 1.0, False),
    ],
)
def test_a_number_passes_at_the_threshold(
    value: float, threshold: float | None, passed: bool
) -> None:
    config = {} if threshold is None else {"threshold": threshold}
    result = grade(returning(value), config=config)
    assert (result.score, result.passed) == (float(value), passed)


@pytest.mark.parametrize(("value", "score"), [(True, 1.0), (False, 0.0)])
def test_a_dict_with_only_pass_scores_1_or_0(value: bool, score: float) -> None:
    result = grade(returning({"pass": value}))
    assert (result.score, result.passed, result.explain()) == (score, value, "")


def test_a_dict_with_pass_true_passes_even_at_a_threshold_of_1() -> None:
    result = grade(returning({"pass": True}), config={"threshold": 1.0})
    assert (result.score, result.passed) == (1.0, True)


@pytest.mark.parametrize(("threshold", "passed"), [(0.5, True), (0.8, False)])
def test_a_dict_with_only_score_passes_at_the_threshold(threshold: float, passed: bool) -> None:
    result = grade(returning({"score": 0.7}), config={"threshold": threshold})
    assert (result.score, result.passed) == (0.7, passed)


@pytest.mark.parametrize(
    ("returned", "threshold", "score", "passed"),
    [
        ({"pass": True, "score": 0.2}, 0.5, 0.2, True),  # below the threshold, yet passes
        ({"pass": False, "score": 0.9}, 0.5, 0.9, False),  # above it, yet fails
        ({"pass": False, "score": 1.0}, 0.0, 1.0, False),
        ({"pass": True, "score": 0}, 1.0, 0.0, True),
    ],
)
def test_pass_overrides_the_threshold_when_both_are_given(
    returned: dict[str, Any], threshold: float, score: float, passed: bool
) -> None:
    result = grade(returning(returned), config={"threshold": threshold})
    assert (result.score, result.passed) == (score, passed)


def test_the_reason_is_the_grades_explanation_and_is_kept_in_its_dump() -> None:
    returned = {"pass": False, "score": 0.25, "reason": "1 of 4 columns match"}
    result = grade(returning(returned), name="sql-valid")
    assert result.explain() == "1 of 4 columns match"
    assert result.model_dump(exclude_none=True) == {
        "score": 0.25,
        "passed": False,
        "weight": 1.0,
        "function": "sql-valid",
        "message": "1 of 4 columns match",
    }


def test_a_reason_that_is_not_a_string_is_written_as_one() -> None:
    result = grade(returning({"pass": True, "reason": 42}))
    assert (result.passed, result.explain()) == (True, "42")


def test_without_a_reason_there_is_no_message() -> None:
    result = grade(returning({"score": 1.0}))
    assert result.model_dump(exclude_none=True) == {
        "score": 1.0,
        "passed": True,
        "weight": 1.0,
        "function": "check",
    }
    assert result.explain() == ""


def test_an_async_function_is_awaited() -> None:
    async def check(output: str, context: dict[str, Any]) -> dict[str, Any]:
        await anyio.sleep(0)
        return {"score": 0.75, "reason": f"async saw {output!r}"}

    result = grade(check, output="out", config={"threshold": 0.7})
    assert (result.score, result.passed, result.explain()) == (0.75, True, "async saw 'out'")


def test_a_sync_function_returning_an_awaitable_is_awaited_too() -> None:
    async def later() -> bool:
        return True

    result = grade(lambda output, context: later())
    assert (result.score, result.passed) == (1.0, True)


# -- what the function is given ---------------------------------------------------------------


def test_the_function_gets_the_output_and_the_context() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def check(output: str, context: dict[str, Any]) -> bool:
        seen.append((output, context))
        return True

    inputs = {"expected": "SELECT 1", "metadata": {"db": "pg"}, "vars": {"x": 1}}
    calls = (
        ToolCall(name="search", arguments={"q": "sql"}, id="call-1"),
        ToolCall(name="run_sql"),
    )
    grade(
        check,
        output="SELECT 1;",
        config={"args": {"dialect": "postgres", "strict": True}},
        case_id="sql-7",
        prompt="write the query",
        inputs=inputs,
        tool_calls=calls,
    )
    [(output, context)] = seen
    assert output == "SELECT 1;"
    assert context == {
        "case_id": "sql-7",
        "prompt": "write the query",
        "inputs": {"expected": "SELECT 1", "metadata": {"db": "pg"}, "vars": {"x": 1}},
        # name and arguments only: the call's id is not part of it
        "tool_calls": [
            {"name": "search", "arguments": {"q": "sql"}},
            {"name": "run_sql", "arguments": {}},
        ],
        "args": {"dialect": "postgres", "strict": True},
    }
    assert type(context["inputs"]) is dict


def test_without_args_or_inputs_the_context_has_empty_ones() -> None:
    seen: list[dict[str, Any]] = []

    def check(output: str, context: dict[str, Any]) -> bool:
        seen.append(context)
        return False

    grade(check)
    assert seen == [
        {"case_id": "case-1", "prompt": "the prompt", "inputs": {}, "tool_calls": [], "args": {}}
    ]


def test_the_function_changing_its_context_does_not_change_the_case() -> None:
    def check(output: str, context: dict[str, Any]) -> bool:
        context["inputs"]["expected"] = "tampered"
        context["args"]["extra"] = 1
        return True

    inputs = {"expected": "original"}
    config = {"args": {"k": "v"}}
    item = registry.get("python")
    parsed = item.config.model_validate({"function": "check", **config})
    ctx = GradeContext(case_id="c", prompt="p", inputs=inputs, functions={"check": check})
    anyio.run(item.grade, parsed, "out", ctx)
    assert inputs == {"expected": "original"}
    assert parsed.args == {"k": "v"}


# -- what is an error -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        "yes",
        "0.7",
        1.5,
        -0.1,
        2,
        math.nan,
        math.inf,
        [True],
        {},
        {"reason": "no verdict"},
        {"pass": True, "extra": 1},
        {"score": 0.5, "confidence": 0.9},
        {"pass": "yes"},
        {"pass": 1},
        {"pass": 0.0, "score": 0.0},
        {"score": 1.5},
        {"score": "0.5"},
        {"score": math.nan},
        {"pass": True, "score": -1},
    ],
    ids=repr,
)
def test_anything_else_returned_is_a_grader_error_naming_the_function(value: Any) -> None:
    error = grade_error(returning(value), name="sql-valid")
    assert (error.grader, error.config) == ("python", False)
    assert error.reason.startswith("sql-valid returned ")
    assert error.reason.endswith(
        'expected a bool, a number in [0, 1], or {"pass": bool, "score": float, "reason": str}'
    )
    assert str(error).startswith("python: sql-valid returned ")


def test_the_returned_value_is_shown_in_the_error() -> None:
    assert grade_error(returning(None)).reason.startswith("check returned None; expected")
    assert grade_error(returning(1.5)).reason.startswith("check returned 1.5; expected")
    unknown = grade_error(returning({"pass": True, "extra": 1})).reason
    assert unknown.startswith("check returned {'pass': True, 'extra': 1}; expected")


def test_a_long_returned_value_is_cut_to_200_characters() -> None:
    reason = grade_error(returning("x" * 1000)).reason
    # repr is "'xxx…'": its first 200 characters are the quote and 199 x's
    assert reason.startswith("check returned '" + "x" * 199 + "; expected")


@pytest.mark.parametrize(
    "value", [{"pass": None, "score": 0.9}, {"pass": None}, {"score": None}], ids=repr
)
def test_a_none_pass_or_score_is_a_grader_error(value: dict[str, Any]) -> None:
    error = grade_error(returning(value))
    assert (error.grader, error.config) == ("python", False)
    assert error.reason.startswith("check returned ")


def test_a_function_that_raises_is_a_grader_error_naming_it_and_the_exception() -> None:
    def check(output: str, context: dict[str, Any]) -> bool:
        raise ValueError(f"cannot parse {output!r}")

    error = grade_error(check, name="sql-valid", output="SELEC 1")
    assert (error.grader, error.config) == ("python", False)
    first, _, tail = error.reason.partition("\n")
    assert first == "sql-valid raised ValueError: cannot parse 'SELEC 1'"
    # the end of the traceback says where it was raised
    assert "in check" in tail
    assert tail.endswith("ValueError: cannot parse 'SELEC 1'")
    assert str(error).startswith("python: sql-valid raised ValueError: cannot parse 'SELEC 1'")
    assert error.__cause__ is None and error.__suppress_context__


def test_an_async_function_that_raises_is_a_grader_error_too() -> None:
    async def check(output: str, context: dict[str, Any]) -> bool:
        await anyio.sleep(0)
        raise KeyError("expected")

    error = grade_error(check, name="needs-expected")
    assert error.reason.startswith("needs-expected raised KeyError: 'expected'\n")
    assert error.config is False


def test_a_function_raising_a_grade_error_is_reported_as_its_failure() -> None:
    def check(output: str, context: dict[str, Any]) -> bool:
        raise GradeError("my own", grader="mine", config=True)

    error = grade_error(check)
    assert (error.grader, error.config) == ("python", False)
    assert error.reason.startswith("check raised GradeError: mine: my own\n")


def test_the_traceback_tail_is_cut_to_800_characters() -> None:
    def check(output: str, context: dict[str, Any]) -> bool:
        raise RuntimeError("y" * 2000)

    error = grade_error(check)
    first, _, tail = error.reason.partition("\n")
    assert first == "check raised RuntimeError: " + "y" * 2000
    assert len(tail) == 800 and tail == "y" * 800


def test_a_function_the_config_does_not_enable_is_a_config_error_listing_the_enabled() -> None:
    error = grade_error(
        returning(True),
        name="sql-vaild",
        functions={"sql-valid": returning(True), "json-ok": returning(True)},
    )
    assert (error.grader, error.config) == ("python", True)
    assert error.reason == (
        "python grader 'sql-vaild' is not enabled: list it under 'python_graders:' in the "
        "config (enabled: json-ok, sql-valid)"
    )


def test_with_no_functions_enabled_the_error_says_none() -> None:
    error = grade_error(returning(True), functions={})
    assert error.config is True
    assert error.reason.endswith("(enabled: none)")


# -- the grader's config ----------------------------------------------------------------------


def test_the_config_needs_a_function() -> None:
    with pytest.raises(ValidationError, match="function\n  Field required"):
        PythonConfig.model_validate({})
    with pytest.raises(ValidationError, match="at least 1 character"):
        PythonConfig.model_validate({"function": ""})


@pytest.mark.parametrize("threshold", [-0.01, 1.01, 2])
def test_the_threshold_is_between_0_and_1(threshold: float) -> None:
    with pytest.raises(ValidationError, match="threshold"):
        PythonConfig.model_validate({"function": "f", "threshold": threshold})


@pytest.mark.parametrize("threshold", [0, 1])
def test_the_thresholds_bounds_are_allowed(threshold: float) -> None:
    assert PythonConfig.model_validate({"function": "f", "threshold": threshold}).threshold == (
        threshold
    )


def test_the_config_refuses_an_unknown_key() -> None:
    with pytest.raises(ValidationError, match="treshold\n  Extra inputs are not permitted"):
        PythonConfig.model_validate({"function": "f", "treshold": 0.5})


def test_the_config_defaults() -> None:
    config = PythonConfig.model_validate({"function": "f"})
    assert (config.function, config.threshold, config.args) == ("f", 0.5, {})


def test_args_must_be_a_mapping() -> None:
    with pytest.raises(ValidationError, match="args"):
        PythonConfig.model_validate({"function": "f", "args": ["a"]})
