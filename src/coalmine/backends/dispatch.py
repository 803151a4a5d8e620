"""Spread items over shards, get every result back once, and survive a shard that dies.

Each shard runs *lanes*: a lane takes a batch of items, waits for the shard to run it, and
hands each result to the driver's ``on_result``; a shard of capacity C has about C / batch + 1
lanes, so it always holds a little more than it can run and never waits for the driver. Items
are drawn from one iterator as lanes free up (a suite of any size takes constant memory), so a
fast shard takes more than a slow one.

When a shard is lost (its process or node died), the items of its unfinished batches go back
to the front of the line and the other shards run them. A result counts only once it is back
in the driver, so nothing is counted twice; an item whose answer was lost with the shard is
run again, which is the only way to have it. When every shard is lost, :class:`ShardsLost`
says so; what finished is kept, and the run can be resumed.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import anyio

from coalmine.errors import WorkerError

T = TypeVar("T")

MAX_BATCH = 32
"""Items a lane sends at once (fewer for a small shard: a batch is a quarter of its capacity)."""


class ShardLost(Exception):  # noqa: N818 - a lost shard is an event, not a bug
    """A shard died with batches in hand (its process exited, its node went away)."""


class ShardsLost(WorkerError):
    """Every shard of the run was lost before its items were done."""


class Shard(Protocol):
    """Somewhere items run: an in-process engine, a worker process, a Ray actor."""

    name: str
    capacity: int
    """Items it runs at once (its share of the run's concurrency)."""

    async def started(self) -> None:
        """Wait until it can run items.

        Raises:
            ShardLost: it died before.
        """
        ...

    async def run(self, batch: list[Any]) -> list[Any]:
        """Run ``batch``; its results, in order.

        Raises:
            ShardLost: the shard died before it answered.
        """
        ...

    async def aclose(self) -> None:
        """Stop it (the items it runs are cancelled)."""
        ...


@dataclass
class Dispatched:
    """How a dispatch ended."""

    interrupted: bool
    """``stop`` came before every item ran (the rest run on resume)."""
    lost: list[str] = field(default_factory=list)
    """Why each shard that was lost was lost (its items ran elsewhere)."""


def batch_size(capacity: int) -> int:
    """Items a lane of a shard with ``capacity`` sends at once."""
    return max(1, min(MAX_BATCH, capacity // 4))


async def dispatch(
    items: Iterable[T],
    shards: Sequence[Shard],
    on_result: Callable[[T, Any], Awaitable[None]],
    *,
    stop: anyio.Event | None = None,
) -> Dispatched:
    """Run every item on one of ``shards``; ``on_result(item, result)`` as each batch returns.

    ``stop`` stops it gracefully: no item starts after it (not even one a lost shard gave
    back), and the batches in hand finish.

    Raises:
        ShardsLost: every shard was lost with items left to run.
    """
    source = iter(items)
    returned: deque[T] = deque()  # items of a lost shard's batches, run first
    exhausted = False
    in_hand = 0
    changed = anyio.Event()
    lost: dict[int, str] = {}
    stopped = stop or anyio.Event()

    def take(n: int) -> list[T]:
        nonlocal exhausted
        if stopped.is_set():
            return []
        found: list[T] = []
        while returned and len(found) < n:
            found.append(returned.popleft())
        while not exhausted and len(found) < n:
            try:
                found.append(next(source))
            except StopIteration:
                exhausted = True
        return found

    def notify() -> None:
        nonlocal changed
        changed.set()
        changed = anyio.Event()

    async def lane(number: int, shard: Shard, size: int) -> None:
        nonlocal in_hand
        try:
            await shard.started()
        except ShardLost as exc:
            lost.setdefault(number, f"{shard.name}: {exc}")
            return
        while number not in lost:
            batch = take(size)
            if not batch:
                if stopped.is_set() or in_hand == 0:
                    return
                await changed.wait()  # a batch in hand elsewhere may yet come back
                continue
            in_hand += len(batch)
            try:
                results = await shard.run(batch)
            except ShardLost as exc:
                lost.setdefault(number, f"{shard.name}: {exc}")
                returned.extendleft(reversed(batch))
                return
            finally:
                in_hand -= len(batch)
                notify()
            for item, result in zip(batch, results, strict=True):
                await on_result(item, result)

    async with anyio.create_task_group() as tg:
        for number, shard in enumerate(shards):
            size = batch_size(shard.capacity)
            for _ in range(math.ceil(shard.capacity / size) + 1):
                tg.start_soon(lane, number, shard, size)
    left = bool(returned) or not exhausted
    if left and not stopped.is_set():
        reasons = "; ".join(lost.values()) or "no shard to run on"
        raise ShardsLost(f"every worker was lost before the run was done ({reasons})")
    return Dispatched(interrupted=left, lost=list(lost.values()))


async def run_items(
    handler: Callable[[T], Awaitable[Any]], limiter: asyncio.Semaphore, batch: list[T]
) -> list[Any]:
    """Run a batch on an engine: each item within ``limiter``; the results in order."""
    results: list[Any] = [None] * len(batch)

    async def one(position: int, item: T) -> None:
        async with limiter:
            results[position] = await handler(item)

    async with anyio.create_task_group() as tg:
        for position, item in enumerate(batch):
            tg.start_soon(one, position, item)
    return results
