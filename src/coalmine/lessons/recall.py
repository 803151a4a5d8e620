"""Lessons coalmine keeps by itself, and the lessons it recalls before a run: the shared parts.

Each feature retains its own automatic lessons with the wording helpers here:

* ``caught-regression`` of an eval suite (:mod:`coalmine.evals.lessons`), of a canary run
  (:mod:`coalmine.canary.lessons`) and of a blocking gate (:mod:`coalmine.harness.lessons`),
  through ``record_lesson``: one lesson per kind, suite or spec, case and cause, whose count
  and last run move each time it is caught again, so a flaky case keeps one lesson. A case
  that failed around the agent (:func:`infrastructure`: a cassette miss, a missing key, a
  refused connection, an agent that cannot start) is no regression and makes no lesson;
* ``judge-false-positive`` and ``judge-false-negative`` of a calibration
  (:mod:`coalmine.judge.lessons`), through ``ensure_lesson`` (keyed by the labels file and the
  items, so the same disagreement keeps one).

Recalled before a run calls any agent: the ``RECALL_LIMIT`` lessons most relevant to a query
and some paths (:func:`recall_lessons`), stale ones left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from coalmine.errors import INFRASTRUCTURE_FAILURES
from coalmine.results import RecalledLesson
from coalmine.store.memory import fts_query, recall
from coalmine.store.runs import Store

RECALL_LIMIT = 5
CASES_NAMED = 10
"""Case ids a lesson's text names; the rest are counted ("and 3 more")."""
EVIDENCE_CASES = 100
"""Case ids a lesson's evidence keeps."""
REASON_CHARS = 120


def infrastructure(error_kind: str | None) -> bool:
    """Whether an agent call failed around the agent (no regression of it): see the errors."""
    return error_kind in INFRASTRUCTURE_FAILURES


def relative(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root``, or ``None`` when it lies outside (it could never match)."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def listed(ids: Sequence[str]) -> str:
    """The first ``CASES_NAMED`` ids, and how many more there are."""
    shown = ", ".join(ids[:CASES_NAMED])
    more = len(ids) - CASES_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def short(reason: str) -> str:
    """``reason`` on one line, cut to ``REASON_CHARS``."""
    flat = " ".join(reason.split())
    return flat if len(flat) <= REASON_CHARS else flat[: REASON_CHARS - 1] + "…"


def plural(ids: Sequence[str], one: str, many: str) -> str:
    """``one`` for a single id, else ``many``."""
    return one if len(ids) == 1 else many


def recall_lessons(store: Store, query: str, paths: Sequence[str]) -> list[RecalledLesson]:
    """The ``RECALL_LIMIT`` non-stale lessons best matching ``query`` and ``paths``."""
    if fts_query(query) is None and not paths:
        return []  # recall would return every lesson
    return [
        RecalledLesson(id=lesson.id, kind=lesson.kind, text=lesson.text, score=round(score, 3))
        for lesson, score in recall(store, query, paths=paths, limit=RECALL_LIMIT)
        if lesson.stale is None
    ]


def merge_recalled(groups: Iterable[Sequence[RecalledLesson]]) -> tuple[RecalledLesson, ...]:
    """Each lesson once (with its best score), best first."""
    best: dict[int, RecalledLesson] = {}
    for group in groups:
        for lesson in group:
            if lesson.id not in best or lesson.score > best[lesson.id].score:
                best[lesson.id] = lesson
    return tuple(sorted(best.values(), key=lambda lesson: (-lesson.score, lesson.id)))
