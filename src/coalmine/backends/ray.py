"""Shards as actors on a Ray cluster (``--backend ray``; ``pip install 'coalmine[ray]'``).

Each shard is an async actor holding one engine; the driver awaits its batches as it awaits a
worker process's. The project reaches every node as the actors' working directory (Ray's
``runtime_env`` ``working_dir``, without the store, version control, virtual environments and
``.env`` files), so command and python agents find their files there. Nothing secret is in an
actor's arguments or the object store: the engine spec is paths and names, and an actor reads
the variables its config names from its node's environment (a node started with them has them;
``ray start`` passes its own environment on). An actor that dies, or whose node goes away, is a
lost shard: its batches run on the other actors.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from coalmine.backends.dispatch import ShardLost
from coalmine.backends.engine import Engine, EngineSpec, open_engine
from coalmine.errors import UsageError, WorkerError

INSTALL = "pip install 'coalmine[ray]'"
START_TIMEOUT = 120.0
"""Seconds the actors have to be placed and open their engines (a busy cluster may hold a CPU
back; a run should say so rather than wait for ever)."""
EXCLUDES = [
    ".coalmine/",
    ".git/",
    ".venv/",
    "venv/",
    "node_modules/",
    "__pycache__/",
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
]
"""What the working directory shipped to the nodes leaves out: the store (the driver alone
writes it), version control, environments, and the files that usually hold secrets."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError(f"--backend ray needs Ray: {INSTALL}") from None
    return ray


class EngineActor:
    """One shard's engine inside a Ray actor (an async actor: batches run side by side)."""

    def __init__(self, engine: EngineSpec):
        self._spec = engine
        self._stack = AsyncExitStack()
        self._engine: Engine | None = None

    async def open(self) -> int:
        """Open the engine (the config is loaded here, from this node's copy and environment)."""
        self._engine = await self._stack.enter_async_context(open_engine(self._spec))
        import os

        return os.getpid()

    async def run(self, batch: list[Any]) -> list[Any]:
        """Run a batch."""
        assert self._engine is not None
        return await self._engine.run(batch)

    async def close(self) -> None:
        """Close the engine (its agents and clients)."""
        await self._stack.aclose()


class RayShard:
    """A shard that is a Ray actor."""

    def __init__(self, actor: Any, name: str, capacity: int, lost: tuple[type[BaseException], ...]):
        self.actor = actor
        self.name = name
        self.capacity = capacity
        self._lost = lost

    async def started(self) -> None:
        """Ready at once (its engine opened before it was made)."""

    async def run(self, batch: list[Any]) -> list[Any]:
        """Run ``batch`` on the actor."""
        try:
            result: list[Any] = await self.actor.run.remote(batch)
        except self._lost as exc:
            raise ShardLost(_first_line(exc)) from None
        return result

    async def aclose(self) -> None:
        """Close the actor's engine, then the actor."""
        ray = _ray()
        try:
            await self.actor.close.remote()
        except self._lost:
            pass
        ray.kill(self.actor)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def connect(address: str | None, project: Path) -> Any:
    """Join (or, with no address and no cluster, start) a Ray cluster with the project shipped."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init(
            address=address,
            runtime_env={"working_dir": str(project), "excludes": EXCLUDES},
            namespace="coalmine",
            log_to_driver=False,
            logging_level=logging.WARNING,
            include_dashboard=False if address is None else None,
        )
    return ray


@asynccontextmanager
async def open_ray_shards(
    engines: Sequence[EngineSpec], *, address: str | None, project: Path
) -> AsyncIterator[list[RayShard]]:
    """One actor a shard, spread over the cluster's nodes, each with its engine open.

    Raises:
        UsageError: Ray is not installed.
        CoalmineError: an engine could not open on its node (a missing variable, a bad config).
    """
    ray = connect(address, project)
    lost = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
    remote = ray.remote(EngineActor).options(
        num_cpus=1, scheduling_strategy="SPREAD", max_restarts=0, max_concurrency=1000
    )
    shards = [
        RayShard(remote.remote(engine), f"actor {engine.index + 1}", engine.capacity, lost)
        for engine in engines
    ]
    try:
        await _opened(ray, shards)
        yield shards
    finally:
        for shard in shards:
            try:
                await shard.aclose()
            except Exception:  # noqa: BLE001, S110 - the run's result matters more
                pass


async def _opened(ray: Any, shards: Sequence[RayShard]) -> None:
    """Open every actor's engine, side by side, within :data:`START_TIMEOUT`.

    Raises:
        CoalmineError: an engine's own error (a missing variable on its node, a bad config).
        WorkerError: an actor was not placed in time (no free CPU) or died starting.
    """
    import asyncio

    opening = [asyncio.ensure_future(shard.actor.open.remote()) for shard in shards]
    done, pending = await asyncio.wait(opening, timeout=START_TIMEOUT)
    for task in pending:
        task.cancel()
    for task in opening:
        if task in done and task.exception() is not None:
            exc = task.exception()
            if isinstance(exc, ray.exceptions.RayTaskError):
                raise exc.as_instanceof_cause() from None
            raise WorkerError(f"a Ray actor could not start: {_first_line(exc)}")
    if pending:
        free = int(ray.available_resources().get("CPU", 0))
        raise WorkerError(
            f"{len(pending)} of {len(shards)} Ray actors (1 CPU each) were not placed in "
            f"{START_TIMEOUT:.0f} s; the cluster has {free} CPU(s) free: ask fewer --workers"
        )


def cluster_cpus(address: str | None, project: Path) -> int:
    """The CPUs of the cluster at ``address`` (joined as :func:`connect` joins it)."""
    ray = connect(address, project)
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def ray_workers(asked: int | None, address: str | None, project: Path) -> tuple[int, str | None]:
    """How many actors a run gets on the cluster: one per CPU, or as many as asked up to that.

    Each actor takes one CPU; more actors than the cluster's CPUs would wait for ever for a
    place, so the count is capped and the note says so.
    """
    cpus = cluster_cpus(address, project)
    if asked is None:
        return cpus, None
    if asked > cpus:
        return cpus, f"--workers {asked}: the cluster has {cpus} CPU(s), one a Ray actor: {cpus}"
    return asked, None
