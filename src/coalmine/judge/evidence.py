"""Is a calibration's evidence enough to let its judge block? One-sided bounds (stdlib only).

A point estimate says what the judge did on the items it was shown; a gate needs what it will
do on the next ones. So each limit is tested at the one-sided 95% level, with
``z = Φ⁻¹(0.95) = 1.6449``, and the judge may block only when every bound clears its limit:

- the false-pass rate ``fp / (fp + tn)`` (``n`` = the items the humans fail): its Wilson upper
  bound ``u = (p̂ + z²/2n + z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n)`` must be at most
  ``max_false_pass_rate``. With no false pass ``u = z²/(n + z²)``: 0 of 20 gives 0.119, 0 of 15
  gives 0.153, and 1 of 20 gives 0.196;
- the false-block rate ``fn / (fn + tp)`` (``n`` = the items the humans pass): the same bound,
  at most ``max_false_block_rate``;
- Cohen's kappa: its lower bound ``κ̂ − z·SE(κ̂)`` must be at least ``min_kappa``.

Wilson's score bound, not ``p̂ + z·√(p̂(1 − p̂)/n)`` (Wald), because Wald's bound is ``p̂`` itself
when the judge made no error: 0 of 3 would prove a false-pass rate of 0. The upper end of the
two-sided 90% Wilson interval is this bound.

``SE(κ̂)`` is the large-sample standard error of Fleiss, Cohen & Everitt (1969), for a table of
proportions ``p_ij`` (rater a's verdict ``i``, rater b's ``j``) with margins ``p_i·`` and ``p_·j``
and chance agreement ``p_e``::

    Var(κ̂) = (A + B − C) / (n·(1 − p_e)²),   A = Σ_i p_ii·[1 − (p_i· + p_·i)(1 − κ̂)]²,
    B = (1 − κ̂)²·Σ_{i≠j} p_ij·(p_·i + p_j·)²,   C = [κ̂ − p_e(1 − κ̂)]²

It is the delta-method variance of ``κ̂`` when items are drawn at random, the one textbooks and
SAS report (the tests check it against a numerical delta method). With perfect agreement it is 0,
so the bound is 1: a bootstrap over items degenerates the same way, since every resample agrees
perfectly. That is safe here because kappa never decides alone: a judge with no error still
needs 16 human-fail and 11 human-pass held-out items to bring the two Wilson bounds under the
default limits (``n ≥ z²/limit − z²``), which is the evidence a perfect record must bring.

``labels_needed`` answers "how many more labelled held-out items would let it block if it kept
its current rates". The rates are held exactly: ``n'`` items of a kind are assumed to hold
``p̂·n'`` errors, a number that need not be whole (rounding it up would make the answer jump
back and forth as ``n'`` grows; for a judge with no error it is plainly "add clean items"). A
class with no item yet is taken at rate 0, so its count is a minimum. Each rate's count is the
smallest that brings its bound to its limit (the bound falls as ``n'`` grows at a fixed rate);
if kappa's bound still misses, the fewest further items, split between the kinds as best helps
kappa (a search over the split for each count), are added. More labels cannot help when a point
estimate is itself at or past its limit: the bounds close in on the estimate, never beyond it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from coalmine.config import CalibrationLimits
from coalmine.judge.stats import Confusion

Z = 1.6448536269514722
"""``Φ⁻¹(0.95)``: one-sided 95% bounds."""


def wilson_upper(errors: float, n: float, *, z: float = Z) -> float:
    """The one-sided Wilson upper bound of the rate ``errors / n``.

    ``(p̂ + z²/2n + z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n)`` with ``p̂ = errors / n``; ``errors``
    may be fractional (a rate held while ``n`` grows).

    Raises:
        ValueError: unless ``0 <= errors <= n`` and ``n > 0``.
    """
    if not (n > 0 and 0 <= errors <= n):
        raise ValueError(f"need 0 <= errors <= n and n > 0, got {errors} of {n}")
    p = errors / n
    z2 = z * z
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return min(1.0, (p + z2 / (2 * n) + half) / (1 + z2 / n))


@dataclass(frozen=True)
class Table:
    """A confusion matrix whose counts may be fractional (a rate held as items are added)."""

    tp: float
    fp: float
    tn: float
    fn: float

    @classmethod
    def of(cls, c: Confusion) -> Table:
        """The confusion's counts."""
        return cls(c.tp, c.fp, c.tn, c.fn)

    @property
    def n(self) -> float:
        """``tp + fp + tn + fn``."""
        return self.tp + self.fp + self.tn + self.fn


def kappa_estimate(t: Table) -> tuple[float, float] | None:
    """``(κ̂, SE(κ̂))`` of the judge (rows) against the humans (columns), Fleiss et al. 1969.

    See the module docstring for the variance. ``None`` when there is no item, or when both
    raters give one and the same verdict to every item (``p_e = 1``: kappa is 0/0).
    """
    n = t.n
    if n <= 0:
        return None
    pp, pf, fp_, ff = t.tp / n, t.fp / n, t.fn / n, t.tn / n  # judge verdict, then human's
    judge_pass, human_pass = pp + pf, pp + fp_
    chance = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
    if chance >= 1 - 1e-12:
        return None
    kappa = (pp + ff - chance) / (1 - chance)
    rest = 1 - kappa
    a = (
        pp * (1 - (judge_pass + human_pass) * rest) ** 2
        + ff * (1 - (2 - judge_pass - human_pass) * rest) ** 2
    )
    b = rest**2 * (
        pf * (human_pass + 1 - judge_pass) ** 2 + fp_ * (1 - human_pass + judge_pass) ** 2
    )
    c = (kappa - chance * rest) ** 2
    variance = max(0.0, (a + b - c) / (n * (1 - chance) ** 2))  # 0 - rounding can go below
    return kappa, math.sqrt(variance)


@dataclass(frozen=True)
class Bounds:
    """The one-sided 95% bounds a calibration is judged on (``None``: nothing to measure)."""

    false_pass_rate: float | None
    """Wilson upper bound of ``fp / (fp + tn)``."""
    false_block_rate: float | None
    """Wilson upper bound of ``fn / (fn + tp)``."""
    kappa: float | None
    """``κ̂ − z·SE(κ̂)``."""
    kappa_se: float | None
    """``SE(κ̂)``, Fleiss, Cohen & Everitt (1969)."""


def _upper(errors: float, n: float) -> float | None:
    return wilson_upper(errors, n) if n > 0 else None


def bounds_of(t: Table) -> Bounds:
    """The bounds of a (possibly fractional) confusion matrix."""
    found = kappa_estimate(t)
    return Bounds(
        false_pass_rate=_upper(t.fp, t.fp + t.tn),
        false_block_rate=_upper(t.fn, t.fn + t.tp),
        kappa=None if found is None else found[0] - Z * found[1],
        kappa_se=None if found is None else found[1],
    )


def bounds(c: Confusion) -> Bounds:
    """The one-sided 95% bounds of the judge's confusion matrix against the humans."""
    return bounds_of(Table.of(c))


def meets(b: Bounds, limits: CalibrationLimits) -> bool:
    """Whether every bound clears its limit (rates at most theirs, kappa at least its)."""
    return (
        b.false_pass_rate is not None
        and b.false_pass_rate <= limits.max_false_pass_rate
        and b.false_block_rate is not None
        and b.false_block_rate <= limits.max_false_block_rate
        and b.kappa is not None
        and b.kappa >= limits.min_kappa
    )


@dataclass(frozen=True)
class LabelsNeeded:
    """More held-out items that would let the judge block, if it kept its rates."""

    fail: int
    """Items the humans fail (they narrow the false-pass bound)."""
    pass_: int
    """Items the humans pass (they narrow the false-block bound)."""
    either: int = 0
    """Items of either kind, for ``min_heldout``."""

    @property
    def total(self) -> int:
        """``fail + pass_ + either``."""
        return self.fail + self.pass_ + self.either

    def as_record(self) -> dict[str, int]:
        """``{"fail": …, "pass": …, "either": …}``, as the calibration record keeps it."""
        return {"fail": self.fail, "pass": self.pass_, "either": self.either}


def _smallest(ok: Callable[[int], bool]) -> int:
    """The smallest ``m >= 0`` with ``ok(m)``, for ``ok`` false then true as ``m`` grows."""
    if ok(0):
        return 0
    high = 1
    while not ok(high):
        high *= 2
    low = high // 2  # ok(low) is false (or low is 0, tested above)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if ok(middle) else (middle, high)
    return high


def clean_items_needed(errors: int, n: int, limit: float) -> int | None:
    """How many more items at the rate ``errors / n`` bring its Wilson upper bound to ``limit``.

    The smallest ``m`` with ``u(p̂·(n + m), n + m) <= limit``; ``p̂`` is 0 when ``n`` is 0.
    ``None`` when ``p̂ >= limit``: the bound stays above ``p̂`` however many items come.
    """
    rate = errors / n if n else 0.0
    if rate >= limit:
        return None
    return _smallest(lambda m: n + m > 0 and wilson_upper(rate * (n + m), n + m) <= limit)


def _scaled(c: Confusion, fail_items: float, pass_items: float) -> Table:
    """The table with ``fail_items`` human-fail and ``pass_items`` human-pass, rates kept."""
    n_fail, n_pass = c.fp + c.tn, c.fn + c.tp
    false_pass = c.fp / n_fail if n_fail else 0.0
    false_block = c.fn / n_pass if n_pass else 0.0
    return Table(
        tp=pass_items * (1 - false_block),
        fp=fail_items * false_pass,
        tn=fail_items * (1 - false_pass),
        fn=pass_items * false_block,
    )


def labels_needed(c: Confusion, limits: CalibrationLimits) -> LabelsNeeded | None:
    """The fewest more held-out items, of each kind, that let the judge block at its rates.

    First the human-fail items that bring the false-pass bound to its limit, and the
    human-pass items for the false-block bound (``clean_items_needed``). If kappa's lower bound
    then misses ``min_kappa``, the fewest ``k`` further items, split between the kinds as best
    helps kappa (the class mix moves kappa; ``SE`` shrinks as ``1/√n``). Then ``either`` tops
    the total up to ``min_heldout``. All zero: the evidence suffices. ``None``: more labels
    cannot help, for a rate is itself at or past its limit, or kappa is at every class mix.
    """
    n_fail, n_pass = c.fp + c.tn, c.fn + c.tp
    more_fail = clean_items_needed(c.fp, n_fail, limits.max_false_pass_rate)
    more_pass = clean_items_needed(c.fn, n_pass, limits.max_false_block_rate)
    if more_fail is None or more_pass is None:
        return None
    base = (n_fail + more_fail, n_pass + more_pass)
    if _kappa_lower(c, *base) < limits.min_kappa:
        if _best_kappa(c) <= limits.min_kappa:
            return None
        k = _smallest(lambda k: _split(c, base, k)[0] >= limits.min_kappa)
        more = _split(c, base, k)[1]
        base = (base[0] + more, base[1] + k - more)
    either = max(0, limits.min_heldout - base[0] - base[1])
    return LabelsNeeded(base[0] - n_fail, base[1] - n_pass, either)


def _kappa_lower(c: Confusion, fail_items: float, pass_items: float) -> float:
    """Kappa's lower bound with that many items of each kind, at ``c``'s rates (-1: none)."""
    found = kappa_estimate(_scaled(c, fail_items, pass_items))
    return -1.0 if found is None else found[0] - Z * found[1]


def _split(c: Confusion, base: tuple[int, int], k: int) -> tuple[float, int]:
    """The best lower bound with ``k`` more items, and how many of them the humans fail.

    Ternary search over the split: kappa at fixed rates rises and then falls with the mix.
    """

    def bound(more_fail: int) -> float:
        return _kappa_lower(c, base[0] + more_fail, base[1] + k - more_fail)

    low, high = 0, k
    while high - low > 2:
        a, b = low + (high - low) // 3, high - (high - low) // 3
        if bound(a) < bound(b):
            low = a + 1
        else:
            high = b
    best = max(range(low, high + 1), key=bound)
    return bound(best), best


def _best_kappa(c: Confusion) -> float:
    """Kappa at ``c``'s rates with the best share of human-pass items (what many items reach)."""

    def kappa(share: float) -> float:
        found = kappa_estimate(_scaled(c, 1 - share, share))
        return -1.0 if found is None else found[0]

    low, high = 0.0, 1.0
    for _ in range(100):
        a, b = low + (high - low) / 3, high - (high - low) / 3
        low, high = (a, high) if kappa(a) < kappa(b) else (low, b)
    return kappa((low + high) / 2)
