"""Open a run's shards on the backend it asked for.

``processes``: worker processes on this machine, the first shard being the driver's own
engine (it is there anyway, and the cases it runs cross no pipe). ``ray``: one actor a shard
on a Ray cluster (:mod:`coalmine.backends.ray`, imported only then).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio

from coalmine.backends.dispatch import Shard, dispatch
from coalmine.backends.engine import EngineSpec, LocalShard, open_engine
from coalmine.backends.processes import ProcessShard, open_process_shards

T = TypeVar("T")


@dataclass(frozen=True)
class Backend:
    """Where a run's shards run."""

    kind: Literal["processes", "ray"] = "processes"
    address: str | None = None
    """The Ray cluster (``auto``, ``ray://HOST:PORT``); None starts or finds a local one."""
    project: Path | None = None
    """With ``ray``: the folder shipped to every node as the actors' working directory."""
    spawned: list[ProcessShard] = field(default_factory=list)
    """Worker processes started early (:func:`~coalmine.backends.processes.spawn_worker`)."""


def sharded(workers: int, backend: Backend | None) -> bool:
    """Whether a run goes to shards: more than one engine, or any number on Ray.

    One Ray actor is still a shard: ``--backend ray`` means the cases run on the cluster, and
    the driver's machine may be a laptop that only plans and writes the store.
    """
    return workers > 1 or (backend is not None and backend.kind == "ray")


@asynccontextmanager
async def open_shards(
    backend: Backend, engines: Sequence[EngineSpec], *, scrub: Callable[[str], str]
) -> AsyncIterator[list[Shard]]:
    """The shards of ``engines`` on ``backend``, open; closed (workers ended) on leaving.

    Raises:
        CoalmineError: an engine could not open (the message is the shard's own).
        UsageError: the backend is ``ray`` and Ray is not installed.
    """
    async with AsyncExitStack() as stack:
        shards: list[Shard] = []
        if backend.kind == "ray":
            from coalmine.backends.ray import open_ray_shards

            assert backend.project is not None
            found = await stack.enter_async_context(
                open_ray_shards(engines, address=backend.address,
                                project=backend.project)
            )  # fmt: skip
            shards.extend(found)
        else:
            local = await stack.enter_async_context(open_engine(engines[0]))
            shards.append(LocalShard("the driver", local))
            if len(engines) > 1:
                workers = await stack.enter_async_context(
                    open_process_shards(engines[1:], scrub=scrub, spawned=backend.spawned)
                )
                shards.extend(workers)
        yield shards


async def run_sharded(
    backend: Backend,
    engines: Sequence[EngineSpec],
    items: Iterable[T],
    on_result: Callable[[T, Any], Awaitable[None]],
    *,
    stop: anyio.Event,
    cancel: anyio.Event | None,
    scrub: Callable[[str], str],
    lost: list[str] | None = None,
) -> bool:
    """Open the shards, run every item on them, close them; True when stopped before the end.

    ``cancel`` stops at once: the shards are closed with their work (it runs again on resume).
    Why each lost shard was lost is appended to ``lost``.

    Raises:
        ShardsLost: every shard was lost with items left.
    """
    cancelled = False
    done = None
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            nonlocal cancelled
            assert cancel is not None
            await cancel.wait()
            cancelled = True
            tg.cancel_scope.cancel()

        if cancel is not None:
            tg.start_soon(watch)
        async with open_shards(backend, engines, scrub=scrub) as shards:
            done = await dispatch(items, shards, on_result, stop=stop)
        if lost is not None:
            lost.extend(done.lost)
        tg.cancel_scope.cancel()
    return cancelled or done is None or done.interrupted
