"""``kill -9`` of a running ``coalmine eval run``, then ``--resume``: nothing finished is lost.

The agent is a real command agent: it appends its case id to ``calls.log`` when called and to
``done.log`` when it has answered; the case ``slow`` sleeps as long as the ``delay`` file says.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.processes import wait_gone
from tests.helpers.project import Project

AGENT = """\
import os, pathlib, sys, time
case = sys.stdin.read().split()[0]
with open("calls.log", "a") as f:
    f.write(case + "\\n")
if case == "slow":
    pathlib.Path("slow.pid").write_text(str(os.getpid()))
    time.sleep(float(pathlib.Path("delay").read_text()))
print(case + " answered")
sys.stdout.flush()
with open("done.log", "a") as f:
    f.write(case + "\\n")
"""

FAST = [f"c{n:02d}" for n in range(19)]


def lines(project: Project, name: str) -> list[str]:
    path = project.root / name
    return path.read_text().split() if path.exists() else []


def stored(project: Project) -> list[tuple[str, ...]]:
    conn = sqlite3.connect(project.root / ".coalmine" / "coalmine.db")
    try:
        return [tuple(r) for r in conn.execute("SELECT case_id FROM eval_attempts ORDER BY 1")]
    finally:
        conn.close()


def wait_for(check: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def kill_pid_file(path: Path) -> None:
    """Kill what a test left running (the agent records its pid)."""
    if path.exists():
        try:
            os.kill(int(path.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


@pytest.fixture
def slow_project(project: Project) -> Iterator[Project]:
    argv = project.agent_script("bot", AGENT)
    project.config({"agents": {"Bot": {"provider": "command", "argv": argv}}})
    cases = [{"id": i, "prompt": i, "graders": [{"type": "contains",
              "config": {"value": "answered"}}]} for i in ["slow", *FAST]]  # fmt: skip
    project.write("harness/evals/mixed.jsonl", "\n".join(json.dumps(c) for c in cases) + "\n")
    (project.root / "delay").write_text("40")
    yield project
    kill_pid_file(project.root / "slow.pid")


def start_run(project: Project) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "coalmine", "eval", "run", "--display", "none", "--root",
         str(project.root)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


@pytest.mark.slow
def test_finished_cases_reach_the_store_on_a_timer_not_on_the_next_finish(
    slow_project: Project,
) -> None:
    project = slow_project
    proc = start_run(project)
    try:
        wait_for(lambda: len(lines(project, "done.log")) == len(FAST), 30, "the fast cases")
        time.sleep(0.8)  # past the writer's 0.5 s window; the slow case is still running
        assert "slow" not in lines(project, "done.log")
    finally:
        proc.kill()  # coalmine alone, at once
        proc.wait(timeout=10)
    assert [r[0] for r in stored(project)] == FAST  # every finished case, though none followed

    kill_pid_file(project.root / "slow.pid")
    assert wait_gone(int((project.root / "slow.pid").read_text()))
    (project.root / "delay").write_text("0")
    before = len(lines(project, "calls.log"))
    resumed = project.run_cli("eval", "run", "--resume", "--display", "none")
    assert resumed.returncode == 0, resumed.stderr
    assert lines(project, "calls.log")[before:] == ["slow"]  # only the unfinished case
    assert [r[0] for r in stored(project)] == sorted(["slow", *FAST])
