"""Run canaries end to end: call each agent, grade, gate, write the result file.

The procedure of seed 000: every selected spec's prompt goes byte for byte to the agent its phase
routes to; an agent error or timeout is a FAIL with reason ``agent_error``; a judge that fails
makes the canary ERROR (``judge_error``), never a FAIL of the agent. Canaries run one at a time
unless ``jobs`` says otherwise. When ``stop`` is set the work in flight is cancelled (its
processes killed), and the canaries that finished are written, marked interrupted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import anyio

from coalmine._util.clock import Clock, SystemClock, format_utc
from coalmine.config import AgentConfig, Config
from coalmine.errors import AgentTimeout, GradeError, ProviderError
from coalmine.graders.base import GradeContext, JudgeFn, JudgeReply
from coalmine.graders.base import registry as graders
from coalmine.providers.base import AgentRequest, CallContext, Provider, build_provider, redact
from coalmine.reports.json import write_result_file
from coalmine.results import (
    OUTPUT_LIMIT,
    AgentOutput,
    CanaryRun,
    CaseResult,
    FailureReason,
    Grade,
    InvalidSpecRecord,
    JudgeInfo,
    RunTotals,
    Verdict,
)
from coalmine.runner.events import CaseEnd, CaseStart, Hooks, RunEnd, RunStart, emit
from coalmine.runner.execute import run_bounded
from coalmine.runner.gates import decide, exit_code
from coalmine.runner.plan import RESULTS_DIR, CanaryPlan, PlannedCanary, require_judge
from coalmine.specs.loader import InvalidSpec
from coalmine.specs.models import CanarySpec

_SKIP_REASONS = {
    "disabled": "the judge is disabled for this run",
    "none": "the config says judge: none",
}


@dataclass(frozen=True)
class CanaryOutcome:
    """What a run produced: the run record, where it was written, and the exit code."""

    run: CanaryRun
    results_path: Path | None
    exit_code: int


async def run_canaries(
    plan: CanaryPlan,
    *,
    jobs: int | None = None,
    no_judge: bool = False,
    hooks: Sequence[Hooks] = (),
    clock: Clock | None = None,
    stop: anyio.Event | None = None,
    results_dir: Path | None = None,
) -> CanaryOutcome:
    """Run the canaries of ``plan`` and write ``bench/results/canary-run-DATE.json``.

    Args:
        plan: from ``plan_canaries``.
        jobs: canaries in flight at once (default: the config's ``defaults.jobs``, 1).
        no_judge: skip llm-judge graders even when a judge is configured.
        hooks: event subscribers (displays, plugins).
        clock: the time source (tests pin it).
        stop: set it to stop the run; finished canaries are kept.
        results_dir: where the result file goes (default ``<root>/bench/results``).

    Raises:
        ConfigError: a canary needs a judge and none is configured, or an agent cannot be built.
    """
    config = plan.config
    require_judge(plan, disabled=no_judge)
    clock = clock or SystemClock()
    started = clock.now()
    t0 = clock.monotonic()
    judge_agent = None if no_judge else config.judge
    judge_info = _judge_info(config, no_judge)
    providers: dict[str, Provider] = {}
    results: dict[int, CaseResult] = {}
    secrets = _secrets(config)
    try:
        for canary in plan.canaries:
            if canary.agent.name not in providers:
                providers[canary.agent.name] = build_provider(canary.agent)
        judge = build_provider(judge_agent) if judge_agent is not None else None
        if judge is not None:
            providers["\0judge"] = judge
        total = len(plan.canaries)
        await emit(hooks, "on_run_start", RunStart(total, len(plan.invalid), judge_info.describe()))

        async def work(index: int, canary: PlannedCanary) -> None:
            await emit(
                hooks, "on_case_start", CaseStart(index, total, canary.loaded.id, canary.agent.name)
            )
            judge_fn = _judge_fn(judge, judge_agent, canary, config) if judge else None
            result = await _run_one(
                canary,
                providers[canary.agent.name],
                judge_fn,
                clock=clock,
                secrets=secrets,
                skip_reason=_SKIP_REASONS.get(judge_info.mode, "no judge is configured"),
            )
            results[index] = result
            await emit(hooks, "on_case_end", CaseEnd(index, total, result))

        interrupted = await run_bounded(
            plan.canaries, work, jobs=jobs or config.defaults.jobs, stop=stop
        )
    finally:
        with anyio.CancelScope(shield=True):
            for provider in providers.values():
                await provider.aclose()
    ordered = [results[i] for i in sorted(results)]
    duration = clock.monotonic() - t0

    def build(run_id: str) -> CanaryRun:
        return CanaryRun(
            run_id=run_id,
            timestamp=format_utc(started),
            summary=_totals(ordered, len(plan.invalid)),
            results=ordered,
            invalid_specs=[_invalid_record(i, config.root) for i in plan.invalid],
            interrupted=interrupted,
            judge=judge_info,
            duration_seconds=round(duration, 3),
            coalmine_version=_version(),
        )

    path, run = write_result_file(results_dir or config.root / RESULTS_DIR, started, build)
    await emit(hooks, "on_run_end", RunEnd(run, path))
    return CanaryOutcome(run, path, exit_code(run))


async def _run_one(
    canary: PlannedCanary,
    provider: Provider,
    judge: JudgeFn | None,
    *,
    clock: Clock,
    secrets: list[str],
    skip_reason: str,
) -> CaseResult:
    spec = canary.loaded.spec
    t0 = clock.monotonic()
    request = AgentRequest(
        spec.prompt, CallContext(spec.id, canary.agent.name, spec.phase), canary.timeout
    )
    output: AgentOutput | None = None
    grades: dict[str, Grade] = {}
    verdict: Verdict = "FAIL"
    composite: float | None = 0.0
    reason: FailureReason | None = None
    error: str | None = None
    failures: list[str] = []
    try:
        output = await _call(provider, request, canary.agent, canary.timeout)
    except ProviderError as exc:
        reason, error = "agent_error", str(exc)
        if exc.stderr_tail:
            error += "\nstderr (tail):\n" + exc.stderr_tail[-1000:]
        failures = ["the agent failed; no grader ran"]
    if output is not None:
        ctx = GradeContext(case_id=spec.id, prompt=spec.prompt, judge=judge)
        grades, thresholds, reason, error = await _grade(spec, output.text, ctx, skip_reason)
        if error is not None:
            verdict, composite = "ERROR", None
        elif all(g.score is None for g in grades.values()):
            verdict, composite, reason = "ERROR", None, "no_graders"
            error = "every grader was skipped, so nothing graded this canary"
        else:
            decision = decide(grades, thresholds)
            verdict, failures = decision.verdict, decision.failures
            composite = round(decision.composite, 6)
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
        prompt=spec.prompt,
        output=text[:OUTPUT_LIMIT] if text is not None else None,
        output_truncated=(len(text) > OUTPUT_LIMIT) or None if text is not None else None,
        warnings=output.warnings if output is not None else [],
        spec_path=str(canary.loaded.path),
    )
    return _redacted(result, secrets)


def _redacted(result: CaseResult, secrets: list[str]) -> CaseResult:
    """Scrub every secret from every string of ``result`` (output, errors, judge reasons …)."""
    if not secrets:
        return result
    text = result.model_dump_json()
    escaped = [json.dumps(s, ensure_ascii=False)[1:-1] for s in secrets]
    clean = redact(text, [*secrets, *escaped])
    return result if clean == text else CaseResult.model_validate_json(clean)


async def _grade(
    spec: CanarySpec, text: str, ctx: GradeContext, skip_reason: str
) -> tuple[dict[str, Grade], dict[str, float], FailureReason | None, str | None]:
    """Run every grader of ``spec``; stop at the first that cannot grade."""
    grades: dict[str, Grade] = {}
    thresholds: dict[str, float] = {}
    for grader_spec in spec.expected.graders:
        key = _grade_key(grader_spec.name or grader_spec.type, grades)
        grader = graders.get(grader_spec.type)
        thresholds[key] = grader.threshold
        if grader.needs_judge and ctx.judge is None:
            grades[key] = Grade(weight=grader_spec.weight, skipped=True, reason=skip_reason)
            continue
        config = grader.config.model_validate(grader_spec.config)
        try:
            grade = await grader.grade(config, text, ctx)
        except GradeError as exc:
            reason: FailureReason = "judge_error" if grader.needs_judge else "grader_error"
            return grades, thresholds, reason, str(exc)
        grades[key] = grade.model_copy(update={"weight": grader_spec.weight})
    return grades, thresholds, None, None


async def _call(
    provider: Provider, request: AgentRequest, agent: AgentConfig, timeout: float
) -> AgentOutput:
    try:
        with anyio.fail_after(timeout):
            return await provider.call(request)
    except TimeoutError:
        raise AgentTimeout(agent=agent.name, provider=agent.provider, timeout=timeout) from None


def _judge_fn(
    judge: Provider, judge_agent: AgentConfig | None, canary: PlannedCanary, config: Config
) -> JudgeFn:
    assert judge_agent is not None
    timeout = config.defaults.judge_timeout_seconds
    context = CallContext(canary.loaded.id, judge_agent.name, canary.loaded.spec.phase)

    async def ask(prompt: str) -> JudgeReply:
        output = await _call(judge, AgentRequest(prompt, context, timeout), judge_agent, timeout)
        model = output.model or getattr(judge_agent.settings, "model", None)
        return JudgeReply(output.text, model or f"{judge_agent.provider}:{judge_agent.name}")

    return ask


def _grade_key(name: str, taken: Mapping[str, Grade]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}#{n}" in taken:
        n += 1
    return f"{name}#{n}"


def _totals(results: list[CaseResult], invalid: int) -> RunTotals:
    composites = [r.composite_score for r in results if r.composite_score is not None]
    return RunTotals(
        total=len(results),
        passed=sum(r.verdict == "PASS" for r in results),
        failed=sum(r.verdict == "FAIL" for r in results),
        errored=sum(r.verdict == "ERROR" for r in results),
        invalid=invalid,
        composite_score=round(sum(composites) / len(composites), 6) if composites else None,
    )


def _invalid_record(invalid: InvalidSpec, root: Path) -> InvalidSpecRecord:
    return InvalidSpecRecord(
        path=_relative(invalid.path, root),
        line=invalid.line,
        id=invalid.spec_id,
        reason="\n".join(p.message for p in invalid.problems),
    )


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _judge_info(config: Config, no_judge: bool) -> JudgeInfo:
    if no_judge:
        return JudgeInfo(mode="disabled")
    if config.judge is not None:
        model = getattr(config.judge.settings, "model", None)
        return JudgeInfo(
            mode="agent",
            agent=config.judge.name,
            provider=config.judge.provider,
            model=model,
            description=config.judge.description,
            inline=config.agents.get(config.judge.name) is not config.judge or None,
        )
    return JudgeInfo(mode="none" if config.judge_mode == "none" else "unset")


def _secrets(config: Config) -> list[str]:
    """The values of every API-key variable the config names: never written anywhere."""
    agents = [*config.agents.values(), *([config.judge] if config.judge else [])]
    names = {getattr(a.settings, "api_key_env", None) for a in agents}
    return [os.environ[n] for n in names if n and os.environ.get(n)]


def _version() -> str | None:
    try:
        return version("coalmine")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return None
