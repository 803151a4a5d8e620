"""The watchdog and the run's record of live agents, against real process groups.

Each "agent" here is a real process group: a shell that leads its own session and starts a
grandchild, as a command agent that starts helpers does.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coalmine.providers._watchdog import process_start
from coalmine.providers.agent_groups import WATCHDOG, end_left_agents
from tests.helpers.processes import is_gone, kill_all, wait_gone

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


class Group:
    """A session leader (``sh``) with a grandchild (``sleep``), both sleeping."""

    def __init__(self, tmp_path: Path, name: str):
        pid_file = tmp_path / f"{name}.grandchild"
        self.leader = subprocess.Popen(
            ["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"], start_new_session=True
        )
        deadline = time.monotonic() + 10
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the group never started its grandchild"
            time.sleep(0.01)
        self.grandchild = int(pid_file.read_text())
        self.pgid = self.leader.pid
        self.start = process_start(self.pgid)
        assert self.start is not None

    @property
    def pids(self) -> list[int]:
        return [self.leader.pid, self.grandchild]

    def gone(self) -> bool:
        self.leader.poll()  # reap the leader (a child of the test)
        return all(wait_gone(pid) for pid in self.pids)

    def alive(self) -> bool:
        self.leader.poll()
        return not any(is_gone(pid) for pid in self.pids)


@pytest.fixture
def groups(tmp_path: Path) -> Iterator[list[Group]]:
    made: list[Group] = []
    yield made
    for group in made:
        kill_all(group.pids)
        group.leader.wait(timeout=10)


def watchdog() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", str(WATCHDOG)], stdin=subprocess.PIPE, start_new_session=True
    )


def tell(process: subprocess.Popen[bytes], text: str) -> None:
    assert process.stdin is not None
    process.stdin.write(text.encode())
    process.stdin.flush()


def test_when_its_stdin_ends_the_watchdog_ends_the_groups_still_registered(
    tmp_path: Path, groups: list[Group]
) -> None:
    running, ended, reused = (Group(tmp_path, n) for n in ("running", "ended", "reused"))
    groups += [running, ended, reused]
    dog = watchdog()
    tell(dog, f"+{running.pgid} {running.start}\n+{ended.pgid} {ended.start}\n-{ended.pgid}\n")
    tell(dog, f"+{reused.pgid} {reused.start + 1}\n")  # its pid now leads another process
    time.sleep(0.2)
    assert running.alive()  # nothing is killed while coalmine lives
    assert dog.stdin is not None
    dog.stdin.close()  # as when coalmine dies, however it dies
    assert dog.wait(timeout=10) == 0
    assert running.gone(), "a registered group survived the watchdog"
    assert ended.alive() and reused.alive()


def test_ctrl_c_is_ignored_and_sigterm_ends_the_groups(tmp_path: Path, groups: list[Group]) -> None:
    group = Group(tmp_path, "agent")
    groups.append(group)
    dog = watchdog()
    tell(dog, f"+{group.pgid} {group.start}\n")
    time.sleep(0.2)  # it has installed its handlers
    dog.send_signal(signal.SIGINT)
    time.sleep(0.2)
    assert dog.poll() is None and group.alive()
    dog.send_signal(signal.SIGTERM)
    dog.wait(timeout=10)
    assert group.gone()
    assert dog.stdin is not None
    dog.stdin.close()


def test_a_resume_ends_what_the_record_lists_as_still_running(
    tmp_path: Path, groups: list[Group]
) -> None:
    left, finished, reused = (Group(tmp_path, n) for n in ("left", "finished", "reused"))
    groups += [left, finished, reused]
    record = tmp_path / "agents" / "RUN.live"
    record.parent.mkdir()
    record.write_text(
        f"+{left.pgid} {left.start}\n+{finished.pgid} {finished.start}\n"
        f"+{reused.pgid} {reused.start + 1}\n-{finished.pgid}\n+12"  # the kill cut the last line
    )
    assert end_left_agents(record) == 1
    assert left.gone()
    assert finished.alive() and reused.alive()
    assert not record.exists()
    assert end_left_agents(record) == 0  # no record: nothing to do
