"""Eval suite runs in the store: attempts written in batches, read back as a stream.

A suite run makes one row per case and repeat (``eval_attempts``). A transaction per row would
cost more than the rest of a case; the writer batches rows and commits every ``batch`` rows,
and ``flush`` commits what is pending: the engine calls it every ``interval`` seconds, on a
timer (not only when the next case finishes), and when a run ends, is interrupted or fails. A
process killed outright loses at most the rows of the last ``interval``, which a resume runs
again. Summaries are computed from the rows, streamed, so memory stays flat.
"""

from __future__ import annotations

import io
import json
import math
import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from coalmine._util.compact import Fingerprints
from coalmine.results import EvalSuiteResult
from coalmine.store.db import transaction
from coalmine.store.runs import NEWEST_FIRST, RunStatus, Store


class Attempt(NamedTuple):
    """One case and repeat of a suite, as stored."""

    suite: str
    case_id: str
    rep: int
    status: str
    """``pass``, ``fail`` or ``error``."""
    blocks: bool
    """Whether this fail or error may fail the suite (advisory graders' failures do not)."""
    score: float | None
    scores: dict[str, float | None]
    latency: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None
    error_kind: str | None
    record: dict[str, Any]
    record_json: str | None = None
    """The record's JSON, when the run encoded it already (scrubbing it): stored as it is."""


_INSERT = (
    "INSERT OR REPLACE INTO eval_attempts (run_id, suite, case_id, rep, status, blocks, score,"
    " scores, latency, prompt_tokens, completion_tokens, cost, error_kind, record)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


_CLEAR_FACTS = (
    "DELETE FROM eval_attempt_facts WHERE run_id = ? AND suite = ? AND case_id = ? AND rep = ?"
)
_INSERT_FACT = (
    "INSERT OR IGNORE INTO eval_attempt_facts (run_id, suite, case_id, rep, kind, value)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)


def attempt_facts(record: dict[str, Any]) -> list[tuple[str, str]]:
    """What a viewer filters an attempt by: ``(tag, name)`` and ``(failed, grader key)``."""
    facts = [("tag", str(t)) for t in record.get("tags") or ()]
    grades = record.get("grades")
    if isinstance(grades, dict):
        facts += [
            ("failed", str(key))
            for key, grade in grades.items()
            if isinstance(grade, dict) and grade.get("passed") is False
        ]
    return facts


class AttemptWriter:
    """Buffers attempts and writes them in one transaction per batch."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        *,
        batch: int = 512,
        interval: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.store = store
        self.run_id = run_id
        self.batch = batch
        self.interval = interval
        self.clock = clock
        self.pending: list[tuple[Any, ...]] = []
        self.facts: list[tuple[Any, ...]] = []
        self.written = 0
        self._last = clock()

    def add(self, attempt: Attempt) -> None:
        """Queue one attempt; commit the batch when it is full or old enough."""
        a = attempt
        self.pending.append(
            (
                self.run_id,
                a.suite,
                a.case_id,
                a.rep,
                a.status,
                int(a.blocks),
                a.score,
                json.dumps(a.scores),
                a.latency,
                a.prompt_tokens,
                a.completion_tokens,
                a.cost,
                a.error_kind,
                a.record_json or json.dumps(a.record, ensure_ascii=False),
            )
        )
        key = (self.run_id, a.suite, a.case_id, a.rep)
        self.facts += [(*key, kind, value) for kind, value in attempt_facts(a.record)]
        if len(self.pending) >= self.batch or self.clock() - self._last >= self.interval:
            self.flush()

    def flush(self) -> None:
        """Commit every pending attempt."""
        self._last = self.clock()
        if not self.pending:
            return
        with transaction(self.store.conn) as c:
            c.executemany(_CLEAR_FACTS, [row[:4] for row in self.pending])  # a replaced attempt's
            c.executemany(_INSERT, self.pending)
            c.executemany(_INSERT_FACT, self.facts)
        self.written += len(self.pending)
        self.pending.clear()
        self.facts.clear()


class DoneAttempts:
    """``(suite, case id, repeat)`` of every attempt a run has, to resume it.

    Held as fingerprints (~16 bytes an attempt, so a run of a million resumes in constant
    memory); a fingerprint that matches is confirmed by the store, so membership is exact.
    """

    def __init__(self, store: Store, run_id: str):
        self._store = store
        self._run_id = run_id
        self._table = Fingerprints()
        rows = store.conn.execute(
            "SELECT suite, case_id, rep FROM eval_attempts WHERE run_id = ?", (run_id,)
        )
        for suite, case_id, rep in rows:
            self._table.add((suite, case_id, rep))

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 3:
            return False
        found, _ = self._table.find(Fingerprints.of(key))
        if not found:
            return False
        row = self._store.conn.execute(
            "SELECT 1 FROM eval_attempts"
            " WHERE run_id = ? AND suite = ? AND case_id = ? AND rep = ?",
            (self._run_id, *key),
        ).fetchone()
        return row is not None


def done_attempts(store: Store, run_id: str) -> DoneAttempts:
    """What run ``run_id`` has stored, to resume it (:class:`DoneAttempts`)."""
    return DoneAttempts(store, run_id)


def run_suites(store: Store, run_id: str) -> list[str]:
    """The suites the run stored attempts of, by name."""
    cursor = store.conn.execute(
        "SELECT DISTINCT suite FROM eval_attempts WHERE run_id = ? ORDER BY suite", (run_id,)
    )
    return [row[0] for row in cursor]


_ATTEMPT_COLUMNS = (
    "SELECT suite, case_id, rep, status, blocks, score, scores, latency, prompt_tokens,"
    " completion_tokens, cost, error_kind, record FROM eval_attempts"
)


def _attempt(row: Any) -> Attempt:
    """An attempt from a row of ``_ATTEMPT_COLUMNS``."""
    return Attempt(
        row[0], row[1], row[2], row[3], bool(row[4]), row[5], json.loads(row[6]), row[7],
        row[8], row[9], row[10], row[11], json.loads(row[12]),
    )  # fmt: skip


def iter_attempts(store: Store, run_id: str, suite: str) -> Iterator[Attempt]:
    """A suite's attempts, grouped by case (ordered by case id, then repeat), streamed."""
    cursor = store.conn.execute(
        _ATTEMPT_COLUMNS + " WHERE run_id = ? AND suite = ? ORDER BY case_id, rep",
        (run_id, suite),
    )
    return map(_attempt, cursor)


def case_attempts(store: Store, run_id: str, suite: str, case_id: str) -> list[Attempt]:
    """Every repeat of one case of an eval run, in order."""
    cursor = store.conn.execute(
        _ATTEMPT_COLUMNS + " WHERE run_id = ? AND suite = ? AND case_id = ? ORDER BY rep",
        (run_id, suite, case_id),
    )
    return [_attempt(row) for row in cursor]


_STARTED_BEFORE = (
    "(runs.started_at < (SELECT started_at FROM runs WHERE id = :before) OR (runs.started_at ="
    " (SELECT started_at FROM runs WHERE id = :before) AND runs.id < :before))"
)
"""Runs that started before run ``:before`` (by start, then id: an imported old run is older)."""


def prior_runs(store: Store, kind: str, before: str) -> list[str]:
    """Ids of the finished runs of ``kind`` that started before run ``before``, newest first."""
    rows = store.conn.execute(
        "SELECT id FROM runs WHERE kind = :kind AND status = 'finished'"
        f" AND {_STARTED_BEFORE} ORDER BY {NEWEST_FIRST}",
        {"kind": kind, "before": before},
    )
    return [r[0] for r in rows]


class SuiteBaseline(NamedTuple):
    """The run a suite's cases are compared with, and how that run reduced repeats."""

    run_id: str
    reducer: str
    repeats: int


def find_suite_baseline(store: Store, suite: str, *, before: str) -> SuiteBaseline | None:
    """The finished, uninterrupted eval run of ``suite`` that started last before ``before``."""
    row = store.conn.execute(
        "SELECT runs.id, json_extract(s.summary, '$.reducer'), json_extract(s.summary, '$.repeats')"
        " FROM runs JOIN eval_suites AS s ON s.run_id = runs.id"
        f" WHERE runs.kind = 'eval' AND runs.status = 'finished' AND {_STARTED_BEFORE}"
        " AND s.suite = :suite AND NOT json_extract(s.summary, '$.interrupted')"
        " ORDER BY runs.started_at DESC, runs.id DESC LIMIT 1",
        {"before": before, "suite": suite},
    ).fetchone()
    return None if row is None else SuiteBaseline(row[0], str(row[1]), int(row[2]))


def run_has_tag(store: Store, run_id: str, tag: str) -> bool:
    """Whether an attempt of the run carries ``tag``: one seek of the facts index."""
    row = store.conn.execute(
        "SELECT 1 FROM eval_attempt_facts WHERE run_id = ? AND kind = 'tag' AND value = ? LIMIT 1",
        (run_id, tag),
    ).fetchone()
    return row is not None


def attempt_records(store: Store, run_id: str, suite: str) -> list[tuple[str, dict[str, Any]]]:
    """``(case id, record)`` of every attempt of a run's suite."""
    rows = store.conn.execute(
        "SELECT case_id, record FROM eval_attempts WHERE run_id = ? AND suite = ?"
        " ORDER BY case_id, rep",
        (run_id, suite),
    )
    return [(r[0], json.loads(r[1])) for r in rows]


def save_suite_summary(store: Store, run_id: str, suite: str, summary: dict[str, Any]) -> None:
    """Store (or replace) the summary of one suite of a run."""
    with transaction(store.conn) as c:
        c.execute(
            "INSERT OR REPLACE INTO eval_suites (run_id, suite, summary) VALUES (?, ?, ?)",
            (run_id, suite, json.dumps(summary, ensure_ascii=False)),
        )


CaseVerdict = tuple[str, str, float | None]
"""A case of a suite run: its id, its verdict over the repeats, the mean of their scores."""


@dataclass(frozen=True)
class KeptVerdicts:
    """A suite run's per-case verdicts, packed: loaded in milliseconds for 100,000 cases."""

    ids: list[str]
    verdicts: str
    """One letter a case: ``P``, ``F`` or ``E``."""
    scores: array[float]
    """The mean score of each case; NaN when none of its repeats had one."""


class PackedVerdicts:
    """A suite run's per-case verdicts packed as they are kept, while it is summarised.

    About 20 bytes a case (the id as JSON, a letter, a float), so a suite of a million cases
    is summarised in constant memory rather than in a million tuples.
    """

    def __init__(self, cases: Iterable[CaseVerdict] = ()):
        self._ids = io.StringIO()
        self._letters = io.StringIO()
        self.scores = array("d")
        for case in cases:
            self.add(*case)

    def add(self, case_id: str, verdict: str, mean: float | None) -> None:
        """Keep one case's verdict (``pass``, ``fail`` or ``error``) and mean score."""
        self._ids.write("," if self.scores else "")
        self._ids.write(json.dumps(case_id, ensure_ascii=False))
        self._letters.write(verdict[0].upper())
        self.scores.append(math.nan if mean is None else mean)

    def __len__(self) -> int:
        return len(self.scores)

    def __iter__(self) -> Iterator[CaseVerdict]:
        words = {"P": "pass", "F": "fail", "E": "error"}
        rows = zip(self.ids_json_list(), self.letters, self.scores, strict=True)
        for case_id, letter, score in rows:
            yield case_id, words[letter], None if math.isnan(score) else score

    def ids_json(self) -> str:
        """The ids as a JSON array."""
        return f"[{self._ids.getvalue()}]"

    def ids_json_list(self) -> list[str]:
        """The ids."""
        found: list[str] = json.loads(self.ids_json())
        return found

    @property
    def letters(self) -> str:
        """One letter a case: ``P``, ``F`` or ``E``."""
        return self._letters.getvalue()


def save_case_verdicts(
    store: Store, run_id: str, suite: str, cases: PackedVerdicts | Iterable[CaseVerdict]
) -> None:
    """Store (or replace) the per-case verdicts of one suite of a run (ordered by case id)."""
    packed = cases if isinstance(cases, PackedVerdicts) else PackedVerdicts(cases)
    with transaction(store.conn) as c:
        c.execute(
            "INSERT OR REPLACE INTO eval_case_verdicts (run_id, suite, ids, verdicts, scores)"
            " VALUES (?, ?, ?, ?, ?)",
            (run_id, suite, packed.ids_json(), packed.letters, packed.scores.tobytes()),
        )


def case_verdicts(store: Store, run_id: str) -> dict[str, KeptVerdicts] | None:
    """Every suite's kept per-case verdicts, when each suite of the run has them; else None."""
    rows = store.conn.execute(
        "SELECT s.suite, v.ids, v.verdicts, v.scores FROM eval_suites AS s LEFT JOIN"
        " eval_case_verdicts AS v ON v.run_id = s.run_id AND v.suite = s.suite"
        " WHERE s.run_id = ?",
        (run_id,),
    ).fetchall()
    if not rows or any(r[1] is None for r in rows):
        return None
    kept = {}
    for suite, ids, verdicts, blob in rows:
        scores = array("d")
        scores.frombytes(blob)
        kept[suite] = KeptVerdicts(json.loads(ids), verdicts, scores)
    return kept


def previous_suite_verdicts(
    store: Store, suite: str, run_id: str
) -> tuple[str, KeptVerdicts] | None:
    """``suite``'s kept per-case verdicts in the finished run that started last before ``run_id``.

    With that run's id; ``None`` when no other finished run of the suite started before it.
    """
    row = store.conn.execute(
        "SELECT v.run_id, v.ids, v.verdicts, v.scores FROM eval_case_verdicts AS v"
        " JOIN runs AS r ON r.id = v.run_id WHERE v.suite = ?1 AND r.status = 'finished'"
        " AND r.id != ?2 AND r.started_at <= (SELECT started_at FROM runs WHERE id = ?2)"
        " ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
        (suite, run_id),
    ).fetchone()
    if row is None:
        return None
    scores = array("d")
    scores.frombytes(row[3])
    return row[0], KeptVerdicts(json.loads(row[1]), row[2], scores)


def suite_summaries(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The stored summaries of a run's suites, by suite name."""
    rows = store.conn.execute(
        "SELECT summary FROM eval_suites WHERE run_id = ? ORDER BY suite", (run_id,)
    )
    return [json.loads(r[0]) for r in rows]


def suite_results(store: Store, run_id: str) -> list[EvalSuiteResult]:
    """The stored summaries of a run's suites, as result models."""
    return [EvalSuiteResult.model_validate(s) for s in suite_summaries(store, run_id)]


def end_run(
    store: Store,
    run_id: str,
    *,
    status: RunStatus,
    ended_at: datetime,
    results_file: str | None,
) -> None:
    """Mark an eval run finished or interrupted."""
    with transaction(store.conn) as c:
        c.execute(
            "UPDATE runs SET status = ?, ended_at = ?, results_file = COALESCE(?, results_file)"
            " WHERE id = ?",
            (status, ended_at.astimezone(UTC).isoformat(), results_file, run_id),
        )


def last_suite_start(store: Store, suite: str) -> tuple[str, int] | None:
    """The eval run of ``suite`` that started last, and its start (Unix ms), or ``None``."""
    row = store.conn.execute(
        "SELECT run_id, json_extract(summary, '$.startedAt') AS started FROM eval_suites"
        " WHERE suite = ? ORDER BY started DESC, run_id DESC LIMIT 1",
        (suite,),
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


class AttemptTally(NamedTuple):
    """How a run's stored attempts came out: passes, all, errors, mean score, cost."""

    passed: int
    total: int
    mean_score: float | None
    errored: int = 0
    cost: float | None = None


def tally_attempts(store: Store, run_id: str) -> AttemptTally:
    """Count a run's attempts (every suite and repeat) in one query, on the slim index."""
    row = store.conn.execute(
        "SELECT COALESCE(SUM(status = 'pass'), 0), COUNT(*), AVG(score),"
        " COALESCE(SUM(status = 'error'), 0), SUM(cost)"
        " FROM eval_attempts INDEXED BY eval_attempts_slim WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    return AttemptTally(int(row[0]), int(row[1]), row[2], int(row[3]), row[4])
