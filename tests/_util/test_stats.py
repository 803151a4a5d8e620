"""Paired significance tests against hand-computed values and a brute-force oracle."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest

from coalmine._util import stats
from coalmine._util.stats import EXACT_LIMIT, describe_p, mcnemar_exact, wilcoxon_signed_rank


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        # no discordant pair: nothing to test
        (0, 0, 1.0),
        # n = 3, k = 0: 2·C(3,0)/2³ = 2·1/8 = 0.25
        (3, 0, 0.25),
        (0, 3, 0.25),
        # n = 4, k = 1: 2·(C(4,0) + C(4,1))/2⁴ = 2·(1 + 4)/16 = 0.625
        (3, 1, 0.625),
        # n = 12, k = 2: 2·(1 + 12 + 66)/2¹² = 158/4096 = 0.03857421875
        (10, 2, 0.03857421875),
        # n = 6, k = 0: 2·1/64 = 0.03125
        (6, 0, 0.03125),
        # n = 10, k = 5: 2·(1 + 10 + 45 + 120 + 210 + 252)/1024 = 1276/1024 > 1, capped at 1
        (5, 5, 1.0),
        # n = 1, k = 0: 2·1/2 = 1
        (1, 0, 1.0),
    ],
)
def test_mcnemar_exact_hand_values(b: int, c: int, p: float) -> None:
    result = mcnemar_exact(b, c)
    assert result.p_value == p  # every value above is exact in binary floating point
    assert result.n == b + c
    assert result.statistic == min(b, c)
    assert result.method == "exact binomial"


@pytest.mark.parametrize(("b", "c"), [(-1, 0), (0, -1), (-2, -3)])
def test_mcnemar_rejects_negative_counts(b: int, c: int) -> None:
    with pytest.raises(ValueError, match="counts must be >= 0"):
        mcnemar_exact(b, c)


def brute_force_p(diffs: Sequence[float]) -> tuple[float, float]:
    """W+ and its two-sided p by trying every sign pattern (mid-ranks by counting)."""
    magnitudes = [abs(d) for d in diffs if d != 0]
    # mid-rank of x = (number smaller) + (number equal + 1) / 2
    ranks = [
        sum(m < x for m in magnitudes) + (sum(m == x for m in magnitudes) + 1) / 2
        for x in magnitudes
    ]
    observed = sum(r for r, d in zip(ranks, [d for d in diffs if d != 0], strict=True) if d > 0)
    mean = sum(ranks) / 2
    extreme = 0
    patterns = list(itertools.product([True, False], repeat=len(ranks)))
    for signs in patterns:
        w = sum(r for r, positive in zip(ranks, signs, strict=True) if positive)
        extreme += abs(w - mean) >= abs(observed - mean) - 1e-9
    return observed, extreme / len(patterns)


def test_wilcoxon_all_positive() -> None:
    # ranks 1..5, W+ = 15 (the maximum); only W = 0 and W = 15 are as extreme: 2/32 = 0.0625
    result = wilcoxon_signed_rank([1, 2, 3, 4, 5])
    assert (result.statistic, result.p_value, result.n) == (15, 0.0625, 5)
    assert result.method == "exact"


def test_wilcoxon_mixed_signs() -> None:
    # W+ = 1 + 3 + 5 = 9; mean 15/2 = 7.5, so |W − 7.5| ≥ 1.5 means W ≤ 6 or W ≥ 9.
    # Subsets of {1..5} by sum s = 0..6: 1, 1, 1, 2, 2, 3, 3 → 13 patterns with W ≤ 6;
    # by symmetry 13 with W ≥ 9: p = 26/32 = 0.8125
    result = wilcoxon_signed_rank([1, -2, 3, -4, 5])
    assert (result.statistic, result.p_value, result.n) == (9, 0.8125, 5)
    assert brute_force_p([1, -2, 3, -4, 5]) == (9, 0.8125)


def test_wilcoxon_ties_get_mid_ranks() -> None:
    # |d| = 1, 1, 2 → ranks 1.5, 1.5, 3; W+ = 1.5 + 1.5 = 3 = the mean (6/2): every pattern
    # is as extreme, p = 1
    result = wilcoxon_signed_rank([1, 1, -2])
    assert (result.statistic, result.p_value, result.n) == (3, 1.0, 3)
    assert brute_force_p([1, 1, -2]) == (3, 1.0)


def test_wilcoxon_ties_hand_enumerated() -> None:
    # |d| = 1, 1, 2, 3 → ranks 1.5, 1.5, 3, 4; W+ = 1.5 + 3 + 4 = 8.5; mean 10/2 = 5.
    # The 16 subset sums: 0, 1.5, 1.5, 3, 3, 4, 4.5, 4.5, 5.5, 5.5, 6, 7, 7, 8.5, 8.5, 10.
    # |W − 5| ≥ 3.5: {0, 1.5, 1.5} and {8.5, 8.5, 10}: p = 6/16 = 0.375
    result = wilcoxon_signed_rank([1, -1, 2, 3])
    assert (result.statistic, result.p_value, result.n) == (8.5, 0.375, 4)


@pytest.mark.parametrize(
    "diffs",
    [
        [0.3, -0.1, 0.2, 0.5, -0.4, 0.25, 0.6],
        [0.5, 0.5, -0.5, 0.25, -0.25, 1.0],
        [-0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8, 0.9, -1.0, 0.05, -0.15],
        [0.4 - 0.1, 0.7 - 0.4, -0.3],  # 0.30000000000000004 and 0.29999999999999993 tie
    ],
)
def test_wilcoxon_matches_the_brute_force_oracle(diffs: list[float]) -> None:
    result = wilcoxon_signed_rank(diffs)
    rounded = [round(d, 9) for d in diffs]  # the oracle ties by equality, so drop float noise
    statistic, p = brute_force_p(rounded)
    assert result.statistic == pytest.approx(statistic)
    assert result.p_value == pytest.approx(p)


def test_wilcoxon_drops_zeros() -> None:
    # the zeros (and a difference below the 1e-12 tolerance) go; what is left is [1..5]
    result = wilcoxon_signed_rank([0, 1, 0.0, 2, 3, 1e-13, 4, -0.0, 5])
    assert (result.statistic, result.p_value, result.n) == (15, 0.0625, 5)


@pytest.mark.parametrize("diffs", [[], [0.0], [0, 0.0, -0.0, 1e-15]])
def test_wilcoxon_with_no_non_zero_difference(diffs: list[float]) -> None:
    result = wilcoxon_signed_rank(diffs)
    assert (result.statistic, result.p_value, result.n) == (0.0, 1.0, 0)


def test_wilcoxon_is_exact_up_to_the_limit() -> None:
    assert EXACT_LIMIT == 60
    assert wilcoxon_signed_rank(list(range(1, 61))).method == "exact"


def test_wilcoxon_normal_approximation_beyond_the_limit() -> None:
    # d = ±1..±61, negative where i is a multiple of 3: W+ = 1891 − 3·(1 + … + 20) = 1891 − 630
    # = 1261; mean 61·62/4 = 945.5; sd = √(61·62·123/24) = √19382.75 ≈ 139.22;
    # z = (315.5 − 0.5)/139.22 ≈ 2.2626, p = erfc(z/√2) ≈ 0.0237
    diffs = [-i if i % 3 == 0 else i for i in range(1, 62)]
    result = wilcoxon_signed_rank(diffs)
    assert result.method == "normal approximation"
    assert (result.statistic, result.n) == (1261, 61)
    z = 315 / math.sqrt(61 * 62 * 123 / 24)
    assert result.p_value == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert result.p_value == pytest.approx(0.0237, abs=5e-4)
    exact = stats._exact_p([float(i) for i in range(1, 62)], 1261)
    assert abs(result.p_value - exact) < 0.01


def test_wilcoxon_normal_approximation_with_ties() -> None:
    # |d| = 1..20 three times each, then 21 once (61 values); negative where |d| is a multiple
    # of 3. Group m holds ranks 3m−2..3m, mid-rank 3m − 1; 21 gets rank 61.
    # Positive groups: m in 1..20 but not 3, 6, …, 18: 14 groups, Σm = 210 − 63 = 147, so
    # W+ = 3·(3·147 − 14) = 1281; mean 945.5.
    # Tie correction: 20 groups of 3, Σ(t³ − t)/48 = 20·24/48 = 10;
    # z = (335.5 − 0.5)/√(19382.75 − 10) ≈ 2.4069, p ≈ 0.0161
    diffs = [-(i // 3 + 1) if (i // 3 + 1) % 3 == 0 else i // 3 + 1 for i in range(61)]
    result = wilcoxon_signed_rank(diffs)
    assert result.method == "normal approximation"
    assert (result.statistic, result.n) == (1281, 61)
    z = 335 / math.sqrt(61 * 62 * 123 / 24 - 10)
    assert result.p_value == pytest.approx(math.erfc(z / math.sqrt(2)))
    ranks = [3.0 * (i // 3 + 1) - 1 for i in range(60)] + [61.0]
    exact = stats._exact_p(ranks, 1281)
    assert abs(result.p_value - exact) < 0.01


@pytest.mark.parametrize(
    ("p", "words"),
    [
        (0.0, "very unlikely to be chance (p < 0.01)"),
        (0.0099, "very unlikely to be chance (p < 0.01)"),
        (0.01, "unlikely to be chance (p < 0.05)"),
        (0.0499, "unlikely to be chance (p < 0.05)"),
        (0.05, "could well be chance (p ≥ 0.05)"),
        (1.0, "could well be chance (p ≥ 0.05)"),
    ],
)
def test_describe_p_thresholds(p: float, words: str) -> None:
    assert describe_p(p) == words
