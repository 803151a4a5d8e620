"""Eval attempts in the real SQLite store: batched writes, resume sets, streams, summaries."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from coalmine.errors import StoreError
from coalmine.store.db import connect
from coalmine.store.evals import (
    Attempt,
    AttemptWriter,
    done_attempts,
    end_run,
    iter_attempts,
    save_suite_summary,
    suite_summaries,
)
from coalmine.store.migrations import MIGRATIONS, migrate
from coalmine.store.runs import NewRun, Store

AT = datetime(2026, 4, 13, 7, 30, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / ".coalmine" / "coalmine.db")
    yield s
    s.close()


def new_run(store: Store) -> str:
    return store.start_run(NewRun(kind="eval", root="/repo", started_at=AT))


def attempt(
    case_id: str, rep: int = 0, *, suite: str = "smoke", status: str = "pass", **more: object
) -> Attempt:
    fields: dict[str, object] = {
        "suite": suite,
        "case_id": case_id,
        "rep": rep,
        "status": status,
        "blocks": status != "pass",
        "score": 1.0 if status == "pass" else 0.0,
        "scores": {"contains": 1.0 if status == "pass" else 0.0},
        "latency": 0.25,
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "cost": None,
        "error_kind": None,
        "record": {"agent": "Bot", "output": f"answer to {case_id}"},
    }
    fields.update(more)
    return Attempt(**fields)  # type: ignore[arg-type]


def rows(store: Store, run_id: str) -> int:
    (count,) = store.conn.execute(
        "SELECT count(*) FROM eval_attempts WHERE run_id = ?", (run_id,)
    ).fetchone()
    return int(count)


class Ticks:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_nothing_is_written_before_the_batch_is_full(store: Store) -> None:
    run_id = new_run(store)
    clock = Ticks()
    writer = AttemptWriter(store, run_id, batch=3, interval=60, clock=clock)
    writer.add(attempt("a"))
    writer.add(attempt("b"))
    assert rows(store, run_id) == 0
    assert (len(writer.pending), writer.written) == (2, 0)
    writer.add(attempt("c"))  # the third fills the batch: one transaction writes all three
    assert rows(store, run_id) == 3
    assert (len(writer.pending), writer.written) == (0, 3)
    writer.add(attempt("d"))
    assert rows(store, run_id) == 3


def test_an_old_batch_is_written_after_the_interval(store: Store) -> None:
    run_id = new_run(store)
    clock = Ticks()
    writer = AttemptWriter(store, run_id, batch=100, interval=0.5, clock=clock)
    writer.add(attempt("a"))
    clock.now += 0.49
    writer.add(attempt("b"))
    assert rows(store, run_id) == 0
    clock.now += 0.01  # 0.5 s since the writer started: the batch is old enough
    writer.add(attempt("c"))
    assert rows(store, run_id) == 3
    clock.now += 0.3  # the interval counts from that write, not from the start
    writer.add(attempt("d"))
    assert rows(store, run_id) == 3


def test_flush_writes_what_is_pending_and_is_harmless_when_nothing_is(store: Store) -> None:
    run_id = new_run(store)
    writer = AttemptWriter(store, run_id, batch=100, interval=60, clock=Ticks())
    writer.flush()
    assert (rows(store, run_id), writer.written) == (0, 0)
    writer.add(attempt("a"))
    writer.add(attempt("a", 1))
    assert rows(store, run_id) == 0
    writer.flush()
    assert (rows(store, run_id), writer.written, writer.pending) == (2, 2, [])
    writer.flush()
    assert writer.written == 2


def test_the_same_case_and_repeat_is_replaced_not_duplicated(store: Store) -> None:
    run_id = new_run(store)
    writer = AttemptWriter(store, run_id, batch=1, interval=60, clock=Ticks())
    writer.add(attempt("a", 0, status="fail", error_kind="crash"))
    writer.add(attempt("a", 0, status="pass"))
    writer.add(attempt("a", 0, suite="other", status="fail"))  # another suite: another key
    assert rows(store, run_id) == 2
    [stored] = iter_attempts(store, run_id, "smoke")
    assert (stored.status, stored.error_kind, stored.blocks) == ("pass", None, False)


def test_done_attempts_lists_every_suite_case_and_repeat_of_the_run(store: Store) -> None:
    run_id, other_run = new_run(store), new_run(store)
    writer = AttemptWriter(store, run_id, batch=100, interval=60, clock=Ticks())
    for a in [attempt("a"), attempt("a", 1), attempt("b", 0, suite="rag")]:
        writer.add(a)
    assert len(done_attempts(store, run_id)) == 0  # nothing committed yet
    writer.flush()
    AttemptWriter(store, other_run, batch=1).add(attempt("z"))
    done = done_attempts(store, run_id)
    assert len(done) == 3
    assert all(k in done for k in [("smoke", "a", 0), ("smoke", "a", 1), ("rag", "b", 0)])
    assert ("smoke", "a", 2) not in done and ("smoke", "z", 0) not in done
    other = done_attempts(store, other_run)
    assert len(other) == 1 and ("smoke", "z", 0) in other and ("smoke", "a", 0) not in other


def test_iter_attempts_streams_one_suite_by_case_id_then_repeat(store: Store) -> None:
    run_id = new_run(store)
    writer = AttemptWriter(store, run_id, batch=100, interval=60, clock=Ticks())
    for a in [
        attempt("b", 10),
        attempt("b", 2),
        attempt("a", 1),
        attempt("c", 0, suite="rag"),
        attempt("b", 0),
        attempt("a", 0),
    ]:
        writer.add(a)
    writer.flush()
    got = [(a.case_id, a.rep) for a in iter_attempts(store, run_id, "smoke")]
    # repeats are integers: 2 sorts before 10
    assert got == [("a", 0), ("a", 1), ("b", 0), ("b", 2), ("b", 10)]
    assert [a.case_id for a in iter_attempts(store, run_id, "rag")] == ["c"]
    assert list(iter_attempts(store, run_id, "none")) == []


def test_an_attempt_reads_back_exactly(store: Store) -> None:
    run_id = new_run(store)
    written = attempt(
        "naïve-1",
        3,
        status="error",
        blocks=True,
        score=None,
        scores={"equals": None, "llm-rubric": 0.5},
        latency=None,
        prompt_tokens=None,
        completion_tokens=None,
        cost=0.000075,
        error_kind="config",
        record={"agent": "Bot", "error": "case 'naïve-1': no value ✓", "grades": {}},
    )
    writer = AttemptWriter(store, run_id, batch=1)
    writer.add(written)
    [read] = iter_attempts(store, run_id, "smoke")
    assert read == written
    assert type(read.blocks) is bool


def test_summaries_round_trip_and_replace(store: Store) -> None:
    run_id = new_run(store)
    save_suite_summary(store, run_id, "zeta", {"suiteId": "zeta", "score": 0.5})
    save_suite_summary(store, run_id, "alpha", {"suiteId": "alpha", "score": 1.0, "ci95": None})
    save_suite_summary(store, run_id, "zeta", {"suiteId": "zeta", "score": 0.75, "note": "ü"})
    assert suite_summaries(store, run_id) == [
        {"suiteId": "alpha", "score": 1.0, "ci95": None},
        {"suiteId": "zeta", "score": 0.75, "note": "ü"},
    ]
    assert suite_summaries(store, new_run(store)) == []


def test_end_run_marks_the_run_and_keeps_an_earlier_results_file(store: Store) -> None:
    run_id = new_run(store)
    end_run(store, run_id, status="interrupted", ended_at=AT, results_file="r/one.json")
    info = store.get_run(run_id)
    assert (info.status, info.ended_at, info.results_file) == (
        "interrupted",
        "2026-04-13T07:30:00+00:00",
        "r/one.json",
    )
    assert store.find_unfinished("eval") is not None
    store.reopen_run(run_id)
    end_run(store, run_id, status="finished", ended_at=AT, results_file=None)
    info = store.get_run(run_id)
    assert (info.status, info.results_file) == ("finished", "r/one.json")
    assert store.find_unfinished("eval") is None


def test_deleting_a_run_deletes_its_attempts_and_summaries(store: Store) -> None:
    run_id = new_run(store)
    AttemptWriter(store, run_id, batch=1).add(attempt("a"))
    save_suite_summary(store, run_id, "smoke", {"score": 1})
    store.conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
    assert rows(store, run_id) == 0
    assert suite_summaries(store, run_id) == []


def test_an_attempt_of_an_unknown_run_is_refused(store: Store) -> None:
    writer = AttemptWriter(store, "01J0000000000000000000NONE", batch=1)
    with pytest.raises(StoreError, match="refused a write"):
        writer.add(attempt("a"))


# -- the migration ---------------------------------------------------------------------------

OLD_RUN = (
    "INSERT INTO runs (id, kind, label, status, started_at, ended_at, root, selectors, options)"
    " VALUES ('01J0000000000000000000OLD1', 'canary', 'canary-run-old', 'finished',"
    " '2026-01-02T03:04:05+00:00', '2026-01-02T03:05:00+00:00', '/repo', '[]', '{}')"
)


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_m005_applies_to_a_store_written_before_it(tmp_path: Path) -> None:
    names = [m.name for m in MIGRATIONS]
    assert "m005_eval_attempts" in names
    before = names[names.index("m005_eval_attempts") - 1]
    path = tmp_path / "coalmine.db"
    conn = connect(path)
    migrate(conn, upto=before)
    assert "eval_attempts" not in tables(conn)
    conn.execute(OLD_RUN)
    conn.close()

    store = Store.open(path)  # migrates on open
    try:
        assert {"eval_attempts", "eval_suites"} <= tables(store.conn)
        applied = [r[0] for r in store.conn.execute("SELECT name FROM _migrations")]
        assert applied.count("m005_eval_attempts") == 1
        assert store.get_run("canary-run-old").status == "finished"  # old rows kept
        run_id = new_run(store)
        AttemptWriter(store, run_id, batch=1).add(attempt("a"))
        done = done_attempts(store, run_id)
        assert len(done) == 1 and ("smoke", "a", 0) in done
    finally:
        store.close()
    again = Store.open(path)  # a second open applies nothing twice
    try:
        applied = [r[0] for r in again.conn.execute("SELECT name FROM _migrations")]
        assert applied == names
    finally:
        again.close()
