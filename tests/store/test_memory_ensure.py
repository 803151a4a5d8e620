"""Idempotent lessons: one per kind, evidence and tags (``ensure_lesson``) or per key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from coalmine.store.db import connect
from coalmine.store.memory import (
    LessonKey,
    ensure_lesson,
    find_lesson,
    get_lesson,
    list_lessons,
    recall,
    record_lesson,
)
from coalmine.store.migrations import migrate
from coalmine.store.runs import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / ".coalmine" / "coalmine.db")
    yield opened
    opened.close()


def test_the_same_kind_evidence_and_tags_keep_one_lesson(store: Store) -> None:
    evidence = ["01RUN2", "01RUN1", "triage/login"]
    first = ensure_lesson(
        store, "caught-regression", "caught it", tags=["triage", "eval"], evidence=evidence,
        paths=["./harness/evals/triage.jsonl"],
    )  # fmt: skip
    again = ensure_lesson(
        store, "caught-regression", "other words", tags=["triage", "eval"], evidence=evidence
    )
    assert again == first
    assert get_lesson(store, first).text == "caught it"  # the first one is kept as it was
    assert get_lesson(store, first).paths == ("harness/evals/triage.jsonl",)
    # another kind, other tags, or other evidence (a prefix too) is another lesson
    others = {
        ensure_lesson(store, "observation", "x", tags=["triage", "eval"], evidence=evidence),
        ensure_lesson(store, "caught-regression", "x", tags=["billing"], evidence=evidence),
        ensure_lesson(store, "caught-regression", "x", tags=["triage"], evidence=evidence[:2]),
    }
    assert len(others) == 3 and first not in others
    assert len(list_lessons(store)) == 4


def test_find_lesson_wants_the_exact_evidence_and_every_tag(store: Store) -> None:
    lesson = ensure_lesson(store, "risk-note", "r", tags=["a", "b"], evidence=["x", "y"])
    found = find_lesson(store, "risk-note", evidence=["x", "y"], tags=["b"])
    assert found is not None and found.id == lesson
    assert find_lesson(store, "risk-note", evidence=["x", "y"], tags=["c"]) is None
    assert find_lesson(store, "risk-note", evidence=["x"]) is None
    assert find_lesson(store, "observation", evidence=["x", "y"]) is None
    with pytest.raises(ValueError, match="unknown lesson kind"):
        ensure_lesson(store, "hunch", "r", evidence=[])


def test_recording_a_key_again_counts_it_in_one_row(store: Store) -> None:
    key = LessonKey("caught-regression", "triage", "login", "contains")
    first = record_lesson(store, key, "caught in run 1", run="R1", evidence=["R1"])
    assert record_lesson(store, key, "caught in run 1 again", run="R1", evidence=["R1"]) == first
    assert (get_lesson(store, first).count, get_lesson(store, first).text) == (1, "caught in run 1")
    assert record_lesson(store, key, "caught in run 2", run="R2", evidence=["R2"]) == first
    lesson = get_lesson(store, first)
    assert (lesson.count, lesson.last_run, lesson.text, lesson.evidence) == (
        2,
        "R2",
        "caught in run 2",
        ("R2",),
    )
    other = LessonKey("caught-regression", "triage", "login", "equals")  # another cause
    assert record_lesson(store, other, "other cause", run="R2") != first
    assert len(list_lessons(store)) == 2


def test_m010_folds_the_lessons_a_flaky_case_left(tmp_path: Path) -> None:
    conn = connect(tmp_path / "coalmine.db")
    migrate(conn, upto="m008_eval_attempts_browse")
    rows = [  # run ids and times differ; one case, one suite, one cause
        ("Suite 'triage' caught a regression: case a passed in run 01JAAAAAAAAAAAAAAAAAAAAAA1 and"
         " fails in run 01JAAAAAAAAAAAAAAAAAAAAAA2 (contains failed)", 1, 0),
        ("Suite 'triage' caught a regression: case a passed in run 01JAAAAAAAAAAAAAAAAAAAAAA3 and"
         " fails in run 01JAAAAAAAAAAAAAAAAAAAAAA4 (contains failed)", 0, 1),
        ("Suite 'triage' caught a regression: case b passed in run 01JAAAAAAAAAAAAAAAAAAAAAA3 and"
         " fails in run 01JAAAAAAAAAAAAAAAAAAAAAA4 (contains failed)", 0, 0),
    ]  # fmt: skip
    for text, positive, negative in rows:
        run = text.split("fails in run ")[1][:26]
        conn.execute(
            "INSERT INTO lessons (kind, text, tags, paths, evidence, positive, negative,"
            " created_at, updated_at) VALUES ('caught-regression', ?, '[\"triage\", \"eval\"]',"
            " '[]', ?, ?, ?, '2026-01-01', '2026-01-01')",
            (text, json.dumps([run, "base", "triage/a"]), positive, negative),
        )
    migrate(conn)
    conn.close()
    reopened = Store.open(tmp_path / "coalmine.db")
    try:
        folded, kept = list_lessons(reopened)
        assert (folded.id, folded.count, folded.positive, folded.negative) == (1, 2, 1, 1)
        assert folded.text == rows[1][0] and folded.last_run == "01JAAAAAAAAAAAAAAAAAAAAAA4"
        assert (kept.id, kept.count) == (3, 1)
        assert recall(reopened, "triage")  # the text index kept up with the delete
        assert [lesson.id for lesson, _ in recall(reopened, "triage")] == [1, 3]
    finally:
        reopened.close()
