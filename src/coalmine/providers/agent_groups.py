"""The process groups of running command agents: ended when coalmine dies, and on resume.

A javascript agent's Node.js process is registered the same way. Each command agent leads its
own session (Ctrl-C must reach coalmine, not the agent), so when
coalmine is killed outright nothing ends its agents and the helpers they started. Two things do:

- the watchdog (:mod:`coalmine.providers._watchdog`), one small process started at the first
  command-agent call, told of each group as it starts and ends; when coalmine dies its stdin
  ends, and it kills every group still running;
- a run's record of its live agents (``.coalmine/agents/<run id>.live``, written while the run
  runs, see :func:`recording_agents`), for when the watchdog was killed too: the run's resume
  reads it first and ends what is still alive, each group checked by its leader's start time so
  a reused pid is never killed.

A parent-death signal on each agent is not set: the async process API has no hook to run in the
child before it starts the program, and the groups, not only their leaders, have to die.
Without ``/proc`` (not Linux) start times are unknown: the watchdog still ends the groups it was
told of, and a resume leaves alone what it cannot check.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from coalmine._util.files import write_file
from coalmine.errors import StoreError
from coalmine.providers._watchdog import apply_line, end_group, process_start

__all__ = ["agent_groups", "end_left_agents", "recording_agents"]

WATCHDOG = Path(__file__).with_name("_watchdog.py")
COMPACT_AFTER = 4096
"""Lines a record may grow to before it is rewritten with only the groups still running."""


class _Record:
    """One run's live agents, as ``+PGID START`` and ``-PGID`` lines appended to a file."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self.fd: int | None = fd
        self.live: dict[int, int | None] = {}
        self.lines = 0

    @classmethod
    def open(cls, path: Path) -> _Record | None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        except OSError:
            return None  # the run goes on; only its resume will not know what it left running
        return cls(path, fd)

    def add(self, pgid: int, start: int | None) -> None:
        self.live[pgid] = start
        self._append(_line("+", pgid, start))

    def remove(self, pgid: int) -> None:
        self.live.pop(pgid, None)
        self._append(_line("-", pgid, None))

    def _append(self, line: bytes) -> None:
        if self.fd is None:
            return
        try:
            if not self.live:
                os.ftruncate(self.fd, 0)  # nothing runs: nothing to remember
                self.lines = 0
            elif self.lines >= COMPACT_AFTER:  # rewritten whole with what still runs
                os.close(self.fd)
                self.fd = None
                lines = b"".join(_line("+", p, s) for p, s in self.live.items())
                write_file(self.path, lines.decode())
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
                self.lines = len(self.live)
            else:
                os.write(self.fd, line)
                self.lines += 1
        except (OSError, StoreError):
            self.close()  # a full or read-only disk must not fail the agent's call

    def close(self) -> None:
        if self.fd is None:
            return
        os.close(self.fd)
        self.fd = None
        if not self.live:
            self.path.unlink(missing_ok=True)


_RECORD: ContextVar[_Record | None] = ContextVar("coalmine_agent_record", default=None)


def _line(sign: str, pgid: int, start: int | None) -> bytes:
    return f"{sign}{pgid}{'' if start is None else f' {start}'}\n".encode()


class AgentGroups:
    """The live agent groups of this process, told to the watchdog and the run's record."""

    def __init__(self) -> None:
        self._live: dict[int, tuple[int | None, _Record | None]] = {}
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def started(self, pgid: int) -> None:
        """Register the group an agent leads, just after it started."""
        start = process_start(pgid)
        record = _RECORD.get()
        with self._lock:
            self._live[pgid] = (start, record)
            self._tell(_line("+", pgid, start))
        if record is not None:
            record.add(pgid, start)

    def ended(self, pgid: int) -> None:
        """Forget a group once it has been killed and its leader reaped."""
        with self._lock:
            _, record = self._live.pop(pgid, (None, None))
            self._tell(_line("-", pgid, None))
        if record is not None:
            record.remove(pgid)

    def close(self) -> None:
        """Let the watchdog go (it ends what is still registered) and wait for it."""
        with self._lock:
            watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None and watchdog.stdin is not None:
            watchdog.stdin.close()
            try:
                watchdog.wait(timeout=5)
            except subprocess.TimeoutExpired:
                watchdog.kill()
                watchdog.wait()

    def _tell(self, line: bytes) -> None:
        watchdog = self._watchdog
        if watchdog is not None and watchdog.stdin is not None and watchdog.poll() is None:
            try:
                os.write(watchdog.stdin.fileno(), line)
                return
            except OSError:
                pass  # it was killed: a new one takes over every group
        self._start_watchdog()

    def _start_watchdog(self) -> None:
        if self._watchdog is None:
            atexit.register(self.close)
        else:
            self._watchdog.poll()  # it is gone (killed); reap it
        try:
            # its own session, so a signal to coalmine's process group does not reach it; -I -S:
            # stdlib only, started in milliseconds
            watchdog = subprocess.Popen(
                [sys.executable, "-I", "-S", str(WATCHDOG)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            self._watchdog = None
            return  # agents still run; only a kill -9 of coalmine would orphan them
        assert watchdog.stdin is not None
        self._watchdog = watchdog
        lines = b"".join(_line("+", p, s) for p, (s, _) in self._live.items())
        if lines:
            try:
                os.write(watchdog.stdin.fileno(), lines)
            except OSError:
                pass


_GROUPS = AgentGroups()


def agent_groups() -> AgentGroups:
    """This process's agent groups (the command provider registers each agent here)."""
    return _GROUPS


def end_left_agents(record: Path) -> int:
    """End the agents a killed process of a run left running (per its record); drop the record.

    Returns:
        How many process groups were sent SIGKILL.
    """
    try:
        data = record.read_bytes()
    except OSError:
        return 0
    live: dict[int, int | None] = {}
    for line in data.splitlines():
        apply_line(line, live)  # a line cut by the kill is skipped
    # without a start time a group cannot be told from a later process given the same id
    ended = sum(end_group(pgid, start) for pgid, start in live.items() if start is not None)
    record.unlink(missing_ok=True)
    return ended


@contextmanager
def recording_agents(record: Path) -> Iterator[None]:
    """While the block runs, record the command agents it starts in ``record``.

    What an earlier process of the same run left running (it was killed, and its watchdog
    too) is ended first. The record is removed when the block ends with nothing running.
    """
    end_left_agents(record)
    kept = _Record.open(record)
    token = _RECORD.set(kept)
    try:
        yield
    finally:
        _RECORD.reset(token)
        if kept is not None:
            kept.close()
