"""The lessons of a judge: the items it and the humans disagree on, and its drift."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from coalmine.judge.calibration import Disagreements
from coalmine.judge.labels import LabelSet
from coalmine.lessons.recall import EVIDENCE_CASES, listed, plural, relative
from coalmine.store.memory import ensure_lesson
from coalmine.store.runs import Store


def retain_calibration_lessons(
    store: Store,
    found: Disagreements,
    *,
    judge: str,
    judge_key: str,
    labels: LabelSet,
    root: Path,
) -> list[int]:
    """Retain a calibration's disagreements with the humans; the ids of the lessons.

    One ``judge-false-positive`` lesson for the items the judge passed and the humans failed,
    one ``judge-false-negative`` for the converse; the evidence is the labels file's sha256 and
    the item ids, so the same judge on the same labels disagreeing the same way keeps one.
    """
    where = relative(labels.path, root)
    shown = where or labels.path.name
    kinds = (
        ("judge-false-positive", found.false_pass, "passed", "failed"),
        ("judge-false-negative", found.false_block, "failed", "passed"),
    )
    ids = []
    for kind, items, judged, human in kinds:
        if not items:
            continue
        text = (
            f"Judge '{judge}' {judged} {len(items)} {plural(items, 'case', 'cases')} the humans "
            f"{human} in {shown}: {listed(items)}"
        )
        ids.append(
            ensure_lesson(
                store,
                kind,
                text,
                tags=[judge, judge_key, "judge"],
                paths=[where] if where else [],
                evidence=[f"labels {labels.sha256}", *items[:EVIDENCE_CASES]],
            )
        )
    return ids


def retain_drift_lesson(
    store: Store,
    *,
    judge: str,
    judge_key: str,
    calibration_id: int,
    reason: str,
    wrong: Sequence[str],
    labels: LabelSet,
    root: Path,
) -> int:
    """Retain a judge's drift as a ``risk-note`` lesson; its id.

    ``wrong`` are the anchors it now judges unlike the humans. The evidence is the calibration,
    the labels file's sha256 and those anchors, so the same drift found twice keeps one lesson.
    """
    where = relative(labels.path, root)
    text = f"Judge '{judge}' drifted since calibration #{calibration_id}: {reason}"
    if wrong:
        text += f"; the anchors it now judges unlike the humans: {listed(list(wrong))}"
    return ensure_lesson(
        store,
        "risk-note",
        text,
        tags=[judge, judge_key, "judge", "drift"],
        paths=[where] if where else [],
        evidence=[
            f"calibration #{calibration_id}",
            f"labels {labels.sha256}",
            *wrong[:EVIDENCE_CASES],
        ],
    )
