"""The agents' watchdog: when coalmine dies, however it dies, the command agents it ran die too.

Command agents lead their own sessions (so Ctrl-C reaches coalmine, not them), which is also why
nothing ends them when coalmine is killed outright. coalmine starts this small process once, at
its first command-agent call (``python -m coalmine.providers._watchdog``), and writes a line to
its stdin for each agent: ``+PGID START`` when the agent's process group starts, ``-PGID`` when it
has ended. When stdin reaches its end, because coalmine exited or was killed, the watchdog kills
every group still registered and exits. It runs in its own session, so Ctrl-C at the terminal or
a kill of coalmine's process group does not reach it; SIGTERM ends the groups as EOF does.

``START`` is the leader's start time (``/proc/PID/stat``, clock ticks since boot): a group is
killed only while its leader is that same process, or, once the leader is gone, while members
started after it remain, so a pid the system has given to another process is never killed.
Stdlib only, and nothing else imported: it starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["apply_line", "end_group", "process_start"]

_PROC = Path("/proc")


def _stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first); None if gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text(errors="replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()  # the name may hold spaces and parentheses


def process_start(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot); None when it is gone or cannot be known."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _members_started(pgid: int) -> Iterator[int]:
    """The start times of the live processes of group ``pgid``."""
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return
    for entry in entries:
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields and len(fields) >= 20 and fields[0] not in ("Z", "X"):
                if fields[2] == str(pgid):
                    yield int(fields[19])


def end_group(pgid: int, start: int | None) -> bool:
    """SIGKILL process group ``pgid`` if it is still the one that started at ``start``.

    Without ``start`` (no ``/proc`` to read it from) the group is killed as it is: the caller
    knows it was alive a moment ago. Returns whether a signal was sent.
    """
    if start is not None:
        leader = process_start(pgid)
        if leader is not None and leader != start:
            return False  # the pid leads another process now
        if leader is None and not any(s >= start for s in _members_started(pgid)):
            return False  # nothing of that group is left
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def apply_line(line: bytes, groups: dict[int, int | None]) -> None:
    """Apply one ``+PGID START`` or ``-PGID`` line to the registered groups."""
    parts = line.split()
    if not parts or parts[0][:1] not in (b"+", b"-"):
        return
    try:
        pgid = int(parts[0][1:])
        start = int(parts[1]) if len(parts) > 1 else None
    except ValueError:
        return  # not a line coalmine writes
    if parts[0][:1] == b"+":
        groups[pgid] = start
    else:
        groups.pop(pgid, None)


def main() -> None:
    """Watch stdin until it ends, then end every group still registered."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is coalmine's to handle
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, stop)
    groups: dict[int, int | None] = {}
    try:
        for line in sys.stdin.buffer:
            apply_line(line, groups)
    finally:
        for pgid, start in groups.items():
            end_group(pgid, start)


if __name__ == "__main__":
    main()
