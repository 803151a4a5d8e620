"""Run canaries end to end: call each agent, grade, gate, store, write the result file.

The procedure of seed 000, recorded in the run store as it goes: every selected spec's prompt
goes byte for byte to the agent its phase routes to, and each case is committed to the store
the moment it is graded, so a crash loses at most the cases in flight. Canaries run one at a
time unless ``jobs`` says otherwise. When ``stop`` is set the work in flight is cancelled (its
processes killed) and the run is marked interrupted; ``resume`` finishes such a run (or one that
was killed) by running only the cases it has no result for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import anyio

from coalmine._util.clock import Clock, SystemClock, format_utc
from coalmine.canary.case import run_case
from coalmine.canary.lessons import recall_for_canaries, retain_canary_regression
from coalmine.canary.plan import RESULTS_DIR, CanaryPlan, PlannedCanary, require_judge
from coalmine.engine.call import Caller
from coalmine.engine.events import (
    CaseEnd,
    CaseStart,
    Hooks,
    LessonsRecalled,
    RunEnd,
    RunStart,
    emit,
)
from coalmine.engine.execute import run_bounded
from coalmine.engine.grading import (
    judge_gate,
    load_python_graders,
    rerunnable_judge,
    summarize_gate,
)
from coalmine.engine.policy import JudgeGate
from coalmine.engine.verdict import exit_code
from coalmine.engine.wiring import (
    Wiring,
    coalmine_version,
    describe_judge,
    ending_run,
    recording_run_agents,
    require_variables,
    secret_values,
    start_run_record,
)
from coalmine.errors import UsageError
from coalmine.graders.base import registry as graders
from coalmine.providers.base import CallContext
from coalmine.providers.replay import Cassette
from coalmine.reports.json import find_result_file, write_result_file
from coalmine.results import CanaryRun, CaseResult, InvalidSpecRecord, JudgeInfo, RunTotals
from coalmine.specs.loader import InvalidSpec
from coalmine.store.cache import ResponseCache
from coalmine.store.runs import Store

_SKIP_REASONS = {
    "disabled": "the judge is disabled for this run",
    "none": "the config says judge: none",
}


@dataclass(frozen=True, repr=False)
class CanaryOutcome:
    """What a run produced: the run record, where it was written, and the exit code."""

    run: CanaryRun
    results_path: Path | None
    exit_code: int

    def __repr__(self) -> str:
        # Kept short on purpose: asyncio formats the repr of the main task's result when a
        # run ends (signal.getsignal in asyncio.Runner), and a full repr of 10,000 results
        # cost seconds.
        return (
            f"CanaryOutcome(run_id={self.run.run_id!r}, cases={len(self.run.results)}, "
            f"exit_code={self.exit_code})"
        )


async def run_canaries(
    plan: CanaryPlan,
    *,
    store: Store | None = None,
    resume: str | None = None,
    jobs: int | None = None,
    no_judge: bool = False,
    cache: bool = False,
    hooks: Sequence[Hooks] = (),
    clock: Clock | None = None,
    stop: anyio.Event | None = None,
    results_dir: Path | None = None,
    command_line: Sequence[str] = (),
    record: Path | None = None,
    replay: Path | None = None,
    max_cost: float | None = None,
    judge_reruns: int = 1,
) -> CanaryOutcome:
    """Run the canaries of ``plan``, record them in ``store``, write the result file.

    Args:
        plan: from ``plan_canaries``.
        store: the run store (without one, nothing can be resumed or cached).
        resume: the id of an unfinished run of ``store`` to finish.
        jobs: canaries in flight at once (default: the config's ``defaults.jobs``, 1).
        no_judge: skip llm-judge graders even when a judge is configured.
        cache: answer from (and fill) the store's response cache.
        hooks: event subscribers (displays, plugins).
        clock: the time source (tests pin it).
        stop: set it to stop the run; finished canaries are kept.
        results_dir: where the result file goes (default ``<root>/bench/results``).
        command_line: recorded with the run.
        record: write every answer agents and the judge really gave to this cassette.
        replay: answer every call from this cassette; nothing is called, no network is used.
        max_cost: stop (resumably) before starting a case once the run has cost this much.
        judge_reruns: ask the judge this many times per judge grade; the majority decides.

    Raises:
        ConfigError: a canary needs a judge and none is configured, an agent cannot be built,
            or an agent (or the judge) it uses lacks an environment variable.
        UsageError: ``resume`` names a finished run, or is given without a store.
    """
    config = plan.config
    require_judge(plan, disabled=no_judge)
    needs_judge = not no_judge and any(c.needs_judge for c in plan.canaries)
    judge_agent = config.judge if needs_judge else None
    if replay is None:  # a replay calls nothing, so it needs no variable
        require_variables([*(c.agent for c in plan.canaries), judge_agent])
    functions = load_python_graders(config)
    clock = clock or SystemClock()
    t0 = clock.monotonic()
    judge_info = describe_judge(config, no_judge)
    stored = _RunRecord.open(
        store, resume, plan, clock, judge_info, {"jobs": jobs, "no_judge": no_judge,
                                                  "cache": cache}, command_line,
    )  # fmt: skip
    secrets = secret_values(config)
    with ending_run(store, stored.run_id, kind="canary", clock=clock, secrets=secrets):
        todo = [(i, c) for i, c in enumerate(plan.canaries) if c.loaded.id not in stored.done]
        response_cache = ResponseCache(store) if cache and store is not None else None
        wiring = Wiring(
            response_cache,
            tuple(secrets),
            Cassette.load(record, must_exist=False) if record else None,
            Cassette.load(replay) if replay else None,
        )
        callers: dict[str, Caller] = {}
        judge: Caller | None = None
        gate: JudgeGate | None = None
        results: dict[int, CaseResult] = {}
        stop = stop or anyio.Event()
        spent = sum(u.cost or 0.0 for r in stored.done.values() for u in r.usage.values())
        over_budget = False
        skip_reason = _SKIP_REASONS.get(judge_info.mode, "no judge is configured")
        lessons = recall_for_canaries(store, plan, root=config.root) if store is not None else []
        try:
            for _, canary in todo:
                if canary.agent.name not in callers:
                    callers[canary.agent.name] = wiring.caller(canary.agent)
            if judge_agent is not None:
                # A judge that is one of the agents shares that agent's caller, and so its limits.
                judge = callers.get(judge_agent.name) if judge_agent.name in config.agents else None
                judge = judge or wiring.caller(judge_agent)
                gate = judge_gate(store, judge, configured_blocking=config.judge_blocking)
                for canary in plan.canaries:  # decided before the run, so its start can say it
                    for g in canary.loaded.spec.expected.graders:
                        if graders.get(g.type).needs_judge:
                            gate.policy(g.type, g.config)
                judge_info = summarize_gate(gate, judge_info)
            total = len(todo)
            if lessons:
                await emit(hooks, "on_lessons_recalled", LessonsRecalled(tuple(lessons)))
            await emit(
                hooks,
                "on_run_start",
                RunStart(total, len(plan.invalid), judge_info.describe(), len(stored.done)),
            )

            async def work(index: int, item: tuple[int, PlannedCanary]) -> None:
                nonlocal spent, over_budget
                position, canary = item
                if max_cost is not None and spent >= max_cost:
                    over_budget = True
                    stop.set()  # what is in flight is cancelled; the run can be resumed
                    return
                await emit(
                    hooks,
                    "on_case_start",
                    CaseStart(index, total, canary.loaded.id, canary.agent.name),
                )
                judge_for = None
                if judge is not None:
                    spec = canary.loaded.spec
                    context = CallContext(spec.id, judge.agent.name, spec.phase)
                    judge_for = rerunnable_judge(
                        judge, context, config.defaults.judge_timeout_seconds
                    )
                outcome = await run_case(
                    canary,
                    callers[canary.agent.name],
                    judge_for(0) if judge_for is not None else None,
                    position=position,
                    clock=clock,
                    secrets=secrets,
                    skip_reason=skip_reason,
                    gate=gate,
                    pricing=config.pricing,
                    judge_model=judge_info.model,
                    functions=functions,
                    judge_reruns=judge_reruns,
                    judge_for=judge_for,
                )
                spent += sum(u.cost or 0.0 for u in outcome.result.usage.values())
                if store is not None and stored.run_id is not None:
                    store.record_case(stored.run_id, outcome.result, outcome.extras)
                results[position] = outcome.result
                await emit(hooks, "on_case_end", CaseEnd(index, total, outcome.result))

            with recording_run_agents(store, stored.run_id):
                interrupted = await run_bounded(
                    todo, work, jobs=jobs or config.defaults.jobs, stop=stop
                )
            interrupted = interrupted or over_budget
        finally:
            with anyio.CancelScope(shield=True):
                for caller in {id(c): c for c in [*callers.values(), judge] if c}.values():
                    await caller.provider.aclose()
        ordered = _in_order(plan, results, stored.done)
        invalid = [_invalid_record(i, config.root) for i in plan.invalid]
        summary = RunTotals.of(ordered, invalid=len(invalid))

        def build(label: str) -> CanaryRun:
            return CanaryRun(
                run_id=label,
                timestamp=format_utc(stored.started),
                summary=summary,
                results=ordered,
                invalid_specs=invalid,
                interrupted=interrupted,
                judge=judge_info,
                duration_seconds=round(clock.monotonic() - t0, 3),
                coalmine_version=coalmine_version(),
                store_run_id=stored.run_id,
                stopped="max_cost" if over_budget else None,
                lessons=lessons,
            )

        folder = results_dir or config.root / RESULTS_DIR
        own = stored.results_file
        if own is None and stored.run_id is not None and stored.resumed:  # killed before noting it
            own = find_result_file(folder, stored.started, stored.run_id)
        path, run = write_result_file(folder, stored.started, build, reuse=own)
        if store is not None and stored.run_id is not None:
            if not interrupted:  # before finish_run: a run killed in between retains on resume
                retain_canary_regression(store, run, root=config.root)
            store.finish_run(
                stored.run_id,
                status="interrupted" if interrupted else "finished",
                ended_at=clock.now(),
                summary=summary,
                invalid=invalid,
                label=run.run_id,
                results_file=str(path),
            )
        await emit(hooks, "on_run_end", RunEnd(run, path))
        return CanaryOutcome(run, path, exit_code(run))


@dataclass(frozen=True)
class _RunRecord:
    """The store's view of this run: its id, start, and the cases already done."""

    run_id: str | None
    started: datetime
    done: dict[str, CaseResult]
    results_file: Path | None = None
    resumed: bool = False

    @classmethod
    def open(
        cls,
        store: Store | None,
        resume: str | None,
        plan: CanaryPlan,
        clock: Clock,
        judge: JudgeInfo,
        options: dict[str, object],
        command_line: Sequence[str],
    ) -> _RunRecord:
        if resume is not None:
            if store is None:
                raise UsageError("a run can only be resumed from a run store")
            info = store.get_run(resume, kind="canary")
            if info.status == "finished":
                raise UsageError(f"run {info.id} already finished; there is nothing to resume")
            store.reopen_run(info.id)
            done = {r.id: r for r in store.case_results(info.id)}
            file = Path(info.results_file) if info.results_file else None
            return cls(info.id, datetime.fromisoformat(info.started_at), done, file, resumed=True)
        started = clock.now()
        if store is None:
            return cls(None, started, {})
        run_id = start_run_record(
            store, "canary", plan.config, started, command_line, plan.selectors, options, judge
        )
        return cls(run_id, started, {})


def _in_order(
    plan: CanaryPlan, results: dict[int, CaseResult], done: dict[str, CaseResult]
) -> list[CaseResult]:
    """The plan's order; results of a resumed run that the plan no longer has go last."""
    ordered = []
    for position, canary in enumerate(plan.canaries):
        found = results.get(position) or done.get(canary.loaded.id)
        if found is not None:
            ordered.append(found)
    planned = {c.loaded.id for c in plan.canaries}
    return ordered + [r for r in done.values() if r.id not in planned]


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
