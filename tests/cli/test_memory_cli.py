"""``coalmine memory``: add, recall by words and path, feedback re-ranks, list hides stale."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from coalmine.cli.main import cli, main
from coalmine.store.memory import LessonKey, record_lesson
from coalmine.store.runs import Store
from tests.helpers.cli import run_main


def memory(root: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["memory", *args, "--root", str(root)])
    assert result.exit_code == 0, result.output
    return result.output


def test_add_recall_feedback_list(tmp_path: Path) -> None:
    (tmp_path / "src" / "retrieval").mkdir(parents=True)
    out = memory(tmp_path, "add", "risk-note", "reranker drops ties", "--path", "src/retrieval/",
                 "--tag", "rag")  # fmt: skip
    assert "lesson #1 remembered" in out
    memory(tmp_path, "add", "observation", "reranker is slow", "--evidence", "run-1/case-2")

    by_path = memory(tmp_path, "recall", "unrelated", "--path", "src/retrieval/index.py")
    assert by_path.splitlines()[0].startswith("#1  1.000  risk-note")
    assert "#2" not in by_path

    by_words = memory(tmp_path, "recall", "reranker")
    order = [line.split()[0] for line in by_words.splitlines()]
    assert sorted(order) == ["#1", "#2"]
    memory(tmp_path, "feedback", order[-1].lstrip("#"), "validated")  # the second goes first
    again = memory(tmp_path, "recall", "reranker", "--limit", "1")
    assert [line.split()[0] for line in again.splitlines()] == [order[-1]]

    for _ in range(3):
        memory(tmp_path, "feedback", "1", "negative")
    listed = memory(tmp_path, "list")
    assert "#1" not in listed and "#2" in listed
    assert "(stale: negative feedback: 3 negative" in memory(tmp_path, "list", "--stale")


def test_bad_kind_unknown_id_and_fts_syntax(tmp_path: Path) -> None:
    assert main(["memory", "add", "hunch", "x", "--root", str(tmp_path)]) == 2
    assert main(["memory", "feedback", "7", "positive", "--root", str(tmp_path)]) == 2
    assert "no lesson matches" in memory(tmp_path, "recall", 'a AND (NOT "b')
    assert "no lessons yet" in memory(tmp_path, "list")


def test_list_shows_how_often_a_lesson_was_caught(tmp_path: Path) -> None:
    store = Store.open(tmp_path / ".coalmine" / "coalmine.db")
    try:
        key = LessonKey("caught-regression", "triage", "login", "contains")
        for run in ("R1", "R2", "R3"):
            record_lesson(store, key, f"login regressed in {run}", run=run)
    finally:
        store.close()
    code, out = run_main("memory", "list", "--root", str(tmp_path))
    assert code == 0
    assert "login regressed in R3  (caught 3 times, last in R3)" in out
    assert out.count("caught-regression") == 1
