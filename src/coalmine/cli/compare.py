"""``coalmine compare BASE NEW`` and ``coalmine report RUN``."""

from __future__ import annotations

from pathlib import Path

import click

from coalmine.cli.options import root_option, store_option
from coalmine.compare import compare_runs
from coalmine.engine.history import load_run_at
from coalmine.engine.pairs import KINDS, load_pair_at
from coalmine.reports.base import registry as reporters
from coalmine.reports.base import write_report
from coalmine.reports.markdown import render_comparison

_kind_option = click.option(
    "--kind",
    type=click.Choice(KINDS),
    help="The kind of run 'latest' and 'previous' mean (default: the other run's).",
)


@click.command("compare")
@click.argument("base")
@click.argument("new")
@root_option
@store_option
@_kind_option
def compare_command(
    base: str, new: str, root: Path, store_path: Path | None, kind: str | None
) -> int:
    """Compare two runs (store references or result files): regressions, fixes, deltas.

    'latest' is the finished run of the other run's kind that started last; 'previous' the
    one that started last before the other run (before 'latest' when the other is relative
    too). With neither run named, the kind is --kind, else that of the run that started last.
    Exits 1 when a case that passed in BASE does not pass in NEW, and 2 when the runs are of
    two kinds or have no case in common.
    """
    comparison = compare_runs(*load_pair_at(root, base, new, path=store_path, kind=kind))
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
@click.option(
    "--baseline",
    help="Add a comparison with this run (id, label, file, 'latest', 'previous'), as compare.",
)
@_kind_option
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout."
)
def report_command(
    run: str,
    root: Path,
    store_path: Path | None,
    fmt: str,
    baseline: str | None,
    kind: str | None,
    out: Path | None,
) -> int:
    """Render any stored run (or result file) again, in any report format."""
    if baseline is None:
        record, comparison = load_run_at(root, run, path=store_path, kind=kind), None
    else:
        base, record = load_pair_at(root, baseline, run, path=store_path, kind=kind)
        comparison = compare_runs(base, record)
    if out is None:
        click.echo(reporters.get(fmt).render(record, comparison=comparison), nl=False)
    else:
        click.echo(f"wrote {write_report(fmt, out, record, comparison=comparison)}", err=True)
    return 0
