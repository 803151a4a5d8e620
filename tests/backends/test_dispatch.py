"""``dispatch``: every item's result comes back once, over shards that may die or be stopped.

The shards here are honest fakes of a shard: each runs a coroutine per item within its
capacity (through the real :func:`run_items`, as an engine does), and one that dies fails every
batch it holds at once and every batch after, as a worker process whose pipe closed does.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from typing import Any

import anyio
import pytest

from coalmine.backends.dispatch import (
    MAX_BATCH,
    Dispatched,
    ShardLost,
    ShardsLost,
    batch_size,
    dispatch,
    run_items,
)
from coalmine.errors import CoalmineError


class FakeShard:
    """Runs each item as a coroutine (``delay`` seconds), ``capacity`` at a time.

    ``die_in_batch=N``: it dies while running its N-th batch (its items have started).
    ``dead_at_start``: it never comes up.
    """

    def __init__(
        self,
        name: str,
        capacity: int,
        *,
        delay: float = 0.002,
        die_in_batch: int | None = None,
        dead_at_start: bool = False,
    ):
        self.name = name
        self.capacity = capacity
        self.delay = delay
        self.die_in_batch = die_in_batch
        self.dead_at_start = dead_at_start
        self.why = "the worker process ended (exit -9)"
        self.limiter = anyio.CapacityLimiter(capacity)
        self.started_items: list[int] = []
        self.ran: list[int] = []
        self.batches: list[list[int]] = []
        self.failed: list[list[int]] = []
        self.in_hand = 0
        self.most_in_hand = 0
        self.closed = False
        self._dead = anyio.Event()

    async def started(self) -> None:
        if self.dead_at_start:
            raise ShardLost("it never came up")

    async def run(self, batch: list[Any]) -> list[Any]:
        if self._dead.is_set():
            self.failed.append(list(batch))
            raise ShardLost(self.why)
        self.batches.append(list(batch))
        number = len(self.batches)
        self.in_hand += 1
        self.most_in_hand = max(self.most_in_hand, self.in_hand)
        results: list[Any] | None = None
        try:
            async with anyio.create_task_group() as tg:

                async def work() -> None:
                    nonlocal results
                    results = await run_items(self._one, self.limiter, batch)
                    tg.cancel_scope.cancel()

                async def die_with_the_rest() -> None:
                    await self._dead.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(work)
                tg.start_soon(die_with_the_rest)
                if number == self.die_in_batch:
                    await anyio.sleep(self.delay / 2)  # its items have started, none finished
                    self._dead.set()
        finally:
            self.in_hand -= 1
        if results is None:
            self.failed.append(list(batch))
            raise ShardLost(self.why)
        return results

    async def _one(self, item: int) -> tuple[str, int]:
        self.started_items.append(item)
        await anyio.sleep(self.delay)
        self.ran.append(item)
        return self.name, item * 10

    async def aclose(self) -> None:
        self.closed = True


class Collected:
    """``on_result``: every (item, result) in the order they came back."""

    def __init__(self) -> None:
        self.pairs: list[tuple[int, tuple[str, int]]] = []

    async def __call__(self, item: int, result: tuple[str, int]) -> None:
        self.pairs.append((item, result))

    @property
    def items(self) -> list[int]:
        return [item for item, _ in self.pairs]

    def by(self, name: str) -> list[int]:
        return [item for item, (shard, _) in self.pairs if shard == name]


def run(
    items: list[int], shards: list[FakeShard], *, stop: anyio.Event | None = None
) -> tuple[Dispatched, Collected]:
    got = Collected()

    async def scenario() -> Dispatched:
        return await dispatch(items, shards, got, stop=stop)

    return anyio.run(scenario), got


def test_every_result_reaches_on_result_exactly_once_and_both_shards_work() -> None:
    a, b = FakeShard("A", 4), FakeShard("B", 4)
    done, got = run(list(range(200)), [a, b])
    assert done == Dispatched(interrupted=False, lost=[])
    assert sorted(got.items) == list(range(200))
    assert all(value == item * 10 for item, (_, value) in got.pairs)  # its own result
    assert a.ran and b.ran  # the work was spread
    assert sorted(a.ran + b.ran) == list(range(200))  # and nothing ran twice
    assert sorted(got.by("A")) == sorted(a.ran) and sorted(got.by("B")) == sorted(b.ran)


def test_a_fast_shard_takes_more_than_a_slow_one() -> None:
    fast, slow = FakeShard("fast", 4, delay=0.001), FakeShard("slow", 4, delay=0.02)
    _, got = run(list(range(200)), [fast, slow])
    assert sorted(got.items) == list(range(200))
    assert len(fast.ran) > 2 * len(slow.ran) > 0


def test_items_of_a_shard_lost_mid_batch_run_on_the_other_once() -> None:
    a = FakeShard("A", 4)
    b = FakeShard("B", 4, die_in_batch=3)
    done, got = run(list(range(120)), [a, b])
    assert Counter(got.items) == Counter(range(120))  # each reported exactly once
    assert done.interrupted is False
    assert done.lost == ["B: the worker process ended (exit -9)"]
    lost = [item for batch in b.failed for item in batch]
    assert lost  # B died with batches in hand (its third, and those beside it)
    assert set(lost) & set(b.started_items)  # it had started some of them
    # what B held when it died ran on A, and only A's answer counts
    assert set(lost) <= set(a.ran)
    assert not set(lost) & set(got.by("B"))
    assert set(got.by("B")) == {i for batch in b.batches for i in batch} - set(lost)


def test_every_shard_lost_with_items_left_raises_shards_lost() -> None:
    # 5 lanes of 1 a shard: each dies in its 12th batch, when 7 or so have come back
    a = FakeShard("A", 4, die_in_batch=12)
    b = FakeShard("B", 4, die_in_batch=12)
    got = Collected()

    async def scenario() -> Dispatched:
        return await dispatch(range(200), [a, b], got)

    with pytest.raises(ShardsLost) as caught:
        anyio.run(scenario)
    assert isinstance(caught.value, CoalmineError)
    message = str(caught.value)
    assert "A: the worker process ended" in message and "B: the worker process" in message
    # what came back before is kept, once each; nothing of a lost batch is among it
    assert got.items and len(got.items) == len(set(got.items)) < 200
    lost = {item for shard in (a, b) for batch in shard.failed for item in batch}
    assert not lost & set(got.items)


def test_stop_midway_starts_no_new_batch_and_finishes_the_batches_in_hand() -> None:
    a, b = FakeShard("A", 8, delay=0.005), FakeShard("B", 8, delay=0.005)
    stop = anyio.Event()
    got = Collected()
    batches_at_stop: list[int] = []

    async def on_result(item: int, result: tuple[str, int]) -> None:
        await got(item, result)
        if len(got.pairs) == 30:
            stop.set()
            batches_at_stop.append(len(a.batches) + len(b.batches))

    async def scenario() -> Dispatched:
        return await dispatch(range(500), [a, b], on_result, stop=stop)

    done = anyio.run(scenario)
    assert done.interrupted is True and done.lost == []
    assert len(a.batches) + len(b.batches) == batches_at_stop[0]  # none started after
    started = sorted(i for shard in (a, b) for batch in shard.batches for i in batch)
    assert sorted(got.items) == started  # every batch in hand finished and was reported
    assert 30 <= len(got.items) < 500


def test_a_stop_leaves_a_lost_shards_items_for_the_resume() -> None:
    # B dies with its batches in hand before any result is back; the first result stops the
    # run: B's items were given back, and after the stop no one may start them
    a = FakeShard("A", 2, delay=0.03)
    b = FakeShard("B", 2, delay=0.03, die_in_batch=2)
    stop = anyio.Event()
    got = Collected()

    async def on_result(item: int, result: tuple[str, int]) -> None:
        await got(item, result)
        stop.set()

    async def scenario() -> Dispatched:
        return await dispatch(range(50), [a, b], on_result, stop=stop)

    done = anyio.run(scenario)
    assert done.interrupted is True
    ran = [i for shard in (a, b) for batch in shard.batches for i in batch]
    lost = [i for batch in b.failed for i in batch]
    assert lost and not set(lost) & set(a.started_items)
    assert Counter(got.items) == Counter(i for i in ran if i not in lost)


def test_a_shard_that_never_starts_gets_no_items() -> None:
    a, b = FakeShard("A", 4), FakeShard("B", 4, dead_at_start=True)
    done, got = run(list(range(60)), [a, b])
    assert b.batches == [] and b.started_items == []
    assert sorted(got.items) == sorted(a.ran) == list(range(60))
    assert done == Dispatched(interrupted=False, lost=["B: it never came up"])


def test_nothing_to_run_is_done_at_once() -> None:
    a = FakeShard("A", 4)
    done, got = run([], [a])
    assert done == Dispatched(interrupted=False, lost=[])
    assert got.pairs == [] and a.batches == []


@pytest.mark.parametrize(
    ("capacity", "size"),
    [(1, 1), (3, 1), (4, 1), (7, 1), (8, 2), (16, 4), (25, 6), (100, 25), (128, 32),
     (129, 32), (10_000, 32)],
)  # fmt: skip
def test_batch_size_is_a_quarter_of_the_capacity_between_1_and_max(
    capacity: int, size: int
) -> None:
    assert MAX_BATCH == 32
    assert batch_size(capacity) == size


@pytest.mark.parametrize("capacity", [1, 8, 12])
def test_a_shard_holds_a_batch_more_than_it_can_run(capacity: int) -> None:
    # lanes = ceil(capacity / size) + 1: capacity 1 -> 2 lanes of 1; 8 -> 5 of 2; 12 -> 5 of 3
    shard = FakeShard("A", capacity, delay=0.002)
    run(list(range(60)), [shard])
    size = batch_size(capacity)
    assert {len(batch) for batch in shard.batches} == {size}  # 60 is a multiple of each size
    assert shard.most_in_hand == math.ceil(capacity / size) + 1


def test_run_items_keeps_the_order_and_holds_the_limit() -> None:
    in_flight = 0
    most = 0

    async def handler(item: int) -> str:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await anyio.sleep(0.001 * (12 - item))  # later items finish first
        in_flight -= 1
        return f"r{item}"

    async def scenario() -> list[Any]:
        return await run_items(handler, asyncio.Semaphore(3), list(range(12)))

    assert anyio.run(scenario) == [f"r{i}" for i in range(12)]
    assert most == 3
