"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path

import click

root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Project root: holds coalmine.yaml (or pyproject.toml) and bench/canaries/.",
)

store_option = click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The run store's database (default: 'store:' of the config, .coalmine/coalmine.db).",
)


def parse_report(value: str) -> tuple[str, Path]:
    """Split ``FORMAT:PATH`` (e.g. ``junit:out/junit.xml``)."""
    fmt, sep, path = value.partition(":")
    if not sep or not fmt or not path:
        raise click.BadParameter(f"{value!r}: write FORMAT:PATH, e.g. junit:reports/junit.xml")
    return fmt, Path(path)
