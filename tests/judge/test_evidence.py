"""The bounds a judge blocks on, each by hand and against a reference (scipy, a delta method)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from coalmine.config import CalibrationLimits
from coalmine.judge.evidence import (
    LabelsNeeded,
    Table,
    Z,
    bounds,
    clean_items_needed,
    kappa_estimate,
    labels_needed,
    meets,
    wilson_upper,
)
from coalmine.judge.stats import Confusion, cohen_kappa

LIMITS = CalibrationLimits()


def test_z_is_the_one_sided_95_percent_quantile() -> None:
    assert norm.ppf(0.95) == pytest.approx(Z, abs=1e-15)


@pytest.mark.parametrize(
    ("errors", "n", "by_hand"),
    [
        (0, 20, 2.705543 / 22.705543),  # z²/(n + z²) = 0.1192
        (0, 15, 2.705543 / 17.705543),  # 0.1528
        (0, 16, 2.705543 / 18.705543),  # 0.1446
        (0, 11, 2.705543 / 13.705543),  # 0.1974
        # 1 of 20: (0.05 + 0.067639 + 1.644854·√(0.002375 + 0.001691)) / 1.135277 = 0.1960
        (1, 20, (0.05 + 0.0676386 + 1.6448536 * math.sqrt(0.002375 + 0.00169096)) / 1.1352772),
    ],
)
def test_the_wilson_upper_bound_by_hand(errors: int, n: int, by_hand: float) -> None:
    assert wilson_upper(errors, n) == pytest.approx(by_hand, abs=1e-6)


@pytest.mark.parametrize(("errors", "n"), [(0, 1), (0, 20), (1, 20), (2, 20), (6, 30), (7, 7),
                                           (13, 400), (50, 100)])  # fmt: skip
def test_the_one_sided_bound_is_the_top_of_the_two_sided_90_percent_interval(
    errors: int, n: int
) -> None:
    reference = binomtest(errors, n).proportion_ci(confidence_level=0.90, method="wilson")
    assert wilson_upper(errors, n) == pytest.approx(reference.high, abs=1e-12)


def test_the_wilson_upper_bound_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="0 <= errors <= n"):
        wilson_upper(3, 2)
    with pytest.raises(ValueError, match="n > 0"):
        wilson_upper(0, 0)


def test_kappa_and_its_standard_error_by_hand() -> None:
    # tp 18, fp 2, tn 18, fn 2: both raters pass half, p_e 0.5, p_o 0.9 → κ = 0.8
    # A = 2·0.45·(1 − 1·0.2)² = 0.576; B = 0.2²·(0.05·1² + 0.05·1²) = 0.004
    # C = (0.8 − 0.5·0.2)² = 0.49; Var = (0.576 + 0.004 − 0.49)/(40·0.5²) = 0.009
    found = kappa_estimate(Table(18, 2, 18, 2))
    assert found is not None
    kappa, se = found
    assert kappa == pytest.approx(0.8) and se == pytest.approx(math.sqrt(0.009))
    assert bounds(Confusion(18, 2, 18, 2)).kappa == pytest.approx(0.8 - Z * math.sqrt(0.009))


def _delta_method_se(t: Table) -> float:
    """The delta-method SE of kappa under multinomial sampling, by numerical gradient."""
    p = np.array([t.tp, t.fp, t.fn, t.tn], dtype=float) / t.n

    def kappa(q: np.ndarray) -> float:
        cells = (q / q.sum()).reshape(2, 2)
        po = np.trace(cells)
        pe = float((cells.sum(axis=1) * cells.sum(axis=0)).sum())
        return float((po - pe) / (1 - pe))

    step = 1e-7
    grad = np.array([(kappa(p + step * e) - kappa(p - step * e)) / (2 * step)
                     for e in np.eye(4)])  # fmt: skip
    return math.sqrt(float((p * grad**2).sum() - (p * grad).sum() ** 2) / t.n)


@pytest.mark.parametrize(
    "counts", [(18, 2, 18, 2), (30, 6, 24, 0), (8, 1, 7, 2), (19, 1, 20, 0), (50, 3, 10, 7),
               (100, 5, 100, 18)],
)  # fmt: skip
def test_the_standard_error_is_the_delta_method_one(counts: tuple[int, int, int, int]) -> None:
    t = Table(*counts)
    found = kappa_estimate(t)
    assert found is not None
    assert found[1] == pytest.approx(_delta_method_se(t), rel=1e-6)
    human = ["pass"] * t.tp + ["fail"] * t.fp + ["fail"] * t.tn + ["pass"] * t.fn
    judge = ["pass"] * t.tp + ["pass"] * t.fp + ["fail"] * t.tn + ["fail"] * t.fn
    assert found[0] == pytest.approx(cohen_kappa(human, judge))


def test_perfect_agreement_has_no_spread_and_one_verdict_has_no_kappa_bound() -> None:
    assert kappa_estimate(Table(20, 0, 15, 0)) == (1.0, 0.0)
    assert kappa_estimate(Table(10, 0, 0, 0)) is None  # p_e = 1: 0/0
    assert kappa_estimate(Table(0, 0, 0, 0)) is None
    found = bounds(Confusion(10, 0, 0, 0))
    assert (found.false_pass_rate, found.kappa) == (None, None)
    assert not meets(found, LIMITS)


def test_meets_is_at_most_for_rates_and_at_least_for_kappa() -> None:
    exact = bounds(Confusion(20, 0, 20, 0))
    assert exact.false_pass_rate is not None
    at_limit = CalibrationLimits(max_false_pass_rate=exact.false_pass_rate, min_kappa=1.0)
    assert meets(exact, at_limit)


@pytest.mark.parametrize(
    ("errors", "n", "limit"),
    [(0, 15, 0.15), (0, 0, 0.15), (0, 0, 0.20), (1, 20, 0.15), (2, 20, 0.15), (3, 40, 0.2),
     (1, 3, 0.5), (0, 100, 0.15), (9, 100, 0.1)],
)  # fmt: skip
def test_clean_items_needed_is_the_first_count_that_brings_the_bound_under(
    errors: int, n: int, limit: float
) -> None:
    rate = errors / n if n else 0.0
    found = clean_items_needed(errors, n, limit)
    assert found is not None
    scan = next(m for m in range(100_000) if n + m and wilson_upper(rate * (n + m), n + m) <= limit)
    assert found == scan


def test_the_bound_at_a_fixed_rate_falls_as_items_are_added() -> None:
    for rate in (0.0, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9):
        uppers = [wilson_upper(rate * n, n) for n in range(1, 2000)]
        assert all(b <= a + 1e-15 for a, b in zip(uppers, uppers[1:], strict=False))


def test_more_labels_cannot_help_a_rate_at_or_over_its_limit() -> None:
    assert clean_items_needed(3, 20, 0.15) is None  # exactly at the limit
    assert clean_items_needed(6, 30, 0.15) is None
    assert labels_needed(Confusion(30, 6, 24, 0), LIMITS) is None
    assert labels_needed(Confusion(8, 1, 7, 2), LIMITS) is None  # false blocks 2/10 = 0.20
    # rates fine but kappa itself under the limit at every class mix: 0.25 and 0.19
    assert labels_needed(Confusion(81, 14, 61, 19), CalibrationLimits(max_false_pass_rate=0.3,
                                                                     max_false_block_rate=0.3)) is None  # fmt: skip


@pytest.mark.parametrize(
    "counts", [(20, 0, 15, 0), (18, 2, 18, 2), (19, 1, 19, 1), (5, 0, 5, 0), (100, 5, 100, 18),
               (0, 0, 0, 0), (10, 0, 0, 0), (40, 4, 30, 6)],
)  # fmt: skip
def test_the_labels_needed_would_let_the_judge_block_at_its_rates(
    counts: tuple[int, int, int, int],
) -> None:
    c = Confusion(*counts)
    needed = labels_needed(c, LIMITS)
    assert isinstance(needed, LabelsNeeded)
    n_fail, n_pass = c.fp + c.tn, c.fn + c.tp
    fail, passed = n_fail + needed.fail, n_pass + needed.pass_
    fp = c.fp / n_fail if n_fail else 0.0
    fb = c.fn / n_pass if n_pass else 0.0
    scaled = Table(tp=passed * (1 - fb), fp=fail * fp, tn=fail * (1 - fp), fn=passed * fb)
    found = kappa_estimate(scaled)
    assert found is not None
    assert wilson_upper(scaled.fp, fail) <= LIMITS.max_false_pass_rate
    assert wilson_upper(scaled.fn, passed) <= LIMITS.max_false_block_rate
    assert found[0] - Z * found[1] >= LIMITS.min_kappa
    assert fail + passed + needed.either >= LIMITS.min_heldout
    # and no fewer of one kind would do for its rate
    assert needed.fail >= (clean_items_needed(c.fp, n_fail, LIMITS.max_false_pass_rate) or 0)
    assert needed.pass_ >= (clean_items_needed(c.fn, n_pass, LIMITS.max_false_block_rate) or 0)


def test_the_labels_needed_by_example() -> None:
    assert labels_needed(Confusion(20, 0, 20, 0), LIMITS) == LabelsNeeded(0, 0)
    assert labels_needed(Confusion(20, 0, 15, 0), LIMITS) == LabelsNeeded(1, 0)
    # no item of a kind yet: counted at rate 0, so the least a perfect judge needs, 16 and 11
    assert labels_needed(Confusion(0, 0, 0, 0), LIMITS) == LabelsNeeded(16, 11)
    # 2 errors in 20 each way: the rates alone ask 118 human-fail items (u(0.1, 138) = 0.14999)
    # and 24 human-pass; at that mix (138 : 44) kappa's bound is 0.699, and the fewest further
    # items that lift it to 0.7 are 21 more the humans pass (138 : 65 gives 0.7001)
    assert clean_items_needed(2, 20, 0.15) == 118 and clean_items_needed(2, 20, 0.20) == 24
    assert labels_needed(Confusion(18, 2, 18, 2), LIMITS) == LabelsNeeded(118, 45)
