"""The memory of lessons: recall by words and by path, feedback ranks, stale marks, migration."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from coalmine.errors import UsageError
from coalmine.store.db import connect
from coalmine.store.memory import (
    FEEDBACK_WEIGHT,
    PATH_WEIGHT,
    Lesson,
    add_lesson,
    feedback,
    fts_query,
    get_lesson,
    list_lessons,
    mark_stale,
    recall,
)
from coalmine.store.migrations import migrate
from coalmine.store.runs import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / ".coalmine" / "coalmine.db")
    yield opened
    opened.close()


def ids(found: list[tuple[Lesson, float]]) -> list[int]:
    return [lesson.id for lesson, _ in found]


def test_recall_finds_a_lesson_by_words(store: Store) -> None:
    accents = add_lesson(store, "risk-note", "The retriever drops accents from queries")
    add_lesson(store, "observation", "Judge flakes on long outputs")
    add_lesson(store, "human-correction", "Cache keys ignore the model version")
    found = recall(store, "why are accents lost?")
    assert ids(found) == [accents]
    assert found[0][1] > 0


def test_recall_finds_a_lesson_by_path(store: Store) -> None:
    retrieval = add_lesson(store, "risk-note", "Reranker order matters", paths=["src/retrieval/"])
    add_lesson(store, "risk-note", "Routes need auth", paths=["src/web/"])
    add_lesson(store, "risk-note", "Not a parent folder", paths=["src/retrievalx"])
    found = recall(store, "", paths=["src/retrieval/index.py"])
    assert ids(found) == [retrieval]
    assert found[0][1] == PATH_WEIGHT  # no words: the path hit alone
    assert get_lesson(store, retrieval).paths == ("src/retrieval",)  # stored normalised
    # the exact path counts too, and words and path add up
    exact = add_lesson(store, "observation", "Index rebuilds", paths=["./src/retrieval/index.py"])
    both = recall(store, "reranker", paths=["src/retrieval/index.py"])
    assert set(ids(both)) == {retrieval, exact}
    assert ids(both)[0] == retrieval  # path hit plus a text match beats the path hit alone


def equal_corpus(store: Store) -> tuple[int, int]:
    """Two lessons matching 'judge' equally among five, every lesson four words long."""
    first = add_lesson(store, "observation", "judge flakes on retries")
    second = add_lesson(store, "observation", "judge flakes on retries")
    for text in (
        "cache misses after upgrade",
        "index builds are slow",
        "prompt drift needs review",
    ):
        add_lesson(store, "observation", text)
    return first, second


def test_feedback_changes_the_rank_with_hand_computed_scores(store: Store) -> None:
    first, second = equal_corpus(store)
    # BM25 by hand: N=5 rows, 2 hold "judge" once, every row 4 tokens (length = average), so
    # idf = ln((5 - 2 + 0.5) / (2 + 0.5)) = ln 1.4 and the term weight is
    # idf * 1 * (1.2 + 1) / (1 + 1.2 * (1 - 0.75 + 0.75 * 4 / 4)) = ln 1.4
    text = math.log(1.4)
    before = recall(store, "judge")
    assert ids(before) == [first, second]  # a tie goes to the older lesson
    assert [s for _, s in before] == pytest.approx([text, text])

    feedback(store, second, "positive")
    after = recall(store, "judge")
    assert ids(after) == [second, first]
    assert [s for _, s in after] == pytest.approx([text + FEEDBACK_WEIGHT, text])

    for _ in range(2):
        feedback(store, second, "negative")
    feedback(store, first, "validated")  # counts double
    lesson = get_lesson(store, first)
    assert (lesson.positive, lesson.negative, lesson.validated) == (0, 0, 1)
    assert [s for _, s in recall(store, "judge")] == pytest.approx(
        [text + 2 * FEEDBACK_WEIGHT, text - FEEDBACK_WEIGHT]
    )


def test_feedback_refuses_unknown_lessons_and_verdicts(store: Store) -> None:
    lesson = add_lesson(store, "observation", "something")
    with pytest.raises(UsageError, match="no lesson 99"):
        feedback(store, 99, "positive")
    with pytest.raises(ValueError, match="unknown feedback"):
        feedback(store, lesson, "maybe")  # type: ignore[arg-type]


def test_unknown_kind_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="unknown lesson kind 'hunch'"):
        add_lesson(store, "hunch", "text")
    assert list_lessons(store) == []


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "NOT", "a AND (b OR", "text:judge", "*", "^judge", "-x", "NEAR(a b", "", '""'],
)
def test_fts_syntax_in_a_query_does_not_raise(store: Store, query: str) -> None:
    add_lesson(store, "observation", "judge flakes on NOT gates", tags=["judge"])
    recall(store, query)  # no FTS5 syntax error
    assert fts_query('a"b c*') == '"a" OR "b" OR "c"'


def test_a_stale_path_is_marked_never_deleted_and_ranks_last(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src" / "retrieval").mkdir(parents=True)
    kept = add_lesson(store, "risk-note", "retriever accents", paths=["src/retrieval/"])
    gone = add_lesson(store, "risk-note", "retriever accents old module", paths=["src/old.py"])
    partly = add_lesson(store, "risk-note", "retriever", paths=["src/old.py", "src/retrieval"])
    pathless = add_lesson(store, "observation", "retriever accents are hard")
    feedback(store, gone, "validated")  # the best score, yet stale

    assert mark_stale(store, root) == [gone]
    assert get_lesson(store, gone).stale == "paths gone: src/old.py"
    assert all(get_lesson(store, i).stale is None for i in (kept, partly, pathless))
    assert len(list_lessons(store)) == 4  # never deleted
    assert gone not in [x.id for x in list_lessons(store, include_stale=False)]
    assert ids(recall(store, "retriever accents"))[-1] == gone  # returned, but last
    assert mark_stale(store, root) == []  # already marked

    (root / "src" / "old.py").write_text("")
    mark_stale(store, root)
    assert get_lesson(store, gone).stale is None  # the path came back


def test_repeated_negative_feedback_marks_stale(store: Store, tmp_path: Path) -> None:
    disputed = add_lesson(store, "judge-false-positive", "judge hates emoji")
    balanced = add_lesson(store, "judge-false-negative", "judge misses sarcasm")
    for _ in range(2):
        feedback(store, disputed, "negative")
    assert mark_stale(store, tmp_path) == []  # two are not enough
    for _ in range(3):
        feedback(store, balanced, "negative")
        feedback(store, balanced, "positive")
    feedback(store, disputed, "negative")
    assert mark_stale(store, tmp_path) == [disputed]
    assert get_lesson(store, disputed).stale == "negative feedback: 3 negative, 0 positive"
    assert get_lesson(store, balanced).stale is None  # 3 negative but as many positive
    assert [x.id for x in list_lessons(store)] == [disputed, balanced]


def test_the_index_follows_updates_of_the_text(store: Store) -> None:
    lesson = add_lesson(store, "observation", "old wording")
    store.conn.execute("UPDATE lessons SET text = 'new phrasing' WHERE id = ?", (lesson,))
    assert recall(store, "old") == []
    assert ids(recall(store, "phrasing")) == [lesson]


def test_m006_applies_on_an_m005_store(tmp_path: Path) -> None:
    path = tmp_path / "coalmine.db"
    conn = connect(path)
    migrate(conn, upto="m005_eval_attempts")
    conn.execute(
        "INSERT INTO runs (id, kind, status, started_at, root) VALUES"
        " ('01J0000000000000000000OLD1', 'eval', 'finished', '2026-01-02T03:04:05+00:00', '/r')"
    )
    assert migrate(conn) == ["m006_lessons", "m007_gate_runs", "m008_eval_attempts_browse",
                             "m011_run_errors"]  # fmt: skip
    conn.close()
    store = Store.open(path)
    try:
        assert store.get_run("01J0000000000000000000OLD1").kind == "eval"
        lesson = add_lesson(store, "caught-regression", "case qa-1 regressed", evidence=["r1"])
        assert ids(recall(store, "regressed")) == [lesson]
        assert get_lesson(store, lesson).evidence == ("r1",)
    finally:
        store.close()
