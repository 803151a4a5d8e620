"""Paired significance tests for comparing two runs over the cases they share (stdlib only).

- ``mcnemar_exact(b, c)``: pass/fail flips. Under "no difference" each discordant case is as
  likely to flip one way as the other, so the smaller count follows Binomial(b + c, 1/2);
  the two-sided p-value is ``min(1, 2 · P(X ≤ min(b, c)))``.
- ``wilcoxon_signed_rank(diffs)``: paired score differences. Zeros are dropped (Wilcoxon's
  method), ties get mid-ranks. Up to ``EXACT_LIMIT`` non-zero differences the null distribution
  is counted exactly (a subset-sum count over doubled ranks, so mid-ranks stay integers);
  beyond that a normal approximation with tie and continuity corrections is used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

EXACT_LIMIT = 60


@dataclass(frozen=True)
class TestResult:
    """A test's statistic, two-sided p-value and how it was computed."""

    statistic: float
    p_value: float
    n: int
    """The number of informative pairs (discordant pairs; non-zero differences)."""
    method: str


def mcnemar_exact(b: int, c: int) -> TestResult:
    """Exact McNemar test for ``b`` pass→fail and ``c`` fail→pass flips."""
    if b < 0 or c < 0:
        raise ValueError("counts must be >= 0")
    n = b + c
    if n == 0:
        return TestResult(0.0, 1.0, 0, "exact binomial")
    k = min(b, c)
    term = total = 1  # C(n, 0); each next binomial from the last, exactly (no comb per term)
    for i in range(1, k + 1):
        term = term * (n - i + 1) // i
        total += term
    tail = total / (1 << n)
    return TestResult(float(k), min(1.0, 2 * tail), n, "exact binomial")


def wilcoxon_signed_rank(diffs: Sequence[float], *, zero_tol: float = 1e-12) -> TestResult:
    """Two-sided Wilcoxon signed-rank test of paired differences (``new - base``).

    The statistic is W+, the sum of the ranks of the positive differences.
    """
    nonzero = [d for d in diffs if abs(d) > zero_tol]
    n = len(nonzero)
    if n == 0:
        return TestResult(0.0, 1.0, 0, "no non-zero differences")
    ranks = _midranks([abs(d) for d in nonzero])
    w_plus = sum(r for r, d in zip(ranks, nonzero, strict=True) if d > 0)
    if n <= EXACT_LIMIT:
        return TestResult(w_plus, _exact_p(ranks, w_plus), n, "exact")
    mean = n * (n + 1) / 4
    ties = _tie_sizes([abs(d) for d in nonzero])
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(t**3 - t for t in ties) / 48
    z = max(abs(w_plus - mean) - 0.5, 0.0) / math.sqrt(var)
    p = math.erfc(z / math.sqrt(2))
    return TestResult(w_plus, min(1.0, p), n, "normal approximation")


def _midranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and math.isclose(values[order[j + 1]], values[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _tie_sizes(values: Sequence[float]) -> list[int]:
    ordered = sorted(values)
    sizes, run = [], 1
    for a, b in zip(ordered, ordered[1:], strict=False):
        if math.isclose(a, b):
            run += 1
        else:
            sizes.append(run)
            run = 1
    sizes.append(run)
    return [s for s in sizes if s > 1]


def _exact_p(ranks: Sequence[float], w_plus: float) -> float:
    """P(|W+ - mean| >= |observed - mean|) with every sign pattern equally likely."""
    doubled = [round(2 * r) for r in ranks]
    total = sum(doubled)
    counts = [0] * (total + 1)
    counts[0] = 1
    for r in doubled:
        for s in range(total, r - 1, -1):
            counts[s] += counts[s - r]
    patterns = 1 << len(doubled)
    center = total / 2
    observed = abs(round(2 * w_plus) - center)
    extreme: int = sum(c for s, c in enumerate(counts) if abs(s - center) >= observed - 1e-9)
    return min(1.0, extreme / patterns)


def describe_p(p: float) -> str:
    """Say what a p-value means for a reviewer."""
    if p < 0.01:
        return "very unlikely to be chance (p < 0.01)"
    if p < 0.05:
        return "unlikely to be chance (p < 0.05)"
    return "could well be chance (p ≥ 0.05)"
