"""A suite's mean when its cases are not independent, and what a case's repeats say (stdlib only).

Cases that share a cluster (a tag, a source document, a template) tend to pass or fail
together, and the usual ``s/√n`` understates the error of their mean. For values ``y_i`` in
``G`` clusters ``g``, ``n`` values in all, mean ``ȳ`` and residuals ``u_i = y_i - ȳ``, the
cluster-robust (Liang–Zeger sandwich) standard error of the mean is

    ``SE = √( G/(G-1) · Σ_g (Σ_{i∈g} u_i)² ) / n``

This is the sandwich ``(X'X)⁻¹ (Σ_g X_g'u_g u_g'X_g) (X'X)⁻¹`` of a regression on a constant
(``X`` a column of ones, so ``(X'X)⁻¹ = 1/n``), with the small-sample factor ``G/(G-1)``. It is
Stata's CR1 for this model, whose full factor ``G/(G-1)·(n-1)/(n-K)`` is ``G/(G-1)`` at
``K = 1``, and the same number inspect_ai's ``stderr(cluster=...)`` computes (its double sum
``Σ_g Σ_{i,j∈g} u_i·u_j`` is ``Σ_g (Σ_{i∈g} u_i)²``). With every case its own cluster it is
``√(n/(n-1) · Σ u_i²) / n = s/√n``, the usual standard error. A case with no cluster key is its
own cluster. The 95% interval is ``ȳ ± 1.96·SE`` (clipped to [0, 1] by default); with few
clusters (say under 30) the normal quantile makes it too narrow (Cameron & Miller 2015), and
with one cluster there is no error estimate at all. The design effect
``(SE / (s/√n))²`` says how many cases one independent case is worth.

A case's repeats: ``c`` passes out of ``n`` runs.

- ``case_pass_interval``: Wilson's 95% score interval for the case's pass rate.
- ``is_flaky``: the case both passed and failed, and its Wilson interval strictly contains the
  threshold (``lower < t < upper``): its runs disagree and do not tell which side of ``t`` its
  rate is on. A single run cannot disagree with itself, so it is never flaky; neither is a case
  whose runs all agree (3 passes of 3 has the interval (0.44, 1], which contains 0.5, but
  nothing flaked).
- ``suite_pass_hat_k``: pass^k (Yao et al. 2024, tau-bench), the chance that ``k`` runs drawn
  from a case's runs all pass, ``C(c, k)/C(n, k)``, averaged over the cases.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from coalmine._util.estimate import Z95, reduce_repeats, wilson_interval


@dataclass(frozen=True)
class ClusteredMean:
    """A mean with its cluster-robust standard error and 95% interval."""

    mean: float
    stderr: float | None
    """``None`` with one cluster (see ``reason``)."""
    ci95: tuple[float, float] | None
    n: int
    clusters: int
    design_effect: float | None
    """``(stderr / (s/√n))²``; ``None`` when the values do not vary."""
    reason: str | None = None


def clustered_mean(
    values: Sequence[float], clusters: Sequence[Hashable | None], *, clip: bool = True
) -> ClusteredMean:
    """The mean of ``values`` and ``√(G/(G-1) · Σ_g (Σ_{i∈g} (y_i - ȳ))²) / n``.

    Args:
        values: One value per case.
        clusters: The cluster key of each case; ``None`` makes the case its own cluster.
        clip: Clip the interval to [0, 1] (values that are pass rates or scores).
    """
    n = len(values)
    if len(clusters) != n:
        raise ValueError(f"{n} values but {len(clusters)} cluster keys: give one key per value")
    if n == 0:
        raise ValueError("the mean of no values is undefined")
    mean = math.fsum(values) / n
    sums: dict[object, float] = {}
    for index, (value, key) in enumerate(zip(values, clusters, strict=True)):
        group: object = ("unclustered", index) if key is None else ("cluster", key)
        sums[group] = sums.get(group, 0.0) + (value - mean)
    count = len(sums)
    if count < 2:
        reason = "every case is in one cluster: its error cannot be estimated from one cluster"
        return ClusteredMean(mean, None, None, n, count, None, reason)
    meat = math.fsum(s * s for s in sums.values())
    stderr = math.sqrt(count / (count - 1) * meat) / n
    low, high = mean - Z95 * stderr, mean + Z95 * stderr
    if clip:
        low, high = max(0.0, low), min(1.0, high)
    return ClusteredMean(mean, stderr, (low, high), n, count, _design_effect(values, mean, stderr))


def _design_effect(values: Sequence[float], mean: float, stderr: float) -> float | None:
    """``(stderr / (s/√n))²``, the cluster variance over the independent one."""
    n = len(values)
    squares = math.fsum((v - mean) ** 2 for v in values)
    if squares == 0.0:
        return None
    return stderr * stderr / (squares / (n - 1) / n)


def case_pass_interval(passes: int, runs: int) -> tuple[float, float]:
    """Wilson's 95% interval for a case that passed ``passes`` of ``runs`` times."""
    _check_runs(passes, runs)
    return wilson_interval(passes, runs, Z95)


def is_flaky(passes: int, runs: int, *, threshold: float = 0.5) -> bool:
    """True when the runs disagree and Wilson's interval has ``lower < threshold < upper``."""
    _check_runs(passes, runs)
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"the threshold is a pass rate in (0, 1), not {threshold}")
    if not 0 < passes < runs:
        return False
    lower, upper = wilson_interval(passes, runs, Z95)
    return lower < threshold < upper


def suite_pass_hat_k(cases: Sequence[tuple[int, int]], k: int) -> float:
    """pass^k of a suite: the mean over its ``(passes, runs)`` cases of ``C(c, k)/C(n, k)``.

    Every case needs at least ``k`` runs: with fewer, pass^k is not defined for it.
    """
    if not cases:
        raise ValueError("pass^k of no case is undefined")
    if k < 1:
        raise ValueError(f"k is at least 1, not {k}")
    total = 0.0
    for passes, runs in cases:
        _check_runs(passes, runs)
        if runs < k:
            raise ValueError(f"pass^{k} needs at least {k} runs of each case; one has {runs}")
        total += reduce_repeats(f"pass^{k}", runs, passes)
    return total / len(cases)


def _check_runs(passes: int, runs: int) -> None:
    if runs < 1:
        raise ValueError(f"a case runs at least once, not {runs} times")
    if not 0 <= passes <= runs:
        raise ValueError(f"passes must be between 0 and the {runs} runs, not {passes}")
