"""Idempotent lessons: ``ensure_lesson`` keeps one lesson per kind, evidence and tags."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coalmine.store.memory import ensure_lesson, find_lesson, get_lesson, list_lessons
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
