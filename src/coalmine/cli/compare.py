"""``coalmine compare BASE NEW`` and ``coalmine report RUN``."""

from __future__ import annotations

from pathlib import Path

import click

from coalmine.cli.options import root_option, store_option
from coalmine.compare import compare_runs
from coalmine.engine.history import load_runs
from coalmine.reports.base import registry as reporters
from coalmine.reports.base import write_report
from coalmine.reports.markdown import render_comparison


@click.command("compare")
@click.argument("base")
@click.argument("new")
@root_option
@store_option
def compare_command(base: str, new: str, root: Path, store_path: Path | None) -> int:
    """Compare two runs (store references or result files): regressions, fixes, deltas.

    Exits 1 when a case that passed in BASE does not pass in NEW.
    """
    before, after = load_runs(root, [base, new], path=store_path)
    comparison = compare_runs(before, after)
    click.echo(render_comparison(comparison), nl=False)
    return 1 if comparison.regressions else 0


@click.command("report")
@click.argument("run")
@root_option
@store_option
@click.option(
    "--format",
    "fmt",
    default="markdown",
    show_default=True,
    help="json, markdown, junit or html (or a plugin's reporter).",
)
@click.option("--baseline", help="Add a comparison with this run (id, label, file, 'latest').")
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout."
)
def report_command(
    run: str,
    root: Path,
    store_path: Path | None,
    fmt: str,
    baseline: str | None,
    out: Path | None,
) -> int:
    """Render any stored run (or result file) again, in any report format."""
    record, *base = load_runs(root, [run, *([baseline] if baseline else [])], path=store_path)
    comparison = compare_runs(base[0], record) if base else None
    if out is None:
        click.echo(reporters.get(fmt).render(record, comparison=comparison), nl=False)
    else:
        click.echo(f"wrote {write_report(fmt, out, record, comparison=comparison)}", err=True)
    return 0
