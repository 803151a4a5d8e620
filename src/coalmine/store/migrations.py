"""The store's schema, as one named, append-only set of migrations.

Each migration runs in its own transaction together with the row that records it, so a
database is always at a known migration. Never edit a released migration: add a new one.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from coalmine.errors import StoreError
from coalmine.store.db import transaction


@dataclass(frozen=True)
class Migration:
    """One schema step."""

    name: str
    apply: Callable[[sqlite3.Connection], None]


MIGRATIONS: list[Migration] = []


def migration(name: str) -> Callable[[Callable[[sqlite3.Connection], None]], Migration]:
    """Add a migration to the set, in order of definition."""

    def decorate(function: Callable[[sqlite3.Connection], None]) -> Migration:
        if any(m.name == name for m in MIGRATIONS):
            raise ValueError(f"migration {name!r} is defined twice")
        step = Migration(name, function)
        MIGRATIONS.append(step)
        return step

    return decorate


def migrate(conn: sqlite3.Connection, *, upto: str | None = None) -> list[str]:
    """Apply the migrations not yet applied (up to and including ``upto``); return their names."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    _refuse_newer(conn)  # before any step: a newer store is never changed by an older coalmine
    applied_now = []
    for step in MIGRATIONS:
        with transaction(conn):
            done = conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (step.name,))
            if done.fetchone() is None:
                step.apply(conn)
                conn.execute(
                    "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                    (step.name, datetime.now(UTC).isoformat()),
                )
                applied_now.append(step.name)
        if step.name == upto:
            break
    return applied_now


def _refuse_newer(conn: sqlite3.Connection) -> None:
    known = {m.name for m in MIGRATIONS}
    unknown = [r[0] for r in conn.execute("SELECT name FROM _migrations") if r[0] not in known]
    if unknown:
        raise StoreError(
            f"the run store was written by a newer coalmine (migrations {', '.join(unknown)}); "
            "upgrade coalmine to read it"
        )


def _execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Run ``;``-separated statements inside the open transaction.

    (``executescript`` would commit first, breaking the one-transaction-per-migration rule.)
    """
    for statement in script.split(";\n"):
        if statement.strip():
            conn.execute(statement)


@migration("m001_initial")
def _initial(conn: sqlite3.Connection) -> None:
    _execute_script(
        conn,
        """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,                 -- ULID: sorts by creation
            kind TEXT NOT NULL,                  -- 'canary'
            label TEXT,                          -- the result file's stem, when one was written
            status TEXT NOT NULL,                -- running | finished | interrupted
            started_at TEXT NOT NULL,
            ended_at TEXT,
            root TEXT NOT NULL,
            git_commit TEXT,
            git_dirty INTEGER,
            coalmine_version TEXT,
            config_hash TEXT,
            command_line TEXT,                   -- JSON list
            selectors TEXT NOT NULL DEFAULT '[]',  -- JSON list
            options TEXT NOT NULL DEFAULT '{}',    -- JSON: jobs, no_judge, cache
            judge TEXT,                          -- JSON JudgeInfo
            summary TEXT,                        -- JSON RunTotals, when finished
            results_file TEXT
        );
        CREATE INDEX runs_by_kind ON runs (kind, id);

        CREATE TABLE case_results (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            case_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            verdict TEXT NOT NULL,
            composite_score REAL,
            reason TEXT,
            agent TEXT NOT NULL,
            model TEXT,
            duration_seconds REAL NOT NULL,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            prompt_artifact TEXT,
            output_artifact TEXT,
            result TEXT NOT NULL,                -- JSON CaseResult without prompt and output
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (run_id, case_id)
        );

        CREATE TABLE grades (
            run_id TEXT NOT NULL,
            case_id TEXT NOT NULL,
            key TEXT NOT NULL,
            score REAL,
            passed INTEGER,
            weight REAL NOT NULL,
            skipped INTEGER NOT NULL DEFAULT 0,
            blocking INTEGER,
            details TEXT NOT NULL,               -- JSON of the grade
            PRIMARY KEY (run_id, case_id, key),
            FOREIGN KEY (run_id, case_id) REFERENCES case_results (run_id, case_id)
                ON DELETE CASCADE
        );

        CREATE TABLE judge_verdicts (
            run_id TEXT NOT NULL,
            case_id TEXT NOT NULL,
            grader_key TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            model TEXT,
            prompt_hash TEXT NOT NULL,
            reply_artifact TEXT,
            PRIMARY KEY (run_id, case_id, grader_key, attempt),
            FOREIGN KEY (run_id, case_id) REFERENCES case_results (run_id, case_id)
                ON DELETE CASCADE
        );

        CREATE TABLE invalid_specs (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            line INTEGER,
            spec_id TEXT,
            reason TEXT NOT NULL
        );

        CREATE TABLE response_cache (
            key TEXT PRIMARY KEY,                -- sha256 of the canonical components
            scope TEXT NOT NULL,                 -- sha256 of the provider identity
            prompt_hash TEXT NOT NULL,
            components TEXT NOT NULL,            -- JSON, to explain misses
            output TEXT NOT NULL,                -- JSON AgentOutput without its text
            text_artifact TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX cache_by_scope ON response_cache (scope, prompt_hash);
        """,
    )


@migration("m002_judge_calibrations")
def _judge_calibrations(conn: sqlite3.Connection) -> None:
    _execute_script(
        conn,
        """
        CREATE TABLE judge_calibrations (
            id INTEGER PRIMARY KEY,
            judge_key TEXT NOT NULL,             -- sha256 of the judge's identity
            may_block INTEGER NOT NULL,
            record TEXT NOT NULL,                -- JSON calibration record
            created_at TEXT NOT NULL
        );
        CREATE INDEX calibrations_by_judge ON judge_calibrations (judge_key, id);
        """,
    )


@migration("m003_blobs")
def _blobs(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE blobs (name TEXT PRIMARY KEY, text TEXT NOT NULL)")


@migration("m004_cache_by_prompt")
def _cache_by_prompt(conn: sqlite3.Connection) -> None:
    # explaining a miss looks entries up by prompt alone; without this it scanned the table
    conn.execute("CREATE INDEX cache_by_prompt ON response_cache (prompt_hash)")


@migration("m005_eval_attempts")
def _eval_attempts(conn: sqlite3.Connection) -> None:
    # One row per case and repeat of an eval suite run: the columns a summary reads, and the
    # rest as JSON. Written in batches (a 100,000-case suite makes 100,000 rows).
    _execute_script(
        conn,
        """
        CREATE TABLE eval_attempts (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            suite TEXT NOT NULL,
            case_id TEXT NOT NULL,
            rep INTEGER NOT NULL,                -- 0-based repeat
            status TEXT NOT NULL,                -- pass | fail | error
            blocks INTEGER NOT NULL,             -- 1: this fail or error may fail the suite
            score REAL,                          -- weighted score of the graders that ran
            scores TEXT NOT NULL,                -- JSON {grader key: score or null}
            latency REAL,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cost REAL,
            error_kind TEXT,
            record TEXT NOT NULL,                -- JSON: grades, output, error, tool calls …
            PRIMARY KEY (run_id, suite, case_id, rep)
        ) WITHOUT ROWID;
        CREATE TABLE eval_suites (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            suite TEXT NOT NULL,
            summary TEXT NOT NULL,               -- JSON coalmine.eval.result.v1
            PRIMARY KEY (run_id, suite)
        );
        """,
    )


@migration("m006_lessons")
def _lessons(conn: sqlite3.Connection) -> None:
    # The memory of lessons. lessons_fts is an external-content FTS5 index over lessons; the
    # triggers below keep it in sync on every insert, update (of the indexed columns) and
    # delete, so code only ever writes to lessons. coalmine never deletes a lesson (stale ones
    # are marked), but the delete trigger keeps a manual DELETE consistent.
    _execute_script(
        conn,
        """
        CREATE TABLE lessons (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,                  -- caught-regression | human-correction | …
            text TEXT NOT NULL,
            tags TEXT NOT NULL,                  -- JSON list
            paths TEXT NOT NULL,                 -- JSON list of repo-relative paths
            evidence TEXT NOT NULL,              -- JSON list of run/case ids
            positive INTEGER NOT NULL DEFAULT 0,
            negative INTEGER NOT NULL DEFAULT 0,
            validated INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            stale TEXT                           -- why the lesson is stale; NULL while it holds
        );
        CREATE VIRTUAL TABLE lessons_fts USING fts5 (
            text, tags, paths, content='lessons', content_rowid='id'
        )
        """,
    )
    # (one execute per trigger: their bodies hold ";\n", which _execute_script splits on)
    conn.execute(
        "CREATE TRIGGER lessons_fts_insert AFTER INSERT ON lessons BEGIN"
        " INSERT INTO lessons_fts (rowid, text, tags, paths)"
        " VALUES (new.id, new.text, new.tags, new.paths); END"
    )
    conn.execute(
        "CREATE TRIGGER lessons_fts_delete AFTER DELETE ON lessons BEGIN"
        " INSERT INTO lessons_fts (lessons_fts, rowid, text, tags, paths)"
        " VALUES ('delete', old.id, old.text, old.tags, old.paths); END"
    )
    conn.execute(
        "CREATE TRIGGER lessons_fts_update AFTER UPDATE OF text, tags, paths ON lessons BEGIN"
        " INSERT INTO lessons_fts (lessons_fts, rowid, text, tags, paths)"
        " VALUES ('delete', old.id, old.text, old.tags, old.paths);"
        " INSERT INTO lessons_fts (rowid, text, tags, paths)"
        " VALUES (new.id, new.text, new.tags, new.paths); END"
    )


@migration("m007_gate_runs")
def _gate_runs(conn: sqlite3.Connection) -> None:
    # One row per gate command run by `coalmine gates run`: when and how it ended, never its
    # output (a gate may print anything, secrets included). `kits status` compares a gate's
    # last start with the files its kit's evolution rules watch.
    _execute_script(
        conn,
        """
        CREATE TABLE gate_runs (
            id INTEGER PRIMARY KEY,
            gate TEXT NOT NULL,
            kit TEXT NOT NULL,
            blocks INTEGER NOT NULL,
            started_ms INTEGER NOT NULL,         -- Unix ms
            seconds REAL NOT NULL,
            status TEXT NOT NULL,                -- pass | fail | timeout
            exit_code INTEGER                    -- NULL on timeout
        );
        CREATE INDEX gate_runs_gate ON gate_runs (gate, started_ms)
        """,
    )


@migration("m008_eval_attempts_browse")
def _eval_attempts_browse(conn: sqlite3.Connection) -> None:
    # A viewer pages, counts, sorts and compares runs of 100,000 attempts. As a WITHOUT ROWID
    # table every row (its record JSON is ~1 KB) spilled to an overflow page, so any scan read
    # the whole run twice over; as a rowid table a record sits in its page. The slim index holds
    # every column but the record, so counts, tallies, sorts and per-case verdicts never read a
    # record; eval_attempt_facts holds what filters ask of the record (tags, failed graders).
    # eval_case_verdicts keeps each suite's per-case verdicts as its summary is written, so two
    # finished runs compare from a few packed columns instead of a join of their attempts.
    _execute_script(
        conn,
        """
        CREATE TABLE eval_attempts_v2 (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            suite TEXT NOT NULL,
            case_id TEXT NOT NULL,
            rep INTEGER NOT NULL,
            status TEXT NOT NULL,
            blocks INTEGER NOT NULL,
            score REAL,
            scores TEXT NOT NULL,
            latency REAL,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cost REAL,
            error_kind TEXT,
            record TEXT NOT NULL,
            UNIQUE (run_id, suite, case_id, rep)
        );
        INSERT INTO eval_attempts_v2 (run_id, suite, case_id, rep, status, blocks, score, scores,
            latency, prompt_tokens, completion_tokens, cost, error_kind, record)
            SELECT run_id, suite, case_id, rep, status, blocks, score, scores, latency,
            prompt_tokens, completion_tokens, cost, error_kind, record FROM eval_attempts
            ORDER BY run_id, suite, case_id, rep;
        DROP TABLE eval_attempts;
        ALTER TABLE eval_attempts_v2 RENAME TO eval_attempts;
        CREATE INDEX eval_attempts_slim ON eval_attempts
            (run_id, suite, case_id, rep, status, score, cost, latency, blocks);
        CREATE TABLE eval_attempt_facts (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            suite TEXT NOT NULL,
            case_id TEXT NOT NULL,
            rep INTEGER NOT NULL,
            kind TEXT NOT NULL,                  -- tag | failed (a grader that did not pass)
            value TEXT NOT NULL,
            PRIMARY KEY (run_id, suite, case_id, rep, kind, value)
        ) WITHOUT ROWID;
        CREATE INDEX eval_attempt_facts_by_value ON eval_attempt_facts (run_id, kind, value);
        CREATE TABLE eval_case_verdicts (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            suite TEXT NOT NULL,
            ids TEXT NOT NULL,                   -- JSON list of the case ids, in order
            verdicts TEXT NOT NULL,              -- one letter a case: P(ASS), F(AIL), E(RROR)
            scores BLOB NOT NULL,                -- a float64 a case (native order), NaN: none
            PRIMARY KEY (run_id, suite)
        );
        INSERT OR IGNORE INTO eval_attempt_facts
            SELECT a.run_id, a.suite, a.case_id, a.rep, 'tag', CAST(t.value AS TEXT)
            FROM eval_attempts AS a, json_each(a.record, '$.tags') AS t;
        INSERT OR IGNORE INTO eval_attempt_facts
            SELECT a.run_id, a.suite, a.case_id, a.rep, 'failed', g.key
            FROM eval_attempts AS a, json_each(a.record, '$.grades') AS g
            WHERE json_extract(g.value, '$.passed') = 0
        """,
    )


@migration("m010_run_starts_and_lesson_keys")
def _run_starts_and_lesson_keys(conn: sqlite3.Connection) -> None:
    # `latest`, `previous`, baselines and the runs list order runs by their start (an old run
    # imported today is not the latest); the id breaks ties.
    conn.execute("CREATE INDEX runs_by_start ON runs (kind, started_at, id)")
    # An automatic lesson has an identity (kind, suite or spec, case, cause): recording it again
    # counts it and moves its last run, in one row. The near-identical lessons a flaky case left
    # before are folded into their oldest.
    _execute_script(
        conn,
        """
        ALTER TABLE lessons ADD COLUMN identity TEXT;
        ALTER TABLE lessons ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE lessons ADD COLUMN last_run TEXT;
        CREATE UNIQUE INDEX lessons_by_identity ON lessons (identity) WHERE identity IS NOT NULL
        """,
    )
    _fold_duplicate_lessons(conn)


_RUN_ID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")


def _fold_duplicate_lessons(conn: sqlite3.Connection) -> int:
    """Fold the caught-regression lessons that differ only in their runs; return rows folded.

    Two are the same when their kind, tags and paths are, and their texts are once run ids and
    times are masked. The oldest row stays, with the newest one's text and evidence, the votes
    of all, and ``count`` the number of rows folded into it; the others are deleted.
    """
    groups: dict[tuple[str, ...], list[sqlite3.Row]] = {}
    for row in conn.execute(
        "SELECT id, kind, text, tags, paths, evidence, positive, negative, validated,"
        " updated_at FROM lessons WHERE kind = 'caught-regression' AND identity IS NULL"
        " ORDER BY id"
    ):
        shape = _TIME.sub("<time>", _RUN_ID.sub("<run>", row["text"]))
        groups.setdefault((row["kind"], row["tags"], row["paths"], shape), []).append(row)
    folded = 0
    for rows in groups.values():
        if len(rows) < 2:
            continue
        keep, newest = rows[0], rows[-1]
        evidence = json.loads(newest["evidence"])
        conn.execute(
            "UPDATE lessons SET text = ?, evidence = ?, positive = ?, negative = ?,"
            " validated = ?, updated_at = ?, count = ?, last_run = ? WHERE id = ?",
            (
                newest["text"],
                newest["evidence"],
                sum(r["positive"] for r in rows),
                sum(r["negative"] for r in rows),
                sum(r["validated"] for r in rows),
                newest["updated_at"],
                len(rows),
                evidence[0] if evidence else None,
                keep["id"],
            ),
        )
        conn.executemany("DELETE FROM lessons WHERE id = ?", [(r["id"],) for r in rows[1:]])
        folded += len(rows) - 1
    return folded


@migration("m011_run_errors")
def _run_errors(conn: sqlite3.Connection) -> None:
    # A run stopped by an error ends with status 'error' and what stopped it (scrubbed, with
    # the traceback of an unexpected one), instead of staying 'running' for ever.
    conn.execute("ALTER TABLE runs ADD COLUMN error TEXT")
