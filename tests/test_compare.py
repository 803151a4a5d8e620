"""Comparing two runs: regressions, fixes, new and removed cases, and the tests in words."""

from __future__ import annotations

import pytest

from coalmine._util.stats import mcnemar_exact, wilcoxon_signed_rank
from coalmine.compare import compare_runs
from coalmine.results import CanaryRun, CaseResult, Grade, RunTotals, Verdict

# Scores are multiples of 1/4 so every delta below is exact in binary floating point.


def result(
    case_id: str, verdict: Verdict, composite: float | None, grades: dict[str, float | None]
) -> CaseResult:
    return CaseResult(
        id=case_id,
        phase="qa",
        title=case_id,
        agent="QA",
        verdict=verdict,
        composite_score=composite,
        grader_scores={
            key: Grade(skipped=True) if score is None else Grade(score=score)
            for key, score in grades.items()
        },
        duration_seconds=1.0,
    )


def run(label: str, *results: CaseResult) -> CanaryRun:
    totals = RunTotals.of(list(results), invalid=0)
    return CanaryRun(
        run_id=label, timestamp="2026-04-13T07:30:00Z", summary=totals, results=list(results)
    )


BASE = run(
    "base",
    result("a", "PASS", 1.0, {"keyword": 1.0, "structural": 1.0}),
    result("b", "PASS", 0.75, {"keyword": 0.75}),
    result("c", "FAIL", 0.25, {"keyword": 0.25, "llm-judge": None}),
    result("d", "PASS", 0.75, {"keyword": 0.75}),
    result("e", "FAIL", 0.5, {"keyword": 0.5}),
    result("gone", "PASS", 1.0, {"keyword": 1.0}),
)
NEW = run(
    "new",
    result("fresh", "PASS", 1.0, {"keyword": 1.0}),
    result("a", "FAIL", 0.5, {"keyword": 0.25, "structural": None, "llm-judge": 0.75}),
    result("b", "ERROR", None, {"keyword": 0.75}),
    result("c", "PASS", 1.0, {"keyword": 1.0, "llm-judge": 1.0}),
    result("d", "PASS", 0.75, {"keyword": 0.75}),
    result("e", "ERROR", None, {}),
)


def test_regressions_count_pass_to_fail_and_pass_to_error() -> None:
    comparison = compare_runs(BASE, NEW)
    assert [(c.case_id, c.base_verdict, c.new_verdict) for c in comparison.regressions] == [
        ("a", "PASS", "FAIL"),
        ("b", "PASS", "ERROR"),
    ]


def test_fixes_and_unchanged() -> None:
    comparison = compare_runs(BASE, NEW)
    assert [(c.case_id, c.base_verdict, c.new_verdict) for c in comparison.fixes] == [
        ("c", "FAIL", "PASS")
    ]
    moved = {c.case_id for c in comparison.regressions + comparison.fixes}
    # d stays PASS; e goes FAIL → ERROR, which is neither a regression nor a fix
    assert [c.case_id for c in comparison.shared if c.case_id not in moved] == ["d", "e"]


def test_new_and_removed_cases() -> None:
    comparison = compare_runs(BASE, NEW)
    assert (comparison.base_id, comparison.new_id) == ("base", "new")
    assert comparison.new_cases == ["fresh"]
    assert comparison.removed_cases == ["gone"]
    assert [c.case_id for c in comparison.shared] == ["a", "b", "c", "d", "e"]  # new run's order


def test_grader_deltas_only_for_graders_scored_in_both() -> None:
    deltas = {c.case_id: c.grader_deltas for c in compare_runs(BASE, NEW).shared}
    # a: keyword 0.25 − 1.0; structural is skipped now; llm-judge is new
    assert deltas["a"] == {"keyword": -0.75}
    assert deltas["b"] == {"keyword": 0.0}
    # c: keyword 1.0 − 0.25; llm-judge was skipped in the base run
    assert deltas["c"] == {"keyword": 0.75}
    assert deltas["d"] == {"keyword": 0.0}
    assert deltas["e"] == {}  # no grader ran in the new run


def test_composite_delta_is_none_when_a_side_has_none() -> None:
    shared = {c.case_id: c for c in compare_runs(BASE, NEW).shared}
    # a: 0.5 − 1.0; c: 1.0 − 0.25; d: 0.75 − 0.75
    assert shared["a"].composite_delta == -0.5
    assert shared["c"].composite_delta == 0.75
    assert shared["d"].composite_delta == 0.0
    assert shared["b"].composite_delta is None  # ERROR now, no composite
    assert shared["e"].composite_delta is None


def test_flips_test_is_mcnemar_over_regressions_and_fixes() -> None:
    comparison = compare_runs(BASE, NEW)
    # b = 2 regressions, c = 1 fix: n = 3, k = 1: 2·(1 + 3)/8 = 1
    assert comparison.flips == mcnemar_exact(2, 1)
    assert comparison.flips.p_value == 1.0


def test_scores_test_is_wilcoxon_over_comparable_composites() -> None:
    comparison = compare_runs(BASE, NEW)
    # comparable deltas: a −0.5, c +0.75, d 0 (b and e have no new composite)
    assert comparison.scores == wilcoxon_signed_rank([-0.5, 0.75, 0.0])
    # zero dropped: ranks 1 (0.5), 2 (0.75); W+ = 2, mean 1.5: every pattern is as extreme
    assert (comparison.scores.n, comparison.scores.statistic, comparison.scores.p_value) == (
        2,
        2.0,
        1.0,
    )


def test_sentences_when_nothing_changed() -> None:
    base = run("base", *(result(i, "PASS", 0.75, {"keyword": 0.75}) for i in "xyz"))
    comparison = compare_runs(base, base.model_copy(update={"run_id": "again"}))
    assert comparison.regressions == comparison.fixes == []
    assert comparison.flips.p_value == comparison.scores.p_value == 1.0
    assert comparison.verdict_sentence() == (
        "No case changed between PASS and not-PASS over 3 shared cases."
    )
    assert (
        comparison.score_sentence() == "Composite scores are identical on all 3 comparable cases."
    )


def test_sentences_for_six_regressions() -> None:
    base = run("base", *(result(f"c{i}", "PASS", 1.0, {"keyword": 1.0}) for i in range(7)))
    new = run(
        "new",
        *(result(f"c{i}", "FAIL", 0.5, {"keyword": 0.5}) for i in range(6)),
        result("c6", "PASS", 1.0, {"keyword": 1.0}),
    )
    comparison = compare_runs(base, new)
    # McNemar: b = 6, c = 0: 2·C(6,0)/2⁶ = 2/64 = 0.03125
    assert comparison.verdict_sentence() == (
        "6 cases went from PASS to not-PASS and 0 the other way; with 6 discordant cases, "
        "an exact McNemar test gives p = 0.03125: unlikely to be chance (p < 0.05)."
    )
    # Deltas: six −0.5 and one 0; mean −3/7 ≈ −0.429 over 7. Wilcoxon: the zero is dropped,
    # six tied ranks 3.5, W+ = 0; only W = 0 and W = 21 are as extreme: 2/64 = 0.03125
    assert comparison.score_sentence() == (
        "Composite scores moved down by 0.429 on average over 7 comparable cases (6 changed); "
        "a Wilcoxon signed-rank test (exact) gives p = 0.03125: unlikely to be chance (p < 0.05)."
    )


def one_case_gone_up() -> tuple[CanaryRun, CanaryRun]:
    base = run("base", result("a", "PASS", 0.75, {"keyword": 0.75}))
    new = run("new", result("a", "FAIL", 1.0, {"keyword": 1.0}))
    return base, new


def test_verdict_sentence_for_one_regression_is_singular() -> None:
    comparison = compare_runs(*one_case_gone_up())
    # McNemar: b = 1, c = 0: 2·1/2 = 1
    assert comparison.verdict_sentence() == (
        "1 case went from PASS to not-PASS and 0 the other way; with 1 discordant case, "
        "an exact McNemar test gives p = 1: could well be chance (p ≥ 0.05)."
    )


def test_score_sentence_for_one_case_is_singular() -> None:
    comparison = compare_runs(*one_case_gone_up())
    # delta 1.0 − 0.75 = +0.25; Wilcoxon: one rank, W+ = 1, mean 0.5: p = 2/2 = 1
    assert comparison.score_sentence() == (
        "Composite scores moved up by 0.250 on average over 1 comparable case (1 changed); "
        "a Wilcoxon signed-rank test (exact) gives p = 1: could well be chance (p ≥ 0.05)."
    )


@pytest.mark.parametrize("deltas", [(0.25, -0.25), (0.5, -0.25, -0.25)])
def test_score_sentence_claims_no_direction_when_the_mean_is_zero(
    deltas: tuple[float, ...],
) -> None:
    base = run("base", *(result(f"c{i}", "PASS", 0.5, {}) for i in range(len(deltas))))
    new = run("new", *(result(f"c{i}", "PASS", 0.5 + d, {}) for i, d in enumerate(deltas)))
    sentence = compare_runs(base, new).score_sentence()
    # the scores did change (so not "identical"), but on average they moved neither way
    assert "moved down" not in sentence and "moved up" not in sentence, sentence
