"""``coalmine review run|stage``: pipeline evals of a code-review agent (seed 003)."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import anyio
import click

from coalmine.cli.options import root_option, store_option
from coalmine.engine.history import project_config
from coalmine.errors import ConfigError
from coalmine.review.layout import REVIEW_DIR, load_review_evals
from coalmine.review.run import render_highlights, render_table, run_review
from coalmine.review.staging import stage_all
from coalmine.store.runs import Store

NOTES_DIR = REVIEW_DIR / "sessions"


@click.group("review")
def review_group() -> None:
    """Run pipeline evals: staged git diffs, isolated roles, a grader per assertion."""


@review_group.command("run")
@click.argument("names", nargs=-1)
@root_option
@store_option
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=4, show_default=True,
              help="Evals in flight at once (roles run in order within an eval).")  # fmt: skip
@click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run each eval's pipeline N times; per-assertion pass rates.")  # fmt: skip
@click.option("--models", help="Run the reviewer role under each of these agents (a,b,c).")
@click.option("--keep", is_flag=True, help="Keep the stage dir (the git repos) and print it.")
@click.option("--notes", "notes_dir", type=click.Path(file_okay=False, path_type=Path),
              help=f"Where the session note goes (default: {NOTES_DIR}).")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="The table, or every run's grades as JSON.")  # fmt: skip
def run_command(
    names: tuple[str, ...],
    root: Path,
    store_path: Path | None,
    jobs: int,
    samples: int,
    models: str | None,
    keep: bool,
    notes_dir: Path | None,
    fmt: str,
) -> int:
    """Run the review evals under evals/review/ (or only NAMES); exit 1 if an assertion fails."""
    config = project_config(root)
    if config.path is None:
        raise ConfigError(f"no coalmine.yaml in {config.root}: the roles need agents")
    review = load_review_evals(config.root, names)
    for problem in review.problems:
        click.echo(f"error: {problem}", err=True)
    variants = [m.strip() for m in (models or "").split(",") if m.strip()]
    store = Store.open(store_path or config.store_path)
    try:
        outcome = anyio.run(
            partial(
                run_review, review, config, store=store, jobs=jobs, samples=samples,
                models=variants, keep=keep, command_line=sys.argv,
                notes_dir=notes_dir or config.root / NOTES_DIR,
            )
        )  # fmt: skip
    finally:
        store.close()
    if fmt == "json":
        payload = [
            {"eval": r.eval.name, "variant": r.variant, "sample": r.sample, "error": r.error,
             "grades": {g.id: {"verdict": g.verdict, "reason": g.reason} for g in r.grades}}
            for r in outcome.runs
        ]  # fmt: skip
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        click.echo(render_table(outcome.runs))
        click.echo("\n" + render_highlights(outcome.runs, outcome.regressions))
    if outcome.note_path is not None:
        click.echo(f"session note: {outcome.note_path}", err=True)
    if outcome.stage_dir is not None:
        click.echo(f"stage dir kept: {outcome.stage_dir}", err=True)
    if review.problems:
        return 2
    return outcome.exit_code


@review_group.command("stage")
@click.argument("names", nargs=-1)
@root_option
@click.option("--keep", is_flag=True, help="Keep the stage dir to inspect it.")
def stage_command(names: tuple[str, ...], root: Path, keep: bool) -> int:
    """Stage each eval's fixture as a git repo and print the stage dir and each file list."""
    review = load_review_evals(root.resolve(), names)
    for problem in review.problems:
        click.echo(f"error: {problem}", err=True)
    with stage_all(review.evals, keep=keep) as (stage_dir, staged):
        click.echo(str(stage_dir))
        for name, s in sorted(staged.items()):
            click.echo(f"{name}: {s.worktree} ({len(s.file_list)} files: {', '.join(s.file_list)})")
    if not keep:
        click.echo("(removed; pass --keep to inspect it)", err=True)
    return 2 if review.problems else 0
