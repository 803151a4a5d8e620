"""One canary: call its agent (or answer from the cache), grade, gate, scrub secrets.

An agent error or timeout is a FAIL with reason ``agent_error``; a judge that fails makes the
canary ERROR (``judge_error``). What the store keeps beside the result (full output, prompt,
raw judge replies, tokens) comes back as ``CaseExtras``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from coalmine._util.clock import Clock
from coalmine._util.hashing import canonical_json, hash_text
from coalmine.config import AgentConfig
from coalmine.errors import AgentTimeout, GradeError, ProviderError
from coalmine.graders.base import GradeContext, JudgeFn, JudgeReply
from coalmine.graders.base import registry as graders
from coalmine.graders.llm_judge import JudgeAttempt, JudgeGrade
from coalmine.providers.base import AgentRequest, CallContext, Provider, redact
from coalmine.results import OUTPUT_LIMIT, AgentOutput, CaseResult, FailureReason, Grade, Verdict
from coalmine.runner.gates import decide
from coalmine.runner.plan import PlannedCanary
from coalmine.specs.models import CanarySpec
from coalmine.store.cache import CacheKey, ResponseCache
from coalmine.store.runs import CaseExtras, JudgeCall


@dataclass(frozen=True)
class Caller:
    """Calls one provider with its timeout, through the response cache when one is given."""

    provider: Provider
    agent: AgentConfig
    cache: ResponseCache | None = None
    secrets: tuple[str, ...] = ()
    """Never written to the cache: an answer that quotes one is cached scrubbed."""

    async def call(self, request: AgentRequest, timeout: float) -> tuple[AgentOutput, str | None]:
        """Return the output and the cache status (``hit``, ``miss: why``, or ``None``)."""
        key = self._key(request)
        miss = "the provider is not cacheable"
        if key is not None and self.cache is not None:
            found = self.cache.get(key)
            if found.output is not None:
                return found.output, "hit"
            miss = found.reason
        try:
            with anyio.fail_after(timeout):
                output = await self.provider.call(request)
        except TimeoutError:
            raise AgentTimeout(
                agent=self.agent.name, provider=self.agent.provider, timeout=timeout
            ) from None
        if self.cache is None:
            return output, None
        if key is not None:
            text = redact(output.text, list(self.secrets))
            self.cache.put(
                key, output if text == output.text else output.model_copy(update={"text": text})
            )
        return output, f"miss: {miss}"

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

    def _key(self, request: AgentRequest) -> CacheKey | None:
        identity = getattr(self.provider, "cache_identity", None)
        if self.cache is None or identity is None:
            return None
        return CacheKey(identity(), request.prompt, repeat=0)


def judge_fn(judge: Caller, canary: PlannedCanary, timeout: float) -> JudgeFn:
    """Return the callable the llm-judge grader uses to ask the judge."""
    context = CallContext(canary.loaded.id, judge.agent.name, canary.loaded.spec.phase)

    async def ask(prompt: str) -> JudgeReply:
        output, _ = await judge.call(AgentRequest(prompt, context, timeout), timeout)
        model = output.model or getattr(judge.agent.settings, "model", None)
        return JudgeReply(output.text, model or f"{judge.agent.provider}:{judge.agent.name}")

    return ask


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
    judge_blocks: bool = False,
) -> CaseOutcome:
    """Call, grade and gate one canary (``judge_blocks``: the judge policy's verdict)."""
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
    try:
        output, cache_status = await caller.call(request, canary.timeout)
    except ProviderError as exc:
        reason, error = "agent_error", str(exc)
        if exc.stderr_tail:
            error += "\nstderr (tail):\n" + exc.stderr_tail[-1000:]
        failures = ["the agent failed; no grader ran"]
    if output is not None:
        ctx = GradeContext(case_id=spec.id, prompt=spec.prompt, judge=judge)
        graded = await _grade(spec, output.text, ctx, skip_reason, judge_blocks)
        grades, reason, error, calls = graded.grades, graded.reason, graded.error, graded.calls
        blocking = graded.blocking
        if error is not None:
            verdict, composite = "ERROR", None
            advisory = advisory or (reason == "judge_error" and not judge_blocks)
        elif all(g.score is None for g in grades.values()):
            verdict, composite, reason = "ERROR", None, "no_graders"
            error = "every grader was skipped, so nothing graded this canary"
        else:
            decision = decide(grades, graded.thresholds, blocking)
            verdict, failures = decision.verdict, decision.failures
            composite = round(decision.composite, 6)
            advisory = advisory or decision.advisory
    text = output.text if output is not None else None
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
        warnings=output.warnings if output is not None else [],
        cache=cache_status,
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
    return CaseOutcome(_redacted(result, secrets), extras)


def _redacted(result: CaseResult, secrets: list[str]) -> CaseResult:
    """Scrub every secret from every string of ``result`` (output, errors, judge reasons …)."""
    if not secrets:
        return result
    text = result.model_dump_json()
    escaped = [json.dumps(s, ensure_ascii=False)[1:-1] for s in secrets]
    clean = redact(text, [*secrets, *escaped])
    return result if clean == text else CaseResult.model_validate_json(clean)


@dataclass(frozen=True)
class _Graded:
    grades: dict[str, Grade]
    thresholds: dict[str, float]
    blocking: dict[str, bool]
    reason: FailureReason | None
    error: str | None
    calls: list[JudgeCall]


async def _grade(
    spec: CanarySpec, text: str, ctx: GradeContext, skip_reason: str, judge_blocks: bool
) -> _Graded:
    """Run every grader of ``spec``; stop at the first that cannot grade."""
    grades: dict[str, Grade] = {}
    thresholds: dict[str, float] = {}
    blocking: dict[str, bool] = {}
    calls: list[JudgeCall] = []
    for grader_spec in spec.expected.graders:
        key = _grade_key(grader_spec.name or grader_spec.type, grades)
        grader = graders.get(grader_spec.type)
        thresholds[key] = grader.threshold
        # A spec may make any grader advisory, but only the judge policy lets a judge block.
        may_block = judge_blocks if grader.needs_judge else True
        blocking[key] = spec.blocking and may_block and grader_spec.blocking is not False
        if grader.needs_judge and ctx.judge is None:
            grades[key] = Grade(weight=grader_spec.weight, skipped=True, reason=skip_reason)
            continue
        config = grader.config.model_validate(grader_spec.config)
        try:
            grade = await grader.grade(config, text, ctx)
        except GradeError as exc:
            calls += _judge_calls(key, exc.judge_calls, exc.prompt_sha256)
            reason: FailureReason = "judge_error" if grader.needs_judge else "grader_error"
            return _Graded(grades, thresholds, blocking, reason, str(exc), calls)
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


def _grade_key(name: str, taken: Mapping[str, Grade]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}#{n}" in taken:
        n += 1
    return f"{name}#{n}"
