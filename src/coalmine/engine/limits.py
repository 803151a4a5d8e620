"""Limits shared by every call to one agent: a rate gate and the retry back-off.

``RateGate`` spaces call starts so an agent never sees more than ``requests_per_minute``, and
after a 429 pauses every caller of that agent for the server's ``Retry-After`` (or the
back-off), so a large run eases off instead of hammering a throttled endpoint.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace

import anyio

from coalmine.config import AgentConfig, Config


class RateGate:
    """Start times for one agent's calls: requests and tokens per minute, and 429 pauses.

    Tokens are only known after a call, so the token budget looks back: a call starts when
    the tokens the agent used in the last minute are under ``tokens_per_minute``.
    """

    def __init__(
        self,
        per_minute: float | None,
        *,
        tokens_per_minute: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ):
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self.tokens_per_minute = tokens_per_minute
        self.clock = clock
        self.sleep = sleep
        self.next_start = 0.0
        self.paused_until = 0.0
        self.spent: deque[tuple[float, int]] = deque()

    async def wait(self) -> None:
        """Wait for this call's turn (the slot is reserved before sleeping, so callers queue)."""
        now = self.clock()
        start = max(now, self.next_start, self.paused_until, self._tokens_free_at(now))
        self.next_start = start + self.interval
        if start > now:
            await self.sleep(start - now)

    def used(self, tokens: int) -> None:
        """Count the tokens a finished call used against the per-minute budget."""
        if self.tokens_per_minute and tokens > 0:
            self.spent.append((self.clock(), tokens))

    def _tokens_free_at(self, now: float) -> float:
        """When the tokens of the last minute fall under the budget again."""
        if not self.tokens_per_minute:
            return now
        while self.spent and self.spent[0][0] <= now - 60.0:
            self.spent.popleft()
        total = sum(t for _, t in self.spent)
        for at, tokens in self.spent:
            if total < self.tokens_per_minute:
                break
            total -= tokens
            now = at + 60.0  # this call leaves the window then
        return now

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


def split_count(total: int, index: int, count: int) -> int:
    """Shard ``index``'s part of ``total`` over ``count`` shards (the parts sum to ``total``)."""
    return total // count + (1 if index < total % count else 0)


def shard_config(config: Config, index: int, count: int) -> Config:
    """``config`` with each agent's limits cut to shard ``index``'s part of ``count``.

    ``max_concurrency`` is split in whole calls and ``requests_per_minute`` and
    ``tokens_per_minute`` evenly, so the shards together never exceed an agent's limits (the
    driver runs no more shards than the smallest ``max_concurrency``). The judge keeps being the
    agent of its name when it is one, so its calls share that agent's part.
    """

    def cut(agent: AgentConfig) -> AgentConfig:
        p = agent.policy
        update: dict[str, float | int] = {}
        if p.max_concurrency:
            update["max_concurrency"] = max(1, split_count(p.max_concurrency, index, count))
        if p.requests_per_minute:
            update["requests_per_minute"] = p.requests_per_minute / count
        if p.tokens_per_minute:
            update["tokens_per_minute"] = p.tokens_per_minute / count
        return replace(agent, policy=p.model_copy(update=update)) if update else agent

    agents = {name: cut(agent) for name, agent in config.agents.items()}
    judge = config.judge
    if judge is not None:
        judge = agents[judge.name] if config.agents.get(judge.name) is judge else cut(judge)
    return replace(config, agents=agents, judge=judge)


def most_shards(agents: Iterable[AgentConfig | None]) -> int | None:
    """The most shards ``agents`` allow: the smallest ``max_concurrency`` (None: no limit)."""
    limits = [
        a.policy.max_concurrency for a in agents if a is not None and a.policy.max_concurrency
    ]
    return min(limits) if limits else None
