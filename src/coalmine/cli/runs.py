"""``coalmine runs list|show|import``: the run store's history."""

from __future__ import annotations

import json
from pathlib import Path

import click

from coalmine.cli.display import echo_markdown
from coalmine.cli.options import root_option, store_option
from coalmine.engine.history import import_result_files, open_store, tally_run
from coalmine.evals.render import render_suites
from coalmine.reports.json import render_json
from coalmine.reports.markdown import render_markdown
from coalmine.results import format_score
from coalmine.store.evals import attempt_records, suite_results


@click.group()
def runs() -> None:
    """Browse the runs recorded in the run store."""


@runs.command("list")
@root_option
@store_option
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
def list_command(root: Path, store_path: Path | None, limit: int) -> int:
    """List the newest runs: id, kind, label, status, pass count, score, commit.

    A canary run's score is its mean composite; an eval run's is the mean of its suites' scores;
    a review run's counts its evals' runs.
    """
    store = open_store(root, path=store_path, create="never")
    try:
        rows = [("ID", "KIND", "LABEL", "STARTED", "STATUS", "PASSED", "SCORE", "COMMIT")]
        for info in store.list_runs(limit=limit):
            tally = tally_run(store, info)
            passed = f"{'?' if tally.passed is None else tally.passed}/{tally.total}"
            composite = format_score(tally.score) if tally.score is not None else "—"
            commit = (info.git_commit or "")[:10] + ("+dirty" if info.git_dirty else "")
            rows.append(
                (
                    info.id,
                    info.kind,
                    info.label or "",
                    info.started_at[:19].replace("T", " "),
                    info.status,
                    passed,
                    composite,
                    commit,
                )
            )
    finally:
        store.close()
    if len(rows) == 1:
        click.echo("no runs recorded yet")
        return 0
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0


@runs.command("show")
@click.argument("run")
@root_option
@store_option
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def show_command(run: str, root: Path, store_path: Path | None, fmt: str) -> int:
    """Show a run as it was printed (RUN: id, id prefix, label or 'latest')."""
    store = open_store(root, path=store_path, create="never")
    try:
        info = store.get_run(run)
        if info.kind == "eval":
            suites = suite_results(store, info.id)
        elif info.kind == "review":
            records = attempt_records(store, info.id, "review")
        else:
            record = store.load_run(run)
    finally:
        store.close()
    if info.error:  # what stopped it; its first line (the store keeps the rest)
        click.echo(f"run {info.id} stopped on an error: {info.error.splitlines()[0]}", err=True)
    if info.kind == "review":
        if fmt == "json":  # every role call: what each role was given and what it answered
            payload = [{"case": case, **rec} for case, rec in records]
            click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        for case, rec in records if fmt != "json" else []:
            verdicts = ", ".join(f"{k} {v['verdict']}" for k, v in rec.get("grades", {}).items())
            roles = " → ".join(f"{c['role']} ({c['agent']})" for c in rec.get("calls", []))
            click.echo(f"{case}: {verdicts or rec.get('error', 'no grades')}  [{roles}]")
        return 0
    if info.kind == "eval":
        if fmt == "json":
            payload = [r.model_dump(mode="json", by_alias=True) for r in suites]
            click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        elif suites:
            click.echo(render_suites(suites, root=Path(info.root)))
        else:
            click.echo(f"eval run {info.id} ({info.status}) has no suite summary yet")
        return 0
    if fmt == "json":
        click.echo(render_json(record), nl=False)
    else:
        echo_markdown(render_markdown(record, results_path=None, date=record.timestamp[:10]))
    return 0


@runs.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@root_option
@store_option
def import_command(files: tuple[Path, ...], root: Path, store_path: Path | None) -> int:
    """Import canary-run-*.json result files, so older runs can be compared.

    Each run is stored once: a file of a run the store holds already (imported before, or
    recorded here) stores nothing, and one that holds such a run with other content is
    refused. Exits 2 when a file was refused; the other files are still imported.
    """
    store = open_store(root, path=store_path, create="in a project")
    try:
        done = import_result_files(store, files, root=root.resolve())
    finally:
        store.close()
    for item in done:
        if item.run is None:
            click.echo(f"error: {item.error}", err=True)
        elif item.run.new:
            click.echo(f"{item.path}: imported as {item.run.run_id}")
        else:
            where = f"imported from {item.run.source}" if item.run.source else "recorded here"
            click.echo(f"{item.path}: already in the store as {item.run.run_id} ({where})")
    return 2 if any(item.run is None for item in done) else 0
