"""Runs, cases, grades and judge calls in a real SQLite store, and reading a run back whole."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from coalmine.errors import StoreError, UsageError
from coalmine.graders.keyword import KeywordGrade
from coalmine.results import (
    CanaryRun,
    CaseResult,
    Grade,
    InvalidSpecRecord,
    JudgeInfo,
    RunTotals,
    Verdict,
)
from coalmine.store.evals import prior_runs
from coalmine.store.imports import import_run
from coalmine.store.runs import CaseExtras, JudgeCall, NewRun, Store

ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
START = datetime(2026, 4, 13, 7, 30, tzinfo=UTC)
JUDGE = JudgeInfo(mode="agent", agent="Judge", provider="openai", model="gpt-judge")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / ".coalmine" / "coalmine.db")
    yield opened
    opened.close()


def new_run(**changes: Any) -> NewRun:
    fields: dict[str, Any] = {"kind": "canary", "root": "/repo", "started_at": START}
    return NewRun(**(fields | changes))


def case(
    case_id: str,
    verdict: Verdict = "PASS",
    composite: float | None = 1.0,
    grades: dict[str, Grade] | None = None,
    **changes: Any,
) -> CaseResult:
    return CaseResult(
        id=case_id,
        phase="qa",
        title=f"Title of {case_id}",
        agent="QA Coordinator",
        verdict=verdict,
        composite_score=composite,
        grader_scores=grades if grades is not None else {"keyword": Grade(score=composite)},
        duration_seconds=1.25,
        **changes,
    )


def totals(total: int = 0, passed: int = 0) -> RunTotals:
    return RunTotals(total=total, passed=passed, failed=total - passed, composite_score=None)


def rows(store: Store, sql: str, *args: object) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in store.conn.execute(sql, args)]


def test_open_creates_the_database_and_puts_artifacts_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "deep" / ".coalmine" / "coalmine.db"
    store = Store.open(path)
    try:
        assert path.is_file()
        assert store.artifacts.root == path.parent / "artifacts"
        run_id = store.start_run(new_run())
        # a short text stays in the database; a large one goes to a file beside it
        store.record_case(run_id, case("a"), CaseExtras(position=0, output="an answer"))
        assert not store.artifacts.root.exists()
        store.record_case(run_id, case("b"), CaseExtras(position=1, output="x" * 5000))
        assert [p.parent.parent.parent for p in store.artifacts.root.rglob("*") if p.is_file()] == [
            path.parent / "artifacts"
        ]
    finally:
        store.close()


def test_open_twice_migrates_once(tmp_path: Path) -> None:
    path = tmp_path / "coalmine.db"
    Store.open(path).close()
    again = Store.open(path)
    try:
        names = rows(again, "SELECT name FROM _migrations")
        assert len(names) == len(set(names))
    finally:
        again.close()


def test_start_run_records_a_running_run(store: Store) -> None:
    plus_two = timezone(timedelta(hours=2))
    run_id = store.start_run(
        new_run(
            started_at=datetime(2026, 4, 13, 9, 30, tzinfo=plus_two),
            git_commit="0123abcd",
            git_dirty=True,
            coalmine_version="0.1.0",
            config_hash="sha256:cfg",
            command_line=["coalmine", "canary", "run", "--jobs", "4"],
            selectors=["qa-*"],
            options={"jobs": 4, "no_judge": False, "cache": True},
            judge=JUDGE,
        )
    )
    assert ULID.match(run_id)
    info = store.get_run(run_id)
    assert info.id == run_id
    assert (info.kind, info.status, info.root, info.label) == ("canary", "running", "/repo", None)
    assert info.started_at == "2026-04-13T07:30:00+00:00"  # 09:30 at +02:00, stored as UTC
    assert (info.ended_at, info.summary, info.results_file) == (None, None, None)
    assert (info.git_commit, info.git_dirty) == ("0123abcd", True)
    assert (info.coalmine_version, info.config_hash) == ("0.1.0", "sha256:cfg")
    assert info.command_line == ["coalmine", "canary", "run", "--jobs", "4"]
    assert info.selectors == ["qa-*"]
    assert info.options == {"jobs": 4, "no_judge": False, "cache": True}
    assert info.judge == JUDGE


def test_start_run_keeps_unknown_git_state_unknown(store: Store) -> None:
    info = store.get_run(store.start_run(new_run()))
    assert (info.git_commit, info.git_dirty, info.judge) == (None, None, None)
    clean = store.get_run(store.start_run(new_run(git_dirty=False)))
    assert clean.git_dirty is False


def test_run_ids_sort_by_creation(store: Store) -> None:
    ids = [store.start_run(new_run()) for _ in range(5)]
    assert ids == sorted(ids)
    assert [r.id for r in store.list_runs()] == ids[::-1]


def full_case() -> tuple[CaseResult, CaseExtras]:
    keyword = KeywordGrade(
        score=0.5,
        passed=False,
        weight=0.3,
        matched=1,
        required=2,
        forbidden_found=[],
        missing=["xss"],
    )
    structural = Grade(score=1.0, passed=True, weight=0.3)
    judge = Grade(weight=0.4, skipped=True, reason="no judge configured")
    result = case(
        "qa-001-review",
        verdict="FAIL",
        composite=0.75,
        grades={"keyword": keyword, "structural": structural, "llm-judge": judge},
        failures=["keyword scored 0.50, below its 0.80 threshold"],
        warnings=["invalid UTF-8 was replaced"],
        cache="miss: nothing is cached for this agent and settings yet",
        spec_path="canaries/qa-001-review.yaml",
        prompt="Review this diff:\r\n+ eval(input())",
        output="Found: injection ☠\x00 end",
    )
    extras = CaseExtras(
        position=3,
        prompt=result.prompt,
        output=result.output,
        model="gpt-agent",
        usage={"prompt_tokens": 120, "completion_tokens": 45},
        judge_calls=[
            JudgeCall("llm-judge", 1, "gpt-judge", "sha256:judgeprompt", "not json"),
            JudgeCall("llm-judge", 2, "gpt-judge", "sha256:judgeprompt", None),
        ],
        blocking={"keyword": True, "structural": True},
    )
    return result, extras


def test_record_case_stores_the_case_row(store: Store) -> None:
    run_id = store.start_run(new_run())
    result, extras = full_case()
    store.record_case(run_id, result, extras)
    ((position, verdict, composite, reason, agent, model, duration, p_tok, c_tok),) = rows(
        store,
        "SELECT position, verdict, composite_score, reason, agent, model, duration_seconds,"
        " prompt_tokens, completion_tokens FROM case_results WHERE run_id = ?",
        run_id,
    )
    assert (position, verdict, composite, reason) == (3, "FAIL", 0.75, None)
    assert (agent, model, duration, p_tok, c_tok) == ("QA Coordinator", "gpt-agent", 1.25, 120, 45)
    ((prompt_ref, output_ref, stored),) = rows(
        store, "SELECT prompt_artifact, output_artifact, result FROM case_results"
    )
    assert store.artifacts.get(prompt_ref) == "Review this diff:\r\n+ eval(input())"
    assert store.artifacts.get(output_ref) == "Found: injection ☠\x00 end"
    slim = CaseResult.model_validate_json(stored)  # the row keeps the texts only as artifacts
    assert (slim.prompt, slim.output) == (None, None)


def test_record_case_stores_one_grade_row_per_grader(store: Store) -> None:
    run_id = store.start_run(new_run())
    result, extras = full_case()
    store.record_case(run_id, result, extras)
    assert rows(
        store,
        "SELECT case_id, key, score, passed, weight, skipped, blocking FROM grades ORDER BY key",
    ) == [
        ("qa-001-review", "keyword", 0.5, 0, 0.3, 0, 1),
        ("qa-001-review", "llm-judge", None, None, 0.4, 1, None),
        ("qa-001-review", "structural", 1.0, 1, 0.3, 0, 1),
    ]
    (details,) = rows(store, "SELECT details FROM grades WHERE key = 'keyword'")
    assert Grade.model_validate_json(details[0]).model_dump()["missing"] == ["xss"]


def test_record_case_stores_judge_calls_with_their_replies(store: Store) -> None:
    run_id = store.start_run(new_run())
    result, extras = full_case()
    store.record_case(run_id, result, extras)
    calls = rows(
        store,
        "SELECT grader_key, attempt, model, prompt_hash, reply_artifact FROM judge_verdicts"
        " ORDER BY attempt",
    )
    assert [c[:4] for c in calls] == [
        ("llm-judge", 1, "gpt-judge", "sha256:judgeprompt"),
        ("llm-judge", 2, "gpt-judge", "sha256:judgeprompt"),
    ]
    assert store.artifacts.get(calls[0][4]) == "not json"
    assert calls[1][4] is None  # the second attempt got no reply


def test_case_results_gives_back_an_equal_case(store: Store) -> None:
    run_id = store.start_run(new_run())
    result, extras = full_case()
    store.record_case(run_id, result, extras)
    (back,) = store.case_results(run_id)
    assert back.model_dump() == result.model_dump()
    assert back.prompt == "Review this diff:\r\n+ eval(input())"
    assert back.output == "Found: injection ☠\x00 end"
    assert back.grader_scores["keyword"].model_dump()["missing"] == ["xss"]  # subclass fields kept


def test_case_results_follow_position_not_recording_order(store: Store) -> None:
    run_id = store.start_run(new_run())
    for position, case_id in [(2, "c"), (0, "a"), (1, "b")]:
        store.record_case(run_id, case(case_id), CaseExtras(position=position))
    assert [r.id for r in store.case_results(run_id)] == ["a", "b", "c"]


def test_record_case_is_one_transaction(store: Store) -> None:
    run_id = store.start_run(new_run())
    result, extras = full_case()
    twice = JudgeCall("llm-judge", 1, "gpt-judge", "sha256:p", "reply")
    broken = CaseExtras(position=0, judge_calls=[twice, twice])  # the second breaks the key
    with pytest.raises((sqlite3.IntegrityError, StoreError)):
        store.record_case(run_id, result, broken)
    for table in ("case_results", "grades", "judge_verdicts"):
        assert rows(store, f"SELECT COUNT(*) FROM {table}") == [(0,)], table
    assert not store.conn.in_transaction
    store.record_case(run_id, result, extras)  # the store still takes the next case
    assert rows(store, "SELECT COUNT(*) FROM grades") == [(3,)]


def test_record_case_for_an_unknown_run_stores_nothing(store: Store) -> None:
    with pytest.raises((sqlite3.IntegrityError, StoreError)):
        store.record_case("01J00000000000000000000000", case("a"), CaseExtras(position=0))
    assert rows(store, "SELECT COUNT(*) FROM case_results") == [(0,)]


def test_recording_a_case_again_replaces_it_with_its_grades(store: Store) -> None:
    run_id = store.start_run(new_run())
    result, extras = full_case()
    store.record_case(run_id, result, extras)
    redo = case("qa-001-review", grades={"keyword": Grade(score=1.0, passed=True)})
    store.record_case(run_id, redo, CaseExtras(position=3, output="second answer"))
    assert rows(store, "SELECT case_id, verdict FROM case_results") == [("qa-001-review", "PASS")]
    assert rows(store, "SELECT key, score FROM grades") == [("keyword", 1.0)]
    assert rows(store, "SELECT COUNT(*) FROM judge_verdicts") == [(0,)]
    (back,) = store.case_results(run_id)
    assert back.model_dump() == redo.model_copy(update={"output": "second answer"}).model_dump()


def test_finish_run_records_the_end(store: Store) -> None:
    run_id = store.start_run(new_run())
    summary = RunTotals(total=2, passed=1, failed=1, composite_score=0.7, invalid=1)
    first = [InvalidSpecRecord(path="canaries/bad.yaml", line=3, id="qa-bad", reason="no prompt")]
    store.finish_run(
        run_id,
        status="interrupted",
        ended_at=START + timedelta(seconds=30),
        summary=totals(),
        invalid=first,
        label="canary-run-2026-04-13",
        results_file="bench/results/canary-run-2026-04-13.json",
    )
    assert store.invalid_specs(run_id) == first
    second = [
        InvalidSpecRecord(path="canaries/x.yaml", line=None, id=None, reason="not YAML"),
        InvalidSpecRecord(path="canaries/y.yaml", line=7, id="qa-y", reason="unknown key"),
    ]
    store.finish_run(
        run_id,
        status="finished",
        ended_at=datetime(2026, 4, 13, 9, 31, tzinfo=timezone(timedelta(hours=2))),
        summary=summary,
        invalid=second,
    )
    info = store.get_run(run_id)
    assert info.status == "finished"
    assert info.ended_at == "2026-04-13T07:31:00+00:00"
    assert info.summary == summary
    assert info.label == "canary-run-2026-04-13"  # kept when a later finish gives none
    assert info.results_file == "bench/results/canary-run-2026-04-13.json"
    assert store.invalid_specs(run_id) == second  # replaced, not added to


def test_reopen_run_marks_it_running_again(store: Store) -> None:
    run_id = store.start_run(new_run())
    store.finish_run(run_id, status="interrupted", ended_at=START, summary=totals(), invalid=[])
    store.reopen_run(run_id)
    info = store.get_run(run_id)
    assert (info.status, info.ended_at) == ("running", None)


@pytest.fixture
def two_runs(store: Store) -> tuple[str, str]:
    older = store.start_run(new_run())
    newer = store.start_run(new_run())
    store.finish_run(
        older,
        status="finished",
        ended_at=START,
        summary=totals(),
        invalid=[],
        label="canary-run-older",
    )
    return older, newer


def test_get_run_by_id_lowercase_id_and_label(store: Store, two_runs: tuple[str, str]) -> None:
    older, newer = two_runs
    assert store.get_run(older).id == older
    assert store.get_run(newer.lower()).id == newer
    assert store.get_run("canary-run-older").id == older


def test_get_run_by_unique_prefix(store: Store, two_runs: tuple[str, str]) -> None:
    older, newer = two_runs
    shared = os.path.commonprefix([older, newer])
    assert store.get_run(newer[: len(shared) + 1]).id == newer
    assert store.get_run(older[: len(shared) + 1].lower()).id == older


def test_an_ambiguous_prefix_is_a_usage_error(store: Store, two_runs: tuple[str, str]) -> None:
    older, newer = two_runs
    shared = os.path.commonprefix([older, newer])
    with pytest.raises(UsageError, match="matches several runs") as caught:
        store.get_run(shared)
    assert older in str(caught.value) and newer in str(caught.value)


def test_latest_is_the_newest_finished_run(store: Store, two_runs: tuple[str, str]) -> None:
    older, newer = two_runs
    assert store.get_run("latest").id == older  # the newer one is still running
    store.finish_run(newer, status="finished", ended_at=START, summary=totals(), invalid=[])
    assert store.get_run("latest").id == newer


def test_latest_with_no_finished_run_is_a_usage_error(store: Store) -> None:
    store.start_run(new_run())
    with pytest.raises(UsageError, match="no run matches 'latest'"):
        store.get_run("latest")


@pytest.mark.parametrize("ref", ["01ZZZZZZZZ", "canary-run-none", "older"])
def test_an_unknown_ref_is_a_usage_error(store: Store, two_runs: tuple[str, str], ref: str) -> None:
    with pytest.raises(UsageError, match=f"no run matches '{ref}'.*coalmine runs list"):
        store.get_run(ref)


def test_get_run_filters_by_kind(store: Store, two_runs: tuple[str, str]) -> None:
    older, _ = two_runs
    assert store.get_run(older, kind="canary").id == older
    with pytest.raises(UsageError, match="no run matches"):
        store.get_run(older, kind="review")


@pytest.mark.parametrize("ref", ["%", "_", "0_"])
def test_sql_wildcards_in_a_ref_match_no_id(store: Store, ref: str) -> None:
    # Only one run: a ref that is no prefix of its id, nor its label, must not find it.
    store.start_run(new_run())
    with pytest.raises(UsageError, match="no run matches"):
        store.get_run(ref)


def test_find_unfinished_returns_the_newest_unfinished_run(store: Store) -> None:
    assert store.find_unfinished("canary") is None
    done = store.start_run(new_run())
    interrupted = store.start_run(new_run())
    killed = store.start_run(new_run())  # still "running": its process died
    later_done = store.start_run(new_run())
    store.start_run(new_run(kind="review"))  # newer, but another kind
    for run_id in (done, later_done):
        store.finish_run(run_id, status="finished", ended_at=START, summary=totals(), invalid=[])
    store.finish_run(
        interrupted, status="interrupted", ended_at=START, summary=totals(), invalid=[]
    )
    found = store.find_unfinished("canary")
    assert found is not None and found.id == killed
    store.finish_run(killed, status="finished", ended_at=START, summary=totals(), invalid=[])
    found = store.find_unfinished("canary")
    assert found is not None and found.id == interrupted


def test_load_run_assembles_the_canary_run(store: Store) -> None:
    run_id = store.start_run(new_run(judge=JUDGE, coalmine_version="0.1.0"))
    results = [case("a"), case("b", "FAIL", 0.4)]
    for position, result in enumerate(results):
        store.record_case(run_id, result, CaseExtras(position=position))
    summary = RunTotals(total=2, passed=1, failed=1, composite_score=0.7)
    invalid = [InvalidSpecRecord(path="canaries/bad.yaml", line=1, id=None, reason="empty")]
    store.finish_run(
        run_id,
        status="finished",
        ended_at=START,
        summary=summary,
        invalid=invalid,
        label="canary-run-2026-04-13",
    )
    run = store.load_run("canary-run-2026-04-13")
    assert run.run_id == "canary-run-2026-04-13"
    assert run.store_run_id == run_id
    assert run.timestamp == "2026-04-13T07:30:00Z"
    assert run.summary == summary
    assert [r.model_dump() for r in run.results] == [r.model_dump() for r in results]
    assert run.invalid_specs == invalid
    assert run.interrupted is False
    assert (run.judge, run.coalmine_version) == (JUDGE, "0.1.0")


def test_load_run_of_a_killed_run_recomputes_its_summary(store: Store) -> None:
    run_id = store.start_run(new_run())
    cases = [case("a", "PASS", 0.9), case("b", "FAIL", 0.4), case("c", "ERROR", None)]
    for position, result in enumerate(cases):
        store.record_case(run_id, result, CaseExtras(position=position))
    run = store.load_run(run_id)
    assert run.run_id == run_id  # no label yet: the id stands in
    assert run.interrupted is True
    # 1 PASS, 1 FAIL, 1 ERROR; the composite leaves ERROR out: (0.9 + 0.4) / 2 = 0.65
    assert run.summary == RunTotals(
        total=3, passed=1, failed=1, errored=1, invalid=0, composite_score=0.65
    )


def test_import_run_keeps_results_label_and_summary(store: Store) -> None:
    results = [
        case("qa-000-x", prompt="first prompt", output="first answer"),
        case("qa-001-x", "FAIL", 0.25, prompt="second prompt"),
    ]
    # The file's own summary is kept even where it differs from a recount (composite 0.5).
    summary = RunTotals(total=2, passed=1, failed=1, composite_score=0.5, invalid=1)
    invalid = [InvalidSpecRecord(path="canaries/bad.yaml", line=2, id="bad", reason="no prompt")]
    original = CanaryRun(
        run_id="canary-run-2026-04-13",
        timestamp="2026-04-13T07:30:00Z",
        summary=summary,
        results=results,
        invalid_specs=invalid,
        judge=JUDGE,
        coalmine_version="0.0.9",
    )
    run_id = import_run(store, original, root="/repo", source="x.json").run_id
    info = store.get_run("canary-run-2026-04-13")
    assert (info.id, info.status, info.options["imported"]) == (run_id, "finished", True)
    assert info.options["source"] == "x.json"
    assert info.options["origin"] == "canary-run-2026-04-13@2026-04-13T07:30:00Z"
    back = store.load_run(run_id)
    assert back.model_dump(exclude={"store_run_id"}) == original.model_dump(
        exclude={"store_run_id"}
    )
    assert back.store_run_id == run_id


def test_import_run_keeps_the_run_duration(store: Store) -> None:
    original = CanaryRun(
        run_id="canary-run-2026-04-13",
        timestamp="2026-04-13T07:30:00Z",
        summary=RunTotals(total=1, passed=1, failed=0, composite_score=1.0),
        results=[case("a")],
        duration_seconds=42.5,
    )
    back = store.load_run(import_run(store, original, root="/repo", source="x.json").run_id)
    assert back.duration_seconds == 42.5  # reports re-rendered from the store show it


def test_an_interrupted_run_imports_as_interrupted(store: Store) -> None:
    original = CanaryRun(
        run_id="canary-run-cut",
        timestamp="2026-04-13T07:30:00Z",
        summary=RunTotals(total=1, passed=1, failed=0, composite_score=1.0),
        results=[case("a")],
        interrupted=True,
    )
    run_id = import_run(store, original, root="/repo", source="x.json").run_id
    assert store.get_run(run_id).status == "interrupted"
    assert store.load_run(run_id).interrupted is True


def test_list_runs_newest_first_with_case_counts(store: Store) -> None:
    first = store.start_run(new_run())
    second = store.start_run(new_run(kind="review"))
    third = store.start_run(new_run())
    for position, case_id in enumerate(["a", "b", "c"]):
        store.record_case(first, case(case_id), CaseExtras(position=position))
    store.record_case(third, case("a"), CaseExtras(position=0))
    assert [(r.id, r.cases) for r in store.list_runs()] == [(third, 1), (second, 0), (first, 3)]
    assert [r.id for r in store.list_runs(kind="canary")] == [third, first]
    assert [r.id for r in store.list_runs(limit=2)] == [third, second]


def test_deleting_a_run_deletes_its_cases_grades_and_judge_calls(store: Store) -> None:
    keep = store.start_run(new_run())
    drop = store.start_run(new_run())
    result, extras = full_case()
    for run_id in (keep, drop):
        store.record_case(run_id, result, extras)
        store.finish_run(
            run_id,
            status="finished",
            ended_at=START,
            summary=totals(),
            invalid=[InvalidSpecRecord(path="p", line=1, id=None, reason="r")],
        )
    store.conn.execute("DELETE FROM runs WHERE id = ?", (drop,))
    for table in ("case_results", "grades", "judge_verdicts", "invalid_specs"):
        assert rows(store, f"SELECT DISTINCT run_id FROM {table}") == [(keep,)], table
    assert rows(store, "SELECT COUNT(*) FROM grades") == [(3,)]


def test_latest_previous_and_the_list_follow_the_start_not_the_insertion(store: Store) -> None:
    done: dict[str, Any] = {"status": "finished", "ended_at": START, "summary": totals()}
    late = store.start_run(new_run(started_at=START + timedelta(days=2)))
    early = store.start_run(new_run(started_at=START))  # inserted later, started earlier
    middle = store.start_run(new_run(started_at=START + timedelta(days=1), kind="eval"))
    for run_id in (late, early, middle):
        store.finish_run(run_id, invalid=[], **done)
    assert [r.id for r in store.list_runs()] == [late, middle, early]
    assert store.get_run("latest").id == late
    assert store.get_run("latest", kind="eval").id == middle
    latest = store.get_run("latest")
    found = store.find_latest(kind="canary", before=(latest.started_at, latest.id))
    assert found is not None and found.id == early
    assert prior_runs(store, "canary", late) == [early]
    assert prior_runs(store, "canary", early) == []


def test_importing_one_run_twice_stores_it_once(store: Store) -> None:
    run = CanaryRun(
        run_id="canary-run-2026-04-13",
        timestamp="2026-04-13T07:30:00Z",
        summary=RunTotals(total=1, passed=1, failed=0, composite_score=1.0),
        results=[case("a")],
    )
    first = import_run(store, run, root="/repo", source="a.json")
    again = import_run(store, run, root="/repo", source="b.json")
    assert first.new and not again.new
    assert (again.run_id, again.source) == (first.run_id, "a.json")
    assert len(store.list_runs()) == 1
    other = run.model_copy(update={"results": [case("a", "FAIL", 0.2)]})
    with pytest.raises(UsageError, match=r"c\.json is run canary-run-2026-04-13.*a: FAIL 0\.20"):
        import_run(store, other, root="/repo", source="c.json")
    assert len(store.list_runs()) == 1
