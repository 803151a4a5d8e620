"""The store's schema: named, append-only, transactional migrations, and connection settings."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from coalmine.errors import StoreError
from coalmine.store import migrations
from coalmine.store.db import connect
from coalmine.store.migrations import MIGRATIONS, migrate, migration
from coalmine.store.runs import Store

FIRST = "m001_initial"

# A run and a case as the first schema stores them; `result` is a CaseResult without
# prompt and output, as record_case writes it.
OLD_RUN = (
    "INSERT INTO runs (id, kind, label, status, started_at, ended_at, root, selectors, options)"
    " VALUES ('01J0000000000000000000OLD1', 'canary', 'canary-run-old', 'finished',"
    " '2026-01-02T03:04:05+00:00', '2026-01-02T03:05:00+00:00', '/repo', '[]', '{}')"
)
OLD_RESULT = (
    '{"id":"qa-001-old","phase":"qa","title":"Old case","agent":"QA","verdict":"PASS",'
    '"composite_score":0.9,"grader_scores":{"keyword":{"score":0.9,"passed":true,"weight":1.0}},'
    '"duration_seconds":1.5,"failures":[],"warnings":[]}'
)
OLD_CASE = (
    "INSERT INTO case_results (run_id, case_id, position, verdict, composite_score, agent,"
    " duration_seconds, result, recorded_at) VALUES ('01J0000000000000000000OLD1',"
    " 'qa-001-old', 0, 'PASS', 0.9, 'QA', 1.5, ?, '2026-01-02T03:04:30+00:00')"
)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = connect(tmp_path / "coalmine.db")
    yield connection
    connection.close()


def recorded(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_names_are_unique_and_the_first_is_the_initial_schema() -> None:
    names = [m.name for m in MIGRATIONS]
    assert names[0] == FIRST
    assert len(set(names)) == len(names)


def test_migrate_blank_applies_every_migration_once(conn: sqlite3.Connection) -> None:
    every = [m.name for m in MIGRATIONS]
    assert migrate(conn) == every
    assert recorded(conn) == every
    assert {"runs", "case_results", "grades", "judge_verdicts", "invalid_specs"} <= tables(conn)
    assert {"response_cache", "_migrations"} <= tables(conn)
    assert migrate(conn) == []
    assert recorded(conn) == every


def test_migrate_from_the_first_schema_keeps_old_rows(tmp_path: Path) -> None:
    path = tmp_path / "coalmine.db"
    conn = connect(path)
    assert migrate(conn, upto=FIRST) == [FIRST]
    assert recorded(conn) == [FIRST]
    conn.execute(OLD_RUN)
    conn.execute(OLD_CASE, (OLD_RESULT,))

    later = [m.name for m in MIGRATIONS[1:]]
    assert migrate(conn) == later  # every migration after the first, and only those
    assert recorded(conn) == [FIRST, *later]
    conn.close()

    store = Store.open(path)  # the current code reads what the first schema stored
    try:
        info = store.get_run("canary-run-old")
        assert (info.id, info.status, info.root) == (
            "01J0000000000000000000OLD1",
            "finished",
            "/repo",
        )
        (case,) = store.case_results(info.id)
        assert (case.id, case.verdict, case.composite_score) == ("qa-001-old", "PASS", 0.9)
        assert case.grader_scores["keyword"].score == 0.9
        assert case.prompt is None and case.output is None  # the old row had no artifacts
    finally:
        store.close()


def test_a_migration_unknown_to_this_coalmine_is_refused(conn: sqlite3.Connection) -> None:
    migrate(conn)
    conn.execute(
        "INSERT INTO _migrations (name, applied_at) VALUES ('m999_future', '2030-01-01T00:00:00+00:00')"
    )
    with pytest.raises(StoreError, match="written by a newer coalmine") as caught:
        migrate(conn)
    assert "m999_future" in str(caught.value)


def test_store_open_refuses_a_newer_database(tmp_path: Path) -> None:
    path = tmp_path / "coalmine.db"
    conn = connect(path)
    migrate(conn)
    conn.execute("INSERT INTO _migrations (name, applied_at) VALUES ('m999_future', 'x')")
    conn.close()
    with pytest.raises(StoreError, match="newer coalmine"):
        Store.open(path)


def test_a_failing_migration_leaves_nothing_behind(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrations, "MIGRATIONS", [MIGRATIONS[0]])

    @migration("m002_breaks_half_way")
    def _breaks(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half_done (x INTEGER)")
        c.execute("INSERT INTO half_done VALUES (1)")
        raise RuntimeError("the step fails after its first statement")

    assert [m.name for m in migrations.MIGRATIONS] == [FIRST, "m002_breaks_half_way"]
    with pytest.raises(RuntimeError, match="fails after its first statement"):
        migrate(conn)
    assert "half_done" not in tables(conn)
    assert recorded(conn) == [FIRST]  # the step before it stays applied, in its own transaction
    assert not conn.in_transaction


def test_duplicate_migration_names_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migrations, "MIGRATIONS", list(MIGRATIONS))

    def again(c: sqlite3.Connection) -> None:
        raise AssertionError("never applied")

    with pytest.raises(ValueError, match="'m001_initial' is defined twice"):
        migration(FIRST)(again)
    assert [m.name for m in migrations.MIGRATIONS] == [m.name for m in MIGRATIONS]


def test_connect_sets_wal_foreign_keys_and_busy_timeout(conn: sqlite3.Connection) -> None:
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000


def test_connect_creates_missing_folders(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "coalmine.db"
    connect(path).close()
    assert path.is_file()


def test_connect_reports_an_unopenable_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot open the run store"):
        connect(blocker / "coalmine.db")
