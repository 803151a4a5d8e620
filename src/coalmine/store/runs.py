"""Runs, case results, grades and judge verdicts in the store; reading a run back whole.

A case is written in one transaction the moment it is graded, so a crash loses at most the
cases in flight. Prompts, outputs and raw judge replies go to the artifact folder; rows keep
their ``sha256:`` names.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from coalmine._util.ids import new_ulid
from coalmine.errors import StoreError, UsageError
from coalmine.results import (
    OUTPUT_LIMIT,
    CanaryRun,
    CaseResult,
    Grade,
    InvalidSpecRecord,
    JudgeInfo,
    RunTotals,
)
from coalmine.store.artifacts import Artifacts
from coalmine.store.db import connect, transaction
from coalmine.store.migrations import migrate

RunStatus = Literal["running", "finished", "interrupted", "error"]
"""``error``: an error stopped the run (``RunInfo.error`` says which); it may be resumed."""

NEWEST_FIRST = "started_at DESC, id DESC"
"""How runs are ordered: by when they started (an imported run by its own start), then id."""


@dataclass(frozen=True)
class NewRun:
    """What is known about a run when it starts."""

    kind: str
    root: str
    started_at: datetime
    git_commit: str | None = None
    git_dirty: bool | None = None
    coalmine_version: str | None = None
    config_hash: str | None = None
    command_line: list[str] = field(default_factory=list)
    selectors: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    judge: JudgeInfo | None = None


@dataclass(frozen=True)
class RunInfo:
    """A row of the runs table."""

    id: str
    kind: str
    label: str | None
    status: RunStatus
    started_at: str
    ended_at: str | None
    root: str
    git_commit: str | None
    git_dirty: bool | None
    coalmine_version: str | None
    config_hash: str | None
    command_line: list[str]
    selectors: list[str]
    options: dict[str, Any]
    judge: JudgeInfo | None
    summary: RunTotals | None
    results_file: str | None
    cases: int = 0
    error: str | None = None
    """What stopped a run whose status is ``error``."""


@dataclass(frozen=True)
class JudgeCall:
    """One judge call of a grade, with its raw reply."""

    grader_key: str
    attempt: int
    model: str | None
    prompt_hash: str
    reply: str | None


@dataclass(frozen=True)
class CaseExtras:
    """What is stored beside a case result: full texts and call details."""

    position: int
    prompt: str | None = None
    output: str | None = None
    model: str | None = None
    usage: dict[str, int] | None = None
    judge_calls: list[JudgeCall] = field(default_factory=list)
    blocking: dict[str, bool] = field(default_factory=dict)


class Store:
    """The run store at ``path`` (``.coalmine/coalmine.db``) and its artifacts folder."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = path
        self.artifacts = Artifacts(path.parent / "artifacts", conn)

    @classmethod
    def open(cls, path: Path) -> Store:
        """Open the store, creating and migrating it as needed."""
        conn = connect(path)
        try:
            migrate(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot prepare the run store {path}: {exc}") from None
        except StoreError as exc:
            conn.close()
            raise StoreError(f"{path}: {exc}") from None
        return cls(conn, path)

    @classmethod
    def open_readonly(cls, path: Path) -> Store:
        """Open an existing store to read only (a viewer): no migration, no write, no lock.

        In WAL mode a reader never blocks the writer, so a run may go on while it is open.

        Raises:
            StoreError: there is no store at ``path``, or it cannot be read.
        """
        if not path.is_file():
            raise StoreError(f"there is no run store at {path}; run something first")
        try:
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
                check_same_thread=False,
            )  # fmt: skip
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT COUNT(*) FROM runs").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the run store {path}: {exc}") from None
        return cls(conn, path)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    # -- writing ---------------------------------------------------------------------------

    def start_run(self, new: NewRun) -> str:
        """Record a new running run and return its id (a ULID)."""
        with transaction(self.conn) as c:
            return insert_run(c, new)

    def reopen_run(self, run_id: str) -> None:
        """Mark an unfinished run as running again (it is being resumed)."""
        with transaction(self.conn) as c:
            c.execute(
                "UPDATE runs SET status = 'running', ended_at = NULL, error = NULL WHERE id = ?",
                (run_id,),
            )

    def record_case(self, run_id: str, result: CaseResult, extras: CaseExtras) -> None:
        """Store one graded case, its grades and judge calls, in one transaction."""
        with transaction(self.conn) as c:
            self.write_case(c, run_id, result, extras)

    def write_case(
        self, c: sqlite3.Connection, run_id: str, result: CaseResult, extras: CaseExtras
    ) -> None:
        """Write one graded case inside the caller's open transaction ``c``."""
        # Grades live in their own table; the result row keeps the rest.
        slim = result.model_copy(update={"prompt": None, "output": None, "grader_scores": {}})
        usage = extras.usage or {}
        put = self.artifacts.put
        prompt_ref = put(extras.prompt) if extras.prompt is not None else None
        output_ref = put(extras.output) if extras.output is not None else None
        replies = {(j.grader_key, j.attempt): put(j.reply) for j in extras.judge_calls if j.reply}
        c.execute(
            "INSERT OR REPLACE INTO case_results (run_id, case_id, position, verdict,"
            " composite_score, reason, agent, model, duration_seconds, prompt_tokens,"
            " completion_tokens, prompt_artifact, output_artifact, result, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                result.id,
                extras.position,
                result.verdict,
                result.composite_score,
                result.reason,
                result.agent,
                extras.model,
                result.duration_seconds,
                usage.get("prompt_tokens"),
                usage.get("completion_tokens"),
                prompt_ref,
                output_ref,
                slim.model_dump_json(),
                datetime.now(UTC).isoformat(),
            ),
        )
        # Recording a case again replaces its row, and the cascade drops its old grades.
        c.executemany(
            "INSERT OR REPLACE INTO grades (run_id, case_id, key, score, passed, weight,"
            " skipped, blocking, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    result.id,
                    key,
                    grade.score,
                    _flag(grade.passed),
                    grade.weight,
                    int(bool(grade.skipped)),
                    _flag(extras.blocking.get(key)),
                    grade.model_dump_json(),
                )
                for key, grade in result.grader_scores.items()
            ],
        )
        for call in extras.judge_calls:
            c.execute(
                "INSERT INTO judge_verdicts (run_id, case_id, grader_key, attempt, model,"
                " prompt_hash, reply_artifact) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    result.id,
                    call.grader_key,
                    call.attempt,
                    call.model,
                    call.prompt_hash,
                    replies.get((call.grader_key, call.attempt)),
                ),
            )

    def finish_run(
        self,
        run_id: str,
        *,
        status: RunStatus,
        ended_at: datetime,
        summary: RunTotals,
        invalid: list[InvalidSpecRecord],
        label: str | None = None,
        results_file: str | None = None,
    ) -> None:
        """Record the end of a run (finished or interrupted) with its summary."""
        with transaction(self.conn) as c:
            write_finish(c, run_id, status, ended_at, summary, invalid, label, results_file)

    def stop_run(
        self, run_id: str, *, status: RunStatus, ended_at: datetime, error: str | None = None
    ) -> None:
        """End a run that is still running (stopped by ``error``, or interrupted), as it is."""
        with transaction(self.conn) as c:
            c.execute(
                "UPDATE runs SET status = ?, ended_at = ?, error = ? WHERE id = ?"
                " AND status = 'running'",
                (status, ended_at.astimezone(UTC).isoformat(), error, run_id),
            )

    def record_calibration(
        self,
        judge_key: str,
        *,
        may_block: bool,
        record: dict[str, Any],
        replies: dict[str, list[str]] | None = None,
    ) -> int:
        """Store a judge's calibration outcome (the newest one counts) and return its id.

        ``replies`` (item id → the judge's raw replies) go to the artifacts, and the record
        keeps their names under ``replies``, for a later audit.
        """
        with transaction(self.conn) as c:
            if replies:
                names = {k: [self.artifacts.put(t) for t in v] for k, v in replies.items()}
                record = {**record, "replies": names}
            cursor = c.execute(
                "INSERT INTO judge_calibrations (judge_key, may_block, record, created_at)"
                " VALUES (?, ?, ?, ?)",
                (judge_key, int(may_block), json.dumps(record), datetime.now(UTC).isoformat()),
            )
        return int(cursor.lastrowid or 0)

    # -- reading ---------------------------------------------------------------------------

    def calibrations(self, judge_key: str) -> list[tuple[int, bool, dict[str, Any], str]]:
        """A judge's calibration records, newest first: ``(id, may_block, record, created_at)``."""
        rows = self.conn.execute(
            "SELECT id, may_block, record, created_at FROM judge_calibrations"
            " WHERE judge_key = ? ORDER BY id DESC",
            (judge_key,),
        ).fetchall()
        return [(r[0], bool(r[1]), json.loads(r[2]), r[3]) for r in rows]

    def newest_calibrations(self) -> list[tuple[int, dict[str, Any]]]:
        """The newest calibration record of each judge, newest first: ``(id, record)``."""
        rows = self.conn.execute(
            "SELECT id, record FROM judge_calibrations WHERE id IN"
            " (SELECT MAX(id) FROM judge_calibrations GROUP BY judge_key) ORDER BY id DESC"
        ).fetchall()
        return [(r[0], json.loads(r[1])) for r in rows]

    def list_runs(self, *, kind: str | None = None, limit: int = 20) -> list[RunInfo]:
        """The runs that started last first (an imported old run sorts by its start)."""
        rows = self.conn.execute(
            "SELECT runs.*, (SELECT COUNT(*) FROM case_results WHERE run_id = runs.id) AS cases"
            f" FROM runs WHERE (? IS NULL OR kind = ?) ORDER BY {NEWEST_FIRST} LIMIT ?",
            (kind, kind, limit),
        ).fetchall()
        return [_run_info(r) for r in rows]

    def find_unfinished(self, kind: str) -> RunInfo | None:
        """The run of ``kind`` recorded here that started last and did not finish.

        An interrupted run imported from a result file is left out: it ran elsewhere.
        """
        row = self.conn.execute(
            "SELECT *, 0 AS cases FROM runs WHERE kind = ? AND status != 'finished'"
            " AND json_extract(options, '$.imported') IS NULL"
            f" ORDER BY {NEWEST_FIRST} LIMIT 1",
            (kind,),
        ).fetchone()
        return _run_info(row) if row else None

    def find_latest(
        self, *, kind: str | None = None, before: tuple[str, str] | None = None
    ) -> RunInfo | None:
        """The finished run (of ``kind``) that started last, or last before ``before``.

        ``before`` is a run's ``(started_at, id)``: runs are ordered by their start, then by id
        (runs imported with one start time).
        """
        after = before or (None, None)
        row = self.conn.execute(
            "SELECT *, 0 AS cases FROM runs WHERE status = 'finished' AND (?1 IS NULL OR kind = ?1)"
            " AND (?2 IS NULL OR started_at < ?2 OR (started_at = ?2 AND id < ?3))"
            f" ORDER BY {NEWEST_FIRST} LIMIT 1",
            (kind, *after),
        ).fetchone()
        return _run_info(row) if row else None

    def get_run(self, ref: str, *, kind: str | None = None) -> RunInfo:
        """Find a run by id, unique id prefix, label (result file stem) or ``latest``.

        ``latest`` is the finished run that started last.

        Raises:
            UsageError: no run, or several, match ``ref``.
        """
        if not ref.strip():
            raise UsageError("name a run: an id, an id prefix, a label or 'latest'")
        if ref == "latest":
            latest = self.find_latest(kind=kind)
            rows = [] if latest is None else [latest]
        else:
            prefix = ref.upper()  # ULIDs are upper case; a prefix is compared, not LIKE-matched
            found = self.conn.execute(
                "SELECT *, 0 AS cases FROM runs WHERE (? IS NULL OR kind = ?)"
                f" AND (label = ? OR substr(id, 1, ?) = ?) ORDER BY {NEWEST_FIRST}",
                (kind, kind, ref, len(prefix), prefix),
            ).fetchall()
            exact = [r for r in found if r["id"] == ref.upper() or r["label"] == ref]
            rows = [_run_info(r) for r in exact or found]
        if not rows:
            what = (
                f"no finished {kind} run" if ref == "latest" and kind else f"no run matches {ref!r}"
            )
            raise UsageError(f"{what} in {self.path}; see 'coalmine runs list'")
        if len(rows) > 1:
            several = ", ".join(f"{r.id} ({r.kind}, started {r.started_at[:19]})" for r in rows[:5])
            raise UsageError(f"{ref!r} matches several runs: {several}; give more of the id")
        return rows[0]

    def case_results(self, run_id: str) -> list[CaseResult]:
        """Every stored case of a run, in table order, with grades, prompt and output restored."""
        rows = self.conn.execute(
            "SELECT case_id, result, prompt_artifact, output_artifact FROM case_results"
            " WHERE run_id = ? ORDER BY position, case_id",
            (run_id,),
        ).fetchall()
        grades: dict[str, dict[str, Grade]] = {}
        for g in self.conn.execute(
            "SELECT case_id, key, details FROM grades WHERE run_id = ? ORDER BY rowid", (run_id,)
        ):
            grades.setdefault(g["case_id"], {})[g["key"]] = Grade.model_validate_json(g["details"])
        out = []
        for row in rows:
            prompt, output = row["prompt_artifact"], row["output_artifact"]
            result = CaseResult.model_validate_json(row["result"])
            texts: dict[str, Any] = {
                # rows written before grades had their own table keep them in the result
                "grader_scores": grades.get(row["case_id"]) or result.grader_scores,
                "prompt": self.artifacts.get(prompt) if prompt else None,
                "output": (self.artifacts.get(output) or "")[:OUTPUT_LIMIT] if output else None,
            }
            out.append(result.model_copy(update=texts))
        return out

    def invalid_specs(self, run_id: str) -> list[InvalidSpecRecord]:
        """The invalid specs recorded for a run."""
        rows = self.conn.execute(
            "SELECT path, line, spec_id, reason FROM invalid_specs WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        ).fetchall()
        return [
            InvalidSpecRecord(path=r["path"], line=r["line"], id=r["spec_id"], reason=r["reason"])
            for r in rows
        ]

    def load_run(self, ref: str) -> CanaryRun:
        """Assemble the ``CanaryRun`` of a stored run, as its result file would hold it."""
        info = self.get_run(ref)
        results = self.case_results(info.id)
        invalid = self.invalid_specs(info.id)
        summary = info.summary or RunTotals.of(results, invalid=len(invalid))
        duration = 0.0
        if info.ended_at:
            delta = datetime.fromisoformat(info.ended_at) - datetime.fromisoformat(info.started_at)
            duration = round(delta.total_seconds(), 3)
        return CanaryRun(
            run_id=info.label or info.id,
            duration_seconds=duration,
            store_run_id=info.id,
            timestamp=_utc_z(info.started_at),
            summary=summary,
            results=results,
            invalid_specs=invalid,
            interrupted=info.status != "finished",
            judge=info.judge,
            coalmine_version=info.coalmine_version,
        )


def insert_run(c: sqlite3.Connection, new: NewRun) -> str:
    """Insert a running run inside the open transaction ``c``; return its new id."""
    run_id = new_ulid()
    c.execute(
        "INSERT INTO runs (id, kind, status, started_at, root, git_commit, git_dirty,"
        " coalmine_version, config_hash, command_line, selectors, options, judge)"
        " VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run_id,
            new.kind,
            new.started_at.astimezone(UTC).isoformat(),
            new.root,
            new.git_commit,
            None if new.git_dirty is None else int(new.git_dirty),
            new.coalmine_version,
            new.config_hash,
            json.dumps(new.command_line),
            json.dumps(new.selectors),
            json.dumps(new.options),
            new.judge.model_dump_json() if new.judge else None,
        ),
    )
    return run_id


def write_finish(
    c: sqlite3.Connection,
    run_id: str,
    status: RunStatus,
    ended_at: datetime,
    summary: RunTotals,
    invalid: list[InvalidSpecRecord],
    label: str | None,
    results_file: str | None,
) -> None:
    """Record the end of a run inside the open transaction ``c``."""
    c.execute(
        "UPDATE runs SET status = ?, ended_at = ?, summary = ?, label = COALESCE(?, label),"
        " results_file = COALESCE(?, results_file) WHERE id = ?",
        (
            status,
            ended_at.astimezone(UTC).isoformat(),
            summary.model_dump_json(),
            label,
            results_file,
            run_id,
        ),
    )
    c.execute("DELETE FROM invalid_specs WHERE run_id = ?", (run_id,))
    c.executemany(
        "INSERT INTO invalid_specs (run_id, path, line, spec_id, reason) VALUES (?, ?, ?, ?, ?)",
        [(run_id, i.path, i.line, i.id, i.reason) for i in invalid],
    )


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _utc_z(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_info(row: sqlite3.Row) -> RunInfo:
    judge = JudgeInfo.model_validate_json(row["judge"]) if row["judge"] else None
    summary = RunTotals.model_validate_json(row["summary"]) if row["summary"] else None
    return RunInfo(
        id=row["id"],
        kind=row["kind"],
        label=row["label"],
        status=row["status"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        root=row["root"],
        git_commit=row["git_commit"],
        git_dirty=None if row["git_dirty"] is None else bool(row["git_dirty"]),
        coalmine_version=row["coalmine_version"],
        config_hash=row["config_hash"],
        command_line=json.loads(row["command_line"] or "[]"),
        selectors=json.loads(row["selectors"]),
        options=json.loads(row["options"]),
        judge=judge,
        summary=summary,
        results_file=row["results_file"],
        cases=row["cases"],
        error=row["error"] if "error" in row.keys() else None,  # a store read, not migrated
    )
