"""Limits shared by every call to one agent: a rate gate and the retry back-off.

``RateGate`` spaces call starts so an agent never sees more than ``requests_per_minute``, and
after a 429 pauses every caller of that agent for the server's ``Retry-After`` (or the
back-off), so a large run eases off instead of hammering a throttled endpoint.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable

import anyio


class RateGate:
    """Start times for one agent's calls."""

    def __init__(
        self,
        per_minute: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ):
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self.clock = clock
        self.sleep = sleep
        self.next_start = 0.0
        self.paused_until = 0.0

    async def wait(self) -> None:
        """Wait for this call's turn (the slot is reserved before sleeping, so callers queue)."""
        now = self.clock()
        start = max(now, self.next_start, self.paused_until)
        self.next_start = start + self.interval
        if start > now:
            await self.sleep(start - now)

    def pause(self, seconds: float) -> None:
        """Hold every later call for ``seconds`` (a 429 arrived)."""
        self.paused_until = max(self.paused_until, self.clock() + seconds)


def backoff_delay(
    attempt: int,
    *,
    base: float,
    cap: float,
    retry_after: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before attempt ``attempt + 1``.

    The server's ``Retry-After`` wins (up to ``cap``); otherwise exponential back-off with full
    jitter: uniform in ``[0, min(cap, base · 2^(attempt-1))]``.
    """
    if retry_after is not None:
        return min(cap, retry_after)
    ceiling = min(cap, base * 2 ** (attempt - 1))
    return (rng or random).uniform(0.0, ceiling)
