"""What a comparison could have seen, and its groups' flips adjusted for their number.

The minimum detectable difference is checked against Connor's power equation solved here
independently (scipy's ``brentq`` and ``norm``), Wilson's bound against its closed form at 0
successes, the group p-values against ``scipy.stats.binomtest`` and Holm's adjustment against a
computation written out by hand.
"""

from __future__ import annotations

import math

import pytest
from scipy.optimize import brentq
from scipy.stats import binomtest, norm

from coalmine.compare import compare_runs, detectable, group_tests, groups_sentence
from coalmine.reports.markdown import render_comparison
from coalmine.results import CanaryRun, CaseResult, RunTotals, Verdict

Z = 1.959964  # z_{0.975}, to the six decimals a table gives


def connor_mde(n: int, psi: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The ``δ`` where Connor's power ``Φ((|δ|√n − z_a√ψ)/√(ψ−δ²))`` equals ``power``."""
    z_a, z_b = norm.ppf(1 - alpha / 2), norm.ppf(power)

    def gap(delta: float) -> float:
        return float(
            (delta * math.sqrt(n) - z_a * math.sqrt(psi)) / math.sqrt(psi - delta**2) - z_b
        )

    return float(brentq(gap, 1e-12, psi, xtol=1e-14))


@pytest.mark.parametrize(("cases", "flips"), [(100, 20), (60, 12), (400, 30), (1000, 8)])
def test_the_detectable_difference_solves_connors_power_equation(cases: int, flips: int) -> None:
    found = detectable(cases, flips)
    assert found is not None
    assert (found.cases, found.flips, found.assumed) == (cases, flips, False)
    assert found.discordance == flips / cases
    assert found.difference is not None
    assert found.difference == pytest.approx(connor_mde(cases, flips / cases), abs=1e-6)


def test_one_hundred_cases_with_twenty_flips_detect_twelve_point_four_points() -> None:
    found = detectable(100, 20)
    assert found is not None and found.discordance == 0.2
    assert found.difference == pytest.approx(0.1238193, abs=1e-6)  # connor_mde(100, 0.2)
    assert found.sentence() == (
        "With 100 paired cases (20 of them (20.0%) flipped), this comparison detects a change "
        "in pass rate of 12.4 points or more with 80% power (McNemar, alpha 0.05); a smaller "
        "one can pass unseen."
    )


@pytest.mark.parametrize("cases", [3, 60, 100, 1000])
def test_no_flip_assumes_wilsons_upper_bound_on_the_share(cases: int) -> None:
    found = detectable(cases, 0)
    assert found is not None and found.assumed is True and found.flips == 0
    # Wilson's upper bound at 0 of n: center + half width = (z²/2n + z²/2n) / (1 + z²/n)
    assert found.discordance == pytest.approx(Z**2 / (cases + Z**2), abs=1e-6)
    assert "no case flipped, so at most" in found.sentence()
    assert "(Wilson's 95% bound)" in found.sentence()


def test_the_wilson_bound_at_one_hundred_cases_is_three_point_seven_percent() -> None:
    found = detectable(100, 0)
    assert found is not None
    assert found.discordance == pytest.approx(0.0369935, abs=1e-6)  # 3.8415 / 103.8415
    assert found.sentence().startswith(
        "With 100 paired cases (no case flipped, so at most 3.7% would (Wilson's 95% bound)), "
    )


def test_no_flip_over_a_thousand_cases_still_gives_a_detectable_difference() -> None:
    # a change of δ flips at least δ of the cases: with every flip one way (ψ = δ) Connor's
    # power is Φ((√(1000·δ) - 1.96) / √(1 - δ)), 0.8 where √(1000·δ) ≈ 1.96 + 0.8416·√(1 - δ)
    found = detectable(1000, 0)
    assert found is not None and found.difference is not None
    d = found.difference
    z = (math.sqrt(1000 * d) - 1.959964) / math.sqrt(1 - d)
    assert z == pytest.approx(0.841621, abs=1e-5)
    assert d == pytest.approx(0.00783, abs=1e-5)


def test_three_cases_detect_no_change() -> None:
    found = detectable(3, 1)
    assert found is not None and found.difference is None
    assert found.sentence() == (
        "With 3 paired cases (1 of them (33.3%) flipped), no change in pass rate can be "
        "detected with 80% power (McNemar, alpha 0.05)."
    )
    nothing = detectable(3, 0)
    assert nothing is not None and nothing.difference is None and nothing.assumed
    assert "no change in pass rate can be detected with 80% power" in nothing.sentence()


def test_no_case_detects_nothing() -> None:
    assert detectable(0, 0) is None


# Three groups' (regressions, fixes). Exact two-sided McNemar p = 2·P(X ≤ min(b, c)), X ~ Bin(b+c, ½):
#   A (0, 8):  2·1/2⁸            = 0.0078125
#   B (1, 11): 2·(1 + 12)/2¹²    = 0.00634765625
#   C (3, 4):  b + c odd, equal tails summing past ½, capped at 1
# Holm, smallest first (m = 3): B 3·0.00634765625 = 0.01904296875; A max(that, 2·0.0078125 =
# 0.015625) = 0.01904296875 (the running maximum); C max(that, 1·1) = 1.
GROUPS = [("A", 40, 0, 8), ("B", 50, 1, 11), ("C", 30, 3, 4)]
HOLM = {"A": 0.01904296875, "B": 0.01904296875, "C": 1.0}


def test_each_groups_p_is_the_exact_binomial_test_of_its_flips() -> None:
    tests = group_tests(GROUPS)
    assert [(t.name, t.shared, t.regressions, t.fixes) for t in tests] == GROUPS
    for t, (_, _, b, c) in zip(tests, GROUPS, strict=True):
        assert t.flips.n == b + c
        assert t.flips.p_value == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue, rel=1e-12)
    assert [t.flips.p_value for t in tests] == [0.0078125, 0.00634765625, 1.0]


def test_the_groups_p_values_are_holm_adjusted() -> None:
    tests = group_tests(GROUPS)
    assert {t.name: t.adjusted_p for t in tests} == pytest.approx(HOLM, rel=1e-12)


def test_the_groups_sentence_names_the_groups_that_moved_after_adjustment() -> None:
    assert groups_sentence(group_tests(GROUPS)) == (
        "Over 3 groups, each group's McNemar p is adjusted for their number (Holm): "
        "A (adjusted p = 0.01904), B (adjusted p = 0.01904) changed beyond chance."
    )
    # 2·P(X ≤ 0) = 2/2⁶ = 0.03125 alone, but Holm doubles it past 0.05
    calm = group_tests([("x", 10, 6, 0), ("y", 10, 1, 1)])
    assert [t.adjusted_p for t in calm] == [0.0625, 1.0]
    assert groups_sentence(calm) == (
        "Over 2 groups, each group's McNemar p is adjusted for their number (Holm): "
        "none changed beyond chance (every adjusted p ≥ 0.05)."
    )
    assert groups_sentence(group_tests([("only", 10, 6, 0)])) is None
    assert group_tests([]) == []


def result(case_id: str, phase: str, verdict: Verdict) -> CaseResult:
    score = 1.0 if verdict == "PASS" else 0.0
    return CaseResult(
        id=case_id,
        phase=phase,
        title=case_id,
        agent="QA",
        verdict=verdict,
        composite_score=None if verdict == "ERROR" else score,
        duration_seconds=1.0,
    )


def run(label: str, results: list[CaseResult]) -> CanaryRun:
    return CanaryRun(
        run_id=label,
        timestamp="2026-04-13T07:30:00Z",
        summary=RunTotals.of(results, invalid=0),
        results=results,
    )


def two_phases() -> tuple[CanaryRun, CanaryRun]:
    """alpha: 30 cases, 10 regress (one of them to ERROR); beta: 30 cases, 2 fixed."""
    base = [result(f"a{i}", "alpha", "PASS") for i in range(30)]
    base += [result(f"b{i}", "beta", "FAIL") for i in range(30)]
    new = [result(f"a{i}", "alpha", "ERROR" if i == 0 else "FAIL") for i in range(10)]
    new += [result(f"a{i}", "alpha", "PASS") for i in range(10, 30)]
    new += [result(f"b{i}", "beta", "PASS") for i in range(2)]
    new += [result(f"b{i}", "beta", "FAIL") for i in range(2, 30)]
    new.append(result("g0", "gamma", "PASS"))  # only in the new run: no group of its own
    return run("base", base), run("new", new)


def test_compare_runs_tests_each_phase_and_adjusts_for_two() -> None:
    comparison = compare_runs(*two_phases())
    assert comparison.new_cases == ["g0"]
    groups = [(g.name, g.shared, g.regressions, g.fixes) for g in comparison.groups]
    assert groups == [("alpha", 30, 10, 0), ("beta", 30, 0, 2)]
    alpha, beta = comparison.groups
    assert alpha.flips.p_value == 2 / 2**10 and beta.flips.p_value == 0.5
    assert (alpha.adjusted_p, beta.adjusted_p) == (2 * 2 / 2**10, 0.5)  # Holm, m = 2


def test_compare_runs_fills_the_detectable_difference_from_all_shared_flips() -> None:
    comparison = compare_runs(*two_phases())
    found = comparison.detectable
    assert found is not None
    assert (found.cases, found.flips, found.discordance, found.assumed) == (60, 12, 0.2, False)
    assert found.difference == pytest.approx(connor_mde(60, 0.2), abs=1e-6)


def test_one_phase_has_no_group_tests() -> None:
    base = run("base", [result(f"c{i}", "qa", "PASS") for i in range(20)])
    new = run("new", [result(f"c{i}", "qa", "FAIL" if i < 9 else "PASS") for i in range(20)])
    comparison = compare_runs(base, new)
    assert comparison.groups == []
    assert comparison.detectable is not None and comparison.detectable.flips == 9
    assert "Holm" not in render_comparison(comparison)


def test_the_markdown_comparison_says_what_it_could_detect_and_tabulates_the_groups() -> None:
    comparison = compare_runs(*two_phases())
    text = render_comparison(comparison)
    assert comparison.detectable is not None
    assert comparison.detectable.sentence() in text
    assert "points or more with 80% power" in text
    assert "| Group | Shared | Regressions | Fixed | p | Holm-adjusted p |" in text
    assert "| alpha | 30 | 10 | 0 | 0.001953 | 0.003906 |" in text
    assert "| beta | 30 | 0 | 2 | 0.5 | 0.5 |" in text
    assert (
        "Over 2 groups, each group's McNemar p is adjusted for their number (Holm): "
        "alpha (adjusted p = 0.003906) changed beyond chance."
    ) in text
