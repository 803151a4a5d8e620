"""The root command and ``main()``: the one place errors become messages and exit codes.

Exit codes: 0 all gates held · 1 a gate failed · 2 bad usage, config or spec · 3 interrupted.
Unexpected exceptions keep their traceback (they are bugs, and the traceback is the report).

The root group is lazy: ``coalmine --help`` and ``--version`` import no command module (and so
no feature, engine, provider or pydantic model); a command's module is imported when it runs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import Any

import click

from coalmine._version import __version__
from coalmine.errors import CoalmineError, RunError, first_error

COMMANDS: dict[str, tuple[str, str, str]] = {
    "canary": (
        "coalmine.cli.canary",
        "canary",
        "Run SDLC canaries: known prompts for phase agents, graded and recorded.",
    ),
    "compare": (
        "coalmine.cli.compare",
        "compare_command",
        "Compare two runs (store references or result files): regressions, fixes, deltas.",
    ),
    "eval": (
        "coalmine.cli.evals",
        "eval_group",
        "Run eval suites: JSONL cases, graded, stored, summarised per suite.",
    ),
    "export": (
        "coalmine.cli.promptfoo",
        "export_group",
        "Write coalmine's evals in another tool's files.",
    ),
    "gates": (
        "coalmine.cli.harness",
        "gates_group",
        "The gate commands of the adopted kits (harness/manifest.json).",
    ),
    "graders": (
        "coalmine.cli.graders",
        "graders_group",
        "List the registered graders and show the JSON Schema of their config.",
    ),
    "import": (
        "coalmine.cli.promptfoo",
        "import_group",
        "Bring evals from another tool into coalmine's files.",
    ),
    "init": (
        "coalmine.cli.harness",
        "init_command",
        "Profile the repository and propose the template kits that apply, as diffs.",
    ),
    "judge": (
        "coalmine.cli.judge",
        "judge_group",
        "Label outputs, calibrate the judge against the labels, report it, test it on injections.",
    ),
    "kits": (
        "coalmine.cli.harness",
        "kits_group",
        "Template kits: list them, see how the harness drifted, update it.",
    ),
    "mcp": (
        "coalmine.cli.mcp",
        "mcp_command",
        "Serve this project to coding agents over MCP (stdio): canaries, evals, runs, compare.",
    ),
    "memory": (
        "coalmine.cli.memory",
        "memory_group",
        "Lessons learned: add them, recall the relevant ones, vote on them.",
    ),
    "profile": (
        "coalmine.cli.profile",
        "profile_command",
        "Profile the repository (read-only): its signals with evidence, and the kits that apply.",
    ),
    "redteam": (
        "coalmine.cli.redteam",
        "redteam_group",
        "Red-team suites built from the repository's own surface, and what got through.",
    ),
    "report": (
        "coalmine.cli.compare",
        "report_command",
        "Render any stored run (or result file) again, in any report format.",
    ),
    "review": (
        "coalmine.cli.review",
        "review_group",
        "Run pipeline evals: staged git diffs, isolated roles, a grader per assertion.",
    ),
    "runs": (
        "coalmine.cli.runs",
        "runs",
        "Browse the runs recorded in the run store.",
    ),
    "view": (
        "coalmine.cli.view",
        "view_command",
        "Browse the run store in a local web app: runs, cases, comparisons, judges, labelling.",
    ),
}
"""Each command: (its module, the command's name in that module, its one-line help).

The help is the first sentence of the command's docstring, shown by ``coalmine --help``
without importing the module (tests/test_startup.py checks that the two agree).
"""


class _LazyCommands(MutableMapping[str, click.Command]):
    """``Group.commands`` for a lazy group: every name is known, a command loads on lookup."""

    def __init__(self, table: dict[str, tuple[str, str, str]]) -> None:
        self._table = dict(table)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in self._table:
                raise KeyError(name)
            module, attribute, _ = self._table[name]
            command = getattr(import_module(module), attribute)
            if not isinstance(command, click.Command):  # pragma: no cover - a wrong table row
                raise TypeError(f"{module}:{attribute} is not a click command")
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._loaded and name not in self._table:
            raise KeyError(name)
        self._loaded.pop(name, None)
        self._table.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._loaded or name in self._table

    def __iter__(self) -> Iterator[str]:
        yield from self._table
        yield from (name for name in self._loaded if name not in self._table)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def short_help(self, name: str) -> str | None:
        """The table's help for a command not loaded yet, else None (ask the command)."""
        if name in self._loaded or name not in self._table:
            return None
        return self._table[name][2]


class LazyGroup(click.Group):
    """A group whose commands are imported only when one is looked up (run, or its --help)."""

    def __init__(self, *args: Any, table: dict[str, tuple[str, str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = self._lazy = _LazyCommands(table)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, sorted, without importing any command."""
        return sorted(self._lazy)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command, its module imported on first lookup; None for an unknown name."""
        return self._lazy.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their one-line help, as click writes them, from the table."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows: list[tuple[str, str]] = []
        for name in names:
            text = self._lazy.short_help(name)
            if text is None:
                command = self._lazy[name]
                if command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
            else:  # shortened to fit exactly as click shortens a command's help
                rows.append((name, click.Command(name, help=text).get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


_RESUMABLE = ("canary", "eval")
"""The kinds of run ``--resume`` finishes."""


def _version() -> str:
    """The version of coalmine, from :mod:`coalmine._version` (what the installed metadata says).

    Read from the module rather than with importlib.metadata, which alone would take about half
    of ``coalmine --version``; the build takes the package's version from the same line.
    """
    return __version__


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"coalmine, version {_version()}", color=ctx.color)
    ctx.exit()


@click.group(
    cls=LazyGroup,
    table=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """coalmine: a local-first, repo-native evaluation harness for AI agents.

    Exit codes: 0 all gates held, 1 a gate failed, 2 bad usage, config or spec,
    3 interrupted.
    """


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return (and, as a script, exit with) the product's exit code."""
    try:
        try:
            result = cli.main(args=argv, prog_name="coalmine", standalone_mode=False)
        except BaseExceptionGroup as group:
            # anyio task groups wrap what a run raises; one CoalmineError is still just that
            raise first_error(group) from None
    except CoalmineError as exc:
        click.echo(f"error: {exc}", err=True)
        hint = getattr(exc, "hint", None)
        if hint is None and isinstance(exc, RunError) and exc.run_id and exc.kind in _RESUMABLE:
            hint = f"fix the cause, then finish it: coalmine {exc.kind} run --resume {exc.run_id}"
        if hint:
            click.echo(f"hint: {hint}", err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        return 3
    except click.ClickException as exc:
        exc.show()
        return 2 if exc.exit_code == 2 else exc.exit_code or 2
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return result if isinstance(result, int) else 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
