"""``coalmine memory add|recall|feedback|list``: the lessons kept in the run store.

``recall``, ``feedback`` and ``list`` first bring stale marks up to date against ``--root``
(paths gone, repeated negative feedback); stale lessons are shown, never deleted.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

from coalmine.cli.options import root_option, store_option
from coalmine.engine.history import find_store, open_store
from coalmine.store.memory import (
    KINDS,
    VERDICTS,
    Lesson,
    Verdict,
    add_lesson,
    feedback,
    get_lesson,
    list_lessons,
    mark_stale,
    recall,
)


@click.group("memory")
def memory_group() -> None:
    """Lessons learned: add them, recall the relevant ones, vote on them."""


def _line(lesson: Lesson, score: float | None = None) -> str:
    head = f"#{lesson.id}" + (f"  {score:.3f}" if score is not None else "")
    votes = f"+{lesson.positive} -{lesson.negative} ✓{lesson.validated}"
    where = f"  [{', '.join(lesson.paths)}]" if lesson.paths else ""
    tags = f"  tags: {', '.join(lesson.tags)}" if lesson.tags else ""
    stale = f"  (stale: {lesson.stale})" if lesson.stale else ""
    seen = f"  (caught {lesson.count} times, last in {lesson.last_run})" if lesson.count > 1 else ""
    return f"{head}  {lesson.kind}  {votes}  {lesson.text}{seen}{where}{tags}{stale}"


@memory_group.command("add")
@click.argument("kind", metavar="KIND", type=click.Choice(KINDS))
@click.argument("text")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--path", "paths", multiple=True, help="A file or folder it is about (repeatable).")
@click.option("--evidence", multiple=True, help="A run or case id it came from (repeatable).")
@root_option
@store_option
def add_command(
    kind: str,
    text: str,
    tags: tuple[str, ...],
    paths: tuple[str, ...],
    evidence: tuple[str, ...],
    root: Path,
    store_path: Path | None,
) -> int:
    """Remember a lesson of KIND (caught-regression, risk-note, observation …)."""
    if not text.strip():
        raise click.BadParameter("a lesson needs some text", param_hint="TEXT")
    store = open_store(root, path=store_path)
    try:
        lesson_id = add_lesson(store, kind, text, tags=tags, paths=paths, evidence=evidence)
    finally:
        store.close()
    click.echo(f"lesson #{lesson_id} remembered")
    return 0


@memory_group.command("recall")
@click.argument("query")
@click.option("--path", "paths", multiple=True, help="A path being worked on (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True)
@root_option
@store_option
def recall_command(
    query: str, paths: tuple[str, ...], limit: int, root: Path, store_path: Path | None
) -> int:
    """The lessons relevant to QUERY (and --path), best first, with their scores."""
    found = []
    store = find_store(root, path=store_path)  # a read: no store means no lessons yet
    if store is not None:
        try:
            mark_stale(store, root)
            found = recall(store, query, paths=paths, limit=limit)
        finally:
            store.close()
    if not found:
        click.echo("no lesson matches")
    for lesson, score in found:
        click.echo(_line(lesson, score))
    return 0


@memory_group.command("feedback")
@click.argument("lesson_id", metavar="ID", type=int)
@click.argument("verdict", metavar="VERDICT", type=click.Choice(VERDICTS))
@root_option
@store_option
def feedback_command(lesson_id: int, verdict: str, root: Path, store_path: Path | None) -> int:
    """Vote on lesson ID: positive, negative, or validated (counts double)."""
    store = open_store(root, path=store_path)
    try:
        feedback(store, lesson_id, cast(Verdict, verdict))
        mark_stale(store, root)
        lesson = get_lesson(store, lesson_id)
    finally:
        store.close()
    click.echo(_line(lesson))
    return 0


@memory_group.command("list")
@click.option("--stale", "include_stale", is_flag=True, help="Also show the stale lessons.")
@root_option
@store_option
def list_command(include_stale: bool, root: Path, store_path: Path | None) -> int:
    """List the lessons, oldest first (stale ones only with --stale)."""
    lessons = []
    store = find_store(root, path=store_path)
    if store is not None:
        try:
            mark_stale(store, root)
            lessons = list_lessons(store, include_stale=include_stale)
        finally:
            store.close()
    if not lessons:
        click.echo("no lessons yet")
    for lesson in lessons:
        click.echo(_line(lesson))
    return 0
