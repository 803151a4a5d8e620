"""``coalmine graders list|schema``: the graders this installation knows, and their config."""

from __future__ import annotations

import json

import click

from coalmine._util.docstrings import describe_fields
from coalmine.graders.base import registry as graders


@click.group("graders")
def graders_group() -> None:
    """List the registered graders and show the JSON Schema of their config."""


@graders_group.command("list")
def list_command() -> int:
    """Each grader with its pass threshold and the first line of its description."""
    rows = [("GRADER", "PASSES AT", "JUDGE", "DESCRIPTION")]
    for name, item in graders:
        doc = (item.grade.__doc__ or item.config.__doc__ or "").strip().splitlines()
        rows.append((name, f"{item.threshold:g}", "yes" if item.needs_judge else "",
                     doc[0] if doc else ""))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3])
    return 0


@graders_group.command("schema")
@click.argument("name")
def schema_command(name: str) -> int:
    """The JSON Schema of grader NAME's config (what goes under ``config:``)."""
    schema = describe_fields(graders.get(name).config).model_json_schema()
    click.echo(json.dumps(schema, indent=2))
    return 0
