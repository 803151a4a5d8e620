"""One canary: call its agent (or answer from the cache), grade, gate, scrub secrets.

An agent error or timeout is a FAIL with reason ``agent_error``; a judge that fails makes the
canary ERROR (``judge_error``). What the store keeps beside the result (full output, prompt,
raw judge replies, tokens) comes back as ``CaseExtras``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coalmine._util.clock import Clock
from coalmine._util.secrets import redact, redact_model
from coalmine.canary.plan import PlannedCanary
from coalmine.config import Price
from coalmine.engine.call import Caller
from coalmine.engine.costs import agent_usage, priced
from coalmine.engine.grading import grade_key, grade_with_reruns, unstable_warnings
from coalmine.engine.policy import JudgeGate
from coalmine.engine.verdict import decide
from coalmine.errors import FailureKind, GradeError, ProviderError
from coalmine.graders.base import GradeContext, JudgeFn
from coalmine.graders.base import registry as graders
from coalmine.graders.llm_judge import JudgeAttempt, JudgeGrade
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.results import (
    OUTPUT_LIMIT,
    AgentOutput,
    CaseResult,
    FailureReason,
    Grade,
    Usage,
    Verdict,
    sum_usage,
)
from coalmine.specs.models import CanarySpec
from coalmine.store.runs import CaseExtras, JudgeCall


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
