"""``coalmine init``, ``coalmine kits list|status|update`` and ``coalmine gates list|run``.

Planning and writing live in :mod:`coalmine.harness.init`, :mod:`coalmine.harness.drift` and
:mod:`coalmine.harness.gates`; these commands show plans as diffs and ask before writing.
Nothing is written without ``--apply``, except at a terminal, where each file is asked for.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import click

from coalmine.cli.options import root_option, store_option
from coalmine.config import CONFIG_FILE
from coalmine.engine.history import find_store, open_store
from coalmine.harness.drift import harness_status, plan_update, render_status, status_json
from coalmine.harness.gates import GateOutcome, GateToRun, gates_exit_code, plan_gates, run_gates
from coalmine.harness.init import FileChange, InitPlan, apply_changes, config_problem, plan_init
from coalmine.harness.kits import all_kits
from coalmine.store.memory import mark_stale

kit_option = click.option(
    "--kit",
    "kits",
    multiple=True,
    metavar="ID",
    help="Only this kit (repeatable); init adopts it even when it does not apply.",
)
apply_option = click.option(
    "--apply", is_flag=True, help="Write every proposed file (default: show the diffs only)."
)
dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Only show the plan, even at a terminal (never asks)."
)
diff_option = click.option(
    "--diff/--no-diff", default=True, show_default=True, help="Show each file's diff."
)


@click.command("init")
@kit_option
@apply_option
@dry_run_option
@diff_option
@root_option
def init_command(kits: tuple[str, ...], apply: bool, dry_run: bool, diff: bool, root: Path) -> int:
    """Profile the repository and propose the template kits that apply, as diffs.

    Shows every file the kits would write (and coalmine.yaml when there is none). Nothing is
    written without --apply, or a yes per file at a terminal. An existing file is never
    overwritten: identical ones are adopted, different ones kept and not owned.
    harness/manifest.json records each adopted kit and the files it owns.
    """
    plan = plan_init(root, kits=kits)
    click.echo(_render_proposals(plan))
    if plan.empty:
        adopted = ", ".join(plan.adopted) or "none"
        click.echo(f"nothing new to propose (adopted: {adopted}); see `coalmine kits status`")
        return 0
    show_changes(plan.changes, diff)
    accept = _acceptor(apply, dry_run)
    if accept is None:
        count = sum(c.writes for c in plan.changes)
        click.echo(
            f"dry run: nothing written. `coalmine init --apply` writes these {count} file(s)"
            " and harness/manifest.json."
        )
        return 0
    applied = apply_changes(plan.root, plan.changes, plan.manifest, accept=accept)
    click.echo(f"wrote {len(applied.written)} file(s)" + _declined(applied.declined))
    if applied.manifest_written:
        click.echo("harness/manifest.json records the adopted kits and the files they own")
    if CONFIG_FILE in applied.written:
        problem = config_problem(plan.root, (plan.root / CONFIG_FILE).read_text("utf-8"))
        if problem is not None:
            click.echo(f"error: {CONFIG_FILE} was written but does not load: {problem}", err=True)
            return 2
        click.echo(f"{CONFIG_FILE} loads" + _agent_reminder(plan))
    return 0


def _agent_reminder(plan: InitPlan) -> str:
    if plan.agent is None or not plan.agent.stand_in:
        return ""
    return (
        f"; its agent is a STAND-IN: change the `{plan.manifest.parameters.get('agent', 'app')}:`"
        f" line of {CONFIG_FILE} to call your agent"
    )


@click.group("kits")
def kits_group() -> None:
    """Template kits: list them, see how the harness drifted, update it."""


@kits_group.command("list")
def kits_list_command() -> int:
    """The installed kits: id, version, the signals that make them apply, what they write."""
    for kit in all_kits():
        spec = kit.spec
        click.echo(f"{spec.id}  v{spec.version}  {spec.title}")
        click.echo(f"  risk: {spec.risk}")
        when = ", ".join(spec.applies_when) or "asked for by name (init --kit, redteam generate)"
        click.echo(f"  applies when: {when}")
        click.echo(f"  writes: {', '.join(kit.files())}")
        gates = ", ".join(f"{c.id} ({_blocking(c.blocks)})" for c in spec.commands) or "none"
        click.echo(f"  gates: {gates}")
    return 0


@kits_group.command("status")
@click.option("--check", is_flag=True, help="Exit 1 when anything drifted (for CI).")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@root_option
@store_option
def kits_status_command(check: bool, as_json: bool, root: Path, store_path: Path | None) -> int:
    """How the harness drifted since adoption.

    Owned files edited by hand or missing, kits that stopped or started applying, kit
    versions that moved on, and the evolution rules that fire.
    """
    store = find_store(root, path=store_path)
    try:
        status = harness_status(root, store)
    finally:
        if store is not None:
            store.close()
    if as_json:
        click.echo(json.dumps(status_json(status), indent=2))
    else:
        click.echo(render_status(status))
    return int(check and (status.drifted or not status.manifest))


@kits_group.command("update")
@kit_option
@apply_option
@dry_run_option
@diff_option
@root_option
@store_option
def kits_update_command(
    kits: tuple[str, ...],
    apply: bool,
    dry_run: bool,
    diff: bool,
    root: Path,
    store_path: Path | None,
) -> int:
    """Propose the adopted kits' new text as a three-way merge with your edits, as diffs.

    Lessons recalled for a file are shown before it is replaced, merged or deleted. Exit 1
    when an applied merge left conflicts (marked <<<<<<< yours / >>>>>>> kit) to resolve.
    """
    store = open_store(root, path=store_path)
    try:
        mark_stale(store, root)
        plan = plan_update(root, kits=kits, store=store)
    finally:
        store.close()
    for kit_id in plan.missing_kits:
        click.echo(f"kit {kit_id} is adopted but no longer installed: left as it is")
    if plan.empty:
        click.echo("the harness is up to date with its kits")
        return 0
    show_changes(plan.changes, diff)
    accept = _acceptor(apply, dry_run)
    if accept is None:
        click.echo("dry run: nothing written. `coalmine kits update --apply` writes it.")
        return 0
    applied = apply_changes(root, plan.changes, plan.manifest, accept=accept)
    click.echo(f"wrote {len(applied.written)} file(s)" + _declined(applied.declined))
    if applied.conflicts:
        click.echo(f"conflicts to resolve in: {', '.join(applied.conflicts)}")
        return 1
    return 0


@click.group("gates")
def gates_group() -> None:
    """The gate commands of the adopted kits (harness/manifest.json)."""


@gates_group.command("list")
@root_option
def gates_list_command(root: Path) -> int:
    """The gates: id, kit, blocking or advisory, command."""
    for gate in plan_gates(root):
        click.echo(f"{gate.id}  {gate.kit}  {_blocking(gate.blocks)}  {gate.command}")
    return 0


@gates_group.command("run")
@click.argument("gate_ids", nargs=-1, metavar="[GATE]...")
@kit_option
@click.option("--verbose", "-v", is_flag=True, help="Print every gate's output.")
@root_option
@store_option
def gates_run_command(
    gate_ids: tuple[str, ...],
    kits: tuple[str, ...],
    verbose: bool,
    root: Path,
    store_path: Path | None,
) -> int:
    """Run the gates (all, or GATE... / --kit): exit 1 when a blocking one fails.

    An advisory gate's failure is reported and does not change the exit code. Each run is
    stored (how it ended, not its output); a blocking gate that passed last time and fails
    now is remembered as a caught-regression lesson.
    """
    gates = plan_gates(root, ids=gate_ids, kits=kits)
    if not gates:
        click.echo("no gates: the adopted kits declare none")
        return 0

    def started(gate: GateToRun) -> None:
        click.echo(f"…     {gate.id}: {gate.command}")

    def ended(outcome: GateOutcome) -> None:
        gate = outcome.gate
        verdict = {"pass": "PASS", "fail": "FAIL", "timeout": "TIME"}[outcome.status]
        code = "" if outcome.exit_code is None else f", exit {outcome.exit_code}"
        click.echo(
            f"{verdict}  {gate.id}  ({gate.kit}, {_blocking(gate.blocks)},"
            f" {outcome.seconds:.1f}s{code})"
        )
        if verbose or outcome.status != "pass":
            for line in _shown_output(outcome, verbose):
                click.echo(f"      {line}")
        for path in outcome.missing if outcome.status != "pass" else ():
            click.echo(
                f"      {path} is missing: it is owned by kit {gate.kit}, and "
                "`coalmine kits update --apply` restores it"
            )

    store = open_store(root, path=store_path)
    try:
        outcomes = run_gates(root, gates, store=store, on_start=started, on_end=ended)
    finally:
        store.close()
    failed = [o for o in outcomes if o.status != "pass"]
    blocking = [o.gate.id for o in failed if o.gate.blocks]
    advisory = [o.gate.id for o in failed if not o.gate.blocks]
    click.echo(
        f"{len(outcomes) - len(failed)}/{len(outcomes)} gates passed"
        + (f"; blocking failures: {', '.join(blocking)}" if blocking else "")
        + (f"; advisory failures: {', '.join(advisory)}" if advisory else "")
    )
    return gates_exit_code(outcomes)


TAIL_LINES = 40
_MISSING_TOOL = re.compile(r"not found|not installed|No such file or directory|command not found")


def _shown_output(outcome: GateOutcome, verbose: bool) -> list[str]:
    """All of the output with --verbose; else its last lines, keeping a missing tool's hint.

    A gate that cannot find a tool exits 127 (the shell's code) after saying which tool and how
    to install it; that line stays in view even when the tail would drop it.
    """
    lines = outcome.output.rstrip().splitlines()
    if outcome.exit_code == 127:
        hints = [line for line in lines if _MISSING_TOOL.search(line)]
        shown = lines if verbose or len(lines) <= TAIL_LINES else lines[-TAIL_LINES:]
        kept = [h for h in hints if h not in shown]
        note = "exit 127: a command the gate needs was not found: install it or put it on PATH"
        return [*kept, *shown, note]
    if verbose or len(lines) <= TAIL_LINES:
        return lines
    return [
        f"… {len(lines) - TAIL_LINES} earlier lines (--verbose shows them)",
        *lines[-TAIL_LINES:],
    ]


def _blocking(blocks: bool) -> str:
    return "blocking" if blocks else "advisory"


def _declined(declined: Sequence[str]) -> str:
    return f"; declined {len(declined)}: {', '.join(declined)}" if declined else ""


def _acceptor(apply: bool, dry_run: bool) -> Callable[[FileChange], bool] | None:
    """Accept all (``--apply``), ask per file at a terminal, or ``None`` for a dry run."""
    if apply:
        return lambda change: True
    if dry_run or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    return lambda change: click.confirm(f"{change.action} {change.path}?", default=False)


def _render_proposals(plan: InitPlan) -> str:
    lines = [f"profiled {plan.profile.files_scanned} files in {plan.root}"]
    if not plan.proposals:
        return "\n".join(lines)
    lines += render_agent(plan)
    lines.append("kits proposed:")
    for proposal in plan.proposals:
        spec = proposal.kit.spec
        lines.append(f"  {spec.id} v{spec.version}: {spec.title}. {spec.risk}")
        for signal in proposal.because:
            places = ", ".join(
                e.path if e.line is None else f"{e.path}:{e.line}" for e in signal.evidence[:3]
            )
            more = len(signal.evidence) - 3
            lines.append(
                f"    because {signal.kind}: {places}" + (f" (+{more})" if more > 0 else "")
            )
        if not proposal.because:
            lines.append("    asked for with --kit")
    return "\n".join(lines)


def render_agent(plan: InitPlan) -> list[str]:
    """What coalmine.yaml's agent will call, and why (or that it is a stand-in).

    ``redteam generate`` shows these lines too when it proposes the config.
    """
    agent = plan.agent
    if agent is None:
        return []
    name = plan.manifest.parameters.get("agent", "app")
    if agent.stand_in:
        return [
            f"agent {name}: STAND-IN ({agent.why}). Every case fails until you change this line",
            f"  of {CONFIG_FILE} to call your agent (see 'Connect your agents' in the docs):",
            f"    {name}: {agent.line}",
        ]
    assert agent.entry is not None
    lines = [
        f"agent {name}: {agent.entry.kind} {agent.entry.where}",
        f"  because {agent.why}",
        f"  called by: {agent.line}",
    ]
    if agent.adapter_path:
        lines.append(f"  through the adapter {agent.adapter_path} (review it)")
    return lines


def show_changes(changes: Sequence[FileChange], diff: bool) -> None:
    """Print each file's planned action (and lessons), then the diffs when ``diff``."""
    click.echo("files:")
    for change in changes:
        owner = f"  ({change.kit})" if change.kit else ""
        note = f"  {change.note}" if change.note else ""
        if change.action != "unchanged" or change.note:
            click.echo(f"  {change.action:<9} {change.path}{owner}{note}")
        for lesson in change.lessons:
            click.echo(f"            lesson {lesson}")
    if diff:
        for change in changes:
            if change.writes:
                click.echo(change.diff(), nl=False)
