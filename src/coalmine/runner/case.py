"""One canary: call its agent (or answer from the cache), grade, gate, scrub secrets.

An agent error or timeout is a FAIL with reason ``agent_error``; a judge that fails makes the
canary ERROR (``judge_error``). What the store keeps beside the result (full output, prompt,
raw judge replies, tokens) comes back as ``CaseExtras``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from coalmine._util.clock import Clock
from coalmine._util.hashing import canonical_json, hash_text
from coalmine._util.target import TargetError, load_target
from coalmine.config import AgentConfig, Config, Price
from coalmine.errors import AgentTimeout, ConfigError, FailureKind, GradeError, ProviderError
from coalmine.graders.base import GradeContext, GraderType, JudgeFn, JudgeReply
from coalmine.graders.base import registry as graders
from coalmine.graders.judged import judge_prompt_identity
from coalmine.graders.llm_judge import JudgeAttempt, JudgeGrade
from coalmine.judge.policy import Calibration, JudgeGate, grader_policy
from coalmine.providers.base import AgentRequest, CallContext, Provider, redact, redact_model
from coalmine.providers.replay import Cassette
from coalmine.results import (
    OUTPUT_LIMIT,
    AgentOutput,
    CaseResult,
    FailureReason,
    Grade,
    JudgeInfo,
    Usage,
    Verdict,
    sum_usage,
)
from coalmine.runner.costs import agent_usage, priced
from coalmine.runner.gates import decide
from coalmine.runner.limits import RateGate, backoff_delay
from coalmine.runner.plan import PlannedCanary
from coalmine.specs.models import CanarySpec
from coalmine.store.cache import CacheKey, ResponseCache
from coalmine.store.runs import CaseExtras, JudgeCall, Store


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
    """Never written to the cache: an answer that quotes one is cached scrubbed."""
    retries: int = 0
    gate: RateGate = field(default_factory=lambda: RateGate(None))
    limiter: anyio.CapacityLimiter | None = None
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
        limiter = anyio.CapacityLimiter(policy.max_concurrency) if policy.max_concurrency else None
        gate = RateGate(policy.requests_per_minute, tokens_per_minute=policy.tokens_per_minute)
        return cls(provider, agent, cache, secrets, retries, gate, limiter, recorder=recorder)

    async def call(self, request: AgentRequest, timeout: float, *, repeat: int = 0) -> CallOutcome:
        """Answer from the cache, or call the agent, retrying what a retry may fix.

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
        while True:
            attempt += 1
            try:
                output = await self._attempt(request, timeout, attempt)
                break
            except ProviderError as exc:
                exc.attempt = attempt
                exc.failures = tuple(failures)
                if not exc.retryable or attempt > self.retries:
                    raise
                failures.append(f"{exc.kind}: {exc.reason}")
                policy = self.agent.policy
                delay = backoff_delay(
                    attempt,
                    base=policy.backoff_seconds,
                    cap=policy.max_backoff_seconds,
                    retry_after=exc.retry_after,
                )
                if exc.kind == "rate_limited":
                    self.gate.pause(delay)  # every caller of this agent eases off
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

    async def _attempt(self, request: AgentRequest, timeout: float, attempt: int) -> AgentOutput:
        request = replace(request, context=replace(request.context, attempt=attempt))
        if self.limiter is None:
            await self.gate.wait()
            return await self._timed(request, timeout)
        async with self.limiter:
            await self.gate.wait()
            return await self._timed(request, timeout)

    async def _timed(self, request: AgentRequest, timeout: float) -> AgentOutput:
        try:
            with anyio.fail_after(timeout):
                output = await self.provider.call(request)
            usage = output.usage or {}
            self.gate.used(usage.get("total_tokens") or sum(
                usage.get(k, 0) for k in ("prompt_tokens", "completion_tokens")
            ))  # fmt: skip
            return output
        except TimeoutError:
            raise AgentTimeout(
                agent=self.agent.name, provider=self.agent.provider, timeout=timeout
            ) from None

    def identity(self) -> dict[str, Any]:
        """What shapes this provider's answers (its cache identity, or its names)."""
        declared = getattr(self.provider, "cache_identity", None)
        if declared is not None:
            identity: dict[str, Any] = declared()
            return identity
        return {"provider": self.agent.provider, "agent": self.agent.name}

    def identity_key(self) -> str:
        """A stable hash of ``identity()`` (how calibration records name a judge)."""
        return hash_text(canonical_json(self.identity()))

    def _key(self, request: AgentRequest, repeat: int) -> CacheKey | None:
        identity = getattr(self.provider, "cache_identity", None)
        if self.cache is None or identity is None:
            return None
        return CacheKey(identity(), request.prompt, repeat=repeat)


def rerunnable_judge(
    judge: Caller, context: CallContext, timeout: float
) -> Callable[[int], JudgeFn]:
    """Return ``repeat → judge fn`` for the case of ``context`` (rerun 0 is the usual ask)."""
    return lambda repeat: judge_fn_for(judge, context, timeout, repeat=repeat)


def judge_fn_for(
    judge: Caller, context: CallContext, timeout: float, *, repeat: int = 0
) -> JudgeFn:
    """Return the callable judge graders use to ask ``judge`` (for the case of ``context``).

    ``repeat`` numbers reruns of the same judge prompt: each has its own cache entry.
    """

    async def ask(prompt: str) -> JudgeReply:
        request = AgentRequest(prompt, context, timeout)
        output = (await judge.call(request, timeout, repeat=repeat)).output
        model = output.model or getattr(judge.agent.settings, "model", None)
        name = model or f"{judge.agent.provider}:{judge.agent.name}"
        return JudgeReply(output.text, name, output.usage)

    return ask


def load_python_graders(config: Config) -> dict[str, Any]:
    """Load the functions ``python_graders:`` enables.

    Raises:
        ConfigError: one cannot be loaded, or is not callable.
    """
    loaded = {}
    for name, target in config.python_graders.items():
        try:
            function = load_target(target, config.base_dir)
        except TargetError as exc:
            raise ConfigError(f"python_graders: {name}: {exc}", path=config.path) from None
        if not callable(function):
            raise ConfigError(f"python_graders: {name}: {target!r} is not callable",
                              path=config.path)  # fmt: skip
        loaded[name] = function
    return loaded


def judge_gate(store: Store | None, judge: Caller, *, configured_blocking: bool) -> JudgeGate:
    """The judge's calibrations from the store, ready to say which judge graders may block."""
    rows = store.calibrations(judge.identity_key()) if store is not None else []
    return JudgeGate(
        [Calibration(i, may_block, record) for i, may_block, record, _ in rows],
        configured_blocking=configured_blocking,
        identify=judge_prompt_identity,
    )


def summarize_gate(gate: JudgeGate, info: JudgeInfo) -> JudgeInfo:
    """``info`` with the run's judge policy (blocking, uncalibrated, why)."""
    policy = gate.summary()
    if policy is None:
        policy = grader_policy(
            gate.calibrations, None, configured_blocking=gate.configured_blocking
        )
    return info.model_copy(
        update={
            "blocking": policy.blocking,
            "uncalibrated": policy.uncalibrated or None,
            "calibration": policy.reason,
        }
    )


async def grade_with_reruns(
    grader: GraderType,
    config: Any,
    text: str,
    ctx: GradeContext,
    *,
    reruns: int,
    judge_for: Callable[[int], JudgeFn] | None,
) -> Grade:
    """Grade once, or, for a judge grader with ``reruns`` > 1, ask the judge that many times.

    The reruns (each its own cache entry) vote: the grade passes when most reruns pass (a tie
    fails). Its score is the lower median of the reruns' scores, so an even split scores on
    the failing side; ``reruns`` lists the scores and ``spread`` their range. Reruns that
    straddle the threshold make the grade ``unstable``: flagged, never silently flipped.
    """
    if reruns <= 1 or not grader.needs_judge or judge_for is None:
        return await grader.grade(config, text, ctx)
    grades: list[Grade | None] = [None] * reruns

    async def one(repeat: int) -> None:
        grades[repeat] = await grader.grade(config, text, replace(ctx, judge=judge_for(repeat)))

    async with anyio.create_task_group() as tg:
        for repeat in range(reruns):
            tg.start_soon(one, repeat)
    done = [g for g in grades if g is not None]
    scores = [g.score for g in done if g.score is not None]
    if len(scores) < len(done) or not scores:
        return done[0]  # a skipped grade: nothing to vote on
    passes = sum(bool(g.passed) for g in done)
    median = sorted(done, key=lambda g: g.score or 0.0)[(len(done) - 1) // 2]
    return median.model_copy(
        update={
            "passed": 2 * passes > len(done),
            "reruns": scores,
            "spread": round(max(scores) - min(scores), 6),
            "unstable": (0 < passes < len(done)) or None,
        }
    )


def unstable_warnings(grades: Mapping[str, Grade]) -> list[str]:
    """One warning for each judge grade whose reruns straddled its threshold."""
    return [
        f"unstable: {key} reruns straddle the threshold (scores "
        f"{', '.join(f'{s:g}' for s in getattr(g, 'reruns', []))})"
        for key, g in grades.items()
        if getattr(g, "unstable", False)
    ]


@dataclass(frozen=True)
class CaseOutcome:
    """A graded case and what the store keeps beside it."""

    result: CaseResult
    extras: CaseExtras


async def run_case(
    canary: PlannedCanary,
    caller: Caller,
    judge: JudgeFn | None,
    *,
    position: int,
    clock: Clock,
    secrets: list[str],
    skip_reason: str,
    gate: JudgeGate | None = None,
    pricing: Mapping[str, Price] | None = None,
    judge_model: str | None = None,
    functions: Mapping[str, Any] | None = None,
    judge_reruns: int = 1,
    judge_for: Callable[[int], JudgeFn] | None = None,
) -> CaseOutcome:
    """Call, grade and gate one canary (``gate``: which judge graders may block)."""
    spec = canary.loaded.spec
    t0 = clock.monotonic()
    request = AgentRequest(
        spec.prompt, CallContext(spec.id, canary.agent.name, spec.phase), canary.timeout
    )
    output: AgentOutput | None = None
    cache_status: str | None = None
    grades: dict[str, Grade] = {}
    verdict: Verdict = "FAIL"
    composite: float | None = 0.0
    reason: FailureReason | None = None
    error: str | None = None
    failures: list[str] = []
    calls: list[JudgeCall] = []
    blocking: dict[str, bool] = {}
    advisory = not spec.blocking
    attempts = 1
    call_failures: list[str] = []
    error_kind: FailureKind | None = None
    try:
        called = await caller.call(request, canary.timeout)
        output, cache_status = called.output, called.cache
        attempts, call_failures = called.attempts, list(called.failures)
    except ProviderError as exc:
        reason, error, error_kind = "agent_error", str(exc), exc.kind
        attempts, call_failures = exc.attempt, [*exc.failures, f"{exc.kind}: {exc.reason}"]
        if exc.stderr_tail:
            error += "\nstderr (tail):\n" + exc.stderr_tail[-1000:]
        if exc.attempt > 1:
            error += f"\n(after {exc.attempt} attempts)"
        failures = ["the agent failed; no grader ran"]
    agent_usage = _agent_usage(canary, output, pricing or {})
    if output is not None:
        ctx = GradeContext(
            case_id=spec.id,
            prompt=spec.prompt,
            judge=judge,
            latency_seconds=None if cache_status == "hit" else round(clock.monotonic() - t0, 3),
            cost=agent_usage.cost if agent_usage is not None else None,
            tool_calls=tuple(output.tool_calls),
            functions=functions or {},
        )
        graded = await _grade(
            spec, output.text, ctx, skip_reason, gate, reruns=judge_reruns, judge_for=judge_for
        )
        grades, reason, error, calls = graded.grades, graded.reason, graded.error, graded.calls
        blocking = graded.blocking
        if error is not None:
            verdict, composite = "ERROR", None
            advisory = advisory or (reason == "judge_error" and not graded.error_blocks)
        elif all(g.score is None for g in grades.values()):
            verdict, composite, reason = "ERROR", None, "no_graders"
            error = "every grader was skipped, so nothing graded this canary"
        else:
            decision = decide(grades, graded.thresholds, blocking)
            verdict, failures = decision.verdict, decision.failures
            composite = round(decision.composite, 6)
            advisory = advisory or decision.advisory
    text = output.text if output is not None else None
    judge_usage = _judge_usage(grades, pricing or {}, judge_model)
    usage = {
        role: u for role, u in (("agent", agent_usage), ("judge", judge_usage)) if u is not None
    }
    result = CaseResult(
        id=spec.id,
        phase=spec.phase,
        title=spec.title,
        agent=canary.agent.name,
        verdict=verdict,
        composite_score=composite,
        grader_scores=grades,
        duration_seconds=round(clock.monotonic() - t0, 3),
        reason=reason,
        error=error,
        failures=failures,
        advisory=(advisory or None) if verdict != "PASS" else None,
        prompt=spec.prompt,
        output=text[:OUTPUT_LIMIT] if text is not None else None,
        output_truncated=(len(text) > OUTPUT_LIMIT) or None if text is not None else None,
        warnings=[*(output.warnings if output is not None else []), *unstable_warnings(grades)],
        cache=cache_status,
        error_kind=error_kind,
        attempts=attempts if attempts > 1 else None,
        call_failures=call_failures,
        tool_calls=output.tool_calls if output is not None else [],
        usage=usage,
        spec_path=str(canary.loaded.path),
    )
    extras = CaseExtras(
        position=position,
        prompt=spec.prompt,
        output=redact(text, secrets) if text is not None else None,
        model=output.model if output is not None else None,
        usage=output.usage if output is not None else None,
        judge_calls=[
            JudgeCall(
                c.grader_key,
                c.attempt,
                c.model,
                c.prompt_hash,
                redact(c.reply, secrets) if c.reply is not None else None,
            )
            for c in calls
        ],  # fmt: skip
        blocking=blocking,
    )
    return CaseOutcome(redact_model(result, secrets), extras)


def _agent_usage(
    canary: PlannedCanary, output: AgentOutput | None, pricing: Mapping[str, Price]
) -> Usage | None:
    """Tokens and cost of the agent's call."""
    return None if output is None else agent_usage(output, canary.agent, pricing)


def _judge_usage(
    grades: Mapping[str, Grade], pricing: Mapping[str, Price], judge_model: str | None
) -> Usage | None:
    """Tokens and cost of the judge's calls for this case."""
    judged = [g for g in grades.values() if isinstance(g, JudgeGrade) and g.usage]
    if not judged:
        return None
    usage = sum_usage(g.usage for g in judged)
    return priced(usage, judged[0].judge_model, pricing, configured=judge_model)


@dataclass(frozen=True)
class _Graded:
    grades: dict[str, Grade]
    thresholds: dict[str, float]
    blocking: dict[str, bool]
    reason: FailureReason | None
    error: str | None
    calls: list[JudgeCall]
    error_blocks: bool = True
    """Whether the grader that could not grade may block (a judge's only when calibrated)."""


async def _grade(
    spec: CanarySpec,
    text: str,
    ctx: GradeContext,
    skip_reason: str,
    gate: JudgeGate | None,
    *,
    reruns: int = 1,
    judge_for: Callable[[int], JudgeFn] | None = None,
) -> _Graded:
    """Run every grader of ``spec``; stop at the first that cannot grade."""
    grades: dict[str, Grade] = {}
    thresholds: dict[str, float] = {}
    blocking: dict[str, bool] = {}
    calls: list[JudgeCall] = []
    for grader_spec in spec.expected.graders:
        key = grade_key(grader_spec.name or grader_spec.type, grades)
        grader = graders.get(grader_spec.type)
        thresholds[key] = grader.threshold
        # A spec may make any grader advisory, but only the judge policy lets a judge block.
        may_block = (
            gate is not None and gate.blocks(grader_spec.type, grader_spec.config)
            if grader.needs_judge
            else True
        )
        blocking[key] = spec.blocking and may_block and grader_spec.blocking is not False
        if grader.needs_judge and ctx.judge is None:
            grades[key] = Grade(weight=grader_spec.weight, skipped=True, reason=skip_reason)
            continue
        config = grader.config.model_validate(grader_spec.config)
        try:
            grade = await grade_with_reruns(
                grader, config, text, ctx, reruns=reruns, judge_for=judge_for
            )
        except GradeError as exc:
            calls += _judge_calls(key, exc.judge_calls, exc.prompt_sha256)
            reason: FailureReason = "judge_error" if grader.needs_judge else "grader_error"
            return _Graded(grades, thresholds, blocking, reason, str(exc), calls, may_block)
        if isinstance(grade, JudgeGrade):
            calls += _judge_calls(key, grade.calls, grade.prompt_sha256)
        update = {"weight": grader_spec.weight, "detail": grade.explain() or None}
        grades[key] = grade.model_copy(update=update)
    return _Graded(grades, thresholds, blocking, None, None, calls)


def _judge_calls(key: str, attempts: Sequence[object], prompt_hash: str | None) -> list[JudgeCall]:
    return [
        JudgeCall(key, a.attempt, a.model, prompt_hash or "", a.reply)
        for a in attempts
        if isinstance(a, JudgeAttempt)
    ]


def grade_key(name: str, taken: Mapping[str, Grade]) -> str:
    """``name``, or ``name#2``, ``#3`` … when a grader of that name already graded."""
    if name not in taken:
        return name
    n = 2
    while f"{name}#{n}" in taken:
        n += 1
    return f"{name}#{n}"
