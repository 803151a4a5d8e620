"""``kill -9`` of a running ``coalmine eval run``, then ``--resume``: nothing finished is lost.

The agent is a real command agent: it appends its case id to ``calls.log`` when called and to
``done.log`` when it has answered; for the case ``slow`` it starts a helper (a grandchild of
coalmine), writes both pids to ``slow.pid`` and sleeps as long as the ``delay`` file says.
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

import pytest

from tests.helpers.processes import children_running, is_gone, kill_all, wait_gone
from tests.helpers.project import Project

AGENT = """\
import os, pathlib, subprocess, sys, time
case = sys.stdin.read().split()[0]
with open("calls.log", "a") as f:
    f.write(case + "\\n")
if case == "slow":
    delay = float(pathlib.Path("delay").read_text())
    if delay:
        helper = subprocess.Popen(["sleep", "300"])
        pathlib.Path("slow.tmp").write_text(f"{os.getpid()} {helper.pid}")
        os.replace("slow.tmp", "slow.pid")
    time.sleep(delay)
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


def slow_pids(project: Project) -> list[int]:
    """The pids of the slow case's agent and its helper (once it wrote them)."""
    path = project.root / "slow.pid"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


@pytest.fixture
def slow_project(project: Project) -> Iterator[Project]:
    argv = project.agent_script("bot", AGENT)
    project.config({"agents": {"Bot": {"provider": "command", "argv": argv}}})
    cases = [{"id": i, "prompt": i, "graders": [{"type": "contains",
              "config": {"value": "answered"}}]} for i in ["slow", *FAST]]  # fmt: skip
    project.write("harness/evals/mixed.jsonl", "\n".join(json.dumps(c) for c in cases) + "\n")
    (project.root / "delay").write_text("40")
    yield project
    kill_all(slow_pids(project))


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
        # No other case finishes for 40 s (the slow one sleeps): what reaches the store now
        # got there on the writer's 0.5 s timer. Polled, not slept, so a loaded machine that
        # grades the last fast case late cannot fail it.
        wait_for(lambda: [r[0] for r in stored(project)] == FAST, 10, "the timer's write")
        assert "slow" not in lines(project, "done.log")
    finally:
        proc.kill()  # coalmine alone, at once
        proc.wait(timeout=10)
    assert [r[0] for r in stored(project)] == FAST  # every finished case, though none followed

    kill_all(slow_pids(project))
    assert all(wait_gone(pid) for pid in slow_pids(project))
    (project.root / "delay").write_text("0")
    before = len(lines(project, "calls.log"))
    resumed = project.run_cli("eval", "run", "--resume", "--display", "none")
    assert resumed.returncode == 0, resumed.stderr
    assert lines(project, "calls.log")[before:] == ["slow"]  # only the unfinished case
    assert [r[0] for r in stored(project)] == sorted(["slow", *FAST])


def run_id_of(project: Project) -> str:
    conn = sqlite3.connect(project.root / ".coalmine" / "coalmine.db")
    try:
        return str(conn.execute("SELECT id FROM runs").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.slow
def test_a_kill_9_of_coalmine_takes_its_agents_and_their_helpers_with_it(
    slow_project: Project,
) -> None:
    project = slow_project
    proc = start_run(project)
    try:
        wait_for(lambda: len(slow_pids(project)) == 2, 30, "the slow agent and its helper")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # coalmine's whole process group, at once
        proc.wait(timeout=10)
    for pid in slow_pids(project):
        assert wait_gone(pid, 5), f"process {pid} outlived coalmine"


@pytest.mark.slow
def test_a_resume_ends_what_a_kill_of_coalmine_and_its_watchdog_left(
    slow_project: Project,
) -> None:
    project = slow_project
    proc = start_run(project)
    try:
        wait_for(lambda: len(slow_pids(project)) == 2, 30, "the slow agent and its helper")
        kill_all(children_running(proc.pid, "_watchdog"))  # the watchdog dies first, then coalmine
    finally:
        proc.kill()
        proc.wait(timeout=10)
    left = slow_pids(project)
    time.sleep(0.3)
    assert not any(is_gone(pid) for pid in left)  # orphans: nothing ended them
    run_id = run_id_of(project)
    assert (project.root / ".coalmine" / "agents" / f"{run_id}.live").exists()

    (project.root / "delay").write_text("0")
    before = len(lines(project, "calls.log"))
    kept = {r[0] for r in stored(project)}
    resumed = project.run_cli("eval", "run", "--resume", "--display", "none")
    assert resumed.returncode == 0, resumed.stderr
    for pid in left:
        assert wait_gone(pid, 2), f"process {pid} left by the killed run outlived its resume"
    again = lines(project, "calls.log")[before:]
    # A set: an orphan of a case in flight at the kill may log its start after `before` was
    # read (a slow machine); that case was not stored, so the resume rightly runs it again.
    assert set(again) == {"slow", *FAST} - kept and "slow" in again
    assert not kept & set(again)  # no stored case is called again
    assert not (project.root / ".coalmine" / "agents" / f"{run_id}.live").exists()
