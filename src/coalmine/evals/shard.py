"""An eval run's cases on several engines: worker processes, or actors on a Ray cluster.

The driver plans and alone writes the store; each shard opens :func:`open_eval_engine` from a
:class:`ShardSpec` — the project's root and the suites by path, nothing else — and loads the
config itself, so a secret reaches a worker only as the environment variable the config names.
The driver sends each case as its line's text (a worker reads no suite file) and gets back the
stored attempt, scrubbed by the worker as any run scrubs it.

Each shard gets its part of the run's ``--concurrency`` and of every agent's limits
(:func:`~coalmine.engine.limits.shard_config`), so the limits hold across all shards together.
What runs in one process only: compat suites (promptfoo's ``max-score`` compares a test's lines
across suites), ``--cache`` (the cache is the store's, which the driver alone opens) and
``--record``/``--replay`` (one cassette file).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from coalmine._util.clock import SystemClock
from coalmine.engine.grading import load_python_graders
from coalmine.engine.history import require_project_config
from coalmine.engine.limits import most_shards, shard_config, split_count
from coalmine.engine.policy import Calibration, JudgeGate
from coalmine.engine.wiring import Wiring, secret_values
from coalmine.errors import ConfigError
from coalmine.evals.attempt import RunEnv, SuiteRun, run_attempt
from coalmine.evals.plan import EvalPlan, PlannedSuite, plan_agents
from coalmine.graders.base import grader_configs
from coalmine.specs.suite import open_suite_index
from coalmine.store.evals import Attempt

ENGINE = "coalmine.evals.shard:open_eval_engine"
"""The factory every shard opens (:mod:`coalmine.backends.engine`)."""
AUTO_MIN_ATTEMPTS = 2000
"""A run shards itself (``--workers`` unset) from this many case runs …"""
AUTO_MIN_CONCURRENCY = 64
"""… and this much concurrency: below, one core keeps up and a worker's start-up is a loss."""

CaseItem = tuple[int, int, str, str, int]
"""What the driver sends for one case run: suite, line number, line text, case id, repeat."""


@dataclass(frozen=True)
class SuiteRef:
    """A suite as a shard finds it: by path under the root, and how the plan runs it."""

    path: str
    default_agent: str | None
    repeats: int
    reducer: str


@dataclass(frozen=True)
class ShardSpec:
    """What a shard needs: plain data, no secret (it may cross machines)."""

    root: str
    """The project (``.`` on a Ray node: the run's working directory is the project)."""
    suites: tuple[SuiteRef, ...]
    no_judge: bool
    judge_reruns: int
    calibrations: tuple[Calibration, ...]
    configured_blocking: bool


def shard_spec(
    plan: EvalPlan, gate: JudgeGate | None, *, no_judge: bool, judge_reruns: int, root: str
) -> ShardSpec:
    """The spec of ``plan``'s shards (``root``: where a shard finds the project)."""
    base = plan.config.root

    def where(path: Path) -> str:
        return str(path.relative_to(base)) if path.is_relative_to(base) else str(path)

    suites = tuple(
        SuiteRef(
            where(s.index.path),
            s.default_agent.name if s.default_agent is not None else None,
            s.repeats,
            s.reducer,
        )
        for s in plan.suites
    )
    calibrations = tuple(gate.calibrations) if gate is not None else ()
    blocking = gate.configured_blocking if gate is not None else plan.config.judge_blocking
    return ShardSpec(root, suites, no_judge, judge_reruns, calibrations, blocking)


def in_one_process(plan: EvalPlan) -> str | None:
    """Why the plan's cases must run in the driver's own process, if they must."""
    compat = sorted(s.name for s in plan.suites if s.index.meta.compat)
    if compat:
        return f"compat suites run in one process ({', '.join(compat)})"
    return None


def choose_workers(
    plan: EvalPlan,
    requested: int | None,
    *,
    concurrency: int,
    one_process: str | None,
    cores: int | None = None,
) -> tuple[int, str | None]:
    """How many shards the run gets, and a note when that is fewer than asked.

    ``requested`` None: one per core when the run is large enough to gain
    (:data:`AUTO_MIN_ATTEMPTS`, :data:`AUTO_MIN_CONCURRENCY`), else one. ``one_process``: why
    the run must stay in one (an option that needs it), if it must.
    """
    cores = cores or os.cpu_count() or 1
    if requested is None:
        big = plan.attempts >= AUTO_MIN_ATTEMPTS and concurrency >= AUTO_MIN_CONCURRENCY
        wanted = cores if big else 1
    else:
        wanted = requested
    if wanted <= 1:
        return 1, None
    one_process = one_process or in_one_process(plan)
    if one_process is not None:
        return 1, (f"--workers {wanted}: {one_process}" if requested else None)
    judge = plan.config.judge if any(s.needs_judge for s in plan.suites) else None
    allowed = min(wanted, concurrency, most_shards([*plan_agents(plan), judge]) or wanted)
    if allowed < wanted and requested is not None:
        return allowed, (
            f"--workers {wanted}: {allowed} worker(s), as many as the smallest max_concurrency "
            f"and --concurrency allow (each worker holds a part of every limit)"
        )
    return allowed, None


def shard_capacity(concurrency: int, index: int, count: int) -> int:
    """Shard ``index``'s part of ``--concurrency``."""
    return max(1, split_count(concurrency, index, count))


@asynccontextmanager
async def open_eval_engine(
    spec: ShardSpec, index: int, count: int
) -> AsyncIterator[Callable[[CaseItem], Awaitable[Attempt | None]]]:
    """A shard's engine: runs one case run from its line, returns the stored attempt.

    Raises:
        ConfigError: the config cannot be loaded here, an agent lacks a variable, or a
            suite's defaults cannot be read.
    """
    root = Path(spec.root).resolve()
    config = shard_config(require_project_config(root), index, count)
    functions = load_python_graders(config)
    secrets = tuple(secret_values(config))
    wiring = Wiring(None, secrets, None, None)
    configs = grader_configs()
    suites = []
    for ref in spec.suites:
        agent = None
        if ref.default_agent is not None:
            agent = config.agents.get(ref.default_agent)
            if agent is None:
                raise ConfigError(f"the config here has no agent {ref.default_agent!r}")
        index_ = open_suite_index(root / ref.path, grader_configs=configs)
        suites.append(SuiteRun(PlannedSuite(index_, agent, ref.repeats, ref.reducer)))
    judge = gate = None
    callers = {}
    if not spec.no_judge and config.judge is not None:
        judge = wiring.caller(config.judge)
        if config.judge.name in config.agents:
            callers[config.judge.name] = judge
        from coalmine.graders.judged import judge_prompt_identity  # (20 ms: with a judge only)

        gate = JudgeGate(
            list(spec.calibrations),
            configured_blocking=spec.configured_blocking,
            identify=judge_prompt_identity,
        )
    env = RunEnv.of(
        config, functions=functions, callers=callers, wiring=wiring, judge=judge, gate=gate,
        clock=SystemClock(), secrets=secrets, judge_reruns=spec.judge_reruns,
    )  # fmt: skip

    async def handle(item: CaseItem) -> Attempt | None:
        suite_at, line, raw, case_id, rep = item
        suite = suites[suite_at]
        case = suite.planned.index.parse(raw, line, case_id)
        return await run_attempt(suite, case, rep, env)

    try:
        yield handle
    finally:
        with anyio.CancelScope(shield=True):
            for c in {id(c): c for c in [*env.callers.values(), judge] if c}.values():
                await c.provider.aclose()
