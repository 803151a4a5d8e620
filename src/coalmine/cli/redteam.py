"""``coalmine redteam generate`` and ``coalmine redteam report``.

``generate`` adopts (or updates) the red-team kit with the surfaces, strategies and seed asked
for: its suites are kit files, so your edits are kept and merged as ``kits update`` does.
``report`` groups a stored run's findings (attack cases that got through) by surface,
category, strategy and severity, with their OWASP LLM Top 10 (2025) identifiers.
"""

from __future__ import annotations

from pathlib import Path

import click

from coalmine.cli.harness import diff_option, dry_run_option, render_agent, show_changes
from coalmine.cli.options import root_option, store_option
from coalmine.engine.history import open_store
from coalmine.harness.drift import plan_update
from coalmine.harness.init import apply_changes, plan_init
from coalmine.harness.kits import load_manifest
from coalmine.redteam.packs import SURFACES
from coalmine.redteam.report import (
    SEVERITY_ORDER,
    load_findings,
    render_json,
    render_markdown,
    render_terminal,
)
from coalmine.redteam.strategies import STRATEGIES
from coalmine.redteam.suites import selection

KIT = "red-team"


@click.group("redteam")
def redteam_group() -> None:
    """Red-team suites built from the repository's own surface, and what got through."""


@redteam_group.command("generate")
@click.option(
    "--surface",
    "surfaces",
    multiple=True,
    metavar="NAME[,NAME…]",
    help=f"The surfaces to attack: {', '.join(SURFACES)}, or all; auto: those the repository "
    "has (tools and general always, mcp, rag and browser when found). Default: what was "
    "generated last, else auto.",
)
@click.option(
    "--strategies",
    metavar="NAME[,NAME…]",
    help=f"Rewrite every attack with these too: {', '.join(STRATEGIES)}; all; or none "
    "(default: what was generated last, else base64,homoglyph,translate,roleplay).",
)
@click.option(
    "--seed",
    type=int,
    help="The seed of every random choice: the same seed writes the same files "
    "(default: what was generated last, else 0).",
)
@dry_run_option
@diff_option
@root_option
def generate_command(
    surfaces: tuple[str, ...],
    strategies: str | None,
    seed: int | None,
    dry_run: bool,
    diff: bool,
    root: Path,
) -> int:
    """Write the red-team packs into harness/evals/, built from this repository's profile.

    Each surface is one suite, harness/evals/redteam-<surface>.{yaml,jsonl}, owned by the
    red-team kit: `kits status` shows your edits, and generating again merges the new cases
    with them. Its cases name the repository's real tools, MCP servers (mcp__<server>__<tool>),
    documents and routes, and are graded deterministically.
    """
    parameters: dict[str, str] = {}
    if surfaces:
        parameters["redteam.surfaces"] = ",".join(surfaces)
    if strategies is not None:
        parameters["redteam.strategies"] = strategies
    if seed is not None:
        parameters["redteam.seed"] = str(seed)
    try:  # the options are checked as the manifest's parameters are, before anything is read
        selection(parameters, {})
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    root = root.resolve()
    manifest = load_manifest(root)
    if manifest is not None and manifest.kit(KIT) is not None:
        plan = plan_update(root, kits=[KIT], parameters=parameters)
        changes, after = plan.changes, plan.manifest
    else:
        init = plan_init(root, kits=[KIT], parameters=parameters)
        changes, after = init.changes, init.manifest
        for line in render_agent(init):  # when it proposes coalmine.yaml, what its agent calls
            click.echo(line)
    chosen = after.parameters
    click.echo(
        f"red team of {root.name}: surfaces {chosen.get('redteam.surfaces', 'auto')},"
        f" strategies {chosen.get('redteam.strategies', 'default')},"
        f" seed {chosen.get('redteam.seed', '0')}"
    )
    if not any(c.writes for c in changes):
        click.echo("the red-team suites are up to date")
        return 0
    show_changes(changes, diff)
    if dry_run:
        click.echo("dry run: nothing written")
        return 0
    applied = apply_changes(root, changes, after)
    click.echo(f"wrote {len(applied.written)} file(s)")
    for line in _covering_gates(root, {k.id for k in after.kits}):
        click.echo(line)
    if applied.conflicts:
        click.echo(f"conflicts to resolve in: {', '.join(applied.conflicts)}")
        return 1
    return 0


_GATES = {
    "tools": ("agent-runtime", "agent-red-team"),
    "mcp": ("agent-runtime", "agent-red-team"),
    "browser": ("agent-runtime", "agent-red-team"),
    "general": ("agent-runtime", "agent-red-team"),
    "rag": ("rag-system", "rag-eval"),
}
"""Surface → the kit and gate that run its suite (gates/agent-red-team.sh and
gates/retrieval-eval.sh pick up the redteam-<surface> suites that exist)."""


def _covering_gates(root: Path, adopted: set[str]) -> list[str]:
    """A line per generated suite: the adopted kit's gate that runs it, or the command."""
    lines = []
    for surface, (kit, gate) in _GATES.items():
        if not (root / "harness" / "evals" / f"redteam-{surface}.jsonl").is_file():
            continue
        if kit in adopted:
            lines.append(
                f"  redteam-{surface}: run by the {gate} gate (`coalmine gates run {gate}`)"
            )
        else:
            lines.append(
                f"  redteam-{surface}: no adopted kit's gate runs it ({kit} would):"
                f" `coalmine eval run redteam-{surface}`"
            )
    return lines


@redteam_group.command("report")
@click.argument("run")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["terminal", "markdown", "json"]),
    default="terminal",
    show_default=True,
    help="How to write it.",
)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout."
)
@click.option(
    "--fail-on",
    type=click.Choice(SEVERITY_ORDER),
    help="Exit 1 when a finding of this severity or worse is in the run (or a control failed).",
)
@root_option
@store_option
def report_command(
    run: str,
    fmt: str,
    out: Path | None,
    fail_on: str | None,
    root: Path,
    store_path: Path | None,
) -> int:
    """Group a run's red-team findings by surface, category, strategy and severity.

    RUN is a stored eval run (id, id prefix, label, or 'latest'). A finding is an attack case
    that got through; each is listed with its OWASP LLM Top 10 (2025) identifiers. A control
    case that failed is listed apart: a grader is wrong there, not the agent.
    """
    store = open_store(root, path=store_path, create="never")
    try:
        findings = load_findings(store, run)
    finally:
        store.close()
    render = {"terminal": render_terminal, "markdown": render_markdown, "json": render_json}[fmt]
    text = render(findings)
    if out is None:
        click.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)
    if fail_on is not None and (findings.at_least(fail_on) or findings.flagged_controls):
        return 1
    return 0
