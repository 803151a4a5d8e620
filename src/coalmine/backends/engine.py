"""What every shard runs: an engine opened from a factory, serving batches.

A factory is named ``module:function`` so that a worker process or a Ray actor can import it:
``function(spec, index, count)`` is an async context manager that yields a handler, an
``async (item) -> result``. ``index`` of ``count`` says which shard this is, so the factory can
give it its share of each limit. The spec is plain data (it crosses processes and machines): it
must hold no secret, which a worker reads from its own environment.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from coalmine.backends.dispatch import run_items

Handler = Callable[[Any], Awaitable[Any]]
Factory = Callable[[Any, int, int], AbstractAsyncContextManager[Handler]]


@dataclass(frozen=True)
class EngineSpec:
    """What a shard needs to open its engine (no secrets: it may cross machines)."""

    factory: str
    """``module:function`` of the engine factory."""
    spec: Any
    index: int
    count: int
    capacity: int


def load_factory(path: str) -> Factory:
    """The factory ``module:function`` names."""
    module, _, name = path.partition(":")
    found: Factory = getattr(importlib.import_module(module), name)
    return found


class Engine:
    """An open engine: runs batches, ``capacity`` items at a time."""

    def __init__(self, handler: Handler, capacity: int):
        self.handler = handler
        self.capacity = capacity
        self.limiter = asyncio.Semaphore(capacity)  # (cheaper than anyio's: see Caller.limiter)

    async def run(self, batch: list[Any]) -> list[Any]:
        """The results of ``batch``, in order."""
        return await run_items(self.handler, self.limiter, batch)


@asynccontextmanager
async def open_engine(engine: EngineSpec) -> AsyncIterator[Engine]:
    """Open the engine ``engine`` names; close it (its agents, its clients) on leaving."""
    factory = load_factory(engine.factory)
    async with factory(engine.spec, engine.index, engine.count) as handler:
        yield Engine(handler, engine.capacity)


class LocalShard:
    """A shard in this process (the driver's own engine), open while :func:`open_engine` is."""

    def __init__(self, name: str, engine: Engine):
        self.name = name
        self.capacity = engine.capacity
        self._engine = engine

    async def started(self) -> None:
        """Ready at once (its engine opened before it was made)."""

    async def run(self, batch: list[Any]) -> list[Any]:
        """Run ``batch`` here."""
        return await self._engine.run(batch)

    async def aclose(self) -> None:
        """Nothing to do: the engine closes with its context."""
