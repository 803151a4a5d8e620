"""The canary gate: composite score, PASS/FAIL with its reasons, and the exit code."""

from __future__ import annotations

import pytest

from coalmine.engine.verdict import EPSILON, composite_score, decide, exit_code
from coalmine.graders.keyword import KeywordConfig, score_keywords
from coalmine.results import CanaryRun, CaseResult, Grade, InvalidSpecRecord, RunTotals, Verdict

THRESHOLDS = {"keyword": 0.8, "structural": 0.7, "llm-judge": 0.7}


def grade(score: float | None, weight: float = 1.0) -> Grade:
    if score is None:
        return Grade(weight=weight, skipped=True, reason="no judge configured")
    return Grade(score=score, passed=None, weight=weight)


def test_composite_weighted_sum() -> None:
    # 0.3·1 + 0.3·0.5 + 0.4·0.75 = 0.3 + 0.15 + 0.3 = 0.75 (weights already sum to 1)
    assert composite_score([(0.3, 1.0), (0.3, 0.5), (0.4, 0.75)]) == pytest.approx(0.75)


def test_composite_normalises_weights() -> None:
    # (2·1 + 1·0 + 1·1) / (2 + 1 + 1) = 3 / 4 = 0.75
    assert composite_score([(2, 1.0), (1, 0.0), (1, 1.0)]) == 0.75


@pytest.mark.parametrize("weighted", [[], [(0.0, 1.0), (0.0, 0.5)]])
def test_composite_rejects_zero_weight_sum(weighted: list[tuple[float, float]]) -> None:
    with pytest.raises(ValueError, match="weights must sum to more than 0"):
        composite_score(weighted)


def test_decide_pass_with_pinned_weights() -> None:
    grades = {
        "keyword": grade(1.0, 0.3),
        "structural": grade(0.5, 0.3),
        "llm-judge": grade(0.75, 0.4),
    }
    decision = decide(grades, THRESHOLDS)
    # 0.3·1 + 0.3·0.5 + 0.4·0.75 = 0.75 >= 0.7; lowest grader 0.5 is not < 0.5
    assert decision.verdict == "PASS"
    assert decision.composite == pytest.approx(0.75)
    assert decision.failures == []


def test_decide_fail_below_floor_despite_composite() -> None:
    grades = {"keyword": grade(1.0, 2), "structural": grade(0.0, 1), "llm-judge": grade(1.0, 1)}
    decision = decide(grades, THRESHOLDS)
    # (2·1 + 1·0 + 1·1) / 4 = 0.75 >= 0.7, but structural 0.0 < 0.5 floor
    assert decision.verdict == "FAIL"
    assert decision.composite == 0.75
    assert decision.failures == [
        "structural scored 0.00, below the 0.50 floor every grader must reach"
    ]


def test_decide_fail_for_a_grader_at_0_49() -> None:
    grades = {
        "keyword": grade(1.0, 0.5),
        "llm-judge": grade(0.49, 0.1),
        "structural": grade(1.0, 0.4),
    }
    decision = decide(grades, THRESHOLDS)
    # (0.5·1 + 0.1·0.49 + 0.4·1) / 1.0 = 0.5 + 0.049 + 0.4 = 0.949 >= 0.7, but 0.49 < 0.5
    assert decision.composite == pytest.approx(0.949)
    assert decision.verdict == "FAIL"
    assert decision.failures == [
        "llm-judge scored 0.49, below the 0.50 floor every grader must reach"
    ]


def test_decide_grader_exactly_at_floor_passes() -> None:
    grades = {"keyword": grade(1.0), "structural": grade(0.5)}
    # (1 + 0.5) / 2 = 0.75 >= 0.7 and 0.5 is not below the 0.5 floor
    assert decide(grades, THRESHOLDS).verdict == "PASS"


def test_decide_composite_exactly_0_7_in_float_passes() -> None:
    # (0.2·0.55 + 0.6·0.75) / 0.8 = (0.11 + 0.45) / 0.8 = 0.56 / 0.8 = 0.7 exactly on paper,
    # 0.6999999999999998 in floats: within EPSILON of 0.7, so it counts as 0.7
    raw = composite_score([(0.2, 0.55), (0.6, 0.75)])
    assert raw < 0.7
    assert 0.7 - raw < EPSILON
    decision = decide({"keyword": grade(0.55, 0.2), "structural": grade(0.75, 0.6)}, THRESHOLDS)
    assert decision.verdict == "PASS"
    assert decision.composite == pytest.approx(0.7)
    assert decision.failures == []


def test_decide_composite_0_69_fails_with_reason() -> None:
    grades = {"keyword": grade(0.88, 0.5), "structural": grade(0.5, 0.5)}
    decision = decide(grades, THRESHOLDS)
    # (0.5·0.88 + 0.5·0.5) / 1.0 = 0.44 + 0.25 = 0.69 < 0.7; no grader below 0.5
    assert decision.composite == pytest.approx(0.69)
    assert decision.verdict == "FAIL"
    assert decision.failures[0] == "composite 0.69 < 0.70"
    # structural 0.5 is under its own 0.7 threshold: named to explain the FAIL
    assert decision.failures[1:] == ["structural 0.50 < 0.70"]


def test_decide_failure_lines_carry_the_grader_explanation() -> None:
    keyword = score_keywords("xss only", KeywordConfig(required=["xss", "csrf", "ssrf"]))
    # 1 of 3 matched: 1 / 3 = 0.3333; weight 1, alone: composite 0.3333
    decision = decide({"keyword": keyword}, THRESHOLDS)
    assert decision.failures == [
        "composite 0.33 < 0.70",
        "keyword scored 0.33, below the 0.50 floor every grader must reach: "
        "missing keywords 'csrf', 'ssrf'",
    ]


def test_decide_near_miss_message_is_not_self_contradictory() -> None:
    grades = {"keyword": grade(0.699)}
    decision = decide(grades, THRESHOLDS)
    # 0.699 < 0.7: a FAIL; "composite 0.70 < 0.70" would contradict itself when printed
    assert decision.verdict == "FAIL"
    assert decision.failures[0] != "composite 0.70 < 0.70"


def test_decide_skipped_grader_drops_out_and_rest_renormalise() -> None:
    grades = {
        "keyword": grade(1.0, 0.3),
        "structural": grade(0.5, 0.3),
        "llm-judge": grade(None, 0.4),
    }
    decision = decide(grades, THRESHOLDS)
    # judge skipped: (0.3·1 + 0.3·0.5) / (0.3 + 0.3) = 0.45 / 0.6 = 0.75
    assert decision.composite == pytest.approx(0.75)
    assert decision.verdict == "PASS"


def test_decide_skipped_grader_is_not_below_the_floor() -> None:
    grades = {"keyword": grade(0.8), "llm-judge": grade(None)}
    decision = decide(grades, THRESHOLDS)
    # only keyword ran: 0.8 / 1 = 0.8
    assert decision.composite == 0.8
    assert decision.verdict == "PASS"


def result(case_id: str, verdict: Verdict) -> CaseResult:
    return CaseResult(
        id=case_id,
        phase="qa",
        title=case_id,
        agent="QA Coordinator",
        verdict=verdict,
        composite_score=1.0 if verdict == "PASS" else 0.0,
        duration_seconds=0.1,
    )


def run(results: list[CaseResult], *, invalid: int = 0, interrupted: bool = False) -> CanaryRun:
    passed = sum(r.verdict == "PASS" for r in results)
    return CanaryRun(
        run_id="01J0000000000000000000TEST",
        timestamp="2025-01-01T00:00:00Z",
        summary=RunTotals(
            total=len(results),
            passed=passed,
            failed=len(results) - passed,
            composite_score=None,
            invalid=invalid,
        ),
        results=results,
        invalid_specs=[
            InvalidSpecRecord(path=f"bench/canaries/qa/bad-{i}.yaml", line=1, id=None, reason="x")
            for i in range(invalid)
        ],
        interrupted=interrupted,
    )


def test_exit_code_all_pass_is_0() -> None:
    assert exit_code(run([result("qa-001", "PASS"), result("qa-002", "PASS")])) == 0


@pytest.mark.parametrize("verdict", ["FAIL", "ERROR"])
def test_exit_code_one_not_passing_is_1(verdict: Verdict) -> None:
    assert exit_code(run([result("qa-001", "PASS"), result("qa-002", verdict)])) == 1


def test_exit_code_no_results_is_1() -> None:
    assert exit_code(run([])) == 1


def test_exit_code_invalid_spec_is_2() -> None:
    assert exit_code(run([result("qa-001", "PASS")], invalid=1)) == 2


def test_exit_code_interrupted_is_3_before_anything_else() -> None:
    assert exit_code(run([result("qa-001", "PASS")], interrupted=True)) == 3
    assert exit_code(run([result("qa-001", "FAIL")], invalid=1, interrupted=True)) == 3
