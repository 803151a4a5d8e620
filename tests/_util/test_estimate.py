"""Reducers of repeats and the suite estimate, against values computed by hand.

Binomial coefficients used below: C(3,2) = 3, C(4,2) = 6, C(5,2) = 10, C(2,2) = 1, C(4,4) = 1.
z = 1.959963984540054 (the 97.5% normal quantile), z² = 3.841458820694124.
"""

from __future__ import annotations

import math

import pytest

from coalmine._util.estimate import (
    Z95,
    MeanEstimate,
    check_reducer,
    reduce_repeats,
    wilson_interval,
)


def test_z95_is_the_normal_quantile() -> None:
    assert Z95 == pytest.approx(1.959963984540054, abs=1e-15)


@pytest.mark.parametrize(
    ("reducer", "n", "c", "expected"),
    [
        # pass@2 of 2 passes in 5: 1 - C(3,2)/C(5,2) = 1 - 3/10
        ("pass@2", 5, 2, 0.7),
        # pass^2 of 3 passes in 5: C(3,2)/C(5,2) = 3/10
        ("pass^2", 5, 3, 0.3),
        # pass@1 is the pass rate: 1 - C(3,1)/C(4,1) = 1 - 3/4
        ("pass@1", 4, 1, 0.25),
        # pass^1 too: C(1,1)/C(4,1) = 1/4
        ("pass^1", 4, 1, 0.25),
        # pass@2 with fewer failures than k: C(1,2) = 0, so 1 - 0/6
        ("pass@2", 4, 3, 1.0),
        # pass^2 with fewer passes than k: C(1,2)/C(4,2) = 0/6
        ("pass^2", 4, 1, 0.0),
        # pass@2 of 1 pass in 4: 1 - C(3,2)/C(4,2) = 1 - 3/6
        ("pass@2", 4, 1, 0.5),
        # pass^2 of 2 passes in 4: C(2,2)/C(4,2) = 1/6
        ("pass^2", 4, 2, 1 / 6),
        # mean: c/n
        ("mean", 4, 3, 0.75),
        ("mean", 5, 0, 0.0),
        # majority: more than half passed
        ("majority", 4, 3, 1.0),
        ("majority", 3, 2, 1.0),
        ("majority", 3, 1, 0.0),
        ("majority", 1, 1, 1.0),
        ("majority", 1, 0, 0.0),
        # a tie fails: 2 of 4 is not more than half
        ("majority", 4, 2, 0.0),
        ("majority", 2, 1, 0.0),
    ],
)
def test_reduce_repeats_hand_values(reducer: str, n: int, c: int, expected: float) -> None:
    assert reduce_repeats(reducer, n, c) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("reducer", "c", "expected"),
    [
        # k defaults to n = 5: pass@k is "any passed", 1 - C(5-c,5)/C(5,5)
        ("pass@k", 0, 0.0),  # 1 - C(5,5)/1 = 0
        ("pass@k", 1, 1.0),  # 1 - C(4,5)/1 = 1 - 0
        ("pass@k", 5, 1.0),
        # pass^k is "every repeat passed", C(c,5)/C(5,5)
        ("pass^k", 4, 0.0),  # C(4,5) = 0
        ("pass^k", 5, 1.0),
    ],
)
def test_k_defaults_to_the_number_of_runs(reducer: str, c: int, expected: float) -> None:
    assert reduce_repeats(reducer, 5, c) == expected


def test_k_comes_from_the_planned_repeats_and_shrinks_to_the_runs_that_scored() -> None:
    # 4 repeats planned: pass@k is pass@4. All 4 ran, 1 passed: 1 - C(3,4)/C(4,4) = 1 - 0.
    assert reduce_repeats("pass@k", 4, 1, repeats=4) == 1.0
    # pass^k over 4 runs with 3 passes: C(3,4)/C(4,4) = 0
    assert reduce_repeats("pass^k", 4, 3, repeats=4) == 0.0
    # 4 planned but one errored (n = 3): k shrinks to 3; pass^3 of 3 passes = 1
    assert reduce_repeats("pass^k", 3, 3, repeats=4) == 1.0
    # pass@3 with only 2 runs that scored: k = 2, 1 - C(1,2)/C(2,2) = 1 - 0
    assert reduce_repeats("pass@3", 2, 1, repeats=3) == 1.0
    # pass^3 with 2 runs: k = 2, C(1,2)/C(2,2) = 0
    assert reduce_repeats("pass^3", 2, 1, repeats=3) == 0.0
    # an explicit k below the repeats stays: pass@2 of 5 runs, 2 passes = 0.7 (as above)
    assert reduce_repeats("pass@2", 5, 2, repeats=5) == pytest.approx(0.7)


@pytest.mark.parametrize(("n", "c"), [(0, 0), (3, 4), (3, -1)])
def test_reduce_repeats_refuses_impossible_counts(n: int, c: int) -> None:
    with pytest.raises(ValueError, match="need 0 <= passes <= runs"):
        reduce_repeats("mean", n, c)


@pytest.mark.parametrize(
    ("name", "repeats"),
    [("mean", 1), ("majority", 3), ("pass@k", 1), ("pass^k", 5), ("pass@3", 3), ("pass^1", 4)],
)
def test_check_reducer_accepts(name: str, repeats: int) -> None:
    assert check_reducer(name, repeats) == name


@pytest.mark.parametrize("name", ["median", "pass@", "pass@-1", "PASS@k", "pass@k ", "", "pass"])
def test_check_reducer_refuses_unknown_names(name: str) -> None:
    with pytest.raises(ValueError, match="unknown reducer") as caught:
        check_reducer(name, 3)
    assert "mean, majority, pass@k, pass^k" in str(caught.value)


@pytest.mark.parametrize(("name", "repeats"), [("pass@5", 3), ("pass^4", 3), ("pass@0", 3)])
def test_check_reducer_refuses_k_outside_the_repeats(name: str, repeats: int) -> None:
    with pytest.raises(ValueError, match=r"k must be between 1 and the number of repeats \(3\)"):
        check_reducer(name, repeats)


def test_check_reducer_refuses_a_trailing_newline() -> None:
    with pytest.raises(ValueError, match="unknown reducer"):
        check_reducer("mean\n", 2)


# -- the suite estimate --------------------------------------------------------------------------


def estimate(values: list[float]) -> MeanEstimate:
    e = MeanEstimate()
    for v in values:
        e.add(v)
    return e


def test_stderr_of_pass_fail_values_by_hand() -> None:
    # [1, 0, 1, 1]: mean 0.75; squared deviations 0.0625·3 + 0.5625 = 0.75;
    # s² = 0.75 / 3 = 0.25; SE = sqrt(0.25 / 4) = 0.25
    e = estimate([1, 0, 1, 1])
    assert e.n == 4
    assert e.mean == 0.75
    assert e.stderr == pytest.approx(0.25, abs=1e-12)
    assert e.binary
    # a pass rate gets Wilson's interval: 3 of 4
    assert e.ci95 == wilson_interval(3, 4)


def test_wilson_8_of_10_by_hand() -> None:
    # p = 0.8, z²/n = 0.38415: centre = (0.8 + 0.19207)/1.38415 = 0.71674,
    # half = z·sqrt(0.016 + 0.0096037)/1.38415 = 0.22658
    low, high = wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)


def test_wilson_at_the_edges_stays_inside_and_is_not_a_point() -> None:
    # all passed: the upper bound is 1 and the lower one n / (n + z²)
    low, high = wilson_interval(20, 20)
    assert high == pytest.approx(1.0, abs=1e-12) and high <= 1.0
    assert low == pytest.approx(20 / (20 + 3.841458820694124), abs=1e-9)  # 0.83887
    assert round(low, 4) == 0.8389
    # none passed: the mirror image
    low, high = wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(3.841458820694124 / (10 + 3.841458820694124), abs=1e-9)
    assert round(high, 4) == 0.2775
    # a suite of 20 passes: its interval is Wilson's, not [1, 1]
    e = estimate([1.0] * 20)
    assert e.stderr == 0.0
    assert e.ci95 is not None and round(e.ci95[0], 4) == 0.8389


def test_wilson_needs_a_trial() -> None:
    with pytest.raises(ValueError, match="at least one trial"):
        wilson_interval(0, 0)


def test_normal_interval_for_values_between_0_and_1() -> None:
    # [0.4, 0.6, 0.5, 0.5]: mean 0.5; squared deviations 0.01 + 0.01 = 0.02; s² = 0.02/3;
    # SE = sqrt(0.02/3/4) = 0.0408248; 1.96·SE = 0.0800152
    e = estimate([0.4, 0.6, 0.5, 0.5])
    assert not e.binary
    assert e.mean == pytest.approx(0.5, abs=1e-12)
    assert e.stderr == pytest.approx(0.0408248, abs=1e-7)
    assert e.ci95 == pytest.approx((0.4199848, 0.5800152), abs=1e-7)


def test_normal_interval_is_clipped_to_0_and_1() -> None:
    # [0.5, 1, 0.75]: mean 0.75; squared deviations 0.0625·2 = 0.125; s² = 0.0625;
    # SE = sqrt(0.0625/3) = 0.1443376; 1.96·SE = 0.2828964; 0.75 + 0.2829 → clipped to 1
    high = estimate([0.5, 1.0, 0.75])
    assert high.stderr == pytest.approx(0.1443376, abs=1e-7)
    assert high.ci95 == pytest.approx((0.4671036, 1.0), abs=1e-7)
    # [0, 0.5]: mean 0.25; s² = 0.125; SE = sqrt(0.125/2) = 0.25; 0.25 - 0.49 < 0 → 0
    low = estimate([0.0, 0.5])
    assert low.stderr == pytest.approx(0.25, abs=1e-12)
    assert low.ci95 == pytest.approx((0.0, 0.25 + Z95 * 0.25), abs=1e-12)  # (0, 0.7399910)


def test_below_two_values_there_is_no_stderr() -> None:
    empty = MeanEstimate()
    assert (empty.n, empty.stderr, empty.ci95) == (0, None, None)
    one_pass = estimate([1.0])
    assert one_pass.stderr is None
    assert one_pass.ci95 == wilson_interval(1, 1)  # a pass rate has an interval at n = 1
    one_value = estimate([0.5])
    assert (one_value.mean, one_value.stderr, one_value.ci95) == (0.5, None, None)


def test_welford_agrees_with_the_two_pass_formula_on_many_values() -> None:
    values = [((i * 37) % 101) / 100 for i in range(1000)]
    e = estimate(values)
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    assert e.mean == pytest.approx(mean, rel=1e-12)
    assert e.stderr == pytest.approx(math.sqrt(var / len(values)), rel=1e-9)
