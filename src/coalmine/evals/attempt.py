"""One case run of an eval: call the agent, grade what it said, and make the stored attempt.

A case run passes when every grader passes (or, with a ``threshold``, when the weighted score
reaches it); a grader that is a gate (``forbidden-tools``) must pass either way. An agent that
fails (crash, timeout, garbage) fails the case; a grader that cannot grade (a missing input, a
judge that fails) makes it an error, which is not scored but is counted and fails the suite.
What is stored is scrubbed of every secret of the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coalmine._util.clock import Clock
from coalmine._util.secrets import redact, redact_encoded
from coalmine.config import AgentConfig, Config, Price
from coalmine.engine.call import Caller
from coalmine.engine.costs import agent_usage
from coalmine.engine.grading import (
    grade_key,
    grade_with_reruns,
    judge_fn_for,
    rerunnable_judge,
    unstable_warnings,
)
from coalmine.engine.policy import JudgeGate
from coalmine.engine.verdict import EPSILON, composite_score
from coalmine.engine.wiring import (
    Wiring,
)
from coalmine.errors import GradeError, ProviderError
from coalmine.evals.compat import CompatRunner
from coalmine.evals.plan import PlannedSuite
from coalmine.evals.summary import STDERR_MARK
from coalmine.graders.base import GradeContext, GraderType
from coalmine.graders.base import registry as graders
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.results import (
    OUTPUT_LIMIT,
    Grade,
)
from coalmine.specs.models import GraderSpec
from coalmine.specs.suite import SuiteCase
from coalmine.store.evals import (
    Attempt,
)

if TYPE_CHECKING:
    from coalmine.graders.llm_judge import JudgeGrade


@dataclass
class SuiteRun:
    """A planned suite with what the engine caches for it."""

    planned: PlannedSuite
    configs: dict[int, Any] = field(default_factory=dict)
    """Validated grader configs of the suite's own graders, by ``id`` of their spec."""


@dataclass(frozen=True)
class RunEnv:
    """What every case run of an eval run shares."""

    agents: Mapping[str, AgentConfig]
    functions: Mapping[str, Any]
    """The config's python_graders, loaded."""
    callers: dict[str, Caller]
    wiring: Wiring
    judge: Caller | None
    gate: JudgeGate | None
    """Which judge graders may block (by their judge's calibration)."""
    clock: Clock
    secrets: list[str]
    timeout: float
    judge_timeout: float
    pricing: Mapping[str, Price]
    judge_reruns: int = 1
    compat: Mapping[str, CompatRunner] = field(default_factory=dict)
    """The runner of each compat kind the run's suites use (``compat: promptfoo`` …)."""

    @classmethod
    def of(
        cls,
        config: Config,
        *,
        functions: Mapping[str, Any],
        callers: dict[str, Caller],
        wiring: Wiring,
        judge: Caller | None,
        gate: JudgeGate | None,
        clock: Clock,
        secrets: Iterable[str],
        judge_reruns: int,
        compat: Mapping[str, CompatRunner] | None = None,
    ) -> RunEnv:
        """The env of a run of ``config`` (its agents, timeouts and prices), in any process."""
        return cls(
            config.agents, functions, callers, wiring, judge, gate, clock, list(secrets),
            config.defaults.timeout_seconds, config.defaults.judge_timeout_seconds,
            config.pricing, judge_reruns, compat or {},
        )  # fmt: skip

    def caller(self, agent: AgentConfig) -> Caller:
        """The caller of ``agent`` (one per agent, so its limits hold across the run)."""
        found = self.callers.get(agent.name)
        if found is None:
            found = self.callers[agent.name] = self.wiring.caller(agent)
        return found


async def run_attempt(suite: SuiteRun, case: SuiteCase, rep: int, env: RunEnv) -> Attempt | None:
    """Run one repeat of one case: the agent (or the compat runner), then its graders.

    ``None``: a compat runner holds the attempt back until every line ran
    (:func:`finish_compat_attempts` gives it).
    """
    planned = suite.planned
    if case.compat is not None:
        return await _run_compat_attempt(suite, case, rep, env)
    agent = env.agents[case.agent] if case.agent else planned.default_agent
    assert agent is not None  # the plan moved cases without an agent to the bad lines
    caller = env.caller(agent)
    secrets, clock, judge = env.secrets, env.clock, env.judge
    timeout = planned.index.meta.timeout_seconds or env.timeout
    case_id = case.case.id
    record: dict[str, Any] = {"agent": agent.name, "prompt": redact(case.prompt, env.secrets)}
    record.update(_compared_with(case))
    t0 = clock.monotonic()
    context = CallContext(case_id, agent.name, planned.name)
    request = AgentRequest(case.prompt, context, timeout, conversation=case.conversation)
    try:
        called = await caller.call(request, timeout, repeat=rep)
    except ProviderError as exc:
        message = str(exc)
        if exc.stderr_tail:
            message += STDERR_MARK + exc.stderr_tail[-1000:]
        record["error"] = redact(message, secrets)
        if exc.attempt > 1:
            record["attempts"] = exc.attempt
        record["call_failures"] = [*exc.failures, f"{exc.kind}: {exc.reason}"]
        return Attempt(
            planned.name, case_id, rep, "fail", True, 0.0, {}, None, None, None, None,
            exc.kind, *_scrub(record, secrets),
        )  # fmt: skip
    output = called.output
    latency = None if called.cache == "hit" else round(clock.monotonic() - t0, 4)
    usage = agent_usage(output, agent, env.pricing)
    inputs = case.case.grader_inputs()
    judge_for = None
    if judge is not None:
        judge_context = CallContext(case_id, judge.agent.name, planned.name)
        judge_for = rerunnable_judge(judge, judge_context, env.judge_timeout)

    ctx = GradeContext(
        case_id=case_id,
        prompt=case.prompt,
        judge=judge_for(0) if judge_for is not None else None,
        latency_seconds=latency,
        cost=usage.cost if usage is not None else None,
        tool_calls=tuple(output.tool_calls),
        inputs=inputs,
        functions=env.functions,
    )
    grades: dict[str, Grade] = {}
    blocking: dict[str, bool] = {}
    gates: set[str] = set()
    error: GradeError | None = None
    error_grader: GraderType | None = None
    error_key = ""
    for spec in case.graders:
        grader = graders.get(spec.type)
        key = grade_key(spec.name or spec.type, grades)
        may_block = not grader.needs_judge or (
            env.gate is not None and env.gate.blocks(spec.type, spec.config)
        )
        blocking[key] = spec.blocking is not False and may_block
        if grader.needs_judge and ctx.judge is None:
            grades[key] = Grade(weight=spec.weight, skipped=True, reason="no judge for this run")
            continue
        try:
            grade = await grade_with_reruns(
                grader, suite_config(suite, spec, grader), output.text, ctx,
                reruns=env.judge_reruns, judge_for=judge_for,
            )  # fmt: skip
        except GradeError as exc:
            error, error_grader, error_key = exc, grader, key
            break
        if grade.flag("gate"):
            gates.add(key)
        # a copy only to change the weight: most graders keep the default (a copy a grade cost
        # ~10 µs, a twentieth of a case's CPU)
        same = grade.weight == spec.weight
        grades[key] = grade if same else grade.model_copy(update={"weight": spec.weight})
    prompt_tokens = usage.prompt_tokens if usage is not None else None
    completion_tokens = usage.completion_tokens if usage is not None else None
    cost = usage.cost if usage is not None else None
    judge_usage = [g.usage for g in _judge_grades(grades).values() if g.usage]
    for u in judge_usage:
        prompt_tokens = (prompt_tokens or 0) + u.get("prompt_tokens", 0)
        completion_tokens = (completion_tokens or 0) + u.get("completion_tokens", 0)
    record.update(_output_record(output.text, secrets))
    if output.model:
        record["model"] = output.model
    warnings = [*output.warnings, *unstable_warnings(grades)]
    if warnings:
        record["warnings"] = warnings
    if any(g.flag("unstable") for g in grades.values()):
        record["unstable"] = True
    if output.tool_calls:
        record["tool_calls"] = [t.model_dump(exclude_none=True) for t in output.tool_calls]
    if called.cache is not None:
        record["cache"] = called.cache
    if called.attempts > 1:
        record["attempts"] = called.attempts
        record["call_failures"] = list(called.failures)
    record["grades"] = {k: g.model_dump(exclude_none=True) for k, g in grades.items()}
    replies = _judge_replies(grades)
    if replies:
        record["judge_replies"] = replies
    scores = {k: g.score for k, g in grades.items()}
    if error is not None:
        assert error_grader is not None
        kind = "config" if error.config else ("judge" if error_grader.needs_judge else "grader")
        record["error"] = f"case {case_id!r}: {error}"
        blocks = kind != "judge" or blocking[error_key]
        return Attempt(
            planned.name, case_id, rep, "error", blocks, None, scores, latency, prompt_tokens,
            completion_tokens, cost, kind, *_scrub(record, secrets),
        )  # fmt: skip
    ran = {k: g for k, g in grades.items() if g.score is not None}
    if not ran:
        record["error"] = "every grader was skipped (no judge for this run)"
        return Attempt(
            planned.name, case_id, rep, "error", False, None, scores, latency, prompt_tokens,
            completion_tokens, cost, "no_graders", *_scrub(record, secrets),
        )  # fmt: skip
    passed, score = _passes(ran, gates, case.threshold)
    blockers = {k: g for k, g in ran.items() if blocking[k]}
    passed_blocking = not blockers or _passes(blockers, gates, case.threshold)[0]
    if not passed:
        record["why"] = _why(ran, gates, case.threshold, score)
        if passed_blocking:
            record["advisory"] = True
    return Attempt(
        planned.name, case_id, rep, "pass" if passed else "fail",
        not passed_blocking, round(score, 6), scores, latency,
        prompt_tokens, completion_tokens, cost, None, *_scrub(record, secrets),
    )  # fmt: skip


async def _run_compat_attempt(
    suite: SuiteRun, case: SuiteCase, rep: int, env: RunEnv
) -> Attempt | None:
    """A compat suite's line, by its kind's rules (:mod:`coalmine.evals.compat`)."""
    planned = suite.planned
    assert case.compat is not None
    agent = env.agents[case.agent] if case.agent else planned.default_agent
    judge = None
    if env.judge is not None:
        context = CallContext(case.case.id, env.judge.agent.name, planned.name)
        judge = judge_fn_for(env.judge, context, env.judge_timeout, repeat=rep)
    attempt = await env.compat[case.compat].run(
        case,
        rep,
        suite=planned.name,
        suite_path=planned.index.path,
        meta=planned.index.meta,
        caller=env.caller(agent) if agent is not None else None,
        judge=judge,
        judge_blocks=env.gate.blocks if env.gate is not None else None,
    )
    if attempt is None:
        return None
    record, encoded = _scrub(attempt.record, env.secrets)
    return attempt._replace(record=record, record_json=encoded)


async def finish_compat_attempts(env: RunEnv) -> list[Attempt]:
    """The attempts the compat runners held back until every line ran, scrubbed."""
    found = []
    for runner in env.compat.values():
        for attempt in await runner.finish():
            record, encoded = _scrub(attempt.record, env.secrets)
            found.append(attempt._replace(record=record, record_json=encoded))
    return found


def suite_config(suite: SuiteRun, spec: GraderSpec, grader: GraderType) -> Any:
    """The validated config of ``spec`` (a suite-wide grader's is validated once)."""
    found = suite.configs.get(id(spec))
    if found is None:
        found = grader.config.model_validate(spec.config)
        if any(spec is g for g in suite.planned.index.meta.graders):
            suite.configs[id(spec)] = found
    return found


def _passes(
    grades: Mapping[str, Grade], gates: set[str], threshold: float | None
) -> tuple[bool, float]:
    """(passed, weighted score) by the suite's rule; gates must pass either way.

    Graders whose weights sum to 0 (weight-0 graders that may block, say) have no weighted
    score: it is 0, and they pass when every one of them passes.
    """
    weighted = [(g.weight, g.score or 0.0) for g in grades.values()]
    if sum(w for w, _ in weighted) <= 0:
        return all(g.passed for g in grades.values()), 0.0
    score = composite_score(weighted)
    if any(not grades[k].passed for k in gates if k in grades):
        return False, score
    if threshold is None:
        return all(g.passed for g in grades.values()), score
    return score >= threshold - EPSILON, score


def _why(
    grades: Mapping[str, Grade], gates: set[str], threshold: float | None, score: float
) -> str:
    failed = [k for k, g in grades.items() if not g.passed]
    parts = []
    if threshold is not None and score < threshold - EPSILON:
        parts.append(f"score {score:.3f} < threshold {threshold:g}")
    for key in failed:
        detail = grades[key].explain()
        gate = " (a gate)" if key in gates else ""
        parts.append(f"{key}{gate} failed" + (f": {detail}" if detail else ""))
    return "; ".join(parts)[:1000]


def _compared_with(case: SuiteCase) -> dict[str, Any]:
    """What the case's graders compare the output with, and its tags.

    They are kept in the record, so a stored run shows them as they were when it ran (the suite
    file may change since).
    """
    c = case.case
    found = {
        "expected": c.expected,
        "expected_tool_calls": c.expected_tool_calls,
        "forbidden_tools": c.forbidden_tools,
        "tags": c.tags or None,
    }
    return {k: v for k, v in found.items() if v is not None}


def _judge_replies(grades: Mapping[str, Grade]) -> dict[str, list[str]]:
    """Each judge grade's raw replies, in call order (what the judge said, word for word)."""
    return {
        key: [call.reply for call in grade.calls if call.reply is not None]
        for key, grade in _judge_grades(grades).items()
        if any(c.reply is not None for c in grade.calls)
    }


def _judge_grades(grades: Mapping[str, Grade]) -> dict[str, JudgeGrade]:
    """The grades a judge gave (``llm-judge``, ``llm-rubric`` …).

    Where every grade is a plain ``Grade`` no judge grader ran, and the judge's module (a
    start-up cost of 20 ms with the rubric's) is not imported for the answer.
    """
    if all(type(g) is Grade for g in grades.values()):
        return {}
    from coalmine.graders.llm_judge import JudgeGrade

    return {k: g for k, g in grades.items() if isinstance(g, JudgeGrade)}


def _output_record(text: str, secrets: list[str]) -> dict[str, Any]:
    shown = redact(text[:OUTPUT_LIMIT], secrets)
    record: dict[str, Any] = {"output": shown}
    if len(text) > OUTPUT_LIMIT:
        record["output_truncated"] = True
    return record


def _scrub(record: dict[str, Any], secrets: list[str]) -> tuple[dict[str, Any], str]:
    """The record scrubbed of secrets in every string (JSON escapes included), and its JSON."""
    return redact_encoded(record, secrets)
