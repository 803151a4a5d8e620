"""``coalmine canary run|list``: the SDLC canary runner of seed 000."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import click

from coalmine.cli.display import DisplayType, make_display
from coalmine.errors import ConfigError
from coalmine.reports.json import render_json
from coalmine.reports.markdown import render_markdown, short_id
from coalmine.runner.canary import CanaryOutcome, run_canaries
from coalmine.runner.events import Hooks
from coalmine.runner.plan import CanaryPlan, plan_canaries, require_judge

_root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Project root: holds coalmine.yaml (or pyproject.toml) and bench/canaries/.",
)


@click.group()
def canary() -> None:
    """Run SDLC canaries: known prompts for phase agents, graded and recorded."""


@canary.command("run")
@click.argument("selectors", nargs=-1)
@_root_option
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Canaries run at once (default 1).")
@click.option("--no-judge", is_flag=True, help="Skip llm-judge graders; weights renormalise.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Print the markdown table, or the result JSON, on stdout.",
)
@click.option(
    "--display",
    type=click.Choice(["auto", "rich", "plain", "jsonl", "none"]),
    default="auto",
    show_default=True,
    help="Progress on stderr: rich on a terminal, plain lines otherwise.",
)
def run_command(
    selectors: tuple[str, ...],
    root: Path,
    jobs: int | None,
    no_judge: bool,
    fmt: str,
    display: DisplayType,
) -> int:
    """Run the canaries under bench/canaries/ (or only SELECTORS, e.g. qa-001).

    A selector runs the canary whose id equals it or starts with it followed by '-'.
    Writes bench/results/canary-run-YYYY-MM-DD.json (-2, -3 … on the same day).
    """
    plan = plan_canaries(root, selectors=selectors)
    if plan.config.path is None:
        raise ConfigError(
            f"no coalmine.yaml (or [tool.coalmine] in pyproject.toml) in {plan.config.root}; "
            "create one that maps your agents to providers (see the README)"
        )
    try:
        require_judge(plan, disabled=no_judge)
    except ConfigError as exc:
        exc.hint = "or pass --no-judge to skip llm-judge graders for this run"
        raise
    with make_display(display) as hooks:
        hook_list: list[Hooks] = [hooks]
        outcome = anyio.run(_run, plan, jobs, no_judge, hook_list)
    if fmt == "json":
        click.echo(render_json(outcome.run), nl=False)
    else:
        click.echo(
            render_markdown(
                outcome.run,
                results_path=_shown(outcome.results_path),
                date=outcome.run.timestamp[:10],
            )
        )
    for spec in outcome.run.invalid_specs:
        where = f"{spec.path}:{spec.line}" if spec.line else spec.path
        click.echo(f"error: invalid spec {where}: {spec.reason.splitlines()[0]}", err=True)
    if outcome.run.interrupted:
        click.echo(
            f"interrupted: {outcome.run.summary.total} of {len(plan.canaries)} canaries finished; "
            f"results written to {_shown(outcome.results_path)}",
            err=True,
        )
    return outcome.exit_code


async def _run(
    plan: CanaryPlan, jobs: int | None, no_judge: bool, hooks: list[Hooks]
) -> CanaryOutcome:
    """Run with Ctrl-C (and SIGTERM) turned into a clean stop."""
    stop = anyio.Event()

    async def watch_signals() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                stop.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_signals)
        outcome = await run_canaries(plan, jobs=jobs, no_judge=no_judge, hooks=hooks, stop=stop)
        tg.cancel_scope.cancel()
    return outcome


@canary.command("list")
@_root_option
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
    click.echo(f"\n{len(plan.canaries)} canaries, {len(plan.invalid)} invalid; judge: {judge_text}")
    for invalid in plan.invalid:
        label = f" [{short_id(invalid.spec_id)}]" if invalid.spec_id else ""
        click.echo(f"invalid{label}:", err=True)
        for line in invalid.reason.splitlines():
            click.echo(f"  {line}", err=True)
    return 2 if plan.invalid else 0


def _shown(path: Path | None) -> Path | None:
    """Show a path relative to the working directory when it lies below it."""
    if path is None:
        return None
    try:
        return path.relative_to(Path(os.getcwd()).resolve())
    except ValueError:
        return path
