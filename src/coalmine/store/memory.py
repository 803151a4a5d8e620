"""The memory of lessons: what coalmine (or a person) learned, recalled by words and by path.

A lesson lives in ``lessons``; ``lessons_fts`` (FTS5, external content) indexes its text, tags
and paths and is kept in sync by triggers (migration ``m006_lessons``), so this module only
writes ``lessons``.

Recall score, for a lesson that matches the query's words or one of its paths::

    score = text + PATH_WEIGHT * path_hits + FEEDBACK_WEIGHT * (positive - negative + 2 * validated)

* ``text`` is ``-bm25(lessons_fts)`` for the query's words OR-ed (FTS5's BM25: ``k1 = 1.2``,
  ``b = 0.75``, every column weighted 1; larger is better), or 0 when no word matches;
* ``path_hits`` is how many of the given paths a lesson path equals or is a parent folder of
  (``src/retrieval`` covers ``src/retrieval/index.py``);
* feedback counts ``positive - negative``, with each ``validated`` counting twice.

Stale lessons are returned but always after the others; ties go to the older lesson.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Literal

from coalmine.errors import UsageError
from coalmine.store.db import transaction
from coalmine.store.runs import Store

KINDS = (
    "caught-regression",
    "human-correction",
    "judge-false-positive",
    "judge-false-negative",
    "risk-note",
    "observation",
)
Verdict = Literal["positive", "negative", "validated"]
VERDICTS: tuple[Verdict, ...] = ("positive", "negative", "validated")

PATH_WEIGHT = 1.0
FEEDBACK_WEIGHT = 0.5
STALE_NEGATIVE = 3
"""A lesson with at least this many negative votes, and more negative than positive, is stale."""


@dataclass(frozen=True)
class Lesson:
    """A row of the lessons table."""

    id: int
    kind: str
    text: str
    tags: tuple[str, ...]
    paths: tuple[str, ...]
    evidence: tuple[str, ...]
    """Run and case ids the lesson came from."""
    positive: int
    negative: int
    validated: int
    created_at: str
    updated_at: str
    stale: str | None
    """Why the lesson no longer holds, or ``None``."""
    identity: str | None = None
    """What makes an automatic lesson the same one (:class:`LessonKey`); ``None`` otherwise."""
    count: int = 1
    """How many times it was recorded (once per run that caught it)."""
    last_run: str | None = None
    """The run that recorded it last."""

    @property
    def feedback(self) -> int:
        """``positive - negative + 2 * validated``."""
        return self.positive - self.negative + 2 * self.validated


_COLUMNS = (
    "id, kind, text, tags, paths, evidence, positive, negative, validated, created_at,"
    " updated_at, stale, identity, count, last_run"
)


def _lesson(row: sqlite3.Row) -> Lesson:
    return Lesson(
        id=row["id"],
        kind=row["kind"],
        text=row["text"],
        tags=tuple(json.loads(row["tags"])),
        paths=tuple(json.loads(row["paths"])),
        evidence=tuple(json.loads(row["evidence"])),
        positive=row["positive"],
        negative=row["negative"],
        validated=row["validated"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        stale=row["stale"],
        identity=row["identity"],
        count=row["count"],
        last_run=row["last_run"],
    )


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _parts(path: str) -> tuple[str, ...]:
    """A repo-relative path as parts: ``./a/b/`` is ``("a", "b")``; backslashes are slashes."""
    return tuple(p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in (".", "/"))


def _covers(lesson_path: str, path: str) -> bool:
    """Whether ``lesson_path`` is ``path`` or a folder that holds it."""
    mine, theirs = _parts(lesson_path), _parts(path)
    return bool(mine) and theirs[: len(mine)] == mine


def _check(kind: str, text: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown lesson kind {kind!r}: use one of {', '.join(KINDS)}")
    if not text.strip():
        raise ValueError("a lesson needs some text")


def _insert(
    c: sqlite3.Connection,
    kind: str,
    text: str,
    tags: Iterable[str],
    paths: Iterable[str],
    evidence: Iterable[str],
    *,
    identity: str | None = None,
    run: str | None = None,
) -> int:
    now = _now()
    cursor = c.execute(
        "INSERT INTO lessons (kind, text, tags, paths, evidence, created_at, updated_at,"
        " identity, last_run) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            kind,
            text.strip(),
            json.dumps(list(tags), ensure_ascii=False),
            _paths_json(paths),
            _evidence_json(evidence),
            now,
            now,
            identity,
            run,
        ),
    )
    lesson_id = cursor.lastrowid
    assert lesson_id is not None  # an INSERT into a rowid table always sets it
    return lesson_id


def _paths_json(paths: Iterable[str]) -> str:
    clean = ["/".join(_parts(p)) for p in paths]
    return json.dumps([p for p in clean if p], ensure_ascii=False)


def _evidence_json(evidence: Iterable[str]) -> str:
    """How ``evidence`` is stored (and so compared by ``find_lesson``)."""
    return json.dumps(list(evidence), ensure_ascii=False)


def add_lesson(
    store: Store,
    kind: str,
    text: str,
    *,
    tags: Iterable[str] = (),
    paths: Iterable[str] = (),
    evidence: Iterable[str] = (),
) -> int:
    """Store a lesson and return its id.

    Raises:
        ValueError: ``kind`` is not one of ``KINDS``, or ``text`` is blank.
    """
    _check(kind, text)
    with transaction(store.conn) as c:
        return _insert(c, kind, text, tags, paths, evidence)


def _find(
    c: sqlite3.Connection, kind: str, evidence: Sequence[str], tags: Iterable[str]
) -> Lesson | None:
    wanted = set(tags)
    rows = c.execute(
        f"SELECT {_COLUMNS} FROM lessons WHERE kind = ? AND evidence = ? ORDER BY id",  # noqa: S608
        (kind, _evidence_json(evidence)),
    )
    for row in rows:
        lesson = _lesson(row)
        if wanted <= set(lesson.tags):
            return lesson
    return None


def find_lesson(
    store: Store, kind: str, *, evidence: Sequence[str], tags: Iterable[str] = ()
) -> Lesson | None:
    """The oldest lesson of ``kind`` with exactly ``evidence`` and every one of ``tags``."""
    return _find(store.conn, kind, evidence, tags)


def ensure_lesson(
    store: Store,
    kind: str,
    text: str,
    *,
    tags: Sequence[str] = (),
    paths: Iterable[str] = (),
    evidence: Sequence[str],
) -> int:
    """The id of the lesson ``find_lesson`` finds, or of a new one stored with these fields.

    The lookup and the insert are one transaction. What coalmine retains by itself goes
    through here, so retaining the same thing twice (a resumed run, a calibration run again)
    keeps one lesson: its kind, evidence and tags are the key.

    Raises:
        ValueError: ``kind`` is not one of ``KINDS``, or ``text`` is blank.
    """
    _check(kind, text)
    with transaction(store.conn) as c:
        found = _find(c, kind, evidence, tags)
        return found.id if found is not None else _insert(c, kind, text, tags, paths, evidence)


@dataclass(frozen=True)
class LessonKey:
    """The identity of an automatic lesson: the same kind, scope, case and cause is one lesson."""

    kind: str
    scope: str
    """Where it was caught: a suite's name, ``canary``, ``gate``."""
    case: str
    """The case, spec or gate it is about."""
    cause: str
    """What failed: the graders that failed, how a gate ended."""

    def identity(self) -> str:
        """The key as the lessons table keeps it."""
        return json.dumps([self.kind, self.scope, self.case, self.cause], ensure_ascii=False)


def record_lesson(
    store: Store,
    key: LessonKey,
    text: str,
    *,
    run: str,
    tags: Sequence[str] = (),
    paths: Iterable[str] = (),
    evidence: Sequence[str] = (),
) -> int:
    """Store the lesson ``key`` names, or count it once more; return its id.

    One row per key: recording it again from another run adds one to its ``count``, makes
    ``run`` its ``last_run`` and takes the new text, tags, paths and evidence (so it names the
    runs that caught it last); its votes and stale mark stay. Recording it again from the same
    run (a resumed run) changes nothing.

    Raises:
        ValueError: ``key.kind`` is not one of ``KINDS``, or ``text`` is blank.
    """
    _check(key.kind, text)
    identity = key.identity()
    with transaction(store.conn) as c:
        row = c.execute(
            "SELECT id, last_run FROM lessons WHERE identity = ?", (identity,)
        ).fetchone()
        if row is None:
            return _insert(c, key.kind, text, tags, paths, evidence, identity=identity, run=run)
        if row["last_run"] != run:
            c.execute(
                "UPDATE lessons SET count = count + 1, last_run = ?, text = ?, tags = ?,"
                " paths = ?, evidence = ?, updated_at = ? WHERE id = ?",
                (
                    run,
                    text.strip(),
                    json.dumps(list(tags), ensure_ascii=False),
                    _paths_json(paths),
                    _evidence_json(evidence),
                    _now(),
                    row["id"],
                ),
            )
        return int(row["id"])


def get_lesson(store: Store, lesson_id: int) -> Lesson:
    """One lesson by id.

    Raises:
        UsageError: no lesson has that id.
    """
    row = store.conn.execute(
        f"SELECT {_COLUMNS} FROM lessons WHERE id = ?",  # noqa: S608 - constant columns
        (lesson_id,),
    ).fetchone()
    if row is None:
        raise UsageError(f"no lesson {lesson_id} in the store")
    return _lesson(row)


def feedback(store: Store, lesson_id: int, verdict: Verdict) -> Lesson:
    """Count one vote on a lesson (``positive``, ``negative`` or ``validated``); return it.

    Raises:
        ValueError: an unknown verdict.
        UsageError: no lesson has that id.
    """
    if verdict not in VERDICTS:
        raise ValueError(f"unknown feedback {verdict!r}: use one of {', '.join(VERDICTS)}")
    with transaction(store.conn) as c:
        # the column name comes from VERDICTS, never from the caller's text
        changed = c.execute(
            f"UPDATE lessons SET {verdict} = {verdict} + 1, updated_at = ? WHERE id = ?",  # noqa: S608
            (_now(), lesson_id),
        ).rowcount
    if not changed:
        raise UsageError(f"no lesson {lesson_id} in the store")
    return get_lesson(store, lesson_id)


def list_lessons(store: Store, *, include_stale: bool = True) -> list[Lesson]:
    """Every lesson, oldest first (without the stale ones unless ``include_stale``)."""
    where = "" if include_stale else " WHERE stale IS NULL"
    rows = store.conn.execute(f"SELECT {_COLUMNS} FROM lessons{where} ORDER BY id")  # noqa: S608
    return [_lesson(r) for r in rows]


def fts_query(query: str) -> str | None:
    """The query's words, each quoted and OR-ed (no FTS5 syntax gets through), or ``None``."""
    words = re.findall(r"\w+", query)
    return " OR ".join(f'"{w}"' for w in words) if words else None


def recall(
    store: Store, query: str, *, paths: Iterable[str] = (), limit: int = 10
) -> list[tuple[Lesson, float]]:
    """The lessons relevant to ``query`` and ``paths``, best first, with their scores.

    A lesson is relevant when one of the query's words matches it or one of its paths covers
    a given path; with neither words nor paths, every lesson is. See the module for the score.
    """
    wanted = [p for p in paths if _parts(p)]
    match = fts_query(query)
    text_scores: dict[int, float] = {}
    if match is not None:
        rows = store.conn.execute(
            "SELECT rowid, bm25(lessons_fts) FROM lessons_fts WHERE lessons_fts MATCH ?", (match,)
        )
        text_scores = {r[0]: -r[1] for r in rows}
    scored = []
    for lesson in list_lessons(store):
        hits = sum(any(_covers(mine, p) for mine in lesson.paths) for p in wanted)
        relevant = lesson.id in text_scores or hits > 0 or (match is None and not wanted)
        if relevant:
            score = (
                text_scores.get(lesson.id, 0.0)
                + PATH_WEIGHT * hits
                + FEEDBACK_WEIGHT * lesson.feedback
            )
            scored.append((lesson, score))
    scored.sort(key=lambda pair: (pair[0].stale is not None, -pair[1], pair[0].id))
    return scored[:limit]


def stale_reason(lesson: Lesson, root: Path) -> str | None:
    """Why ``lesson`` no longer holds under ``root``, or ``None``."""
    if lesson.paths and not any((root / p).exists() for p in lesson.paths):
        return f"paths gone: {', '.join(lesson.paths)}"
    if lesson.negative >= STALE_NEGATIVE and lesson.negative > lesson.positive:
        return f"negative feedback: {lesson.negative} negative, {lesson.positive} positive"
    return None


def mark_stale(store: Store, root: Path) -> list[int]:
    """Set (or clear) each lesson's ``stale`` reason against ``root``; return the newly stale.

    Stale: every path of the lesson is gone from ``root``, or it has ``STALE_NEGATIVE`` or more
    negative votes and more negative than positive. Nothing is ever deleted; a lesson whose
    reason no longer holds (a path came back, positive votes caught up) is unmarked.
    """
    changes = []
    for lesson in list_lessons(store):
        reason = stale_reason(lesson, root)
        if reason != lesson.stale:
            changes.append((lesson.id, lesson.stale, reason))
    if changes:
        with transaction(store.conn) as c:
            c.executemany(
                "UPDATE lessons SET stale = ? WHERE id = ?", [(r, i) for i, _, r in changes]
            )
    return [i for i, before, after in changes if before is None and after is not None]
