"""Has a calibrated judge drifted? Ask it again about fixed anchor items and compare.

A judge's model can change under its name (a vendor moves an alias), and a calibration only
holds for the judge it measured. ``check_judge`` asks the judge afresh, never through the
response cache (which would answer as it did at calibration), about *anchors*: held-out items of
its calibration set that have a human verdict. They are stratified by that verdict in
proportion to the held-out mix (largest remainders, each verdict present getting at least one),
so their agreement estimates what the calibration's held-out agreement did; within a verdict
they are the first by ``sha256(judge key + item id)``, so one judge gets the same anchors on
every check. An anchor's verdict is the majority of ``reruns`` at the calibration's threshold
(a tie fails), as in the calibration.

The judge has drifted when its agreement with the humans on the anchors is under the lower end
of the calibration's 95% agreement interval (``intervals.agreement.ci95``, Wilson), or when a
model answers now that did not answer at calibration (``judge.served_models``; records made
before they were kept are not checked for it). A judge whose config now names another model has
no calibration of its own (its identity holds the model) and is drifted too, with nothing asked.

A drift is stored in ``judge_calibrations`` under the judge's key: a copy of the record it
checked, with ``may_block`` false, the drift first in ``why_not`` and ``drifted`` saying what was
found. Being the newest record it is the one runs read, and the gate withdraws it
(``coalmine.engine.policy``), so the judge advises until a new calibration is stored. A drift is
kept as a ``risk-note`` lesson too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from coalmine.config import AgentConfig, Config
from coalmine.engine.wiring import Wiring, secret_values
from coalmine.errors import GradeError, UsageError
from coalmine.judge.calibration import JudgedItem
from coalmine.judge.judging import ItemVerdict, Judging, calibrated_agent, identity_key_of
from coalmine.judge.labels import LabelledItem, LabelSet, load_labels
from coalmine.judge.lessons import retain_drift_lesson
from coalmine.judge.stats import Rate, majority_label
from coalmine.store.runs import Store

DEFAULT_ANCHORS = 30


def allocate(sizes: Mapping[str, int], count: int) -> dict[str, int]:
    """Split ``count`` anchors between the verdicts in proportion to ``sizes`` (their items).

    Each verdict gets ``⌊count·size/total⌋``, the leftovers going to the largest remainders
    (ties: the verdict named first); a verdict with items gets at least one when ``count``
    allows. Never more than a verdict has; all of them when ``count >= total``.
    """
    total = sum(sizes.values())
    if count >= total:
        return dict(sizes)
    shares = {k: count * n / total for k, n in sizes.items()}
    got = {k: int(share) for k, share in shares.items()}
    order = sorted(sizes, key=lambda k: (-(shares[k] - got[k]), list(sizes).index(k)))
    for k in order[: count - sum(got.values())]:
        got[k] += 1
    for k, n in sizes.items():  # one each, taken from the largest
        if n and not got[k] and count >= sum(1 for m in sizes.values() if m):
            largest = max(got, key=lambda j: got[j])
            got[largest] -= 1
            got[k] = 1
    return got


def choose_anchors(
    items: Sequence[LabelledItem], *, key: str, count: int
) -> list[tuple[LabelledItem, str]]:
    """The anchors for the judge ``key``: ``(item, human verdict)``, fail first, then pass.

    Held-out items with a human verdict, stratified by it (``allocate``), the first of each by
    the sha256 of the key, a NUL and the item's id.
    """
    by_verdict: dict[str, list[LabelledItem]] = {"fail": [], "pass": []}
    for item in items:
        human = majority_label([label.verdict for label in item.labels])
        if item.assigned_split == "heldout" and human is not None:
            by_verdict[human].append(item)
    counts = allocate({k: len(v) for k, v in by_verdict.items()}, count)

    def rank(item: LabelledItem) -> str:
        return hashlib.sha256(f"{key}\0{item.id}".encode()).hexdigest()

    return [
        (item, verdict)
        for verdict, found in by_verdict.items()
        for item in sorted(found, key=rank)[: counts[verdict]]
    ]


@dataclass(frozen=True)
class AnchorResult:
    """One anchor: what the humans said, what the judge said at calibration and now."""

    id: str
    human: str
    then: str | None
    """The verdict at calibration (``None``: not recorded, or it could not grade)."""
    now: str | None
    """The verdict now (``None``: it could not grade)."""


@dataclass
class DriftReport:
    """What a check found, and what it stored."""

    judge: str
    judge_key: str
    calibration_id: int | None
    """The calibration checked against (``None``: the judge has none of its own)."""
    anchors: list[AnchorResult]
    agreement: Rate
    """With the humans, on the anchors that were graded now."""
    agreement_then: Rate | None
    """With the humans, on the same anchors, at calibration (``None``: not recorded)."""
    heldout: Mapping[str, Any] | None
    """The calibration's held-out agreement: ``successes``, ``n`` and ``ci95``."""
    changed: int
    """Anchors whose verdict is not the one at calibration (both known)."""
    models_then: list[str] | None
    models_now: list[str]
    reasons: list[str]
    """Why it drifted (empty: it did not)."""
    notes: list[str] = field(default_factory=list)
    drift_id: int | None = None
    """The drift record stored (``None``: none stored)."""
    lessons: tuple[int, ...] = ()

    @property
    def drifted(self) -> bool:
        """Whether the judge drifted."""
        return bool(self.reasons)

    @property
    def floor(self) -> float | None:
        """The lower end of the calibration's 95% agreement interval."""
        ci = (self.heldout or {}).get("ci95")
        return float(ci[0]) if ci else None

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""

        def rate(r: Rate | None) -> dict[str, Any] | None:
            if r is None:
                return None
            return {"value": r.value, "successes": r.successes, "n": r.n, "ci95": r.ci95}

        return {
            "judge": self.judge,
            "judge_key": self.judge_key,
            "calibration_id": self.calibration_id,
            "drifted": self.drifted,
            "reasons": self.reasons,
            "notes": self.notes,
            "agreement": rate(self.agreement),
            "agreement_then": rate(self.agreement_then),
            "heldout_agreement": dict(self.heldout) if self.heldout else None,
            "floor": self.floor,
            "changed": self.changed,
            "models_then": self.models_then,
            "models_now": self.models_now,
            "anchors": [
                {"id": a.id, "human": a.human, "then": a.then, "now": a.now} for a in self.anchors
            ],
            "drift_id": self.drift_id,
            "lessons": list(self.lessons),
        }


def compare(
    record: Mapping[str, Any],
    calibration_id: int,
    anchors: Sequence[AnchorResult],
    models_now: Sequence[str],
) -> tuple[Rate, Rate | None, int, list[str]]:
    """Agreement now and at calibration, the changed verdicts, and why it drifted (pure).

    Drifted: agreement now under the lower end of the record's 95% agreement interval, or a
    model answering now that did not at calibration.
    """
    graded = [a for a in anchors if a.now is not None]
    agreement = Rate.of(sum(a.now == a.human for a in graded), len(graded))
    recorded = [a for a in anchors if a.then is not None]
    then = Rate.of(sum(a.then == a.human for a in recorded), len(recorded)) if recorded else None
    changed = sum(a.then is not None and a.now is not None and a.then != a.now for a in anchors)
    reasons = []
    interval = (record.get("intervals") or {}).get("agreement") or {}
    ci = interval.get("ci95")
    if ci and agreement.value is not None and agreement.value < ci[0]:
        reasons.append(
            f"on {agreement.n} anchors it agrees with the humans {agreement.value:.3f} "
            f"({agreement.successes}/{agreement.n}), under {ci[0]:.3f}, the lower end of "
            f"calibration #{calibration_id}'s 95% agreement interval"
        )
    served: list[str] = list((record.get("judge") or {}).get("served_models") or [])
    new = sorted(set(models_now) - set(served)) if served else []
    if new:
        reasons.append(
            f"calibrated on model {', '.join(served)}, it answers now as {', '.join(new)}"
        )
    return agreement, then, changed, reasons


def drift_record(
    record: Mapping[str, Any], report: DriftReport, *, now: datetime
) -> dict[str, Any]:
    """The record that marks the judge drifted: a copy of ``record`` that may not block."""
    reason = f"it drifted since calibration #{report.calibration_id}: " + "; ".join(report.reasons)
    return {
        **record,
        "created_at": now.isoformat(),
        "may_block": False,
        "why_not": [reason, *(record.get("why_not") or [])],
        "labels_needed": None,
        "drifted": {
            "calibration": report.calibration_id,
            "reason": reason,
            "reasons": list(report.reasons),
            "anchors": len(report.anchors),
            "agreement": report.as_dict()["agreement"],
            "floor": report.floor,
            "changed": report.changed,
            "models_now": list(report.models_now),
            "wrong": [a.id for a in report.anchors if a.now is not None and a.now != a.human],
        },
    }


def find_labels(recorded: str | None, root: Path) -> Path | None:
    """The calibration set a record names, if it is still there.

    The path is as it was given: absolute, or relative to the working directory or the project.
    """
    if not recorded:
        return None
    path = Path(recorded)
    for candidate in (path, Path.cwd() / path, root / path):
        if candidate.is_file():
            return candidate
    return None


async def check_judge(
    config: Config,
    *,
    store: Store,
    judge: str | None = None,
    labels: LabelSet | None = None,
    anchors: int = DEFAULT_ANCHORS,
    reruns: int = 1,
    concurrency: int = 8,
) -> DriftReport:
    """Ask the judge about its anchors again; store a drift record and a lesson if it drifted.

    ``labels`` defaults to the calibration set its newest record names.

    Raises:
        ConfigError: no judge, or an unknown agent.
        UsageError: the judge was never calibrated, or its calibration set is not found.
        GradeError: the judge graded none of the anchors.
    """
    agent = calibrated_agent(config, judge)
    key = identity_key_of(config, agent)
    rows = store.calibrations(key)
    if not rows:
        return _without_calibration(store, agent.name, key, getattr(agent.resolved, "model", None))
    newest_id, _, record, _ = rows[0]
    drifted_before = record.get("drifted") or {}
    calibration_id = int(drifted_before.get("calibration") or newest_id)
    notes = []
    if labels is None:
        recorded = (record.get("calibration_set") or {}).get("path")
        path = find_labels(recorded, config.root)
        if path is None:
            raise UsageError(
                f"judge {agent.name!r}: calibration #{calibration_id}'s set {recorded!r} is not "
                "found; name the calibration set (LABELS.jsonl) to check against"
            )
        labels = load_labels(path)
    if labels.sha256 != (record.get("calibration_set") or {}).get("sha256"):
        notes.append(f"{labels.path} changed since the calibration: anchors are matched by id")
    chosen = choose_anchors(labels.items, key=key, count=anchors)
    if not chosen:
        raise UsageError(f"{labels.path}: no held-out item with a human verdict to anchor on")
    kind = str(record.get("grader"))
    other = sorted({item.grader for item, _ in chosen} - {kind})
    if other:
        raise UsageError(
            f"{labels.path}: judge {agent.name!r} was calibrated for {kind}, but anchors of this "
            f"set are for {', '.join(other)}: name the set it was calibrated on"
        )
    verdicts = await _ask(config, agent, kind, [item for item, _ in chosen], reruns=reruns,
                          concurrency=concurrency)  # fmt: skip
    then = record.get("verdicts") or {}
    if not then:
        notes.append(f"calibration #{calibration_id} kept no verdicts: compared with the humans")
    threshold = float(record["threshold"])
    results = [
        AnchorResult(item.id, human, then.get(item.id),
                     JudgedItem(item, list(v.scores)).verdict(threshold))
        for (item, human), v in zip(chosen, verdicts, strict=True)
    ]  # fmt: skip
    if all(r.now is None for r in results):
        raise GradeError(f"judge {agent.name!r} graded none of the {len(results)} anchors",
                         grader=kind)  # fmt: skip
    models_now = sorted({m for v in verdicts for m in v.models})
    agreement, agreement_then, changed, reasons = compare(record, calibration_id, results,
                                                          models_now)  # fmt: skip
    report = DriftReport(
        agent.name, key, calibration_id, results, agreement, agreement_then,
        (record.get("intervals") or {}).get("agreement"), changed,
        (record.get("judge") or {}).get("served_models"), models_now, reasons, notes,
    )  # fmt: skip
    if drifted_before:
        notes.append(
            f"calibration #{calibration_id} was marked drifted already (#{newest_id}): the judge "
            "advises until it is calibrated again"
        )
    if report.drifted and not drifted_before:
        new = drift_record(record, report, now=datetime.now(UTC))
        report.drift_id = store.record_calibration(key, may_block=False, record=new)
        wrong = new["drifted"]["wrong"]
        lesson = retain_drift_lesson(
            store, judge=agent.name, judge_key=key, calibration_id=calibration_id,
            reason="; ".join(reasons), wrong=wrong, labels=labels, root=config.root,
        )  # fmt: skip
        report.lessons = (lesson,)
    return report


def _without_calibration(store: Store, agent: str, key: str, model: str | None) -> DriftReport:
    """A judge with no calibration of its own: drifted if its agent was calibrated on another model.

    Nothing is asked or stored: runs already treat it as uncalibrated, and say which model was.

    Raises:
        UsageError: the agent was never calibrated.
    """
    for calibration_id, record in store.newest_calibrations():
        judge = record.get("judge") or {}
        calibrated = judge.get("model")
        if judge.get("agent") == agent and calibrated and model and calibrated != model:
            of = (record.get("drifted") or {}).get("calibration") or calibration_id
            reason = f"calibrated on model {calibrated} (#{of}), it is configured with {model} now"
            return DriftReport(
                agent, key, None, [], Rate.of(0, 0), None, None, 0, [calibrated], [], [reason],
                ["nothing was asked: calibrate the judge with its new model"],
            )  # fmt: skip
    raise UsageError(
        f"judge {agent!r} has no calibration to check against: calibrate it first "
        "(coalmine judge calibrate LABELS.jsonl)"
    )


async def _ask(
    config: Config,
    agent: AgentConfig,
    kind: str,
    items: Sequence[LabelledItem],
    *,
    reruns: int,
    concurrency: int,
) -> list[ItemVerdict]:
    """What the judge says of each item now, asked afresh (no response cache)."""
    caller = Wiring(None, tuple(secret_values(config)), None, None).caller(agent)
    judging = Judging(
        {agent.name: caller}, kind, config.defaults.judge_timeout_seconds, reruns, agent.name,
        [], False, anyio.CapacityLimiter(concurrency),
    )  # fmt: skip
    found: list[ItemVerdict | None] = [None] * len(items)

    async def one(position: int, item: LabelledItem) -> None:
        found[position] = await judging.judge(item)

    try:
        async with anyio.create_task_group() as tg:
            for position, item in enumerate(items):
                tg.start_soon(one, position, item)
    finally:
        with anyio.CancelScope(shield=True):
            await caller.provider.aclose()
    return [v for v in found if v is not None]
