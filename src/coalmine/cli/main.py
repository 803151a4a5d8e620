"""The root command and ``main()``: the one place errors become messages and exit codes.

Exit codes: 0 all gates held · 1 a gate failed · 2 bad usage, config or spec · 3 interrupted.
Unexpected exceptions keep their traceback (they are bugs, and the traceback is the report).
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

import click

from coalmine.cli.canary import canary
from coalmine.cli.compare import compare_command, report_command
from coalmine.cli.evals import eval_group
from coalmine.cli.graders import graders_group
from coalmine.cli.harness import gates_group, init_command, kits_group
from coalmine.cli.judge import judge_group
from coalmine.cli.memory import memory_group
from coalmine.cli.profile import profile_command
from coalmine.cli.promptfoo import export_group, import_group
from coalmine.cli.review import review_group
from coalmine.cli.runs import runs
from coalmine.errors import CoalmineError


def _version() -> str:
    try:
        return version("coalmine")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), prog_name="coalmine")
def cli() -> None:
    """coalmine: a local-first, repo-native evaluation harness for AI agents.

    Exit codes: 0 all gates held, 1 a gate failed, 2 bad usage, config or spec,
    3 interrupted.
    """


cli.add_command(canary)
cli.add_command(eval_group)
cli.add_command(runs)
cli.add_command(compare_command)
cli.add_command(report_command)
cli.add_command(graders_group)
cli.add_command(judge_group)
cli.add_command(review_group)
cli.add_command(profile_command)
cli.add_command(memory_group)
cli.add_command(init_command)
cli.add_command(kits_group)
cli.add_command(gates_group)
cli.add_command(import_group)
cli.add_command(export_group)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return (and, as a script, exit with) the product's exit code."""
    try:
        try:
            result = cli.main(args=argv, prog_name="coalmine", standalone_mode=False)
        except BaseExceptionGroup as group:
            # anyio task groups wrap what a run raises; one CoalmineError is still just that
            raise _single(group) from None
    except CoalmineError as exc:
        click.echo(f"error: {exc}", err=True)
        hint = getattr(exc, "hint", None)
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


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside (nested) groups, or the group itself when there are several."""
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup[BaseException]) -> None:
        for exc in g.exceptions:
            if isinstance(exc, BaseExceptionGroup):
                walk(exc)
            else:
                leaves.append(exc)

    walk(group)
    return leaves[0] if len(leaves) == 1 else group


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
