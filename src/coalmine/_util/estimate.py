"""Reducing a case's repeats to one value, and a suite's mean with its error (stdlib only).

A case run ``n`` times that passed ``c`` times reduces to:

- ``mean``: ``c / n``, the pass rate;
- ``majority``: 1 when more than half passed (``c > n/2``), else 0; a tie fails;
- ``pass@k``: the chance that at least one of ``k`` runs drawn from the ``n`` passes, the
  unbiased estimator ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021); ``k = n`` is "any passed";
- ``pass^k``: the chance that all ``k`` drawn runs pass, ``C(c, k) / C(n, k)`` (Yao et al.,
  tau-bench); ``k = n`` is "every repeat passed".

The suite score is the mean of the case values. Its standard error is ``s / √m`` with ``s`` the
sample standard deviation (``m - 1`` in the denominator) over ``m`` cases. The 95% interval is
Wilson's score interval when every value is 0 or 1 (a pass rate: it stays inside [0, 1] and is
not [1, 1] for 20 passes out of 20), and ``mean ± 1.96·SE`` clipped to [0, 1] otherwise.
Values are accumulated as they stream by (Welford's method), so a suite of any size takes
constant memory.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

Z95 = 1.959963984540054
"""The 97.5% quantile of the standard normal distribution."""

_REDUCER = re.compile(r"mean|majority|pass@(?:k|\d+)|pass\^(?:k|\d+)")


def check_reducer(name: str, repeats: int) -> str:
    """Return ``name`` if it is a reducer that ``repeats`` runs can feed.

    Raises:
        ValueError: an unknown reducer, or ``k`` above the number of repeats.
    """
    if not _REDUCER.fullmatch(name):
        raise ValueError(
            f"unknown reducer {name!r}: use mean, majority, pass@k, pass^k, or pass@N / pass^N"
        )
    k = _k(name, repeats)
    if k is not None and not 1 <= k <= repeats:
        raise ValueError(f"{name}: k must be between 1 and the number of repeats ({repeats})")
    return name


def _k(name: str, repeats: int) -> int | None:
    if not name.startswith("pass"):
        return None
    tail = name[5:]
    return repeats if tail == "k" else int(tail)


def reduce_repeats(name: str, n: int, c: int, repeats: int | None = None) -> float:
    """Reduce ``c`` passes out of ``n`` runs with reducer ``name`` (``k`` defaults to ``n``).

    ``repeats`` is the planned number of runs, which sets ``k`` for ``pass@k``; when a case
    has fewer runs than that (some errored), ``k`` shrinks to ``n``.
    """
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= passes <= runs and runs >= 1, got {c} of {n}")
    if name == "mean":
        return c / n
    if name == "majority":
        return 1.0 if 2 * c > n else 0.0
    k = min(_k(name, repeats or n) or n, n)
    if name.startswith("pass@"):
        return 1.0 - math.comb(n - c, k) / math.comb(n, k)
    return math.comb(c, k) / math.comb(n, k)


@dataclass
class MeanEstimate:
    """A running mean with its standard error and 95% interval."""

    n: int = 0
    mean: float = 0.0
    _m2: float = 0.0
    binary: bool = True

    def add(self, value: float) -> None:
        """Add one value (Welford's update)."""
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self._m2 += delta * (value - self.mean)
        self.binary = self.binary and value in (0.0, 1.0)

    @property
    def stderr(self) -> float | None:
        """``s / √n`` with the sample standard deviation; ``None`` below two values."""
        if self.n < 2:
            return None
        return math.sqrt(max(self._m2, 0.0) / (self.n - 1) / self.n)

    @property
    def ci95(self) -> tuple[float, float] | None:
        """The 95% interval: Wilson's for pass rates, the normal one otherwise."""
        if self.n == 0:
            return None
        if self.binary:
            return wilson_interval(round(self.mean * self.n), self.n)
        se = self.stderr
        if se is None:
            return None
        return max(0.0, self.mean - Z95 * se), min(1.0, self.mean + Z95 * se)


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for ``successes`` out of ``n``."""
    if n < 1:
        raise ValueError("Wilson's interval needs at least one trial")
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, center - half), min(1.0, center + half)
