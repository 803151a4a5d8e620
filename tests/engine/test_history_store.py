"""A run store that cannot be used is exit 2 naming its path; read-only commands make none.

A store may be garbage, a truncated database, a folder, unreadable, or written by a newer
coalmine. Each is a clear error naming the file, exit 2 (not 1, which means a gate failed).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from coalmine.store.runs import Store
from tests.helpers.cli import run_main
from tests.helpers.project import Project

RESULT = {
    "run_id": "canary-run-2026-01-02",
    "timestamp": "2026-01-02T03:04:05Z",
    "summary": {"total": 0, "passed": 0, "failed": 0, "composite_score": None},
    "results": [],
}


def garbage(db: Path) -> None:
    db.write_bytes(b"this is not a database at all\n" * 10)


def truncated(db: Path) -> None:
    Store.open(db).close()
    for extra in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        extra.unlink(missing_ok=True)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])


def folder(db: Path) -> None:
    db.mkdir()


def newer(db: Path) -> None:
    Store.open(db).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', '2099-01-01')")
    conn.commit()
    conn.close()


BROKEN: dict[str, Callable[[Path], None]] = {
    "garbage": garbage,
    "truncated": truncated,
    "a folder": folder,
    "newer schema": newer,
}

COMMANDS = [
    ("runs", "list"),
    ("runs", "show", "latest"),
    ("report", "latest"),
    ("compare", "a", "b"),
    ("runs", "import", "result.json"),
    ("memory", "list"),
    ("canary", "run", "--display", "none"),
    ("eval", "run", "--display", "none"),
    ("view", "--port", "0"),
]


def demo(project: Project) -> Path:
    project.config({"agents": {"QA Coordinator": {"provider": "echo"}}})
    project.canary("qa-001-x")
    project.write("harness/evals/s.jsonl", '{"id": "a", "prompt": "p", "graders": '
                  '[{"type": "contains", "config": {"value": "p"}}]}\n')  # fmt: skip
    project.write("result.json", json.dumps(RESULT))
    db = project.root / ".coalmine" / "coalmine.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    return db


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c[:2]) for c in COMMANDS])
@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_store_is_exit_2_naming_it(
    project: Project, kind: str, command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = demo(project)
    BROKEN[kind](db)
    monkeypatch.chdir(project.root)
    code, output = run_main(*command, "--root", str(project.root))
    db.chmod(0o644) if db.is_file() else None
    assert code == 2, output
    assert str(db) in output, output
    assert "Traceback" not in output
    if kind == "newer schema":
        assert "newer coalmine" in output


READ_ONLY = [("runs", "list"), ("runs", "show", "latest"), ("report", "latest"),
             ("compare", "latest", "latest"), ("view",)]  # fmt: skip


@pytest.mark.parametrize("command", READ_ONLY, ids=[" ".join(c) for c in READ_ONLY])
def test_read_only_commands_never_create_a_store(
    tmp_path: Path, command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    for where in (tmp_path / "empty", tmp_path / "project"):
        where.mkdir()
        if where.name == "project":
            (where / "coalmine.yaml").write_text("agents: {}\n")
        monkeypatch.chdir(where)
        code, output = run_main(*command, "--root", str(where))
        assert code == 2, output
        assert "there is no run store at" in output and "coalmine canary run" in output
        assert "Traceback" not in output
        assert not (where / ".coalmine").exists()


@pytest.mark.parametrize(
    "command", [("memory", "list"), ("memory", "recall", "x"), ("kits", "status")]
)
def test_reads_that_need_no_store_make_none(
    tmp_path: Path, command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = run_main(*command, "--root", str(tmp_path))
    assert code == 0, output
    assert not (tmp_path / ".coalmine").exists()


def test_compare_and_report_of_result_files_need_no_store(tmp_path: Path) -> None:
    files = []
    case = {"id": "qa-001-x", "phase": "qa", "title": "x", "agent": "Agent", "verdict": "PASS",
            "composite_score": 1.0, "duration_seconds": 1.0}  # fmt: skip
    summary = {"total": 1, "passed": 1, "failed": 0, "composite_score": 1.0}
    for name in ("a", "b"):  # two runs of one canary: runs with no case in common do not compare
        path = tmp_path / f"canary-run-{name}.json"
        path.write_text(
            json.dumps({**RESULT, "run_id": path.stem, "summary": summary, "results": [case]})
        )
        files.append(str(path))
    code, output = run_main("compare", *files, "--root", str(tmp_path))
    assert code == 0, output
    code, output = run_main("report", files[0], "--root", str(tmp_path), "--format", "json")
    assert code == 0, output
    assert not (tmp_path / ".coalmine").exists()


def test_runs_import_starts_a_projects_store_but_not_anywhere(tmp_path: Path) -> None:
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "result.json").write_text(json.dumps(RESULT))
    code, output = run_main("runs", "import", str(stray / "result.json"), "--root", str(stray))
    assert code == 2 and "not a coalmine project" in output, output
    assert not (stray / ".coalmine").exists()
    project = tmp_path / "project"
    shutil.copytree(stray, project)
    (project / "coalmine.yaml").write_text("agents: {}\n")
    code, output = run_main("runs", "import", str(project / "result.json"), "--root", str(project))
    assert code == 0, output
    assert (project / ".coalmine" / "coalmine.db").is_file()
