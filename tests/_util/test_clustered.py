"""Cluster-robust standard errors and a case's repeats: by hand, two other computations, a simulation.

z = 1.959963984540054 (Z95); C(4,2) = 6, C(3,2) = 3, C(4,3) = 4, C(3,3) = 1.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Hashable, Sequence

import pytest

from coalmine._util.clustered import (
    case_pass_interval,
    clustered_mean,
    is_flaky,
    suite_pass_hat_k,
)
from coalmine._util.estimate import Z95, MeanEstimate, wilson_interval


def test_two_clusters_by_hand() -> None:
    # y = 1, 0, 1 in a; 0, 0 in b. ȳ = 0.4; residual sums: a 0.6 - 0.4 + 0.6 = 0.8, b -0.8.
    # SE = √(2/1 · (0.64 + 0.64)) / 5 = √2.56 / 5 = 1.6 / 5 = 0.32
    result = clustered_mean([1, 0, 1, 0, 0], ["a", "a", "a", "b", "b"])
    assert result.mean == pytest.approx(0.4, abs=1e-15)
    assert result.stderr == pytest.approx(0.32, abs=1e-15)
    assert (result.n, result.clusters) == (5, 2)
    # 0.4 ± 1.96·0.32 = (-0.227, 1.027), clipped
    assert result.ci95 == (0.0, 1.0)
    unclipped = clustered_mean([1, 0, 1, 0, 0], ["a", "a", "a", "b", "b"], clip=False)
    assert unclipped.ci95 == pytest.approx((0.4 - Z95 * 0.32, 0.4 + Z95 * 0.32), abs=1e-15)
    # independent: Σu² = 3·0.16 + 2·0.36 = 1.2, s² = 0.3, s²/n = 0.06; 0.1024 / 0.06 = 1.70667
    assert result.design_effect == pytest.approx(0.1024 / 0.06, abs=1e-12)


def test_singleton_clusters_give_the_usual_standard_error() -> None:
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(2, 40)
        values = [
            rng.random() if rng.random() < 0.5 else float(rng.random() < 0.6) for _ in range(n)
        ]
        if len(set(values)) == 1:
            continue
        usual = statistics.stdev(values) / math.sqrt(n)
        running = MeanEstimate()
        for v in values:
            running.add(v)
        for keys in ([None] * n, list(range(n))):
            result = clustered_mean(values, keys)
            assert result.stderr == pytest.approx(usual, rel=1e-12)
            assert result.stderr == pytest.approx(running.stderr, rel=1e-12)
            assert result.design_effect == pytest.approx(1.0, rel=1e-12)


def _sandwich_numpy(values: Sequence[float], keys: Sequence[Hashable]) -> float:
    """OLS on a constant with numpy: β = (X'X)⁻¹X'y, V = G/(G-1)·B·(Σ_g X_g'u_g u_g'X_g)·B."""
    import numpy as np

    y = np.asarray(values, dtype=float).reshape(-1, 1)
    x = np.ones_like(y)
    bread = np.linalg.inv(x.T @ x)
    beta = bread @ x.T @ y
    u = y - x @ beta
    groups = sorted(set(keys), key=repr)
    meat = np.zeros((1, 1))
    for g in groups:
        rows = [i for i, k in enumerate(keys) if k == g]
        score = x[rows].T @ u[rows]
        meat += score @ score.T
    g_count = len(groups)
    return float(np.sqrt((g_count / (g_count - 1) * bread @ meat @ bread)[0, 0]))


def _inspect_double_sum(values: Sequence[float], keys: Sequence[Hashable]) -> float:
    """inspect_ai's form: Σ_g Σ_{i,j∈g} u_i·u_j, times G/(G-1), square root, over n."""
    mean = sum(values) / len(values)
    total = 0.0
    groups = set(keys)
    for g in groups:
        members = [v - mean for v, k in zip(values, keys, strict=True) if k == g]
        total += sum(a * b for a in members for b in members)
    return math.sqrt(total * len(groups) / (len(groups) - 1)) / len(values)


def test_against_the_ols_sandwich_and_the_double_sum() -> None:
    rng = random.Random(11)
    for _ in range(60):
        g_count = rng.randint(2, 9)
        n = rng.randint(g_count, 50)
        keys: list[Hashable] = [rng.randrange(g_count) for _ in range(n)]
        keys[:g_count] = range(g_count)  # every cluster present
        values = [float(rng.random() < 0.3 + 0.05 * k) for k in keys]  # type: ignore[operator]
        result = clustered_mean(values, keys)
        assert result.stderr == pytest.approx(_sandwich_numpy(values, keys), rel=1e-10, abs=1e-15)
        assert result.stderr == pytest.approx(
            _inspect_double_sum(values, keys), rel=1e-10, abs=1e-15
        )


def test_cases_without_a_key_are_their_own_clusters() -> None:
    keyed = clustered_mean([1, 0, 1, 1, 0], ["a", "a", None, None, "b"])
    spelled = clustered_mean([1, 0, 1, 1, 0], ["a", "a", "x", "y", "b"])
    assert keyed.clusters == 4
    assert keyed.stderr == pytest.approx(spelled.stderr, abs=1e-15)


def test_one_cluster_has_no_error() -> None:
    result = clustered_mean([1, 0, 1], ["t", "t", "t"])
    assert result.mean == pytest.approx(2 / 3)
    assert result.stderr is None and result.ci95 is None
    assert result.reason is not None and "one cluster" in result.reason


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="3 values but 2 cluster keys"):
        clustered_mean([1, 0, 1], ["a", "b"])
    with pytest.raises(ValueError, match="no values"):
        clustered_mean([], [])


def test_coverage_with_correlated_clusters() -> None:
    """2,000 seeded suites of 40 clusters × 5 cases; each cluster's rate is 0.2 or 0.9 (mean 0.55).

    The ICC is 0.35²/(0.55·0.45) = 0.495, so the design effect should be 1 + 4·0.495 = 2.98.
    Observed: the clustered 95% interval covers 0.55 in 95.05% of the suites (other seeds give
    93.2-94.5%: with 40 clusters the normal quantile is a little narrow), the independent s/√n
    interval in 75.05%; the mean design effect is 3.009.
    """
    rng = random.Random(2024)
    covered_clustered = covered_naive = 0
    effects = []
    sims = 2000
    for _ in range(sims):
        values: list[float] = []
        keys: list[Hashable] = []
        for g in range(40):
            rate = 0.2 if rng.random() < 0.5 else 0.9
            values += [float(rng.random() < rate) for _ in range(5)]
            keys += [g] * 5
        result = clustered_mean(values, keys, clip=False)
        assert result.ci95 is not None and result.design_effect is not None
        covered_clustered += result.ci95[0] <= 0.55 <= result.ci95[1]
        naive = statistics.stdev(values) / math.sqrt(len(values))
        covered_naive += abs(result.mean - 0.55) <= Z95 * naive
        effects.append(result.design_effect)
    assert 0.93 <= covered_clustered / sims <= 0.97
    assert covered_naive / sims <= 0.80
    assert statistics.fmean(effects) == pytest.approx(2.98, abs=0.05)


def test_case_pass_interval_is_wilson() -> None:
    assert case_pass_interval(3, 4) == wilson_interval(3, 4)
    # 3 of 3: lower = 3/(3 + z²) = 3/6.841459 = 0.438503
    assert case_pass_interval(3, 3)[0] == pytest.approx(3 / (3 + Z95**2), abs=1e-12)
    with pytest.raises(ValueError, match="at least once"):
        case_pass_interval(0, 0)
    with pytest.raises(ValueError, match="between 0 and the 2 runs"):
        case_pass_interval(3, 2)


@pytest.mark.parametrize(
    ("passes", "runs", "threshold", "flaky"),
    [
        (1, 1, 0.5, False),  # one run cannot disagree with itself (its interval holds 0.5)
        (0, 1, 0.5, False),
        (2, 2, 0.5, False),  # agreeing runs: (0.342, 1] holds 0.5, but nothing flaked
        (3, 3, 0.5, False),
        (0, 4, 0.5, False),
        (1, 2, 0.5, True),  # (0.095, 0.905)
        (5, 10, 0.5, True),  # (0.237, 0.763)
        (9, 10, 0.5, False),  # (0.596, 0.982): it flaked once, but is clearly above 0.5
        (9, 10, 0.9, True),
        (1, 10, 0.5, False),  # (0.018, 0.404)
        (6, 10, 0.5, True),  # (0.313, 0.832)
    ],
)
def test_is_flaky(passes: int, runs: int, threshold: float, flaky: bool) -> None:
    assert is_flaky(passes, runs, threshold=threshold) is flaky


def test_is_flaky_rejects_a_threshold_outside_0_1() -> None:
    with pytest.raises(ValueError, match="threshold"):
        is_flaky(1, 2, threshold=1.0)


def test_pass_hat_k_tau_bench_numbers() -> None:
    # 3 passes of 4 runs: pass^1 = 3/4, pass^2 = C(3,2)/C(4,2) = 3/6, pass^3 = 1/4, pass^4 = 0
    for k, expected in [(1, 0.75), (2, 0.5), (3, 0.25), (4, 0.0)]:
        assert suite_pass_hat_k([(3, 4)], k) == pytest.approx(expected, abs=1e-15)
    # the suite's is the mean: (0.5 + 1 + 0) / 3
    assert suite_pass_hat_k([(3, 4), (4, 4), (0, 4)], 2) == pytest.approx(0.5, abs=1e-15)
    with pytest.raises(ValueError, match="at least 3 runs"):
        suite_pass_hat_k([(3, 4), (2, 2)], 3)
    with pytest.raises(ValueError, match="no case"):
        suite_pass_hat_k([], 1)
    with pytest.raises(ValueError, match="at least 1"):
        suite_pass_hat_k([(1, 2)], 0)
