"""Run work items with bounded concurrency, stoppable from outside.

``stop`` is an event the caller sets (the CLI sets it on Ctrl-C): work in flight is cancelled,
which makes providers kill their processes, and what finished stays finished.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio

T = TypeVar("T")


async def run_bounded(
    items: Sequence[T],
    worker: Callable[[int, T], Awaitable[None]],
    *,
    jobs: int,
    stop: anyio.Event | None = None,
) -> bool:
    """Run ``worker(index, item)`` for each item, ``jobs`` at a time, in order of start.

    Returns:
        True when ``stop`` was set before every item finished.
    """
    limiter = anyio.CapacityLimiter(max(1, jobs))
    interrupted = False

    async def one(index: int, item: T) -> None:
        async with limiter:
            await worker(index, item)

    async with anyio.create_task_group() as outer:
        if stop is not None:

            async def watch() -> None:
                nonlocal interrupted
                await stop.wait()
                interrupted = True
                outer.cancel_scope.cancel()

            outer.start_soon(watch)
        async with anyio.create_task_group() as inner:
            for index, item in enumerate(items):
                inner.start_soon(one, index, item)
        outer.cancel_scope.cancel()
    return interrupted
