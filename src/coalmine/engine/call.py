"""Call an agent as every run does: its limits, retries and timeout, the cache, the cassettes.

:class:`Caller` is one agent's door; its answer comes back as a :class:`CallOutcome`, with how
it was obtained (cache hit or miss) and the attempts that failed before it. Nothing that leaves
it holds a secret of the run: a failure's message and stderr are scrubbed, the cache and the
cassette get the answer scrubbed, and the identity they key on holds a digest of each secret.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from coalmine._util.hashing import canonical_json, hash_text
from coalmine._util.secrets import conceal, forget_digests, redact, redact_model
from coalmine.config import AgentConfig
from coalmine.engine.limits import RateGate, backoff_delay
from coalmine.errors import AgentTimeout, ProviderError
from coalmine.providers.base import AgentRequest, Provider
from coalmine.providers.replay import Cassette
from coalmine.results import (
    AgentOutput,
)
from coalmine.store.cache import CacheKey, ResponseCache


@dataclass(frozen=True)
class CallOutcome:
    """An answer, how it was obtained, and what failed on the way."""

    output: AgentOutput
    cache: str | None = None
    """``hit``, ``miss: why``, or ``None`` with the cache off."""
    attempts: int = 1
    failures: tuple[str, ...] = ()
    """``kind: message`` of each failed attempt before the one that answered."""


@dataclass
class Caller:
    """Calls one agent: cache, rate gate, concurrency limit, timeout and retries.

    One caller serves every case of its agent (and the judge, when the judge is that agent),
    so the limits hold across the whole run.
    """

    provider: Provider
    agent: AgentConfig
    cache: ResponseCache | None = None
    secrets: tuple[str, ...] = ()
    """Never let out: an answer that quotes one is cached scrubbed, a failure is scrubbed."""
    retries: int = 0
    gate: RateGate = field(default_factory=lambda: RateGate(None))
    limiter: asyncio.Semaphore | None = None
    """The agent's ``max_concurrency``: asyncio's semaphore, a counter and a queue of waiters
    (anyio's capacity limiter looked up the current task twice and checkpointed on every
    acquire and release: 6% of a run's CPU; every run is on asyncio, anyio.run's default)."""
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    recorder: Cassette | None = None
    """With ``--record``: every answer the agent really gave is written here."""

    @classmethod
    def for_agent(
        cls,
        provider: Provider,
        agent: AgentConfig,
        *,
        cache: ResponseCache | None,
        secrets: tuple[str, ...],
        retries: int,
        recorder: Cassette | None = None,
    ) -> Caller:
        """A caller with the agent's own limits (``max_concurrency``, ``requests_per_minute``)."""
        policy = agent.policy
        limiter = asyncio.Semaphore(policy.max_concurrency) if policy.max_concurrency else None
        gate = RateGate(policy.requests_per_minute, tokens_per_minute=policy.tokens_per_minute)
        return cls(provider, agent, cache, secrets, retries, gate, limiter, recorder=recorder)

    async def call(self, request: AgentRequest, timeout: float, *, repeat: int = 0) -> CallOutcome:
        """Answer from the cache, or call the agent, retrying what a retry may fix.

        ``timeout`` bounds the whole call: every attempt and the back-off between them (an
        attempt cut by it is a timeout; a retry whose wait would outlast it is not started).
        ``repeat`` numbers the runs of one prompt (an eval's ``--repeats``): each has its own
        cache entry, so a cached run of five repeats answers with five answers, not one.
        """
        key = self._key(request, repeat)
        miss = "the provider is not cacheable"
        if key is not None and self.cache is not None:
            found = self.cache.get(key)
            if found.output is not None:
                return CallOutcome(found.output, "hit")
            miss = found.reason
        failures: list[str] = []
        attempt = 0
        deadline = _Deadline(timeout)
        while True:
            attempt += 1
            try:
                output = await self._attempt(request, deadline, attempt)
                break
            except ProviderError as exc:
                self._scrub(exc)
                exc.attempt = attempt
                exc.failures = tuple(failures)
                if not exc.retryable or attempt > self.retries:
                    raise
                policy = self.agent.policy
                delay = backoff_delay(
                    attempt,
                    base=policy.backoff_seconds,
                    cap=policy.max_backoff_seconds,
                    retry_after=exc.retry_after,
                )
                if exc.kind == "rate_limited":
                    self.gate.pause(delay)  # every caller of this agent eases off
                if delay >= deadline.remaining():
                    raise  # no time is left for another attempt within the case's timeout
                failures.append(f"{exc.kind}: {exc.reason}")
                await self.sleep(delay)
        status = None
        scrubbed = redact_model(output, list(self.secrets))  # text and tool-call arguments
        if self.cache is not None:
            if key is not None:
                self.cache.put(key, scrubbed)
            status = f"miss: {miss}"
        if self.recorder is not None:
            identity = self.identity()
            # keyed on the scrubbed prompt: a judge prompt quoting a scrubbed answer is what a
            # replay will send, since it replays the scrubbed answer
            prompt = redact(request.prompt, list(self.secrets))
            self.recorder.record(
                agent=self.agent.name, prompt=prompt, identity=identity, output=scrubbed
            )
        return CallOutcome(output, status, attempt, tuple(failures))

    async def _attempt(
        self, request: AgentRequest, deadline: _Deadline, attempt: int
    ) -> AgentOutput:
        if attempt != request.context.attempt:  # (replace() is dear on the hot path: not twice)
            request = replace(request, context=replace(request.context, attempt=attempt))
        if self.limiter is None:
            await self.gate.wait()
            return await self._timed(request, deadline)
        async with self.limiter:
            await self.gate.wait()
            return await self._timed(request, deadline)

    async def _timed(self, request: AgentRequest, deadline: _Deadline) -> AgentOutput:
        remaining = deadline.start()
        try:
            if remaining <= 0:
                raise TimeoutError
            # asyncio's own timeout: one timer, where anyio's cancel scope costs several
            # callbacks a call (every run is on asyncio: anyio.run's default backend)
            async with asyncio.timeout(remaining):
                output = await self.provider.call(request)
            usage = output.usage or {}
            self.gate.used(usage.get("total_tokens") or sum(
                usage.get(k, 0) for k in ("prompt_tokens", "completion_tokens")
            ))  # fmt: skip
            return output
        except TimeoutError:
            raise AgentTimeout(
                agent=self.agent.name, provider=self.agent.provider, timeout=deadline.timeout
            ) from None

    def _scrub(self, exc: ProviderError) -> None:
        """Scrub the run's secrets from a failure (an HTTP error quotes its URL, stderr …)."""
        secrets = list(self.secrets)
        exc.reason = redact(exc.reason, secrets)
        exc.args = tuple(redact(a, secrets) if isinstance(a, str) else a for a in exc.args)
        if exc.stderr_tail is not None:
            exc.stderr_tail = redact(exc.stderr_tail, secrets)

    def identity(self) -> dict[str, Any]:
        """What shapes this provider's answers (its cache identity, or its names).

        A secret in it (a command's ``env:`` entry, a URL's key) is a digest of that secret.
        """
        declared = getattr(self.provider, "cache_identity", None)
        if declared is not None:
            identity: dict[str, Any] = conceal(declared(), self.secrets)
            return identity
        return {"provider": self.agent.provider, "agent": self.agent.name}

    def identity_key(self) -> str:
        """A stable hash of ``identity()`` (how calibration records name a judge).

        It holds no digest of a secret: a judge keeps its calibration when its key is rotated.
        """
        return hash_text(canonical_json(forget_digests(self.identity())))

    def _key(self, request: AgentRequest, repeat: int) -> CacheKey | None:
        if self.cache is None or getattr(self.provider, "cache_identity", None) is None:
            return None
        return CacheKey(self.identity(), request.prompt, repeat=repeat)


@dataclass
class _Deadline:
    """The case's timeout, over every attempt and the back-off between them.

    Its clock starts when the first attempt starts (after the agent's limits let it through):
    waiting for a free slot is not the agent's time.
    """

    timeout: float
    at: float | None = None

    def start(self) -> float:
        """Start the clock if it is not running; the seconds left."""
        now = asyncio.get_running_loop().time()  # anyio.current_time(), without its dispatch
        if self.at is None:
            self.at = now + self.timeout
        return self.at - now

    def remaining(self) -> float:
        """The seconds left (the whole timeout before the first attempt)."""
        return self.timeout if self.at is None else self.at - asyncio.get_running_loop().time()
