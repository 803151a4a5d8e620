"""``coalmine canary run|list``: the SDLC canary runner of seed 000."""

from __future__ import annotations

import signal
import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import click

from coalmine._util.files import shown_path
from coalmine._util.words import counted
from coalmine.canary.estimate import DryRun, cost_limit_warning, estimate
from coalmine.canary.plan import (
    CanaryPlan,
    block_as_gate,
    plan_canaries,
    require_judge,
    run_to_resume,
)
from coalmine.canary.run import CanaryOutcome, run_canaries
from coalmine.cli.display import DisplayType, echo_markdown, make_display, stdout_aside
from coalmine.cli.options import (
    blocking_gate_option,
    cache_option,
    display_option,
    judge_reruns_option,
    parse_report,
    record_option,
    replay_option,
    resume_option,
    root_option,
    store_option,
)
from coalmine.compare import compare_runs
from coalmine.engine.events import Hooks
from coalmine.engine.history import require_project_config
from coalmine.engine.pairs import load_baseline
from coalmine.errors import ConfigError, UsageError
from coalmine.reports.base import write_report
from coalmine.reports.json import render_json
from coalmine.reports.markdown import render_comparison, render_markdown, short_id
from coalmine.store.runs import Store


@click.group()
def canary() -> None:
    """Run SDLC canaries: known prompts for phase agents, graded and recorded."""


@canary.command("run")
@click.argument("selectors", nargs=-1)
@root_option
@store_option
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Canaries run at once (default 1).")
@click.option("--no-judge", is_flag=True, help="Skip llm-judge graders; weights renormalise.")
@resume_option("canary")
@cache_option
@click.option("--cache-explain", is_flag=True, help="With --cache: say why each case missed.")
@record_option
@replay_option
@click.option(
    "--max-cost",
    type=click.FloatRange(min=0),
    help="Stop (resumably) once the run has cost this much (prices from 'pricing:').",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="List what would be called, with estimated tokens and cost; call nothing.",
)
@click.option(
    "--baseline",
    help="Compare with this run afterwards: latest (the last finished canary run), a run id, "
    "a label or a file.",
)
@click.option(
    "--report",
    "reports",
    multiple=True,
    metavar="FORMAT:PATH",
    help="Also write a report: junit:PATH, markdown:PATH, html:PATH, json:PATH (repeatable).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json"]),
    default="table",
    show_default=True,
    help="The results: drawn on a terminal and markdown in a pipe (table), markdown always, "
    "or the result JSON, on stdout.",
)
@display_option
@judge_reruns_option
@blocking_gate_option
def run_command(
    selectors: tuple[str, ...],
    root: Path,
    store_path: Path | None,
    jobs: int | None,
    no_judge: bool,
    resume: str | None,
    cache: bool | None,
    cache_explain: bool,
    record_to: Path | None,
    replay_from: Path | None,
    max_cost: float | None,
    dry_run: bool,
    baseline: str | None,
    reports: tuple[str, ...],
    fmt: str,
    display: DisplayType,
    judge_reruns: int,
    blocking_gate: str | None,
) -> int:
    """Run the canaries under bench/canaries/ (or only SELECTORS, e.g. qa-001).

    A selector runs the canary whose id equals it or starts with it followed by '-'.
    Every run is recorded in the run store; it writes
    bench/results/canary-run-YYYY-MM-DD.json (-2, -3 … on the same day).
    """
    if record_to is not None and replay_from is not None:
        raise UsageError("--record and --replay exclude each other: record once, then replay")
    report_targets = [parse_report(r) for r in reports]
    if dry_run:
        click.echo(render_dry_run(estimate(plan_canaries(root, selectors=selectors),
                                           no_judge=no_judge)), nl=False)  # fmt: skip
        return 0
    config = require_project_config(root)
    store = Store.open(store_path or config.store_path)
    try:
        resume_id = None
        if resume is not None:
            if selectors:
                raise UsageError(
                    "--resume runs the selection of the resumed run; drop the selectors"
                )
            info = run_to_resume(store, resume, root=root, config=config)
            resume_id, selectors = info.id, tuple(info.selectors)
            no_judge = no_judge or bool(info.options.get("no_judge"))
        plan = plan_canaries(root, selectors=selectors, config=config)
        for note in block_as_gate(plan, blocking_gate) if blocking_gate else []:
            click.echo(f"note: {note}", err=True)
        if max_cost is not None and (unpriced := cost_limit_warning(plan, no_judge=no_judge)):
            click.echo(f"warning: {unpriced}", err=True)
        try:
            require_judge(plan, disabled=no_judge)
        except ConfigError as exc:
            exc.hint = "or pass --no-judge to skip llm-judge graders for this run"
            raise
        base = None
        if baseline is not None:  # a bad baseline stops the run before it calls any agent
            planned = [c.loaded.id for c in plan.canaries]
            base = load_baseline(store, baseline, kind="canary", cases=planned)
        use_cache = cache_explain or (plan.config.cache if cache is None else cache)
        with make_display(display) as hooks, stdout_aside():
            hook_list: list[Hooks] = [hooks]
            outcome = anyio.run(
                partial(
                    _run, plan, store=store, resume=resume_id, jobs=jobs, no_judge=no_judge,
                    cache=use_cache, hooks=hook_list, command_line=sys.argv, record=record_to,
                    replay=replay_from, max_cost=max_cost, judge_reruns=judge_reruns,
                )
            )  # fmt: skip
        run = outcome.run
        comparison = compare_runs(base, run) if base is not None else None
    finally:
        store.close()
    if fmt == "json":
        click.echo(render_json(run), nl=False)
    else:
        text = render_markdown(
            run,
            results_path=shown_path(outcome.results_path),
            date=run.timestamp[:10],
            cache_explain=cache_explain,
        )
        text += "\n" + render_comparison(comparison) if comparison else ""
        echo_markdown(text, raw=fmt == "markdown")
    for report_fmt, path in report_targets:
        written = write_report(report_fmt, path, run, comparison=comparison)
        click.echo(f"wrote the {report_fmt} report to {shown_path(written)}", err=True)
    for spec in run.invalid_specs:
        where = f"{spec.path}:{spec.line}" if spec.line else spec.path
        click.echo(f"error: invalid spec {where}: {spec.reason.splitlines()[0]}", err=True)
    if run.interrupted:
        why = (
            f"stopped at the cost limit ({max_cost:g})"
            if run.stopped == "max_cost"
            else "interrupted"
        )
        click.echo(
            f"{why}: {run.summary.total} of {len(plan.canaries)} canaries finished; "
            f"results written to {shown_path(outcome.results_path)}\n"
            f"resume with: coalmine canary run --resume {run.store_run_id} --root {root}",
            err=True,
        )
    return outcome.exit_code


async def _run(plan: CanaryPlan, **options: Any) -> CanaryOutcome:
    """Run with Ctrl-C (and SIGTERM) turned into a clean stop."""
    stop = anyio.Event()

    async def watch_signals() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                stop.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_signals)
        outcome = await run_canaries(plan, stop=stop, **options)
        tg.cancel_scope.cancel()
    return outcome


@canary.command("list")
@root_option
def list_command(root: Path) -> int:
    """List the canaries, the agent each one goes to, and every invalid spec."""
    plan = plan_canaries(root)
    rows = [("ID", "PHASE", "AGENT", "PROVIDER", "GRADERS", "TIMEOUT")]
    for c in plan.canaries:
        graders = ",".join(g.type for g in c.loaded.spec.expected.graders)
        rows.append(
            (
                c.loaded.id,
                c.loaded.spec.phase,
                c.agent.name,
                c.agent.provider,
                graders,
                f"{c.timeout:g}s",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    judge = plan.config.judge
    judge_text = f"{judge.name} ({judge.provider})" if judge else plan.config.judge_mode
    found = counted(len(plan.canaries), "canary", "canaries")
    click.echo(f"\n{found}, {len(plan.invalid)} invalid; judge: {judge_text}")
    for invalid in plan.invalid:
        label = f" [{short_id(invalid.spec_id)}]" if invalid.spec_id else ""
        click.echo(f"invalid{label}:", err=True)
        for line in invalid.reason.splitlines():
            click.echo(f"  {line}", err=True)
    return 2 if plan.invalid else 0


def render_dry_run(dry: DryRun) -> str:
    """The dry run as a table: calls, estimated input tokens and input cost per agent."""
    rows = [("AGENT", "MODEL", "CALLS", "INPUT TOKENS (EST.)", "INPUT COST (EST.)")]
    entries = [*dry.agents, *([dry.judge] if dry.judge is not None else [])]
    for e in entries:
        name = f"{e.name} (judge)" if e is dry.judge else e.name
        cost = f"{e.input_cost:.4f}" if e.input_cost is not None else "no price"
        rows.append((name, e.model or "—", str(e.calls), str(e.input_tokens), cost))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append("")
    lines.append(
        "Nothing was called. Input tokens are estimated from prompt sizes (about 4 characters a "
        "token); judge prompts are counted without the answers they will quote."
    )
    unpriced = sorted({e.model or e.name for e in entries if e.price is None})
    if unpriced:
        lines.append(f"No price for: {', '.join(unpriced)} (add them under 'pricing:').")
    if dry.invalid:
        lines.append(f"{dry.invalid} invalid spec(s) would not run (see 'coalmine canary list').")
    return "\n".join(lines) + "\n"
