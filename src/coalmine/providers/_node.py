"""One long-lived Node.js process that answers JSON-line requests, several in flight at once.

The ``javascript`` provider runs each agent's module in one such process, kept across calls (a
module loads once, as promptfoo loads it once per run). A request is a JSON line on its stdin
with an ``id``; the answer is a JSON line on its stdout with the same ``id``, in any order.
No task reads in the background: whoever waits for an answer reads the next line, under a
lock, and leaves the answers of others for them.

The process leads its own session and is registered with :mod:`coalmine.providers.agent_groups`,
so it and whatever it started die with coalmine, however coalmine dies. When a call is
abandoned (its timeout, a cancellation) the process is told to abort it, then asked to answer a
ping: a process that cannot answer within :data:`PING_GRACE` seconds has its event loop stuck
(a ``while (true) {}``), and is killed; the next call starts another. What the code prints goes
to a temporary file, whose end is quoted when the process dies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Any, NoReturn

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from coalmine.providers.agent_groups import agent_groups

__all__ = ["NodeGone", "NodeProcess", "PING_GRACE"]

PING_GRACE = 5.0
"""Seconds a process may take to answer a ping after a call was abandoned."""
MAX_LINE = 1 << 30
"""The longest answer read (an agent's output can be large)."""
STDERR_TAIL = 2000


class NodeGone(Exception):
    """The process ended (or was killed) before it answered; the message says how."""


class NodeProcess:
    """A running ``node SCRIPT`` process and the answers it has given that nobody took yet."""

    def __init__(self, process: Process, stderr: IO[bytes]):
        assert process.stdout is not None
        self.process = process
        self._stderr = stderr
        self._replies = BufferedByteReceiveStream(process.stdout)
        self._answers: dict[int, dict[str, Any]] = {}
        self._waiting: set[int] = set()
        self._read = anyio.Lock()
        self._write = anyio.Lock()
        self._gone: str | None = None
        self._stopped = False
        self._next_id = 0

    @classmethod
    async def start(cls, node: str, script: Path, *, cwd: Path) -> NodeProcess:
        """Start ``node script`` in ``cwd`` with coalmine's environment.

        Raises:
            OSError: ``node`` cannot be started (it is not installed, not executable …).
        """
        stderr = tempfile.TemporaryFile()  # open for the process's life, closed by stop()
        try:
            process = await anyio.open_process(
                [node, str(script)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                start_new_session=True,  # Ctrl-C is coalmine's; the group dies with it
            )
        except OSError:
            stderr.close()
            raise
        agent_groups().started(process.pid)
        return cls(process, stderr)

    @property
    def alive(self) -> bool:
        """Whether the process still runs and answers."""
        return self._gone is None and self.process.returncode is None

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send ``message`` (an ``id`` is added) and wait for its answer.

        If the wait is cancelled, the process is told to abort the request and must then
        answer a ping within :data:`PING_GRACE` seconds, or it is killed.

        Raises:
            NodeGone: the process ended before it answered.
        """
        request_id = self._new_id()
        try:
            return await self._exchange(request_id, message)
        except BaseException:
            if self.alive:
                with anyio.CancelScope(shield=True):
                    await self._check_after_abandoning(request_id)
            raise

    async def stop(self) -> None:
        """Kill the process group and reap the process (idempotent)."""
        if self._gone is None:
            self._gone = "it was stopped"
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        await self.process.wait()
        if not self._stopped:
            self._stopped = True
            agent_groups().ended(self.process.pid)
            await self.process.aclose()
            self._stderr.close()

    def stderr_tail(self) -> str:
        """The end of what the process wrote on stderr."""
        if self._stderr.closed:
            return ""
        self._stderr.flush()
        size = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, size - STDERR_TAIL))
        return self._stderr.read().decode("utf-8", errors="replace").strip()

    async def _send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=True, allow_nan=False).encode() + b"\n"
        assert self.process.stdin is not None
        async with self._write:
            try:
                await self.process.stdin.send(line)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self._fail()

    async def _answer(self, request_id: int) -> dict[str, Any]:
        while request_id not in self._answers:
            async with self._read:
                if request_id in self._answers:
                    break
                if self._gone is not None:
                    raise NodeGone(self._gone)
                try:
                    raw = await self._replies.receive_until(b"\n", MAX_LINE)
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                    await self._fail()
                except anyio.DelimiterNotFound:
                    await self._fail(f"it wrote an answer longer than {MAX_LINE} bytes")
                try:
                    answer = json.loads(raw)
                except ValueError:
                    await self._fail(f"it wrote a line that is not JSON: {raw[:200]!r}")
                key = answer.get("id") if isinstance(answer, dict) else None
                if key in self._waiting:  # an abandoned request's answer is dropped
                    self._answers[key] = answer
        return self._answers.pop(request_id)

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def _exchange(self, request_id: int, message: dict[str, Any]) -> dict[str, Any]:
        self._waiting.add(request_id)
        try:
            await self._send({**message, "id": request_id})
            return await self._answer(request_id)
        finally:
            self._waiting.discard(request_id)
            self._answers.pop(request_id, None)

    async def _check_after_abandoning(self, request_id: int) -> None:
        with anyio.move_on_after(PING_GRACE) as scope:
            try:
                await self._send({"op": "abort", "target": request_id})
                await self._exchange(self._new_id(), {"op": "ping"})
            except NodeGone:
                return
        if scope.cancelled_caught:
            await self.stop()  # its event loop is stuck: no later call could be answered

    async def _fail(self, why: str | None = None) -> NoReturn:
        """Record that the process is gone (killing what is left of it) and raise ``NodeGone``."""
        if self._gone is None:
            code = await _exit_code(self.process)
            tail = self.stderr_tail()
            said = f"; it printed: {tail}" if tail else ", printing nothing"
            self._gone = (why or f"it exited with code {code}") + said
            await self.stop()
        raise NodeGone(self._gone)


async def _exit_code(process: Process) -> int | None:
    """The exit code, once the process has ended (a moment's wait: its pipes closed first)."""
    with anyio.move_on_after(1):
        return await process.wait()
    return None
