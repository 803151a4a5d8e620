"""Shards in worker processes on this machine (``--workers N``).

A worker is started as soon as the command knows it will want one (:func:`spawn_worker`,
before the run is planned and before any thread or event loop exists); it gets its engine spec
when the plan is ready, and the dispatch gives it cases once its engine is open. On Linux it is
forked: it has every module the driver imported already, so it is ready in milliseconds rather
than the third of a second a fresh interpreter spends importing. Elsewhere (macOS forbids fork
without exec to many system libraries) it is ``python -m coalmine.backends.worker FACTORY``.
Either way it has the driver's environment and working directory, and frames go over two
pipes of its own (:mod:`coalmine.backends.frames`).
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import IO, Any

import anyio

from coalmine.backends.dispatch import ShardLost
from coalmine.backends.engine import EngineSpec, load_factory
from coalmine.backends.frames import FramePipe
from coalmine.errors import CoalmineError, WorkerError

STDERR_LINES = 20
"""Lines of a worker's stderr kept, to say why it died."""
CLOSE_GRACE = 5.0
"""Seconds a worker has to end its agents after SIGTERM before it is killed."""


class _Reply:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class _Forked:
    """A forked worker, with what the shard uses of :class:`subprocess.Popen`."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes]):
        self.pid = pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: int | None = None

    def fds(self) -> list[int]:
        return [self.stdin.fileno(), self.stdout.fileno(), self.stderr.fileno()]

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def terminate(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGTERM)

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)


class ProcessShard:
    """A worker process that runs batches once its engine is open."""

    def __init__(self, process: subprocess.Popen[bytes] | _Forked, name: str):
        self.name = name
        self.capacity = 0
        self.process = process
        self.scrub: Callable[[str], str] = lambda text: text
        self._pipe: FramePipe | None = None
        self._ready: anyio.Event | None = None  # made in the run's loop (spawned before it)
        self._failed: BaseException | None = None
        self._replies: dict[int, _Reply] = {}
        self._next = 0
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._dead: str | None = None
        self._gone: anyio.Event | None = None  # set when ``_dead`` says why; made in serve
        threading.Thread(target=self._keep_stderr, daemon=True).start()

    def _keep_stderr(self) -> None:
        assert self.process.stderr is not None
        with self.process.stderr as stream:  # closed at the worker's end: no fd left behind
            for line in stream:
                self._stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    async def serve(self, engine: EngineSpec) -> None:
        """Open the worker's engine, then hand each answer to its batch until the worker ends."""
        ready = self._ready = self._ready or anyio.Event()
        gone = self._gone = anyio.Event()
        assert self.process.stdin is not None and self.process.stdout is not None
        self._pipe = pipe = await FramePipe.open(self.process.stdout, self.process.stdin)
        try:
            pipe.send(("init", engine))
        except ConnectionError:
            pass
        answer = await pipe.receive()
        if answer is not None and answer[0] == "failed":
            self._failed = _theirs(answer[1], f"{self.name} could not start", self.scrub)
            ready.set()
            return
        if answer is not None:
            ready.set()
            while (message := await pipe.receive()) is not None:
                if message[0] == "failed":  # the worker's loop failed: it answers no more
                    self._dead = self.scrub(f"the worker failed: {message[1]}")
                    break
                reply = self._replies.pop(message[1])
                if message[0] == "result":
                    reply.value = message[2]
                else:
                    reply.error = _theirs(message[2], self.name, self.scrub)
                reply.done.set()
        self._dead = self._dead or await self._why_dead()
        ready.set()
        gone.set()
        for reply in self._replies.values():
            reply.error = ShardLost(self._dead)
            reply.done.set()
        self._replies.clear()

    async def started(self) -> None:
        """Wait until the engine is open.

        Raises:
            CoalmineError: it could not open (the worker's own error: a bad config …).
            ShardLost: the worker died first.
        """
        self._ready = self._ready or anyio.Event()
        await self._ready.wait()
        if self._failed is not None:
            raise self._failed
        if self._dead is not None:
            raise ShardLost(self._dead)

    async def _why_dead(self) -> str:
        with anyio.move_on_after(2):
            while self.process.poll() is None:
                await anyio.sleep(0.01)
        tail = self.scrub("\n".join(self._stderr).strip())[-1000:]
        said = f": {tail}" if tail else ""
        return f"the worker process ended (exit {self.process.returncode}){said}"

    async def run(self, batch: list[Any]) -> list[Any]:
        """Run ``batch`` in the worker."""
        await self.started()
        assert self._pipe is not None
        number = self._next
        self._next += 1
        reply = self._replies[number] = _Reply()
        try:
            self._pipe.send(("batch", number, batch))
        except ConnectionError:
            self._replies.pop(number, None)
            # the pipe broke before serve() learnt why: wait for its reason (exit code, stderr)
            if self._gone is not None:
                with anyio.move_on_after(5):
                    await self._gone.wait()
            raise ShardLost(self._dead or "the worker process closed its input") from None
        await reply.done.wait()
        if reply.error is not None:
            raise reply.error
        result: list[Any] = reply.value
        return result

    async def aclose(self) -> None:
        """End the worker: SIGTERM (it cancels its work and ends its agents), then SIGKILL."""
        if self._pipe is not None:
            self._pipe.close()
        if self.process.poll() is None:
            self.process.terminate()
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(CLOSE_GRACE):
                    while self.process.poll() is None:
                        await anyio.sleep(0.01)
                if self.process.poll() is None:
                    self.process.kill()
                    self.process.wait()


def _theirs(error: BaseException, where: str, scrub: Callable[[str], str]) -> BaseException:
    """The worker's error as the driver raises it, its message scrubbed of secrets.

    A ``CoalmineError`` keeps its class (so its exit code and its way of being told) with its
    message scrubbed; any other is a :class:`WorkerError` that names the worker.
    """
    if isinstance(error, CoalmineError):
        said = scrub(str(error))
        if said != str(error):
            error.args = (said, *error.args[1:])
        return error
    return WorkerError(f"{where}: {scrub(str(error))}")


def spawn_workers(factory: str, names: Sequence[str]) -> list[ProcessShard]:
    """Start worker processes that have ``factory`` imported and wait for their spec.

    Call it before any thread or event loop starts: on Linux the workers are forked (all of
    them before the first shard starts its thread).
    """
    if sys.platform != "linux":
        return [ProcessShard(_spawn(factory), name) for name in names]
    load_factory(factory)
    # What exists now (modules, the config, the plan) lives as long as the run: frozen, the
    # collector never walks it, so neither process touches those pages to count references and
    # a worker copies fewer of the driver's pages (at 5,000 cases a worker made 6,500 fewer
    # page faults: 38,400 → 31,900, from getrusage's ru_minflt)
    gc.freeze()
    forked: list[_Forked] = []
    for _ in names:
        forked.append(_fork([fd for f in forked for fd in f.fds()]))
    return [ProcessShard(process, name) for process, name in zip(forked, names, strict=True)]


def _spawn(factory: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "coalmine.backends.worker", factory],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )


def _fork(others: list[int]) -> _Forked:
    """Fork a worker; ``others``: the driver's ends of earlier workers' pipes, closed in it."""
    to_worker, from_driver = os.pipe()[::-1]
    from_worker, to_driver = os.pipe()
    errors, to_errors = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the worker
        code = 1
        try:
            for fd in (to_worker, from_worker, errors, *others):
                os.close(fd)  # so a worker sees the end of its input when the driver goes
            os.dup2(to_errors, 2)
            os.close(to_errors)
            from coalmine.backends.worker import serve

            serve(from_driver, to_driver)
            code = 0
        finally:
            os._exit(code)  # never the driver's atexit handlers or buffers
    for fd in (from_driver, to_driver, to_errors):
        os.close(fd)
    return _Forked(
        pid, os.fdopen(to_worker, "wb", 0), os.fdopen(from_worker, "rb", 0), os.fdopen(errors, "rb")
    )


@asynccontextmanager
async def open_process_shards(
    engines: Sequence[EngineSpec],
    *,
    scrub: Callable[[str], str],
    spawned: Sequence[ProcessShard] = (),
) -> AsyncIterator[list[ProcessShard]]:
    """Worker processes, one per spec, opening their engines; ended on leaving.

    The shards are given at once: each runs cases once it says it is ready
    (:meth:`ProcessShard.started`). ``spawned`` are workers started earlier; more are started
    if needed (as fresh interpreters: a loop runs now, so no fork), and those not needed are
    ended.
    """

    def _spawn_all(factory: str, names: list[str]) -> list[ProcessShard]:
        return [ProcessShard(_spawn(factory), name) for name in names]

    async with AsyncExitStack() as stack:
        shards = list(spawned[: len(engines)])
        for extra in spawned[len(engines) :]:
            await extra.aclose()
        if len(shards) < len(engines):
            names = [f"worker {n + 2}" for n in range(len(shards), len(engines))]
            shards.extend(await anyio.to_thread.run_sync(_spawn_all, engines[0].factory, names))
        for shard, engine in zip(shards, engines, strict=True):
            shard.scrub = scrub
            shard.capacity = engine.capacity
            stack.push_async_callback(shard.aclose)
        tg = await stack.enter_async_context(anyio.create_task_group())
        for shard, engine in zip(shards, engines, strict=True):
            tg.start_soon(shard.serve, engine)
        try:
            yield shards
        finally:
            tg.cancel_scope.cancel()
