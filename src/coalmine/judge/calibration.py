"""From judged, labelled items to the figures of a calibration and its verdict (pure).

The dev split only picks the score threshold that best separates the humans' pass from fail
(balanced accuracy); every figure is computed on the held-out split, so a judge is never graded
on the items its threshold was fitted to. An item's judge verdict is the majority of its reruns
at that threshold (a tie fails); an item the humans were unsure of, or that the judge could not
grade on any rerun, is counted and left out of the rates.

A judge may block on evidence, not on point estimates (``coalmine.judge.evidence``): on at
least ``min_heldout`` held-out items, the one-sided 95% Wilson upper bounds of its false-pass
and false-block rates must be at most ``max_false_pass_rate`` and ``max_false_block_rate``, the
one-sided 95% lower bound of Cohen's kappa with the humans at least ``min_kappa``, and its
verdicts stable across reruns (``min_stability``, on the observed share: a lower bound would
ask 52 items of a judge that never wavers, more than the rates need, and one rerun measures
nothing). The record keeps the bounds under ``bounds``; when the judge falls short only for
lack of evidence, ``labels_needed`` says how many more held-out items of each kind would let it
block at its current rates, and ``why_not`` says it in words. The verbosity check (the same
output padded with filler that adds nothing) is reported, not gated: ``verbosity_flip_rate`` is
the share of held-out items whose verdict the padding changed. ``verdicts`` keeps every item's
verdict at the threshold, so a later drift check can compare the judge with itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coalmine.config import CalibrationLimits
from coalmine.judge import evidence, stats
from coalmine.judge.labels import DEV_SHARE, LabelledItem

SCHEMA = "coalmine.judge.calibration.v1"


@dataclass
class JudgedItem:
    """A labelled item and every score the judges gave it."""

    item: LabelledItem
    scores: list[float | None]
    """The primary judge's score on each rerun (``None``: that rerun could not grade)."""
    quorum: dict[str, float | None] = field(default_factory=dict)
    """Another judge of the quorum → its score."""
    padded: float | None = None
    """The primary judge's score for the same output padded with filler (verbosity check)."""

    @property
    def human(self) -> str | None:
        """The labellers' majority verdict (``None``: unsure)."""
        return stats.majority_label([label.verdict for label in self.item.labels])

    def verdicts(self, threshold: float) -> list[str]:
        """The primary judge's verdict on each rerun that graded."""
        return ["pass" if s >= threshold else "fail" for s in self.scores if s is not None]

    def verdict(self, threshold: float) -> str | None:
        """The majority of the reruns (a tie fails); ``None`` when no rerun graded."""
        runs = self.verdicts(threshold)
        if not runs:
            return None
        return "pass" if 2 * runs.count("pass") > len(runs) else "fail"

    def mean_score(self) -> float | None:
        """The mean of the reruns' scores."""
        got = [s for s in self.scores if s is not None]
        return sum(got) / len(got) if got else None


def _rates(rates: Mapping[str, stats.Rate]) -> dict[str, Any]:
    """Each rate as a plain number, and its count and interval under ``intervals``."""
    out: dict[str, Any] = {key: rate.value for key, rate in rates.items()}
    out["intervals"] = {
        key: {"successes": r.successes, "n": r.n, "ci95": r.ci95} for key, r in rates.items()
    }
    return out


def _figures(human: Sequence[str], judge: Sequence[str]) -> dict[str, Any]:
    c = stats.confusion(human, judge)
    rates = {
        "agreement": stats.agreement(c),
        "precision": stats.precision(c),
        "recall": stats.recall(c),
        "false_pass_rate": stats.false_pass_rate(c),
        "false_block_rate": stats.false_block_rate(c),
    }
    return {
        "confusion": {"tp": c.tp, "fp": c.fp, "tn": c.tn, "fn": c.fn},
        "kappa": stats.cohen_kappa(human, judge) if human else None,
        "f1": stats.f1(c),
        **_rates(rates),
    }


def summarize(
    judged: Sequence[JudgedItem],
    *,
    default_threshold: float,
    limits: CalibrationLimits,
    quorum_names: Sequence[str] = (),
) -> dict[str, Any]:
    """The figures of a calibration and whether its judge may block (``may_block``)."""
    dev = [j for j in judged if j.item.assigned_split == "dev"]
    heldout = [j for j in judged if j.item.assigned_split == "heldout"]
    tuning = [(j.mean_score(), j.human) for j in dev]
    pairs = [(s, h) for s, h in tuning if s is not None and h is not None]
    threshold = stats.best_threshold(
        [s for s, _ in pairs], [h for _, h in pairs], default=default_threshold
    )
    usable = [j for j in heldout if j.human is not None and j.verdict(threshold) is not None]
    human = [j.human for j in usable if j.human is not None]
    judge = [v for j in usable if (v := j.verdict(threshold)) is not None]
    figures = _figures(human, judge)
    stability = stats.rerun_stability([j.verdicts(threshold) for j in usable])
    spread = stats.score_spread([[s for s in j.scores if s is not None] for j in usable])
    pairs_of_humans = [
        decisive[:2]
        for j in heldout
        if len(decisive := [lb.verdict for lb in j.item.labels if lb.verdict != "unsure"]) >= 2
    ]
    human_kappa = (
        stats.cohen_kappa([a for a, _ in pairs_of_humans], [b for _, b in pairs_of_humans])
        if pairs_of_humans
        else None
    )
    record: dict[str, Any] = {
        "schema": SCHEMA,
        "n_items": len(judged),
        "n_dev": len(dev),
        "n_heldout": len(usable),
        "n_unsure": sum(1 for j in judged if j.human is None),
        "n_errors": sum(1 for j in judged if all(s is None for s in j.scores)),
        "threshold": threshold,
        **figures,
        "human_kappa": human_kappa,
        "rerun_stability": stability.value,
        "score_spread": spread,
        "reruns": max((len(j.scores) for j in judged), default=0),
        "quorum_disagreement": None,
        "quorum": None,
    }
    if quorum_names:
        record.update(_quorum(usable, threshold, default_threshold, quorum_names, human))
        record["intervals"]["quorum_disagreement"] = record["quorum"]["disagreement"]
    checked = [j for j in usable if j.padded is not None]
    flips = sum(
        (j.padded is not None and j.padded >= threshold) != (j.verdict(threshold) == "pass")
        for j in checked
    )
    flip_rate = stats.Rate.of(flips, len(checked))
    record["verbosity_flip_rate"] = flip_rate.value
    record["intervals"].update(
        {
            key: {"successes": r.successes, "n": r.n, "ci95": r.ci95}
            for key, r in (("rerun_stability", stability), ("verbosity_flip_rate", flip_rate))
        }
    )
    record["verdicts"] = {j.item.id: j.verdict(threshold) for j in judged}
    confusion = stats.Confusion(**record["confusion"])
    found = evidence.bounds(confusion)
    record["bounds"] = {
        "false_pass_rate": found.false_pass_rate,
        "false_block_rate": found.false_block_rate,
        "kappa": found.kappa,
        "kappa_se": found.kappa_se,
        "level": "one-sided 95%",
    }
    reasons = _why_not(record, found, limits)
    stable = stability.value is not None and stability.value >= limits.min_stability
    needed = evidence.labels_needed(confusion, limits) if stable and reasons else None
    if needed is not None and needed.total:
        reasons.append(_needed_text(needed, confusion))
        record["labels_needed"] = needed.as_record()
    else:
        record["labels_needed"] = None
    record["limits"] = limits.model_dump()
    record["may_block"] = not reasons
    record["why_not"] = reasons
    return record


@dataclass(frozen=True)
class Disagreements:
    """Held-out items where the judge's verdict is not the humans' (ids, in the set's order)."""

    false_pass: tuple[str, ...]
    """The judge passed what the humans failed (the confusion's ``fp``)."""
    false_block: tuple[str, ...]
    """The judge failed what the humans passed (the confusion's ``fn``)."""


def disagreements(judged: Sequence[JudgedItem], *, threshold: float) -> Disagreements:
    """The items the calibration's false-pass and false-block rates count, at ``threshold``."""
    false_pass, false_block = [], []
    for j in judged:
        if j.item.assigned_split != "heldout":
            continue
        human, judge = j.human, j.verdict(threshold)
        if human == "fail" and judge == "pass":
            false_pass.append(j.item.id)
        elif human == "pass" and judge == "fail":
            false_block.append(j.item.id)
    return Disagreements(tuple(false_pass), tuple(false_block))


def _quorum(
    usable: Sequence[JudgedItem],
    threshold: float,
    default_threshold: float,
    names: Sequence[str],
    human: Sequence[str],
) -> dict[str, Any]:
    """The quorum's majority verdicts, their figures and how often the judges disagree."""
    rows = []
    for j in usable:
        verdict = j.verdict(threshold)
        row = [verdict] if verdict is not None else []
        for name in names:
            score = j.quorum.get(name)
            if score is not None:  # the other judges use their grader's own threshold
                row.append("pass" if score >= default_threshold else "fail")
        rows.append(row)
    majority, disagreement = stats.quorum(rows)
    return {
        "quorum_disagreement": disagreement.value,
        "quorum": {
            "judges": list(names),
            "disagreement": {
                "successes": disagreement.successes,
                "n": disagreement.n,
                "ci95": disagreement.ci95,
            },
            **_figures(human, majority),
        },
    }


def _why_not(
    record: Mapping[str, Any], found: evidence.Bounds, limits: CalibrationLimits
) -> list[str]:
    """Each limit the calibration misses, in words (empty: the judge may block)."""
    reasons = []
    if record["n_heldout"] < limits.min_heldout:
        reasons.append(
            f"{record['n_heldout']} held-out items with a verdict; at least "
            f"{limits.min_heldout} are needed"
        )
    c = record["confusion"]
    rates = (
        ("false-pass rate", c["fp"], c["fp"] + c["tn"], "fail", found.false_pass_rate,
         limits.max_false_pass_rate),
        ("false-block rate", c["fn"], c["fn"] + c["tp"], "pass", found.false_block_rate,
         limits.max_false_block_rate),
    )  # fmt: skip
    for label, errors, n, kind, upper, limit in rates:
        if upper is None:
            reasons.append(f"no {label}: no held-out item the humans {kind}")
        elif errors / n >= limit:
            reasons.append(
                f"{label} {errors / n:.3f} ({errors} of {n} held-out items the humans {kind}) is "
                f"at or over {limit:g} itself: more labels cannot bring its bound under"
            )
        elif upper > limit:
            reasons.append(
                f"{label} {errors / n:.3f} ({errors} of {n} held-out items the humans {kind}): "
                f"its 95% upper bound {upper:.3f} is over {limit:g}"
            )
    stability = record["rerun_stability"]
    if stability is None:
        reasons.append("no rerun stability: no held-out item to measure it on")
    elif stability < limits.min_stability:
        reasons.append(f"rerun stability {stability:.3f} is under {limits.min_stability:g}")
    kappa = record["kappa"]
    if not record["n_heldout"]:
        reasons.append("no kappa: no held-out item to measure it on")
    elif kappa is None or found.kappa is None:
        shown = "none" if kappa is None else f"{kappa:.3f}"
        reasons.append(
            f"kappa {shown}: no lower bound, for the humans and the judge give one verdict"
        )
    elif kappa < limits.min_kappa:
        reasons.append(
            f"kappa {kappa:.3f} is under {limits.min_kappa:g} itself: more labels cannot raise "
            "its bound to it"
        )
    elif found.kappa < limits.min_kappa:
        bound = f"its 95% lower bound {found.kappa:.3f}"
        reasons.append(f"kappa {kappa:.3f}: {bound} is under {limits.min_kappa:g}")
    return reasons


def _needed_text(needed: evidence.LabelsNeeded, c: stats.Confusion) -> str:
    """``labels_needed`` in words: how many more held-out items of which kind."""
    parts = []
    for count, kind, had in (
        (needed.fail, "fail", c.fp + c.tn),
        (needed.pass_, "pass", c.fn + c.tp),
    ):
        if count:
            least = "" if had else "at least "
            parts.append(f"{least}{count} more held-out {_items(count)} the humans {kind}")
    if needed.either:
        parts.append(f"{needed.either} more of either kind")
    labelled = math.ceil(needed.total * 100 / (100 - DEV_SHARE))
    return (
        f"short of evidence only: {' and '.join(parts)} would let it block at its current rates "
        f"(new items without a split go {100 - DEV_SHARE}% to held-out: label about {labelled})"
    )


def _items(count: int) -> str:
    return "item" if count == 1 else "items"
