"""How far a model judge agrees with human labels, with itself and with other judges (stdlib only).

Verdicts are the strings ``"pass"`` and ``"fail"``; ``"pass"`` is the positive class. Comparing
the judge with the humans over ``n`` items gives a confusion matrix:

- ``tp``: judge pass, human pass;  ``fp``: judge pass, human fail;
- ``tn``: judge fail, human fail;  ``fn``: judge fail, human pass.

The rates, each a proportion with Wilson's 95% score interval (``wilson_interval``; no value
and no interval when its denominator is 0):

- agreement ``(tp + tn) / n``;
- false-pass rate ``fp / (fp + tn)``: of the items the humans fail, the share the judge
  passes, i.e. the chance that a bad output slips through the gate;
- false-block rate ``fn / (fn + tp)``: of the items the humans pass, the share the judge
  fails, i.e. the chance that a good output is blocked;
- precision ``tp / (tp + fp)`` and recall ``tp / (tp + fn)`` of "pass";
- F1 ``2·P·R / (P + R)`` (equal to ``2·tp / (2·tp + fp + fn)``), a plain number.

Cohen's kappa for two raters over the same items is ``(p_o - p_e) / (1 - p_e)``, with
``p_o`` the share of items they agree on and ``p_e = a_pass·b_pass + a_fail·b_fail`` the
agreement expected by chance from each rater's own shares of "pass" and "fail".

Rerun stability is the share of items whose verdict is the same on every rerun; the score
spread is the mean over items of ``max - min`` of the rerun scores. A quorum of judges gives
each item its majority verdict (a tie fails) and a disagreement rate, the share of items on
which the judges do not all agree. ``best_threshold`` picks the score threshold that maximises
balanced accuracy ``(TPR + TNR) / 2`` on the dev split, and ``majority_label`` reduces several
human labels (``"pass"``, ``"fail"``, ``"unsure"``) to one.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from coalmine._util.estimate import wilson_interval

PASS = "pass"
FAIL = "fail"
UNSURE = "unsure"
VERDICTS = (PASS, FAIL)
"""The verdicts a judge (and a settled human label) can give."""


@dataclass(frozen=True)
class Confusion:
    """Judge verdicts against human verdicts, "pass" being the positive class."""

    tp: int
    """Judge pass, human pass."""
    fp: int
    """Judge pass, human fail."""
    tn: int
    """Judge fail, human fail."""
    fn: int
    """Judge fail, human pass."""

    def __post_init__(self) -> None:
        if min(self.tp, self.fp, self.tn, self.fn) < 0:
            raise ValueError(f"confusion counts must be >= 0, got {self}")

    @property
    def n(self) -> int:
        """The number of items, ``tp + fp + tn + fn``."""
        return self.tp + self.fp + self.tn + self.fn


@dataclass(frozen=True)
class Rate:
    """A proportion ``successes / n`` with Wilson's 95% interval.

    ``value`` and ``ci95`` are ``None`` when ``n`` is 0 (nothing to measure).
    """

    value: float | None
    successes: int
    n: int
    ci95: tuple[float, float] | None

    @classmethod
    def of(cls, successes: int, n: int) -> Rate:
        """The rate of ``successes`` out of ``n``, with its Wilson interval.

        Raises:
            ValueError: unless ``0 <= successes <= n``.
        """
        if not 0 <= successes <= n:
            raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
        if n == 0:
            return cls(None, 0, 0, None)
        return cls(successes / n, successes, n, wilson_interval(successes, n))


def _check_verdicts(verdicts: Sequence[str], allowed: Sequence[str] = VERDICTS) -> None:
    for verdict in verdicts:
        if verdict not in allowed:
            choices = ", ".join(allowed[:-1]) + " or " + allowed[-1]
            raise ValueError(f"unknown verdict {verdict!r}: use {choices}")


def _check_paired(a: Sequence[object], b: Sequence[object], what: str) -> None:
    if len(a) != len(b):
        raise ValueError(f"{what}: lengths differ ({len(a)} and {len(b)})")


def confusion(human: Sequence[str], judge: Sequence[str]) -> Confusion:
    """Count the judge's verdicts against the humans', item by item.

    Raises:
        ValueError: the sequences differ in length, or a verdict is not "pass" or "fail".
    """
    _check_paired(human, judge, "human and judge verdicts")
    _check_verdicts(human)
    _check_verdicts(judge)
    pairs = list(zip(human, judge, strict=True))
    return Confusion(
        tp=pairs.count((PASS, PASS)),
        fp=pairs.count((FAIL, PASS)),
        tn=pairs.count((FAIL, FAIL)),
        fn=pairs.count((PASS, FAIL)),
    )


def agreement(c: Confusion) -> Rate:
    """The share of items the judge and the humans agree on, ``(tp + tn) / n``."""
    return Rate.of(c.tp + c.tn, c.n)


def false_pass_rate(c: Confusion) -> Rate:
    """``fp / (fp + tn)``: of the items the humans fail, the share the judge passes.

    The denominator is the items that should fail, so this is the chance that a bad output
    slips through a gate this judge guards.
    """
    return Rate.of(c.fp, c.fp + c.tn)


def false_block_rate(c: Confusion) -> Rate:
    """``fn / (fn + tp)``: of the items the humans pass, the share the judge fails.

    The denominator is the items that should pass, so this is the chance that a good output
    is blocked.
    """
    return Rate.of(c.fn, c.fn + c.tp)


def precision(c: Confusion) -> Rate:
    """``tp / (tp + fp)``: of the judge's passes, the share the humans pass too."""
    return Rate.of(c.tp, c.tp + c.fp)


def recall(c: Confusion) -> Rate:
    """``tp / (tp + fn)``: of the humans' passes, the share the judge passes too."""
    return Rate.of(c.tp, c.tp + c.fn)


def f1(c: Confusion) -> float | None:
    """``2·P·R / (P + R)``, the harmonic mean of precision and recall of "pass".

    ``None`` when precision or recall is undefined (the judge or the humans never pass);
    0 when both are 0 (``tp = 0``). Computed as ``2·tp / (2·tp + fp + fn)``, the same value.
    """
    if c.tp + c.fp == 0 or c.tp + c.fn == 0:
        return None
    return 2 * c.tp / (2 * c.tp + c.fp + c.fn)


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' pass/fail verdicts over the same items.

    ``κ = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of items on which ``a`` and ``b``
    agree and ``p_e = a_pass·b_pass + a_fail·b_fail`` (each rater's share of "pass" and of
    "fail"). Agreement above chance gives ``κ > 0``, perfect agreement ``κ = 1``.

    ``p_e = 1`` only when both raters give one and the same verdict to every item; kappa's
    formula is then 0/0, and since the raters agree on every item (``p_o = 1``) the result
    is 1.0. ``None`` when there are no items.

    Raises:
        ValueError: the sequences differ in length, or a verdict is not "pass" or "fail".
    """
    _check_paired(a, b, "kappa raters")
    _check_verdicts(a)
    _check_verdicts(b)
    n = len(a)
    if n == 0:
        return None
    agree = sum(x == y for x, y in zip(a, b, strict=True))
    a_pass, b_pass = a.count(PASS), b.count(PASS)
    # In units of 1/n²: p_o·n² and p_e·n², integers, so p_e = 1 is tested exactly.
    observed = agree * n
    chance = a_pass * b_pass + (n - a_pass) * (n - b_pass)
    if chance == n * n:
        return 1.0
    return (observed - chance) / (n * n - chance)


def rerun_stability(runs: Sequence[Sequence[str]]) -> Rate:
    """The share of items whose verdict is the same on every rerun.

    ``runs[i]`` holds item ``i``'s verdicts across reruns. Items with no run are left out of
    the denominator; an item with one run is stable.

    Raises:
        ValueError: a verdict is not "pass" or "fail".
    """
    stable = total = 0
    for item in runs:
        _check_verdicts(item)
        if item:
            total += 1
            stable += len(set(item)) == 1
    return Rate.of(stable, total)


def score_spread(scores: Sequence[Sequence[float]]) -> float | None:
    """The mean over items of ``max - min`` of each item's rerun scores.

    Items with no score are left out; ``None`` when no item has one.
    """
    spreads = [max(item) - min(item) for item in scores if item]
    if not spreads:
        return None
    return sum(spreads) / len(spreads)


def quorum(verdicts: Sequence[Sequence[str]]) -> tuple[list[str], Rate]:
    """Each item's majority verdict over several judges, and how often they disagree.

    ``verdicts[i]`` holds the judges' verdicts on item ``i``. The majority is "pass" only
    when more judges pass than fail: a tied quorum does not pass. The disagreement rate is
    the share of items on which the judges do not all give the same verdict.

    Raises:
        ValueError: an item has no verdict, or a verdict is not "pass" or "fail".
    """
    majority: list[str] = []
    split = 0
    for i, item in enumerate(verdicts):
        _check_verdicts(item)
        if not item:
            raise ValueError(f"quorum: item {i} has no verdict")
        passes = item.count(PASS)
        majority.append(PASS if 2 * passes > len(item) else FAIL)
        split += 0 < passes < len(item)
    return majority, Rate.of(split, len(verdicts))


def best_threshold(scores: Sequence[float], human: Sequence[str], default: float) -> float:
    """The score threshold that best separates the humans' passes from their fails.

    The judge passes an item when its score is ``>= t``. Each distinct score is a candidate
    ``t``; the chosen one maximises balanced accuracy ``(TPR + TNR) / 2``, with
    ``TPR = #(human pass, score >= t) / #human pass`` and
    ``TNR = #(human fail, score < t) / #human fail``. Balanced accuracy rather than plain
    accuracy because calibration sets are often imbalanced: with 90% passes, "always pass"
    (the lowest score as threshold) has 90% accuracy but balanced accuracy 0.5, no better than
    a coin. Ties go to the candidate closest to ``default``, then to the higher one (the
    stricter gate). With no items, or humans who all agree, there is nothing to separate and
    ``default`` is returned. Use the dev split only: a threshold fitted on held-out items
    would flatter the held-out figures.

    Raises:
        ValueError: the sequences differ in length, a score is not finite, or a verdict is
            not "pass" or "fail".
    """
    _check_paired(scores, human, "scores and human verdicts")
    _check_verdicts(human)
    if not all(math.isfinite(s) for s in scores):
        raise ValueError("scores must be finite numbers")
    passed = sorted(s for s, h in zip(scores, human, strict=True) if h == PASS)
    failed = sorted(s for s, h in zip(scores, human, strict=True) if h == FAIL)
    if not passed or not failed:
        return default
    n_pass, n_fail = len(passed), len(failed)

    def rank(t: float) -> tuple[int, float, float]:
        tp = n_pass - bisect_left(passed, t)  # human pass, score >= t
        tn = bisect_left(failed, t)  # human fail, score < t
        # 2·n_pass·n_fail·(balanced accuracy), an integer: ties compare exactly.
        return (tp * n_fail + tn * n_pass, -abs(t - default), t)

    return max(set(scores), key=rank)


def majority_label(labels: Sequence[str]) -> str | None:
    """One item's human verdict from its labels: the majority of "pass" and "fail".

    "unsure" labels are ignored. A tie, or no label left, gives ``None``: the item is unsure,
    counted but left out of the rates.

    Raises:
        ValueError: a label is not "pass", "fail" or "unsure".
    """
    _check_verdicts(labels, (PASS, FAIL, UNSURE))
    passes, fails = labels.count(PASS), labels.count(FAIL)
    if passes == fails:
        return None
    return PASS if passes > fails else FAIL
