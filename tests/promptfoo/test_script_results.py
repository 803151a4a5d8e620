"""GradingResults from the config's code, read as promptfoo reads them (hand-computed cases).

A script assertion's own ``componentResults`` follow its entry in the flattened list (with
its ``assertion`` where they name none) and stay inside it; its ``namedScoreWeights`` weigh
its ``namedScores``. An ``assertScoringFunction``'s GradingResult replaces the row's result.
"""

from __future__ import annotations

from typing import Any

import pytest

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.grading import grading_result
from coalmine.promptfoo.python_calls import script_verdict
from coalmine.promptfoo.scoring import AssertionOutcome, AssertSetOutcome, graded_row, score_row
from coalmine.promptfoo.script_results import (
    apply_scoring_result,
    is_grading_result,
    scoring_context,
    script_components,
)

SUBS = [
    {"pass": False, "score": 0, "reason": "sub a"},
    {"pass": True, "score": 1, "reason": "sub b", "assertion": {"type": "equals", "value": "q"}},
]


def scripted(weight: float = 2, metric: str | None = "m") -> AssertionOutcome:
    assertion = Assertion.model_validate(
        {"type": "javascript", "value": "code", "weight": weight, "metric": metric}
    )
    return AssertionOutcome(
        assertion,
        True,
        0.5,
        "js says so",
        named_scores={"x": 1.0},
        named_score_weights={"x": 3.0},
        components=script_components(SUBS, assertion),
        extra={"tokensUsed": {"total": 4}, "comment": "c"},
    )


def plain(passed: bool) -> AssertionOutcome:
    assertion = Assertion.model_validate({"type": "contains", "value": "z"})
    return AssertionOutcome(assertion, passed, float(passed), "ok" if passed else "no z")


def test_a_scripts_components_follow_its_entry_and_never_score() -> None:
    result = score_row([scripted(), plain(False)])
    assert result.score == pytest.approx((0.5 * 2 + 0 * 1) / 3)
    assert (result.passed, result.reason) == (False, "no z")
    assert [c.passed for c in result.component_results] == [True, False, True, False]
    assert [c.reason for c in result.component_results[1:3]] == ["sub a", "sub b"]
    assert (result.assertions_passed, result.assertions_failed) == (2, 2)
    # x: 1.0 weighted by its own weight 3 × the assertion's 2; m: the entry's 0.5
    assert result.named_scores == {"m": 0.5, "x": 1.0}
    assert result.named_score_weights == {"m": 2.0, "x": 6.0}


def test_the_grading_result_keeps_them_inside_and_flattened() -> None:
    document = grading_result(score_row([scripted(), plain(True)]))
    entry, sub_a, sub_b, _ = document["componentResults"]
    assert entry["componentResults"] == SUBS  # as the script gave them
    assert entry["namedScoreWeights"] == {"x": 3.0}
    assert (entry["tokensUsed"], entry["comment"]) == ({"total": 4}, "c")
    assert sub_a == {**SUBS[0], "assertion": entry["assertion"]}  # the parent's assertion
    assert sub_b == SUBS[1]  # its own
    assert entry["assertion"]["type"] == "javascript"


def test_inside_an_assert_set_they_follow_the_script_in_the_set() -> None:
    children = (scripted(weight=1, metric=None), plain(False))
    raw = [c.assertion.model_dump(by_alias=True, exclude_unset=True) for c in children]
    group = AssertSetOutcome(
        Assertion.model_validate({"type": "assert-set", "assert": raw}), children
    )
    result = score_row([group, plain(True)])
    # the set (its contains failed), its script, the script's two, its contains; then the plain
    assert [c.passed for c in result.component_results] == [False, True, False, True, False, True]
    assert result.score == pytest.approx(((0.5 + 0) / 2 + 1) / 2)
    document = grading_result(result)
    inner = document["componentResults"][0]["componentResults"]
    assert [c["pass"] for c in inner] == [True, False, True, False]
    assert inner[0]["componentResults"] == SUBS


def test_a_python_result_in_snake_case_is_read_as_promptfoo_maps_it() -> None:
    verdict = script_verdict(
        {
            "pass_": True,
            "score": 1,
            "reason": "ok",
            "named_scores": {"n": 0.25},
            "component_results": [{"pass_": False, "score": 0, "reason": "inner"}],
        },
        threshold=None,
        inverse=False,
        suffix=None,
    )
    assert verdict.extra["namedScores"] == {"n": 0.25}
    parts = script_components(verdict.extra["componentResults"], None)
    assert [(c.passed, c.reason) for c in parts] == [(False, "inner")]


def test_a_scoring_functions_answer_replaces_the_rows_result() -> None:
    row = score_row([scripted(), plain(False)])
    answer = {"pass": True, "score": 0.9, "reason": "custom", "namedScores": {"q": 1}, "note": 1}
    scored = apply_scoring_result(row, answer)
    assert (scored.passed, scored.score, scored.reason) == (True, 0.9, "custom")
    assert scored.named_scores == {"q": 1.0}
    assert scored.component_results == row.component_results  # not given: kept
    assert grading_result(scored)["note"] == 1
    outcome = graded_row(scored)
    assert (outcome.success, outcome.error, outcome.named_scores) == (True, None, {"q": 1.0})

    replaced = apply_scoring_result(row, {**answer, "componentResults": [{"pass": False}]})
    assert [c.passed for c in replaced.component_results] == [False]


@pytest.mark.parametrize(
    "answer",
    [None, True, 0.5, "yes", {"pass": True, "score": "1", "reason": ""}, {"pass": 1, "score": 1, "reason": ""},
     {"pass": True, "score": 1}, {"pass": True, "score": 1, "reason": "", "componentResults": {}}],
)  # fmt: skip
def test_anything_but_a_grading_result_fails_the_row(answer: Any) -> None:
    assert not is_grading_result(answer)
    scored = apply_scoring_result(score_row([plain(True)]), answer)
    assert (scored.passed, scored.score) == (False, 0.0)
    assert scored.reason == (
        "Scoring function error: assertion scoring function must return a GradingResult"
    )


def test_the_scoring_function_is_given_the_rows_components_and_threshold() -> None:
    document = grading_result(score_row([scripted(), plain(True)]))
    context = scoring_context(0.5, document)
    assert context["threshold"] == 0.5
    assert [c["pass"] for c in context["componentResults"]] == [True, False, True, True]
    assert "threshold" not in scoring_context(None, document)
