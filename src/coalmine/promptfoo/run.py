"""Run a promptfoo config end to end and get promptfoo's verdict on every row.

:func:`run_promptfoo` reads the config into its test matrix (:mod:`coalmine.promptfoo.matrix`),
maps each provider onto a coalmine agent (:mod:`coalmine.promptfoo.providers`; the agents are
built exactly as coalmine.yaml builds them), and evaluates every row with
:func:`~coalmine.promptfoo.row.evaluate_row`, ``concurrency`` at a time (the rows of a
test with ``options.runSerially`` first, one at a time, as promptfoo runs them; every row one
at a time, in promptfoo's order, when a test stores its output with ``options.storeOutputAs``:
:class:`_Registers`). One Node.js
worker serves the run's JavaScript; the project's judge (coalmine.yaml at ``root``) grades the
judge graders. Nothing is stored and nothing can be resumed: that is what importing the config
(``coalmine import promptfoo``) is for.

Once every row ran, each test's ``max-score`` compares the test's rows
(:mod:`coalmine.promptfoo.comparison`), as promptfoo does last; a test promptfoo would stop the
eval at is a :class:`ConfigError` before any row runs. The result, :class:`PromptfooRun`,
holds each row's verdict; :mod:`coalmine.promptfoo.output`
renders it as a table, as JSON, or as promptfoo's own result file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import yaml

from coalmine._util.clock import Clock, SystemClock
from coalmine._util.locations import root_for
from coalmine._util.scratch import scratch as scratch_folder
from coalmine.config import AgentConfig, Config, load_config
from coalmine.engine.call import Caller
from coalmine.engine.events import EvalProgress, EvalStart, Hooks, emit
from coalmine.engine.execute import run_bounded
from coalmine.engine.grading import judge_fn_for
from coalmine.engine.wiring import Wiring, secret_values
from coalmine.errors import CoalmineError, ConfigError
from coalmine.graders.base import JudgeFn
from coalmine.promptfoo.comparison import Compared, check_max_scores, compare_tests
from coalmine.promptfoo.config_code import RunConfigCode
from coalmine.promptfoo.importer import plain_data
from coalmine.promptfoo.matrix import Matrix, ProviderRef, Row, load_matrix
from coalmine.promptfoo.matrix.prepared import (
    config_env,
    default_delay_ms,
    prepared_test,
    prompt_code,
    timeout_ms,
    unsupported_reason,
)
from coalmine.promptfoo.matrix.sources import reading_inside
from coalmine.promptfoo.node import JsError, NodeRuntime, NodeUnavailable
from coalmine.promptfoo.nunjucks import js_truthy
from coalmine.promptfoo.providers import MappedProvider, map_providers
from coalmine.promptfoo.report import eval_id
from coalmine.promptfoo.row import PromptfooRow, RowAgent, RowResult, RowTools, evaluate_row
from coalmine.providers.base import CallContext, provider_settings

__all__ = ["DEFAULT_CONCURRENCY", "PromptfooRun", "RunRow", "run_promptfoo"]

DEFAULT_CONCURRENCY = 16
PROGRESS_EVERY = 0.1
"""Seconds between progress events."""


@dataclass(frozen=True)
class RunRow:
    """One row of the matrix and promptfoo's verdict on it."""

    row: Row
    provider: MappedProvider
    result: RowResult
    test_case: Mapping[str, Any]
    """The test as promptfoo holds it (what its result file writes as ``testCase``)."""


@dataclass(frozen=True, kw_only=True)
class PromptfooRun:
    """A promptfoo config, run: each row's verdict, by ``testIdx`` then ``promptIdx``."""

    matrix: Matrix
    rows: tuple[RunRow, ...]
    started_at: datetime
    duration_ms: int
    concurrency: int
    environ: Mapping[str, str]
    """The environment the config was read with (its ``{{ env.X }}`` templates)."""

    providers: tuple[MappedProvider, ...] = ()
    """The config's providers, each with the coalmine agent that ran it (or why none did)."""

    @property
    def exit_code(self) -> int:
        """0 when every row passed, else 1 (a row failed or errored)."""
        return 0 if all(r.result.outcome.success for r in self.rows) else 1

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the config holds that coalmine ignores or does differently (``file:line: …``)."""
        notes = [f"provider {m.key}: {note}" for m in self.providers for note in m.notes]
        return (*self.matrix.warnings, *notes)


async def run_promptfoo(
    path: Path,
    *,
    root: Path = Path("."),
    concurrency: int = DEFAULT_CONCURRENCY,
    hooks: Sequence[Hooks] = (),
    clock: Clock | None = None,
    environ: Mapping[str, str] | None = None,
    node: NodeRuntime | None = None,
    judge: bool = True,
) -> PromptfooRun:
    """Run every row of the promptfoo config at ``path``.

    Args:
        path: The promptfoo config (YAML or JSON).
        root: The coalmine project whose coalmine.yaml gives the judge and the timeouts (a
            folder without one runs with coalmine's defaults and no judge).
        concurrency: Rows in flight at once.
        hooks: Receive ``on_eval_start`` and ``on_eval_progress``.
        clock: The clock (tests pin it).
        environ: The environment the config's templates read (default: ``os.environ``).
        node: The Node.js runtime to use (default: one started for this run, ended after it).
        judge: False runs without the judge (judge graders are then ERRORs).

    Raises:
        ConfigError: the config (or coalmine.yaml) is broken; it names the file and line.
    """
    environ = dict(os.environ if environ is None else environ)
    clock = clock or SystemClock()
    project = load_config(root, providers=provider_settings())
    matrix = load_matrix(path, environ=environ, root=project.root, code=RunConfigCode())
    check_max_scores(matrix)
    inside = root_for(matrix.path, root=project.root)
    wiring = Wiring(None, tuple(secret_values(project)), None, None)
    mapped = map_providers(matrix.providers, base_dir=matrix.base_dir)
    agents = build_agents(mapped, matrix, root=inside)
    callers: dict[int, Caller] = {}
    for index, agent in agents.items():
        if isinstance(agent, AgentConfig):
            try:
                callers[index] = wiring.caller(agent)
            except CoalmineError as exc:  # its rows are ERRORs, as promptfoo's would be
                agents[index] = f"its coalmine agent cannot be built: {exc}"
    judge_caller = wiring.caller(project.judge) if judge and project.judge is not None else None
    judge_fn: JudgeFn | None = None
    if judge_caller is not None:
        context = CallContext("promptfoo", judge_caller.agent.name, "promptfoo")
        judge_fn = judge_fn_for(judge_caller, context, project.defaults.judge_timeout_seconds)
    delay = default_delay_ms(matrix.extras, environ)
    row_agents = [
        _row_agent(m, agents[i], callers.get(i), matrix.providers[i], delay)
        for i, m in enumerate(mapped)
    ]
    position = {id(ref): i for i, ref in enumerate(matrix.providers)}
    rows = list(matrix.rows())
    started, t0 = clock.now(), clock.monotonic()
    results: list[RunRow | None] = [None] * len(rows)
    counts = _Counts(clock.monotonic())
    start = EvalStart(
        total=len(rows),
        resumed=0,
        suites=(str(matrix.path),),
        bad_lines=0,
        concurrency=concurrency,
        judge=judge_caller.agent.name if judge_caller else None,
    )
    await emit(hooks, "on_eval_start", start)
    owned = node is None
    runtime = node or NodeRuntime()
    tools = RowTools(
        node=runtime,
        judge=judge_fn,
        env={**environ, **config_env(matrix.extras)},
        timeout=_timeout(matrix, project),
        pricing=project.pricing,
        clock=clock,
        eval_id=eval_id(started),
    )

    registers = _Registers()

    async def work(_: int, index: int) -> None:
        row = rows[index]
        case = prepared_test(row.test)
        spec = registers.apply(row_spec(row, matrix, case))
        which = position[id(row.provider)]
        with reading_inside(inside):  # the files a row reads (vars, assertions) stay in it
            result = await evaluate_row(spec, row_agents[which], tools)
        registers.keep(spec, result)
        results[index] = RunRow(row, mapped[which], result, case)
        counts.add(result)
        if clock.monotonic() - counts.last >= PROGRESS_EVERY:
            counts.last = clock.monotonic()
            await emit(hooks, "on_eval_progress", counts.event(len(rows)))

    serial = [i for i, r in enumerate(rows) if r.test.options.get("runSerially")]
    rest = [i for i, r in enumerate(rows) if not r.test.options.get("runSerially")]
    stores = any(r.test.options.get("storeOutputAs") for r in rows)
    try:
        await _load_filters(matrix, runtime)
        await run_bounded(serial, work, jobs=1)
        await run_bounded(rest, work, jobs=1 if stores else concurrency)
    finally:
        with anyio.CancelScope(shield=True):
            if owned:
                await runtime.aclose()
            for caller in {id(c): c for c in [*callers.values(), judge_caller] if c}.values():
                await caller.provider.aclose()
    done = [r for r in results if r is not None]
    done.sort(key=lambda r: (r.row.test_idx, r.row.prompt_idx))
    done = _compared(done)
    counts = _Counts(counts.last)
    for ran in done:
        counts.add(ran.result)
    await emit(hooks, "on_eval_progress", counts.event(len(rows)))
    return PromptfooRun(
        matrix=matrix,
        rows=tuple(done),
        started_at=started,
        duration_ms=round((clock.monotonic() - t0) * 1000),
        concurrency=concurrency,
        environ=environ,
        providers=mapped,
    )


@dataclass
class _Registers:
    """promptfoo's registers: the outputs tests stored with ``options.storeOutputAs``.

    One store for the whole eval, as promptfoo keeps it: a row's output (after its transforms)
    is stored under the test's ``storeOutputAs`` name when it is JavaScript-truthy, and every
    later row reads the stored values as vars, over its test's own vars of the same name (they
    are set before the vars are rendered, so a var's template can use them). promptfoo runs
    the whole eval one row at a time when any test stores (the last writer wins, in test,
    provider, prompt order), and so does :func:`run_promptfoo`.
    """

    values: dict[str, Any] = field(default_factory=dict)

    def apply(self, spec: PromptfooRow) -> PromptfooRow:
        return replace(spec, vars={**spec.vars, **self.values}) if self.values else spec

    def keep(self, spec: PromptfooRow, result: RowResult) -> None:
        name = spec.options.get("storeOutputAs")
        if isinstance(name, str) and name and js_truthy(result.output):
            self.values[name] = result.output


@dataclass
class _Counts:
    last: float
    done: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0

    def add(self, result: RowResult) -> None:
        self.done += 1
        status = result.outcome.status
        if status == "pass":
            self.passed += 1
        elif status == "fail":
            self.failed += 1
        else:
            self.errored += 1

    def event(self, total: int) -> EvalProgress:
        return EvalProgress(self.done, total, self.passed, self.failed, self.errored)


def _compared(rows: list[RunRow]) -> list[RunRow]:
    """The rows once each test's ``max-score`` compared them."""
    outcomes = compare_tests(
        [Compared(r.row.test_idx, r.row.prompt_idx, r.row.test.assertions, r.result.outcome)
         for r in rows]
    )  # fmt: skip
    return [
        r if outcome is r.result.outcome else replace(r, result=replace(r.result, outcome=outcome))
        for r, outcome in zip(rows, outcomes, strict=True)
    ]


def build_agents(
    mapped: Sequence[MappedProvider], matrix: Matrix, *, root: Path
) -> dict[int, AgentConfig | str]:
    """Each provider's coalmine agent, built as coalmine.yaml builds it, or why there is none.

    The agent's entry is written to a scratch coalmine.yaml and loaded by
    :func:`coalmine.config.load_config`, so it is validated by its provider's settings model
    and its ``${VAR}`` (``OPENAI_BASE_URL`` …) read from the environment; its relative paths
    resolve in the promptfoo config's folder and must stay inside the project at ``root``.
    """
    agents: dict[int, AgentConfig | str] = {}
    for index, provider in enumerate(mapped):
        if provider.agent is None:
            agents[index] = provider.problem or "no coalmine provider runs it"
            continue
        ref = matrix.providers[index]
        with scratch_folder("promptfoo") as scratch:
            entry = {"agents": {provider.agent_name: plain_data(provider.agent)}}
            text = yaml.safe_dump(entry, sort_keys=False, allow_unicode=True)
            (scratch / "coalmine.yaml").write_text(text, encoding="utf-8")
            try:
                config = load_config(
                    scratch, providers=provider_settings(), base_dir=matrix.base_dir,
                    project_root=root,
                )  # fmt: skip
            except ConfigError as exc:
                agents[index] = f"its coalmine agent is invalid: {exc.reason}"
                continue
        agent = config.agents[provider.agent_name]
        agents[index] = replace(agent, base_dir=matrix.base_dir, path=ref.path, line=ref.line)
    return agents


async def _load_filters(matrix: Matrix, node: NodeRuntime) -> None:
    """Import each Nunjucks filter, as promptfoo does before it runs a row (a broken one stops it).

    Raises:
        ConfigError: a filter's file does not load (without Node.js, the rows that use one say so).
    """
    for name, file in matrix.filters.items():
        try:
            await node.call("filter", base_dir=matrix.base_dir, file=file, load=True)
        except NodeUnavailable:
            return
        except JsError as exc:
            raise ConfigError(
                f"nunjucksFilters.{name}: {file} does not load: {exc}", path=matrix.path
            ) from None


def _row_agent(
    provider: MappedProvider,
    agent: AgentConfig | str,
    caller: Caller | None,
    ref: ProviderRef,
    default_delay: float,
) -> RowAgent:
    return RowAgent(
        id=provider.ref_id,
        label=provider.label,
        caller=caller,
        problem=agent if isinstance(agent, str) else None,
        transform=provider.transform,
        delay_ms=default_delay if provider.delay is None else float(provider.delay),
        config=ref.config if isinstance(ref.config, Mapping) else None,
    )


def _timeout(matrix: Matrix, project: Config) -> float:
    ms = timeout_ms(matrix.extras)
    return ms / 1000 if ms is not None else project.defaults.timeout_seconds


def row_spec(row: Row, matrix: Matrix, case: Mapping[str, Any]) -> PromptfooRow:
    """What :func:`evaluate_row` needs of a matrix row."""
    prompt, test = row.prompt, row.test
    shown: dict[str, Any] = {"raw": prompt.raw, "label": prompt.label}
    if prompt.id is not None:
        shown["id"] = prompt.id
    if prompt.config is not None:
        shown["config"] = dict(prompt.config)
    return PromptfooRow(
        test_idx=row.test_idx,
        prompt_idx=row.prompt_idx,
        template=row.template,
        prompt=shown,
        vars=test.vars,
        assertions=test.assertions,
        threshold=test.threshold,
        options=test.options,
        provider_output=test.provider_output,
        test_case=case,
        base_dir=matrix.base_dir,
        code=prompt_code(row.prompt, matrix.filters),
        repeat_index=test.repeat_index,
        unsupported=unsupported_reason(
            test_provider=row.test.provider,
        ),
        scoring_function=row.test.assert_scoring_function,
    )
