"""Run eval suites: many cases in flight, streamed to the store, summarised per suite.

The engine keeps ``concurrency`` cases in flight (and each agent within its own limits) with
one queue drawn by that many workers. A case is read from its suite file when a worker takes
it, and its result goes to the store in batches the moment it is graded, so memory does not
grow with the suite (a batch is committed on a timer too, so a process killed outright loses
at most its last half second). When a run is interrupted the pending batch is committed and the
run can be resumed: only the case runs it has no row for are run again. A compat runner may hold
a line back until every line ran (promptfoo's ``max-score`` compares a test's columns, which are
lines of several suites); it is stored then, and run again on resume. Each suite's summary is
computed from the stored rows and written as ``coalmine.eval.result.v1`` JSON.

One case run is :mod:`coalmine.evals.attempt`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import BinaryIO

import anyio

from coalmine._util.clock import Clock, SystemClock
from coalmine._util.secrets import redact
from coalmine.backends.engine import EngineSpec
from coalmine.backends.shards import Backend, run_sharded, sharded
from coalmine.engine.call import Caller
from coalmine.engine.events import EvalEnd, EvalProgress, EvalStart, Hooks, LessonsRecalled, emit
from coalmine.engine.execute import periodically, run_bounded
from coalmine.engine.grading import (
    judge_gate,
    load_python_graders,
)
from coalmine.engine.policy import JudgeGate
from coalmine.engine.wiring import (
    Wiring,
    describe_judge,
    ending_run,
    recording_run_agents,
    require_variables,
    secret_values,
    start_run_record,
)
from coalmine.errors import UsageError
from coalmine.evals.attempt import RunEnv, SuiteRun, finish_compat_attempts, run_attempt
from coalmine.evals.compat import CompatRunner, get_compat_kind
from coalmine.evals.judged import Labels
from coalmine.evals.lessons import recall_for_suites, retain_eval_regression
from coalmine.evals.plan import EvalPlan, plan_agents, require_eval_judge
from coalmine.evals.sequential import Stopping, sequences_for
from coalmine.evals.shard import ENGINE, CaseItem, shard_capacity, shard_spec
from coalmine.evals.summary import write_suite_result
from coalmine.lessons.recall import merge_recalled
from coalmine.providers.replay import Cassette
from coalmine.results import (
    EvalSuiteResult,
)
from coalmine.specs.suite import SuiteCase
from coalmine.store.cache import ResponseCache
from coalmine.store.evals import (
    Attempt,
    AttemptWriter,
    DoneAttempts,
    KeptVerdicts,
    case_verdicts,
    done_attempts,
    end_run,
    iter_attempts,
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
    lost: list[str] = field(default_factory=list)
    """Why each shard lost mid-run was lost (its cases ran on the others)."""

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
    workers: int = 1,
    backend: Backend | None = None,
    stopping: Stopping | None = None,
    labels: Labels | None = None,
) -> EvalOutcome:
    """Run every selected case of ``plan``; store, summarise and write each suite's result.

    ``record`` writes every answer agents and the judge give to a cassette; ``replay``
    answers every call from one (nothing is called; repeats get the recorded answer).
    ``workers`` above 1 spreads the cases over that many shards on ``backend`` (worker
    processes by default; :func:`~coalmine.evals.shard.choose_workers` says how many may run).
    ``stopping`` (``--sequential``) stops a suite's cases once its gate is decided
    (:mod:`coalmine.evals.sequential`); it runs in one process, in the plan's (shuffled) order.
    ``labels`` (people's verdicts by ``suite/case``) correct each judge grader's pass rate.

    ``stop`` stops the run gracefully: no case starts after it, and the cases in flight finish
    (so a resumed run never calls a case twice). ``cancel`` stops it at once: the cases in
    flight are cancelled (their processes killed) and run again on resume.

    Raises:
        ConfigError: a suite needs a judge and none is configured, an agent cannot be built, or
            an agent (or the judge) it uses lacks an environment variable.
        UsageError: ``resume`` names a finished run or a run of another kind; ``stopping`` with
            more than one worker, or with a baseline that kept no per-case verdicts.
    """
    config = plan.config
    if stopping is not None and sharded(workers, backend):
        raise UsageError("--sequential decides as the cases finish, in one process: drop --workers")
    baseline = _baseline_verdicts(store, stopping)
    require_eval_judge(plan, disabled=no_judge)
    judge_agent = None if no_judge or not any(s.needs_judge for s in plan.suites) else config.judge
    if replay is None:  # a replay calls nothing, so it needs no variable
        require_variables([*plan_agents(plan), judge_agent])
    functions = load_python_graders(config)  # before the run is recorded: a bad one stops it here
    clock = clock or SystemClock()
    run_id, started, done = _open_run(
        store, resume, plan, clock, command_line, concurrency, stopping
    )
    sequences = None if stopping is None else sequences_for(plan.suites, stopping, baseline)
    if sequences is not None and resume is not None:  # what the run had decided, again
        for sequence in sequences:
            for attempt in iter_attempts(store, run_id, sequence.suite.name):
                sequence.add(attempt)
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
        suites = [SuiteRun(s) for s in plan.suites]
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
        lost: list[str] = []
        spec = shard_spec(
            plan, gate, no_judge=no_judge, judge_reruns=judge_reruns,
            root="." if backend is not None and backend.kind == "ray" else str(config.root),
        )  # fmt: skip
        env = RunEnv.of(
            config, functions=functions, callers=callers, wiring=wiring, judge=judge, gate=gate,
            clock=clock, secrets=secrets, judge_reruns=judge_reruns, compat=compat,
        )  # fmt: skip

        def todo() -> Iterator[tuple[int, BinaryIO, int, int]]:
            """(suite, its file, position, repeat) of every case run left, until a stop."""
            nonlocal exhausted
            for at, suite in enumerate(suites):
                index = suite.planned.index
                sequence = None if sequences is None else sequences[at]
                with index.path.open("rb") as handle:
                    for position in range(len(index)):
                        case_id = index.ids[position]
                        if sequence is not None and not sequence.wants(case_id):
                            continue
                        reps = [
                            r
                            for r in range(suite.planned.repeats)
                            if (suite.planned.name, case_id, r) not in done
                        ]
                        for rep in reps:
                            if stop.is_set():
                                return
                            yield at, handle, position, rep
            exhausted = True

        def items() -> Iterator[tuple[SuiteRun, SuiteCase, int]]:
            read: tuple[int, int, SuiteCase] | None = None
            for at, handle, position, rep in todo():
                if read is None or read[:2] != (at, position):  # a case's repeats read it once
                    read = at, position, suites[at].planned.index.read(position, handle)
                yield suites[at], read[2], rep

        def lines() -> Iterator[CaseItem]:
            read: tuple[int, int, str] | None = None
            for at, handle, position, rep in todo():
                index = suites[at].planned.index
                if read is None or read[:2] != (at, position):
                    read = at, position, index.raw(position, handle)
                yield at, index.lines[position], read[2], index.ids[position], rep

        async def work(_: int, item: tuple[SuiteRun, SuiteCase, int]) -> None:
            suite, case, rep = item
            attempt = await run_attempt(suite, case, rep, env)
            if attempt is not None:  # None: its compat runner holds it until every line ran
                await add(attempt)

        async def added(_: CaseItem, attempt: Attempt | None) -> None:
            if attempt is not None:
                await add(attempt)

        by_name = {s.suite.name: s for s in sequences or ()}

        async def add(attempt: Attempt) -> None:
            writer.add(attempt)
            if by_name:
                by_name[attempt.suite].add(attempt)
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
                workers=_describe_workers(workers, backend),
            ),
        )
        interrupted = False
        try:
            # what finished is kept within the writer's interval, and at the end whatever stopped it
            with recording_run_agents(store, run_id):
                async with periodically(writer.flush, every=writer.interval):
                    if sharded(workers, backend):
                        engines = [
                            EngineSpec(
                                ENGINE, spec, i, workers, shard_capacity(concurrency, i, workers)
                            )
                            for i in range(workers)
                        ]
                        cancelled = await run_sharded(
                            backend or Backend(), engines, lines(), added, stop=stop,
                            cancel=cancel, scrub=partial(redact, secrets=list(secrets)),
                            lost=lost,
                        )  # fmt: skip
                    else:
                        cancelled = await run_bounded(items(), work, jobs=concurrency, stop=cancel)
                    if not cancelled and exhausted:
                        for attempt in await finish_compat_attempts(env):
                            await add(attempt)
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
        for at, suite in enumerate(plan.suites):
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
                sequence=None if sequences is None else sequences[at],
                seed=plan.selection.shuffle,
                labels=labels,
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
        return EvalOutcome(run_id, results, paths, code, interrupted, lost)


def _baseline_verdicts(store: Store, stopping: Stopping | None) -> dict[str, KeptVerdicts] | None:
    """The baseline run's per-case verdicts, for ``--sequential --baseline``."""
    if stopping is None or stopping.baseline is None:
        return None
    info = store.get_run(stopping.baseline, kind="eval")
    kept = case_verdicts(store, info.id)
    if kept is None:
        raise UsageError(
            f"run {info.id} kept no per-case verdicts of every suite, so it cannot be a "
            "baseline; run the suites again and use that run"
        )
    return kept


def _describe_workers(workers: int, backend: Backend | None) -> str | None:
    """Where the cases run, when not in this process alone ("2 workers", "4 Ray actors")."""
    if backend is not None and backend.kind == "ray":
        return f"{workers} Ray actor{'s' if workers != 1 else ''}"
    return f"{workers} workers" if workers > 1 else None


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
    stopping: Stopping | None,
) -> tuple[str, datetime, DoneAttempts | set[tuple[str, str, int]]]:
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
        "sequential": None if stopping is None else stopping.options(),
    }
    run_id = start_run_record(
        store, "eval", plan.config, started, command_line, plan.names, options
    )
    return run_id, started, set()
