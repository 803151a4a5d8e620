"""``coalmine eval run|list``: eval suites (``harness/evals/*.jsonl``) at any size."""

from __future__ import annotations

import json
import random
import signal
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from coalmine._util.collector import collector_frozen
from coalmine._util.files import write_file
from coalmine.cli.display import DisplayType, make_display, stdout_aside
from coalmine.cli.options import (
    address_option,
    backend_option,
    blocking_gate_option,
    cache_option,
    display_option,
    judge_reruns_option,
    record_option,
    replay_option,
    resume_option,
    root_option,
    store_option,
    workers_option,
)
from coalmine.engine.history import require_project_config, resumable_run
from coalmine.errors import ConfigError, UsageError
from coalmine.evals.plan import (
    EvalPlan,
    Selection,
    block_as_gate,
    plan_evals,
    require_eval_judge,
)
from coalmine.evals.render import render_suites
from coalmine.evals.run import DEFAULT_CONCURRENCY, EvalOutcome, run_evals
from coalmine.evals.sequential import DEFAULT_ALPHA, DEFAULT_MARGIN, Stopping
from coalmine.evals.shard import choose_workers, in_one_process
from coalmine.store.runs import Store

if TYPE_CHECKING:
    from coalmine.backends.shards import Backend


@click.group("eval")
def eval_group() -> None:
    """Run eval suites: JSONL cases, graded, stored, summarised per suite."""


@eval_group.command("run")
@click.argument("suites", nargs=-1)
@root_option
@store_option
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(min=1),
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help="Cases in flight at once (each agent's max_concurrency still holds).",
)
@click.option("--repeats", type=click.IntRange(min=1), help="Run each case N times.")
@click.option(
    "--reducer",
    default="mean",
    show_default=True,
    help="How repeats reduce: mean, majority, pass@k, pass^k (or pass@N, pass^N).",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="GLOB|tag:NAME",
    help="Run only cases whose id matches the glob, or that carry the tag (repeatable).",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most N cases of each suite.")
@click.option("--shuffle", type=int, metavar="SEED", help="Shuffle each suite's cases (seeded).")
@click.option("--no-judge", is_flag=True, help="Skip judge graders (llm-rubric, context-…).")
@click.option(
    "--sequential",
    is_flag=True,
    help="Draw each suite's cases in a seeded random order and stop calling agents once its "
    "gate is decided (anytime-valid: a wrong decision has at most --alpha chance).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=DEFAULT_ALPHA,
    show_default=True,
    help="With --sequential: the chance of a wrong decision the run accepts.",
)
@click.option(
    "--baseline",
    metavar="RUN",
    help="With --sequential: decide whether each suite is no worse than eval run RUN on the "
    "cases both have (by more than --margin), rather than on its own gate.",
)
@click.option(
    "--margin",
    type=click.FloatRange(0, 1, max_open=True),
    default=DEFAULT_MARGIN,
    show_default=True,
    help="With --baseline: the drop in pass rate that still counts as no worse.",
)
@resume_option("eval")
@cache_option
@record_option
@replay_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "promptfoo"]),
    default="table",
    show_default=True,
    help="Print a table of suites (of rows, with --promptfoo), their result JSON, or (with "
    "--promptfoo, or for imported suites) promptfoo's result file, on stdout.",
)
@click.option(
    "--promptfoo",
    "promptfoo_config",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="CONFIG",
    help="Run a promptfoo config (promptfooconfig.yaml) directly and give promptfoo's verdict "
    "on every row; nothing is stored and it cannot be resumed (import the config for that).",
)
@click.option(
    "--output",
    "-o",
    "output_file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="With --promptfoo or imported suites: write promptfoo's result file (as 'promptfoo "
    "eval -o') to FILE.",
)
@display_option
@judge_reruns_option
@blocking_gate_option
@workers_option
@backend_option
@address_option
def run_command(
    suites: tuple[str, ...],
    root: Path,
    store_path: Path | None,
    concurrency: int,
    repeats: int | None,
    reducer: str,
    filters: tuple[str, ...],
    limit: int | None,
    shuffle: int | None,
    no_judge: bool,
    sequential: bool,
    alpha: float,
    baseline: str | None,
    margin: float,
    resume: str | None,
    cache: bool | None,
    record_to: Path | None,
    replay_from: Path | None,
    fmt: str,
    promptfoo_config: Path | None,
    output_file: Path | None,
    display: DisplayType,
    judge_reruns: int,
    blocking_gate: str | None,
    workers: int | None,
    backend: str,
    address: str | None,
) -> int:
    """Run eval suites: every harness/evals/*.jsonl, or the SUITES named (names or paths).

    Each suite writes .coalmine/reports/evals/<suite>/<run id>.json (coalmine.eval.result.v1)
    and its summary goes to the run store. Exit 1 only when a blocking suite fails.

    With --promptfoo CONFIG, the promptfoo config runs as promptfoo runs it (its providers
    mapped onto coalmine agents, the judge from coalmine.yaml): exit 0 when every row passed,
    1 when a row failed or errored (promptfoo exits 100 there), 2 when the config is broken.
    """
    if promptfoo_config is not None:
        given = {
            "SUITES": suites,
            "--filter": filters,
            "--limit": limit,
            "--repeats": repeats,
            "--shuffle": shuffle is not None,
            "--sequential": sequential,
            "--resume": resume,
            "--record": record_to,
            "--replay": replay_from,
            "--cache": cache,
            "--judge-reruns": judge_reruns > 1,
            "--workers": workers,
            "--backend ray": backend == "ray",
        }
        clash = [name for name, value in given.items() if value]
        if clash:
            raise UsageError(f"--promptfoo runs the whole config: drop {', '.join(clash)}")
        return _run_promptfoo(
            promptfoo_config, root=root, concurrency=concurrency, fmt=fmt, output=output_file,
            display=display, no_judge=no_judge,
        )  # fmt: skip
    if record_to is not None and replay_from is not None:
        raise UsageError("--record and --replay exclude each other: record once, then replay")
    if address is not None and backend != "ray":
        raise UsageError("--address names a Ray cluster: it goes with --backend ray")
    if not sequential and (
        baseline is not None or alpha != DEFAULT_ALPHA or margin != DEFAULT_MARGIN
    ):
        raise UsageError("--alpha, --baseline and --margin go with --sequential")
    if baseline is None and margin != DEFAULT_MARGIN:
        raise UsageError("--margin is the drop allowed against --baseline RUN: give the run")
    config = require_project_config(root)
    stopping = Stopping(alpha, baseline, margin) if sequential else None
    if stopping is not None and shuffle is None:  # the order must be random, and recorded
        shuffle = random.SystemRandom().randrange(2**31)
    selection = Selection(filters, limit, shuffle, repeats, reducer)
    store = Store.open(store_path or config.store_path)
    try:
        resume_id = None
        if resume is not None:
            if suites or filters or limit or shuffle is not None or repeats or sequential:
                raise UsageError(
                    "--resume runs the selection of the resumed run; drop the suites and "
                    "--filter/--limit/--shuffle/--repeats/--sequential"
                )
            info = resumable_run(store, resume, kind="eval")
            resume_id, suites = info.id, tuple(info.selectors)
            o = info.options
            selection = Selection(
                tuple(o.get("filters") or ()), o.get("limit"), o.get("shuffle"),
                o.get("repeats"), o.get("reducer") or "mean",
            )  # fmt: skip
            stopping = Stopping.of(o.get("sequential"))
        if stopping is not None and stopping.baseline is not None:
            stopping = replace(stopping, baseline=store.get_run(stopping.baseline, kind="eval").id)
        plan = plan_evals(root, suites, selection=selection, config=config)
        for note in block_as_gate(plan, blocking_gate) if blocking_gate else []:
            click.echo(f"note: {note}", err=True)
        as_promptfoo = fmt == "promptfoo" or output_file is not None
        if as_promptfoo:
            _require_imported(plan)
        try:
            require_eval_judge(plan, disabled=no_judge)
        except ConfigError as exc:
            exc.hint = "or pass --no-judge to skip judge graders for this run"
            raise
        use_cache = config.cache if cache is None else cache
        labels = None
        if not no_judge and config.judge is not None and any(s.needs_judge for s in plan.suites):
            from coalmine.judge.rates import calibration_sets, labels_of

            labels = labels_of(calibration_sets(store, config.judge.name, config.root))
        count, where = _workers(
            plan, workers, backend, address, concurrency=concurrency,
            cache=None if not use_cache else "--cache" if cache else "cache: true (coalmine.yaml)",
            cassette=record_to or replay_from, sequential=stopping is not None,
        )  # fmt: skip
        # the plan lives as long as the run: the collector need not walk it (collector_frozen)
        with collector_frozen(), make_display(display) as hooks, stdout_aside():
            outcome = anyio.run(
                partial(
                    _run, plan, store=store, concurrency=concurrency, resume=resume_id,
                    no_judge=no_judge, cache=use_cache, hooks=[hooks], command_line=sys.argv,
                    judge_reruns=judge_reruns, record=record_to, replay=replay_from,
                    workers=count, backend=where, stopping=stopping, labels=labels,
                )
            )  # fmt: skip
        if as_promptfoo:
            from coalmine.promptfoo.report import dump_promptfoo_output
            from coalmine.promptfoo.stored import stored_document

            document = dump_promptfoo_output(
                stored_document(store, outcome.run_id, plan.suites, output_path=output_file)
            )
    finally:
        store.close()
    if as_promptfoo and output_file is not None:
        write_file(output_file, document + "\n")
    if fmt == "promptfoo":
        if output_file is None:
            click.echo(document)
    elif fmt == "json":
        payload = [r.model_dump(mode="json", by_alias=True) for r in outcome.suites]
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        click.echo(render_suites(outcome.suites, root=root))
    for broken in plan.broken:
        click.echo(f"error: {broken.message}", err=True)
    for suite in plan.suites:
        for bad in suite.index.bad[:20]:
            click.echo(f"error: {bad}", err=True)
        if len(suite.index.bad) > 20:
            click.echo(f"error: … and {len(suite.index.bad) - 20} more bad lines", err=True)
    for why in outcome.lost:
        said = why.rstrip().rstrip(".;:,")  # a worker's last words may end a sentence
        click.echo(f"note: lost {said}; its unfinished cases ran on the others", err=True)
    if outcome.interrupted:
        click.echo(
            f"interrupted: finished cases are stored; resume with: "
            f"coalmine eval run --resume {outcome.run_id} --root {root}",
            err=True,
        )
    return outcome.exit_code


def _workers(
    plan: EvalPlan,
    workers: int | None,
    backend: str,
    address: str | None,
    *,
    concurrency: int,
    cache: str | None,
    cassette: Path | None,
    sequential: bool = False,
) -> tuple[int, Backend | None]:
    """How many engines the run gets, and on what (a note says when it is fewer than asked).

    ``cache``: what turned the response cache on (``--cache``, or the config's key), if on.
    """
    from coalmine.backends.shards import Backend

    one_process = None
    if cache is not None:
        one_process = f"{cache} runs in one process (the cache is the store's)"
    elif cassette is not None:
        one_process = "--record and --replay run in one process (one cassette file)"
    elif sequential:
        one_process = "--sequential decides as the cases finish, in one process"
    if backend == "ray":
        if one_process is not None:
            raise UsageError(f"--backend ray: {one_process}; drop one of them")
        if (why := in_one_process(plan)) is not None:
            raise UsageError(f"--backend ray: {why}; run them without it")
        from coalmine.backends.ray import ray_workers

        workers, capped = ray_workers(workers, address, plan.config.root)
        count, note = choose_workers(plan, workers, concurrency=concurrency, one_process=None)
        note = note or capped
        where: Backend | None = Backend("ray", address, plan.config.root)
    else:
        count, note = choose_workers(
            plan, workers, concurrency=concurrency, one_process=one_process
        )
        where = None
        if count > 1:
            # started now, before the run's event loop: forked (on Linux) after the plan, a
            # worker has the config, the graders and every module already, and is ready at once
            from coalmine.backends.processes import spawn_workers
            from coalmine.evals.shard import ENGINE

            names = [f"worker {n + 1}" for n in range(1, count)]
            where = Backend(spawned=spawn_workers(ENGINE, names))
    if note:
        click.echo(f"note: {note}", err=True)
    return count, where


def _require_imported(plan: EvalPlan) -> None:
    """``--format promptfoo`` and ``-o`` write promptfoo's document: imported suites only."""
    others = [s.name for s in plan.suites if s.index.meta.compat != "promptfoo"]
    if others or not plan.suites:
        if others:
            why = f"{', '.join(others)} {'is' if len(others) == 1 else 'are'} not"
        else:
            why = "no suite could be read" if plan.broken else "there are no suites"
        # a suite that could not be read is named with why, or the reason would stay hidden
        unread = "".join(f"\n  {b.message}" for b in plan.broken)
        raise UsageError(
            "--format promptfoo and --output write promptfoo's result file: they go with "
            f"--promptfoo CONFIG, or with suites imported by 'coalmine import promptfoo' ({why})"
            + (f"; not read:{unread}" if unread else "")
        )


def _run_promptfoo(
    config: Path,
    *,
    root: Path,
    concurrency: int,
    fmt: str,
    output: Path | None,
    display: DisplayType,
    no_judge: bool,
) -> int:
    """Run a promptfoo config and print (or write) its rows; return the exit code."""
    # imported here: a run of coalmine suites does not load the promptfoo package (~0.2 s)
    from coalmine.promptfoo.output import promptfoo_document, render_table, rows_json
    from coalmine.promptfoo.report import dump_promptfoo_output
    from coalmine.promptfoo.run import run_promptfoo

    with make_display(display) as hooks, stdout_aside():
        run = anyio.run(
            partial(
                run_promptfoo, config, root=root, concurrency=concurrency, hooks=[hooks],
                judge=not no_judge,
            )
        )  # fmt: skip
    for warning in run.warnings:
        click.echo(f"warning: {warning}", err=True)
    document = None
    if fmt == "promptfoo" or output is not None:
        document = dump_promptfoo_output(promptfoo_document(run, output_path=output))
    if output is not None:
        assert document is not None
        write_file(output, document + "\n")
    if fmt == "promptfoo" and output is None:
        click.echo(document)
    elif fmt == "json":
        click.echo(json.dumps(rows_json(run), indent=2, ensure_ascii=False))
    elif fmt == "table":
        click.echo(render_table(run))
    return run.exit_code


async def _run(plan: EvalPlan, **options: Any) -> EvalOutcome:
    """Run with Ctrl-C (and SIGTERM) turned into a stop.

    The first lets the cases in flight finish (so a resume calls nothing twice); the second
    cancels them.
    """
    stop, cancel = anyio.Event(), anyio.Event()

    async def watch_signals() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                if stop.is_set():
                    cancel.set()
                else:
                    stop.set()
                    click.echo(
                        "stopping: finishing the cases in flight (press Ctrl-C again to "
                        "cancel them)",
                        err=True,
                    )

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_signals)
        outcome = await run_evals(plan, stop=stop, cancel=cancel, **options)
        tg.cancel_scope.cancel()
    return outcome


@eval_group.command("plan")
@click.argument("suites", nargs=-1, required=True)
@root_option
@store_option
@click.option(
    "--detect",
    type=float,
    required=True,
    metavar="DROP",
    help="The drop in pass rate to see, as a share (0.05: five points).",
)
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
    help="The chance of seeing a drop of that size when there is one.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="The chance of a false alarm (two-sided).",
)
@click.option(
    "--discordance",
    type=click.FloatRange(0, 1, min_open=True),
    help="The share of cases that flip between two runs (default: measured from the suite's "
    "two latest runs, else assumed).",
)
@click.option(
    "--repeats", type=click.IntRange(min=1), help="Repeats a case (default: the suite's)."
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def plan_command(
    suites: tuple[str, ...],
    root: Path,
    store_path: Path | None,
    detect: float,
    power: float,
    alpha: float,
    discordance: float | None,
    repeats: int | None,
    fmt: str,
) -> int:
    """Say how many cases (× repeats) each SUITE needs to see a drop of DROP, and the cost.

    The discordance comes from the suite's two latest finished runs in the store (or
    --discordance); the cost a call from its latest priced run.
    """
    from coalmine.evals.sizing import plan_size

    if power <= alpha:
        raise UsageError(f"--power {power:g} must be above --alpha {alpha:g}")
    config = require_project_config(root)
    plan = plan_evals(root, suites, selection=Selection(), config=config)  # names checked here
    if plan.broken:
        raise UsageError(plan.broken[0].message)
    store = Store.open(store_path or config.store_path)
    try:
        try:
            plans = [
                plan_size(
                    store,
                    suite.name,
                    drop=detect,
                    alpha=alpha,
                    power=power,
                    discordance=discordance,
                    repeats=repeats or suite.repeats,
                    cases_now=len(suite.index),
                )  # fmt: skip
                for suite in plan.suites
            ]
        except ValueError as exc:
            hint = "" if discordance is None else "; give a larger --discordance"
            raise UsageError(f"--detect {detect:g}: {exc}{hint}") from None
    finally:
        store.close()
    if fmt == "json":
        click.echo(json.dumps([p.as_json() for p in plans], indent=2))
    else:
        click.echo("\n\n".join(p.in_words() for p in plans))
    return 0


@eval_group.command("list")
@root_option
def list_command(root: Path) -> int:
    """List the suites: cases, repeats, default agent, and every bad line."""
    plan = plan_evals(root)
    rows = [("SUITE", "CASES", "BAD", "REPEATS", "AGENT", "BLOCKING")]
    for s in plan.suites:
        agent = s.default_agent.name if s.default_agent else "per case"
        rows.append(
            (s.name, str(len(s.index)), str(len(s.index.bad)), str(s.repeats), agent,
             "yes" if s.index.meta.blocking else "no")
        )  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for broken in plan.broken:
        click.echo(f"error: {broken.message}", err=True)
    for s in plan.suites:
        for bad in s.index.bad:
            click.echo(f"error: {bad}", err=True)
    return 2 if plan.broken or any(s.index.bad for s in plan.suites) else 0
