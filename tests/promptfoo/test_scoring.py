"""promptfoo's scoring rules: hand-computed cases, then rows captured from the real promptfoo.

``fixtures/scoring/*.yaml`` were run with promptfoo 0.121.20 and the ``echo`` provider; the
``*.expected.json`` beside them keep, trimmed, what promptfoo reported per row. Here the echo
output comes from our ``render_prompt``, each assertion is graded by a small stand-in for the
few deterministic graders the fixtures use, and ``score_row`` must give promptfoo's verdicts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.nunjucks import TemplateError, render_assertion_value, render_prompt
from coalmine.promptfoo.scoring import (
    AssertionOutcome,
    AssertSetOutcome,
    FailureReason,
    RowOutcome,
    empty_output_row,
    error_row,
    graded_row,
    score_row,
)

FIXTURES = Path(__file__).parent / "fixtures" / "scoring"


def outcome(
    kind: str = "contains",
    passed: bool = True,
    score: float | None = None,
    reason: str | None = None,
    **fields: Any,
) -> AssertionOutcome:
    assertion = Assertion.model_validate({"type": kind, **fields})
    return AssertionOutcome(
        assertion,
        passed,
        (1.0 if passed else 0.0) if score is None else score,
        reason
        if reason is not None
        else ("Assertion passed" if passed else f"failed {fields.get('value', kind)}"),
    )


def assert_set(*children: AssertionOutcome, **fields: Any) -> AssertSetOutcome:
    raw = [c.assertion.model_dump(by_alias=True, exclude_unset=True) for c in children]
    return AssertSetOutcome(
        Assertion.model_validate({"type": "assert-set", "assert": raw, **fields}), children
    )


# --- hand-computed rules ------------------------------------------------------------------


def test_weighted_mean_and_failure() -> None:
    result = score_row([outcome(weight=2), outcome(passed=False, value="b", weight=1)])
    assert result.score == pytest.approx(2 / 3)
    assert not result.passed
    assert result.reason == "failed b"


@pytest.mark.parametrize(
    ("threshold", "passed", "reason"),
    [
        (0.6, True, "Aggregate score 0.67 ≥ 0.6 threshold"),
        (0.7, False, "Aggregate score 0.67 < 0.7 threshold"),
        (2 / 3, True, "Aggregate score 0.67 ≥ 0.6666666666666666 threshold"),
    ],
)
def test_threshold_decides_alone(threshold: float, passed: bool, reason: str) -> None:
    result = score_row([outcome(weight=2), outcome(passed=False, weight=1)], threshold=threshold)
    assert (result.passed, result.reason) == (passed, reason)


def test_threshold_reason_rounds_half_up() -> None:
    # 1·1 / (1 + 7) = 0.125 exactly; JavaScript's toFixed(2) gives 0.13.
    result = score_row([outcome(), outcome(passed=False, weight=7)], threshold=0.1)
    assert result.reason == "Aggregate score 0.13 ≥ 0.1 threshold"


def test_threshold_zero_passes_everything() -> None:
    result = score_row([outcome(passed=False)], threshold=0)
    assert (result.passed, result.score, result.reason) == (
        True,
        0.0,
        "Aggregate score 0.00 ≥ 0 threshold",
    )


def test_weight_zero_passes_and_does_not_count() -> None:
    result = score_row([outcome(), outcome(passed=False, reason="nope", weight=0)])
    assert (result.passed, result.score, result.reason) == (True, 1.0, "All assertions passed")
    weightless = result.component_results[1]
    assert (weightless.passed, weightless.score, weightless.reason) == (True, 0.0, "nope")


def test_only_weight_zero_scores_zero() -> None:
    result = score_row([outcome(passed=False, weight=0)])
    assert (result.passed, result.score) == (True, 0.0)


def test_last_failure_reason_wins() -> None:
    result = score_row(
        [outcome(passed=False, reason="first"), outcome(), outcome(passed=False, reason="last")]
    )
    assert result.reason == "last"


def test_empty_reason_does_not_fail() -> None:
    # promptfoo tests the failure reason, not the pass: a failure without a reason passes.
    assert score_row([outcome(passed=False, reason="")]).passed


def test_no_assertions() -> None:
    result = score_row([])
    assert (result.passed, result.score, result.reason, result.has_assertions) == (
        True,
        1.0,
        "No assertions",
        False,
    )


def test_comparison_assertions_are_skipped() -> None:
    result = score_row([outcome("select-best", passed=False)])
    assert (result.passed, result.score, result.reason, result.component_results) == (
        True,
        0.0,
        "All assertions passed",
        (),
    )


def test_assert_set_is_one_entry_with_its_threshold() -> None:
    result = score_row([assert_set(outcome(), outcome(passed=False, reason="nope"), threshold=0.5)])
    entry, *children = result.component_results
    assert (entry.passed, entry.score, entry.reason, entry.assertion) == (
        True,
        0.5,
        "Aggregate score 0.50 ≥ 0.5 threshold",
        None,
    )
    assert entry.metadata == {
        "assertionSet": {"type": "assert-set", "assertionCount": 2, "threshold": 0.5}
    }
    assert [c.passed for c in children] == [True, False]
    assert (result.passed, result.score, result.reason) == (True, 0.5, "All assertions passed")


def test_assert_set_weight_zero_still_fails() -> None:
    # Kept promptfoo bug: only runAssertion forces weight 0 to pass, and sets bypass it.
    result = score_row([outcome(), assert_set(outcome(passed=False, reason="nope"), weight=0)])
    assert (result.passed, result.score, result.reason) == (False, 1.0, "nope")


def test_assert_set_reason_comes_after_plain_ones() -> None:
    result = score_row(
        [
            assert_set(outcome(passed=False, reason="in set")),
            outcome(passed=False, reason="plain, later"),
        ]
    )
    assert result.reason == "in set"


def test_named_scores_are_weighted_and_normalised() -> None:
    result = score_row(
        [
            outcome(metric="A", weight=3),
            outcome(passed=False, metric="A"),
            outcome(metric="{{ m }}"),
            assert_set(
                outcome(metric="A"),
                outcome(passed=False, metric="B", weight=3),
                metric="S",
                weight=2,
            ),
        ],
        variables={"m": "dyn"},
    )
    # A: (1·3 + 0·1 + set child 1 at weight 1·2) / (3 + 1 + 2) = 5/6; B: 0 at weight 3·2;
    # S: the set's 0.25 at weight 2; score: (3 + 0 + 1 + 0.25·2) / 7.
    assert result.named_scores == {"A": pytest.approx(5 / 6), "dyn": 1.0, "S": 0.25, "B": 0.0}
    assert result.named_score_weights == {"A": 6, "dyn": 1, "S": 2, "B": 6}
    assert result.score == pytest.approx(4.5 / 7)


def test_child_metric_equal_to_set_metric_is_counted_once() -> None:
    result = score_row([assert_set(outcome(metric="S"), outcome(passed=False), metric="S")])
    assert (result.named_scores, result.named_score_weights) == ({"S": 0.5}, {"S": 1})


def test_grader_named_scores_join_the_row() -> None:
    scored = AssertionOutcome(
        Assertion(type="javascript", weight=2), True, 1.0, "ok", named_scores={"x": 0.5}
    )
    result = score_row([scored])
    assert (result.named_scores, result.named_score_weights) == ({"x": 0.5}, {"x": 2})


def test_rendered_value_is_noted() -> None:
    graded = AssertionOutcome(
        Assertion(type="contains", value="{{ a }}"), True, 1.0, "ok", rendered_value="A"
    )
    assert score_row([graded]).component_results[0].metadata == {"renderedAssertionValue": "A"}


def test_redteam_guardrail_failure_passes() -> None:
    result = score_row([outcome("guardrails", passed=False, config={"purpose": "redteam"})])
    assert (result.passed, result.reason) == (True, "Content failed guardrail safety checks")


def test_row_outcomes() -> None:
    failed = graded_row(score_row([outcome(passed=False, reason="why")]))
    assert (failed.success, failed.failure_reason, failed.error, failed.status) == (
        False,
        FailureReason.ASSERT,
        "why",
        "fail",
    )
    passed = graded_row(score_row([outcome()]))
    assert (passed.failure_reason, passed.error, passed.status) == (
        FailureReason.NONE,
        None,
        "pass",
    )
    assert error_row("boom") == RowOutcome(False, 0.0, FailureReason.ERROR, "boom", {})
    assert error_row("boom").status == "error"
    empty = empty_output_row()
    assert (empty.failure_reason, empty.error, empty.status) == (
        FailureReason.NONE,
        "No output",
        "fail",
    )


# --- rows captured from promptfoo ---------------------------------------------------------


def _grade(assertion: Assertion, output: str, variables: dict[str, Any]) -> AssertionOutcome:
    """A stand-in for the deterministic graders the fixtures use (promptfoo's reasons)."""
    value = render_assertion_value(assertion.value, variables)
    kind, inverse = assertion.base_type, assertion.negated
    neg = "not " if inverse else ""
    if kind == "contains":
        hit, reason = str(value) in output, f'Expected output to {neg}contain "{value}"'
    elif kind == "icontains":
        hit, reason = (
            str(value).lower() in output.lower(),
            f'Expected output to {neg}contain "{value}"',
        )
    elif kind == "equals":
        hit, reason = output == str(value), f'Expected output "{output}" to {neg}equal "{value}"'
    elif kind == "starts-with":
        if not value:
            raise ValueError(
                'Invariant failed: "starts-with" assertion type must have a string value'
            )
        hit, reason = output.startswith(value), f'Expected output to {neg}start with "{value}"'
    elif kind == "regex":
        if not value:
            raise ValueError('Invariant failed: "regex" assertion type must have a string value')
        try:
            hit, reason = (
                bool(re.search(value, output)),
                f'Expected output to {neg}match regex "{value}"',
            )
        except re.error:  # the one broken pattern of the fixture, in JavaScript's words
            message = f"Invalid regular expression: /{value}/: Unterminated group"
            return AssertionOutcome(assertion, False, 0.0, f"Invalid regex pattern: {message}")
    elif kind == "is-json":
        hit, reason = _parses(output), "Expected output to be valid JSON"
    elif kind == "contains-json":
        hit = any(_parses(output, at) for at, ch in enumerate(output) if ch in "[{")
        reason = "Expected output to contain valid JSON"
    else:
        raise ValueError(f"Unknown assertion type: {assertion.type}")
    passed = hit != inverse
    if kind == "is-json" and inverse and not passed:
        reason = "Expected output to be valid JSON"
    return AssertionOutcome(
        assertion,
        passed,
        1.0 if passed else 0.0,
        "Assertion passed" if passed else reason,
        rendered_value=value,
    )


def _parses(text: str, at: int = 0) -> bool:
    try:
        json.JSONDecoder().raw_decode(text, at) if at else json.loads(text)
    except ValueError:
        return False
    return True


def _run_row(prompt: str, test: dict[str, Any]) -> RowOutcome:
    try:
        rendered = render_prompt(prompt, test.get("vars", {}))
        outcomes: list[AssertionOutcome | AssertSetOutcome] = []
        for raw in test.get("assert", []):
            assertion = Assertion.model_validate(raw)
            if assertion.type == "assert-set":
                children = tuple(
                    _grade(child, rendered.text, rendered.vars)
                    for child in assertion.children or ()
                )
                outcomes.append(AssertSetOutcome(assertion, children))
            else:
                outcomes.append(_grade(assertion, rendered.text, rendered.vars))
        return graded_row(
            score_row(outcomes, threshold=test.get("threshold"), variables=rendered.vars)
        )
    except (TemplateError, ValueError) as exc:
        return error_row(str(exc))


def _captured(name: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    config = yaml.safe_load((FIXTURES / f"{name}.yaml").read_text(encoding="utf-8"))
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text(encoding="utf-8"))
    return [
        (config["prompts"][row["promptIdx"]], config["tests"][row["testIdx"]], row)
        for row in expected["results"]
    ]


ROWS = _captured("scoring") + _captured("templates")


@pytest.mark.parametrize(
    ("prompt", "test", "expected"),
    ROWS,
    ids=lambda x: x.get("description", "") if isinstance(x, dict) else "",
)
def test_rows_match_promptfoo(prompt: str, test: dict[str, Any], expected: dict[str, Any]) -> None:
    row = _run_row(prompt, test)
    assert int(row.failure_reason) == expected["failureReason"], row.error
    assert row.success == expected["success"]
    assert row.score == expected["score"]
    assert row.named_scores == expected["namedScores"]
    if expected["failureReason"] == 2:
        return
    assert row.error == expected["error"]
    grading = row.grading
    assert grading is not None
    want = expected["gradingResult"]
    assert (grading.passed, grading.score, grading.reason) == (
        want["pass"],
        want["score"],
        want["reason"],
    )
    if "namedScores" in want:
        assert grading.named_scores == want["namedScores"]
        assert grading.named_score_weights == want.get("namedScoreWeights", {})
    got = [
        {
            "pass": c.passed,
            "score": c.score,
            "reason": c.reason,
            "type": c.assertion.type if c.assertion else None,
            **(
                {"assertionSet": c.metadata["assertionSet"]} if "assertionSet" in c.metadata else {}
            ),
            **(
                {"renderedAssertionValue": c.metadata["renderedAssertionValue"]}
                if "renderedAssertionValue" in c.metadata
                else {}
            ),
            **({"namedScores": dict(c.named_scores)} if c.named_scores is not None else {}),
        }
        for c in grading.component_results
    ]
    assert got == want["componentResults"]


def test_template_rows_echo_the_rendered_prompt() -> None:
    for prompt, test, expected in _captured("templates"):
        if expected["failureReason"] != 2:
            assert render_prompt(prompt, test["vars"]).text == expected["output"]
