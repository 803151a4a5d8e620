"""``coalmine import promptfoo`` and ``coalmine export promptfoo``: move evals between the tools."""

from __future__ import annotations

from pathlib import Path

import click

from coalmine.promptfoo.files import export_promptfoo, import_promptfoo
from coalmine.promptfoo.matrix.config import CONFIG_FILE


@click.group("import")
def import_group() -> None:
    """Bring evals from another tool into coalmine's files."""


@import_group.command("promptfoo")
@click.argument(
    "config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=CONFIG_FILE,
    required=False,
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The coalmine project to write to: suites in DIR/harness/evals, agents in "
    "DIR/coalmine.yaml.",
)
@click.option("--name", help="The suites' name (default: the config's description or folder).")
@click.option("--force", is_flag=True, help="Replace suite files that exist with other content.")
def import_promptfoo_command(config: Path, out_dir: Path, name: str | None, force: bool) -> int:
    """Import a promptfoo config (default promptfooconfig.yaml) as coalmine eval suites.

    Each column promptfoo shows (a prompt run by a provider) becomes a 'compat: promptfoo'
    suite whose lines are the config's tests, rendered with Nunjucks and scored by promptfoo's
    rules when 'coalmine eval run' runs them; each provider becomes an agent in coalmine.yaml.
    The config's code runs as in promptfoo: test generators now (their tests become lines),
    prompt functions, executable prompts, var loaders and Nunjucks filters when the suites run.
    What cannot be carried over is listed, never dropped silently. Exit 0 when everything
    maps, 1 when a provider, an assertion or a test's own provider has no coalmine equivalent
    (its rows will be ERRORs), 2 when the config is broken.
    """
    if not config.is_file():
        raise click.BadParameter(f"no promptfoo config at {config}", param_hint="CONFIG")
    result = import_promptfoo(config, out_dir=out_dir, name=name, force=force)
    plan = result.plan
    for suite in plan.suites:
        rows = len(suite.lines)
        who = suite.provider.agent_name if suite.provider.agent else "no agent"
        click.echo(
            f"suite {suite.name}: {rows} test{'s' if rows != 1 else ''}, "
            f"prompt {suite.column.prompt.label!r} by {suite.provider.key} ({who})"
        )
    for path in result.written:
        click.echo(f"wrote {path}")
    if result.unchanged:
        click.echo(f"{len(result.unchanged)} file(s) unchanged")
    if result.config is not None:
        click.echo(f"added {len(plan.agents)} agent(s) to {result.config}")
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    if plan.needs_judge:
        click.echo(
            "note: model-graded assertions need a judge: set 'judge:' in coalmine.yaml", err=True
        )
    unsupported = plan.unsupported_providers or plan.unsupported_assertions
    return 1 if unsupported or plan.unsupported_rows else 0


@click.group("export")
def export_group() -> None:
    """Write coalmine's evals in another tool's files."""


@export_group.command("promptfoo")
@click.argument("suite")
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The coalmine project.",
)
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path(CONFIG_FILE),
    show_default=True,
    help="The promptfoo config to write.",
)
def export_promptfoo_command(suite: str, root: Path, out_file: Path) -> int:
    """Write the eval suite SUITE (a name or a path) as a promptfoo config.

    An imported suite goes back as it came; a coalmine suite's cases become tests whose
    assertions are the graders promptfoo has (equals, contains, regex, levenshtein, is-json,
    llm-rubric …), its agent a provider (echo, openai, anthropic, and promptfoo-convention
    command and python agents). What promptfoo has no equivalent of is listed as not
    exportable. Exit 0 when everything was carried over, 1 when something was not.
    """
    exported = export_promptfoo(root, suite, out_file)
    click.echo(f"wrote {out_file}: {len(exported.config.get('tests', []))} test(s)")
    for note in exported.notes:
        click.echo(f"not exportable: {note}", err=True)
    for note in dict.fromkeys(exported.approximations):
        click.echo(f"note: {note}", err=True)
    return 1 if exported.notes else 0
