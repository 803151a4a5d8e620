"""Run work items with bounded concurrency, stoppable from outside.

``stop`` is an event the caller sets (the CLI sets it on Ctrl-C): work in flight is cancelled,
which makes providers kill their processes, and what finished stays finished.
:func:`periodically` runs an action on a timer beside the work (a batched writer's flush).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sized
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")


async def run_bounded(
    items: Iterable[T],
    worker: Callable[[int, T], Awaitable[None]],
    *,
    jobs: int,
    stop: anyio.Event | None = None,
) -> bool:
    """Run ``worker(index, item)`` for each item, ``jobs`` at a time, in order of start.

    ``jobs`` workers take items from one queue (rather than a task per item), so a run of
    10,000 cases costs 10,000 awaits, not 10,000 tasks and lock hand-offs. ``items`` may be a
    generator: it is drawn as workers free up, so a suite of any size takes constant memory.

    Returns:
        True when ``stop`` was set before every item finished.
    """
    interrupted = False
    finished = anyio.Event()
    queue = iter(enumerate(items))  # shared by the workers: each takes the next item

    async def pull() -> None:
        for index, item in queue:
            await worker(index, item)
            # A worker that never suspends (cached answers, sync graders) would hold the loop
            # until the queue is empty, and a stop would go unseen; yield once an item.
            await anyio.lowlevel.checkpoint()

    async def watch(scope: anyio.CancelScope) -> None:
        nonlocal interrupted
        assert stop is not None
        async with anyio.create_task_group() as race:
            # whichever comes first; the cancel is issued from a small task on purpose
            # (anyio formats the cancelling task into its message)
            async def on(event: anyio.Event) -> None:
                await event.wait()
                race.cancel_scope.cancel()

            race.start_soon(on, stop)
            race.start_soon(on, finished)
        if stop.is_set() and not finished.is_set():
            interrupted = True
            scope.cancel()

    async with anyio.create_task_group() as outer:
        async with anyio.create_task_group() as inner:
            if stop is not None:
                outer.start_soon(watch, inner.cancel_scope)
            workers = max(1, jobs)
            if isinstance(items, Sized):
                workers = min(workers, len(items))
            for _ in range(workers):
                inner.start_soon(pull)
        finished.set()
    return interrupted


@asynccontextmanager
async def periodically(action: Callable[[], None], *, every: float) -> AsyncIterator[None]:
    """Call ``action`` every ``every`` seconds while the block runs, and once more at its end.

    The last call is made however the block ends (finished, failed or cancelled). A batched
    writer flushes this way: what finished reaches the store within ``every`` seconds even when
    nothing else finishes after it (a process killed outright loses no more than that).
    """

    async def tick() -> None:
        while True:
            await anyio.sleep(every)
            action()

    try:
        async with anyio.create_task_group() as ticking:
            ticking.start_soon(tick)
            try:
                yield
            finally:
                ticking.cancel_scope.cancel()
    finally:
        action()  # synchronous: it runs even in a cancelled scope
