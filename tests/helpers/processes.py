"""Process checks for tests that kill agents."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def is_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (it does not exist, or it is a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    try:
        text = status.read_text()
    except OSError:
        return True
    state = next((line for line in text.splitlines() if line.startswith("State:")), "")
    return "Z" in state.split(":", 1)[1] if state else False


def wait_gone(pid: int, seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if is_gone(pid):
            return True
        time.sleep(0.02)
    return is_gone(pid)


def children_running(parent: int, command_part: str) -> list[int]:
    """The live children of ``parent`` whose command line holds ``command_part``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == parent and command_part in cmdline and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def kill_all(pids: list[int]) -> None:
    """SIGKILL each of ``pids`` that still runs (a test's cleanup)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
