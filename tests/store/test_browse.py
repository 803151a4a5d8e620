"""The store as the viewer reads it: pages, filters and comparisons in SQL, and m008's move."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from coalmine.evals.summary import summarise_attempts
from coalmine.store.browse import CaseFilter, compare_attempts, compare_eval_runs, eval_cases
from coalmine.store.db import connect
from coalmine.store.evals import (
    Attempt,
    AttemptWriter,
    attempt_facts,
    iter_attempts,
    save_case_verdicts,
    save_suite_summary,
)
from coalmine.store.migrations import migrate
from coalmine.store.runs import NewRun, Store


def attempt(case_id: str, status: str, score: float | None, *, tags: list[str] | None = None,
            failed: str | None = None, rep: int = 0) -> Attempt:  # fmt: skip
    grades = {"equals": {"score": score, "passed": failed != "equals"},
              "contains": {"score": 1.0, "passed": failed != "contains"}}  # fmt: skip
    record = {"agent": "a", "prompt": f"p {case_id}", "output": f"out {case_id}", "grades": grades}
    if tags:
        record["tags"] = tags
    return Attempt("s", case_id, rep, status, status != "pass", score, {}, 0.1, None, None,
                   None, None, record)  # fmt: skip


def test_the_facts_of_an_attempt_are_its_tags_and_the_graders_it_failed() -> None:
    record = {"tags": ["pii", 3], "grades": {"a": {"passed": False}, "b": {"passed": True},
                                             "c": {"skipped": True}}}  # fmt: skip
    assert attempt_facts(record) == [("tag", "pii"), ("tag", "3"), ("failed", "a")]
    assert attempt_facts({}) == []


def test_m008_moves_the_attempts_and_fills_in_their_facts(tmp_path: Path) -> None:
    path = tmp_path / "coalmine.db"
    conn = connect(path)
    migrate(conn, upto="m007_gate_runs")
    conn.execute(
        "INSERT INTO runs (id, kind, status, started_at, root) VALUES"
        " ('R1', 'eval', 'finished', '2026-01-02T03:04:05+00:00', '/r')"
    )
    old = [attempt("c1", "pass", 1.0, tags=["pii"]), attempt("c2", "fail", 0.0, failed="equals")]
    for a in old:
        conn.execute(
            "INSERT INTO eval_attempts VALUES ('R1', ?, ?, ?, ?, ?, ?, '{}', ?, NULL, NULL,"
            " NULL, NULL, ?)",
            (a.suite, a.case_id, a.rep, a.status, int(a.blocks), a.score, a.latency,
             json.dumps(a.record)),
        )  # fmt: skip
    assert migrate(conn) == ["m008_eval_attempts_browse", "m011_run_errors"]
    facts = conn.execute(
        "SELECT case_id, kind, value FROM eval_attempt_facts ORDER BY 1"
    ).fetchall()
    assert [tuple(f) for f in facts] == [("c1", "tag", "pii"), ("c2", "failed", "equals")]
    assert conn.execute("SELECT COUNT(*) FROM eval_attempts").fetchone()[0] == 2
    conn.close()


def test_pages_filter_on_facts_and_a_replaced_attempt_loses_its_old_ones(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "coalmine.db")
    run = store.start_run(NewRun(kind="eval", root=str(tmp_path), started_at=datetime.now(UTC)))
    writer = AttemptWriter(store, run)
    writer.add(attempt("c1", "pass", 1.0, tags=["pii"]))
    writer.add(attempt("c2", "fail", 0.25, failed="equals", tags=["pii"]))
    writer.add(attempt("c3", "fail", 0.5, failed="contains"))
    writer.flush()

    def ids(**where: object) -> list[str]:
        page = eval_cases(store, run, CaseFilter(**where), limit=10, offset=0)  # type: ignore[arg-type]
        return [r.case_id for r in page.rows]

    assert ids(grader="equals") == ["c2"] and ids(tag="pii") == ["c1", "c2"]
    assert ids(sort="score") == ["c2", "c3", "c1"] and ids(sort="score", descending=True) == [
        "c1",
        "c3",
        "c2",
    ]
    assert ids(verdict="FAIL", tag="pii") == ["c2"] and ids(text="OUT C3") == ["c3"]
    page = eval_cases(store, run, CaseFilter(verdict="FAIL"), limit=1, offset=1)
    assert ([r.case_id for r in page.rows], page.matching, page.total) == (["c3"], 2, 3)
    writer.add(attempt("c2", "pass", 1.0))  # resumed and answered again: replaced
    writer.flush()
    assert ids(grader="equals") == [] and ids(tag="pii") == ["c1"]
    store.close()


def test_the_comparison_counts_flips_and_keeps_unmoved_cases_as_zero_deltas(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "coalmine.db")
    runs = []
    for rows in (
        [("a", "pass", 1.0), ("b", "fail", 0.0), ("c", "pass", 1.0), ("d", "pass", 0.8)],
        [("a", "fail", 0.5), ("b", "pass", 1.0), ("c", "pass", 1.0), ("e", "pass", 1.0)],
    ):
        run = store.start_run(NewRun(kind="eval", root=str(tmp_path), started_at=datetime.now(UTC)))
        writer = AttemptWriter(store, run)
        for case_id, status, score in rows:
            writer.add(attempt(case_id, status, score))
        writer.flush()
        runs.append(run)
    c = compare_eval_runs(store, runs[0], runs[1], limit=10, offset=0)
    store.close()
    # shared a, b, c: a regressed (−0.5), b was fixed (+1), c did not move (0)
    assert (c.shared, c.regressions, c.fixes, c.only_base, c.only_new) == (3, 1, 1, 1, 1)
    assert sorted(c.deltas) == [-0.5, 0.0, 1.0]
    assert [(x.case_id, x.base_verdict, x.new_verdict) for x in c.changed] == [
        ("a", "PASS", "FAIL"), ("b", "FAIL", "PASS")
    ]  # fmt: skip
    assert c.changed_total == 2


def test_repeats_paired_one_to_one_reduce_per_case_as_the_run_record_does(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "coalmine.db")
    runs = []
    # base: a passes twice; new: a fails once of two (FAIL), mean score 0.5 → 0.75
    for rows in ([("a", "pass", 0.5, 0), ("a", "pass", 0.5, 1)],
                 [("a", "fail", 0.5, 0), ("a", "pass", 1.0, 1)]):  # fmt: skip
        run = store.start_run(NewRun(kind="eval", root=str(tmp_path), started_at=datetime.now(UTC)))
        writer = AttemptWriter(store, run)
        for case_id, status, score, rep in rows:
            writer.add(attempt(case_id, status, score, rep=rep))
        writer.flush()
        runs.append(run)
    c = compare_eval_runs(store, runs[0], runs[1], limit=10, offset=0)
    store.close()
    assert (c.shared, c.regressions, c.fixes, c.only_base, c.only_new) == (1, 1, 0, 0, 0)
    assert c.deltas == [0.25]
    assert [(x.case_id, x.base_score, x.new_score) for x in c.changed] == [("a", 0.5, 0.75)]


def test_kept_verdicts_compare_as_the_attempts_do(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "coalmine.db")
    runs = []
    for rows in (
        [("a", "pass", 1.0), ("b", "fail", 0.0), ("c", "pass", 1.0), ("d", "pass", 0.8),
         ("f", "error", None), ("g", "pass", 0.5)],
        [("a", "fail", 0.5), ("b", "pass", 1.0), ("c", "pass", 1.0), ("e", "pass", 1.0),
         ("f", "error", None), ("g", "pass", 0.75)],
    ):  # fmt: skip
        run = store.start_run(NewRun(kind="eval", root=str(tmp_path), started_at=datetime.now(UTC)))
        writer = AttemptWriter(store, run)
        for case_id, status, score in rows:
            writer.add(attempt(case_id, status, score))
        writer.flush()
        runs.append(run)
    for same_cases in (False, True):
        for run in runs:
            summary = summarise_attempts(iter_attempts(store, run, "s"), reducer="mean", repeats=1,
                                         min_score=None)  # fmt: skip
            kept = [c for c in summary.case_verdicts if same_cases is False or c[0] not in "de"]
            save_case_verdicts(store, run, "s", kept)
            save_suite_summary(store, run, "s", {})
        kept_way = compare_eval_runs(store, runs[0], runs[1], limit=10, offset=0)
        if not same_cases:  # the attempts hold d and e: the SQL way sees the same cases
            assert kept_way == compare_attempts(store, runs[0], runs[1], limit=10, offset=0)
        assert (kept_way.regressions, kept_way.fixes) == (1, 1)
        assert [c.case_id for c in kept_way.changed] == ["a", "b", "g"]
        assert sorted(kept_way.deltas) == [-0.5, 0.0, 0.25, 1.0]  # f has no score
    store.close()
