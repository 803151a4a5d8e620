"""Run eval suites: many cases in flight, streamed to the store, summarised per suite.

The engine keeps ``concurrency`` cases in flight (and each agent within its own limits) with
one queue drawn by that many workers. A case is read from its suite file when a worker takes
it, and its result goes to the store in batches the moment it is graded, so memory does not
grow with the suite (a batch is committed on a timer too, so a process killed outright loses
at most its last half second). When a run is interrupted the pending batch is committed and the
run can be resumed: only the case runs it has no row for are run again. Each suite's summary is
computed from the stored rows and written as ``coalmine.eval.result.v1`` JSON.

A case run passes when every grader passes (or, with a ``threshold``, when the weighted score
reaches it); a grader that is a gate (``forbidden-tools``) must pass either way. An agent that
fails (crash, timeout, garbage) fails the case; a grader that cannot grade (a missing input, a
judge that fails) makes it an error, which is not scored but is counted and fails the suite.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from coalmine._util.clock import Clock, SystemClock
from coalmine._util.secrets import redact, redact_data
from coalmine.config import AgentConfig, Price
from coalmine.engine.call import Caller
from coalmine.engine.costs import agent_usage
from coalmine.engine.events import EvalEnd, EvalProgress, EvalStart, Hooks, LessonsRecalled, emit
from coalmine.engine.execute import periodically, run_bounded
from coalmine.engine.grading import (
    grade_key,
    grade_with_reruns,
    judge_fn_for,
    judge_gate,
    load_python_graders,
    rerunnable_judge,
    unstable_warnings,
)
from coalmine.engine.policy import JudgeGate
from coalmine.engine.verdict import EPSILON, composite_score
from coalmine.engine.wiring import (
    Wiring,
    describe_judge,
    ending_run,
    recording_run_agents,
    require_variables,
    secret_values,
    start_run_record,
)
from coalmine.errors import GradeError, ProviderError, UsageError
from coalmine.evals.compat import CompatRunner, get_compat_kind
from coalmine.evals.lessons import recall_for_suites, retain_eval_regression
from coalmine.evals.plan import EvalPlan, PlannedSuite, plan_agents, require_eval_judge
from coalmine.evals.summary import STDERR_MARK, write_suite_result
from coalmine.graders.base import GradeContext, GraderType
from coalmine.graders.base import registry as graders
from coalmine.graders.llm_judge import JudgeGrade
from coalmine.lessons.recall import merge_recalled
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.providers.replay import Cassette
from coalmine.results import (
    OUTPUT_LIMIT,
    EvalSuiteResult,
    Grade,
)
from coalmine.specs.models import GraderSpec
from coalmine.specs.suite import SuiteCase
from coalmine.store.cache import ResponseCache
from coalmine.store.evals import (
    Attempt,
    AttemptWriter,
    done_attempts,
    end_run,
)
from coalmine.store.runs import Store

REPORTS_DIR = Path(".coalmine") / "reports" / "evals"
DEFAULT_CONCURRENCY = 16
PROGRESS_EVERY = 0.1
"""Seconds between progress events (a display need not hear of every case)."""


@dataclass(frozen=True, repr=False)
class EvalOutcome:
    """What an eval run produced."""

    run_id: str
    suites: list[EvalSuiteResult]
    paths: list[Path]
    exit_code: int
    interrupted: bool

    def __repr__(self) -> str:
        return f"EvalOutcome(run_id={self.run_id!r}, suites={len(self.suites)})"


@dataclass
class _Counts:
    done: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    last_emit: float = 0.0
    suite: str | None = None
    latest_failure: str | None = None


@dataclass
class _Suite:
    """A planned suite with what the engine caches for it."""

    planned: PlannedSuite
    configs: dict[int, Any] = field(default_factory=dict)
    """Validated grader configs of the suite's own graders, by ``id`` of their spec."""


async def run_evals(
    plan: EvalPlan,
    *,
    store: Store,
    concurrency: int = DEFAULT_CONCURRENCY,
    resume: str | None = None,
    no_judge: bool = False,
    cache: bool = False,
    judge_reruns: int = 1,
    hooks: Sequence[Hooks] = (),
    clock: Clock | None = None,
    stop: anyio.Event | None = None,
    cancel: anyio.Event | None = None,
    reports_dir: Path | None = None,
    command_line: Sequence[str] = (),
    record: Path | None = None,
    replay: Path | None = None,
) -> EvalOutcome:
    """Run every selected case of ``plan``; store, summarise and write each suite's result.

    ``record`` writes every answer agents and the judge give to a cassette; ``replay``
    answers every call from one (nothing is called; repeats get the recorded answer).

    ``stop`` stops the run gracefully: no case starts after it, and the cases in flight finish
    (so a resumed run never calls a case twice). ``cancel`` stops it at once: the cases in
    flight are cancelled (their processes killed) and run again on resume.

    Raises:
        ConfigError: a suite needs a judge and none is configured, an agent cannot be built, or
            an agent (or the judge) it uses lacks an environment variable.
        UsageError: ``resume`` names a finished run or a run of another kind.
    """
    config = plan.config
    require_eval_judge(plan, disabled=no_judge)
    judge_agent = None if no_judge or not any(s.needs_judge for s in plan.suites) else config.judge
    if replay is None:  # a replay calls nothing, so it needs no variable
        require_variables([*plan_agents(plan), judge_agent])
    functions = load_python_graders(config)  # before the run is recorded: a bad one stops it here
    clock = clock or SystemClock()
    run_id, started, done = _open_run(store, resume, plan, clock, command_line, concurrency)
    secrets = tuple(secret_values(config))
    with ending_run(store, run_id, kind="eval", clock=clock, secrets=secrets):
        stop = stop or anyio.Event()
        exhausted = False
        wiring = Wiring(
            ResponseCache(store) if cache else None,
            secrets,
            Cassette.load(record, must_exist=False) if record else None,
            Cassette.load(replay) if replay else None,
        )
        callers: dict[str, Caller] = {}
        judge: Caller | None = None
        judge_info = describe_judge(config, no_judge)
        gate: JudgeGate | None = None
        if judge_agent is not None:
            judge = wiring.caller(judge_agent)
            if judge_agent.name in config.agents:
                callers[judge_agent.name] = judge  # an agent that also judges shares its limits
            gate = judge_gate(store, judge, configured_blocking=config.judge_blocking)
        suites = [_Suite(s) for s in plan.suites]
        kinds = dict.fromkeys(s.index.meta.compat for s in plan.suites if s.index.meta.compat)
        compat: dict[str, CompatRunner] = {
            kind: get_compat_kind(kind).runner(
                timeout=config.defaults.timeout_seconds,
                pricing=config.pricing,
                clock=clock,
                root=config.root,
            )
            for kind in kinds
        }
        writer = AttemptWriter(store, run_id)
        counts = _Counts()
        total = plan.attempts
        env = _Env(
            config.agents,
            functions,
            callers,
            wiring,
            judge,
            gate,
            clock,
            list(secrets),
            config.defaults.timeout_seconds,
            config.defaults.judge_timeout_seconds,
            config.pricing,
            judge_reruns,
            compat,
        )

        def items() -> Iterator[tuple[_Suite, SuiteCase, int]]:
            nonlocal exhausted
            for suite in suites:
                index = suite.planned.index
                with index.path.open("rb") as handle:
                    for position in range(len(index)):
                        case_id = index.ids[position]
                        reps = [
                            r
                            for r in range(suite.planned.repeats)
                            if (suite.planned.name, case_id, r) not in done
                        ]
                        if not reps:
                            continue
                        case = index.read(position, handle)
                        for rep in reps:
                            if stop.is_set():
                                return
                            yield suite, case, rep
            exhausted = True

        async def work(_: int, item: tuple[_Suite, SuiteCase, int]) -> None:
            suite, case, rep = item
            attempt = await _run_attempt(suite, case, rep, env)
            writer.add(attempt)
            counts.done += 1
            counts.suite = attempt.suite
            if attempt.status == "pass":
                counts.passed += 1
            elif attempt.status == "fail":
                counts.failed += 1
            else:
                counts.errored += 1
            if attempt.status != "pass":
                why = str(
                    attempt.record.get("why") or attempt.record.get("error") or attempt.status
                )
                counts.latest_failure = f"{attempt.suite}/{attempt.case_id}: {why.splitlines()[0]}"
            now = clock.monotonic()
            if now - counts.last_emit >= PROGRESS_EVERY:
                counts.last_emit = now
                await emit(hooks, "on_eval_progress", _progress(counts, total, len(done)))

        lessons = recall_for_suites(store, plan.suites, root=config.root)
        recalled = merge_recalled(lessons.values())
        if recalled:
            await emit(hooks, "on_lessons_recalled", LessonsRecalled(recalled))
        await emit(
            hooks,
            "on_eval_start",
            EvalStart(
                total=total,
                resumed=len(done),
                suites=tuple(s.name for s in plan.suites),
                bad_lines=sum(len(s.index.bad) for s in plan.suites),
                concurrency=concurrency,
                judge=judge_info.describe(),
            ),
        )
        interrupted = False
        try:
            # what finished is kept within the writer's interval, and at the end whatever stopped it
            with recording_run_agents(store, run_id):
                async with periodically(writer.flush, every=writer.interval):
                    cancelled = await run_bounded(items(), work, jobs=concurrency, stop=cancel)
            interrupted = cancelled or not exhausted
        finally:
            with anyio.CancelScope(shield=True):
                for runner in compat.values():
                    await runner.aclose()
                for c in {id(c): c for c in [*callers.values(), judge] if c}.values():
                    await c.provider.aclose()
        await emit(hooks, "on_eval_progress", _progress(counts, total, len(done)))
        ended = clock.now()
        results, paths = [], []
        for suite in plan.suites:
            result, path = write_suite_result(
                store,
                run_id,
                suite,
                started=started,
                ended=ended,
                reports_dir=reports_dir or config.root / REPORTS_DIR,
                root=config.root,
                interrupted=interrupted,
                judged=judge is not None,
                lessons=lessons.get(suite.name, []),
            )
            results.append(result)
            paths.append(path)
            if not interrupted:  # before end_run: a run killed in between retains on resume
                retain_eval_regression(store, run_id, suite, root=config.root)
        end_run(
            store,
            run_id,
            status="interrupted" if interrupted else "finished",
            ended_at=ended,
            results_file=str(paths[0]) if paths else None,
        )
        code = eval_exit_code(results, plan, interrupted)
        await emit(hooks, "on_eval_end", EvalEnd(run_id, tuple(results), tuple(paths), interrupted))
        return EvalOutcome(run_id, results, paths, code, interrupted)


def _progress(counts: _Counts, total: int, resumed: int) -> EvalProgress:
    return EvalProgress(
        done=counts.done + resumed,
        total=total,
        passed=counts.passed,
        failed=counts.failed,
        errored=counts.errored,
        suite=counts.suite,
        latest_failure=counts.latest_failure,
    )


def eval_exit_code(results: Sequence[EvalSuiteResult], plan: EvalPlan, interrupted: bool) -> int:
    """3 interrupted, 2 a suite or line could not be used, 1 a blocking suite failed, else 0."""
    if interrupted:
        return 3
    if plan.broken or any(r.bad_lines for r in results):
        return 2
    if any(r.blocking and r.verdict == "fail" for r in results):
        return 1
    return 0


def _open_run(
    store: Store,
    resume: str | None,
    plan: EvalPlan,
    clock: Clock,
    command_line: Sequence[str],
    concurrency: int,
) -> tuple[str, datetime, set[tuple[str, str, int]]]:
    if resume is not None:
        info = store.get_run(resume, kind="eval")
        if info.status == "finished":
            raise UsageError(f"run {info.id} already finished; there is nothing to resume")
        store.reopen_run(info.id)
        return info.id, datetime.fromisoformat(info.started_at), done_attempts(store, info.id)
    sel = plan.selection
    started = clock.now()
    options: dict[str, object] = {
        "filters": list(sel.filters),
        "limit": sel.limit,
        "shuffle": sel.shuffle,
        "repeats": sel.repeats,
        "reducer": sel.reducer,
        "concurrency": concurrency,
    }
    run_id = start_run_record(
        store, "eval", plan.config, started, command_line, plan.names, options
    )
    return run_id, started, set()


# -- one case run -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Env:
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

    def caller(self, agent: AgentConfig) -> Caller:
        """The caller of ``agent`` (one per agent, so its limits hold across the run)."""
        found = self.callers.get(agent.name)
        if found is None:
            found = self.callers[agent.name] = self.wiring.caller(agent)
        return found


async def _run_attempt(suite: _Suite, case: SuiteCase, rep: int, env: _Env) -> Attempt:
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
    request = AgentRequest(case.prompt, CallContext(case_id, agent.name, planned.name), timeout)
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
            exc.kind, _scrub(record, secrets),
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
        if getattr(grade, "gate", False):
            gates.add(key)
        grades[key] = grade.model_copy(update={"weight": spec.weight})
    prompt_tokens = usage.prompt_tokens if usage is not None else None
    completion_tokens = usage.completion_tokens if usage is not None else None
    cost = usage.cost if usage is not None else None
    judge_usage = [g.usage for g in grades.values() if isinstance(g, JudgeGrade) and g.usage]
    for u in judge_usage:
        prompt_tokens = (prompt_tokens or 0) + u.get("prompt_tokens", 0)
        completion_tokens = (completion_tokens or 0) + u.get("completion_tokens", 0)
    record.update(_output_record(output.text, secrets))
    if output.model:
        record["model"] = output.model
    warnings = [*output.warnings, *unstable_warnings(grades)]
    if warnings:
        record["warnings"] = warnings
    if any(getattr(g, "unstable", False) for g in grades.values()):
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
            completion_tokens, cost, kind, _scrub(record, secrets),
        )  # fmt: skip
    ran = {k: g for k, g in grades.items() if g.score is not None}
    if not ran:
        record["error"] = "every grader was skipped (no judge for this run)"
        return Attempt(
            planned.name, case_id, rep, "error", False, None, scores, latency, prompt_tokens,
            completion_tokens, cost, "no_graders", _scrub(record, secrets),
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
        prompt_tokens, completion_tokens, cost, None, _scrub(record, secrets),
    )  # fmt: skip


async def _run_compat_attempt(suite: _Suite, case: SuiteCase, rep: int, env: _Env) -> Attempt:
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
    return attempt._replace(record=_scrub(attempt.record, env.secrets))


def suite_config(suite: _Suite, spec: GraderSpec, grader: GraderType) -> Any:
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
        for key, grade in grades.items()
        if isinstance(grade, JudgeGrade) and any(c.reply is not None for c in grade.calls)
    }


def _output_record(text: str, secrets: list[str]) -> dict[str, Any]:
    shown = redact(text[:OUTPUT_LIMIT], secrets)
    record: dict[str, Any] = {"output": shown}
    if len(text) > OUTPUT_LIMIT:
        record["output_truncated"] = True
    return record


def _scrub(record: dict[str, Any], secrets: list[str]) -> dict[str, Any]:
    """Scrub secrets from every string of the record (JSON escapes included)."""
    return redact_data(record, secrets)
