"""Starting coalmine imports only what the command needs: ``--version`` and ``--help`` no feature.

Speed itself is bench/perf/startup.py's to measure; these tests pin what makes it fast.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

from coalmine.cli.main import COMMANDS, _version, cli, main

FEATURES = (
    "coalmine.canary",
    "coalmine.evals",
    "coalmine.review",
    "coalmine.judge",
    "coalmine.harness",
    "coalmine.lessons",
    "coalmine.promptfoo",
)
COMPONENTS = (
    "coalmine.engine",
    "coalmine.providers",
    "coalmine.graders",
    "coalmine.store",
    "coalmine.reports",
)
HEAVY = ("pydantic", "pydantic_core")


def _imported(*args: str) -> tuple[list[str], str]:
    """The modules ``python -X importtime ARGS`` imports, and what it printed on stdout."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    modules = [
        line.rpartition("|")[2].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    assert "coalmine" in modules, proc.stderr  # the listing is there, and parsed
    return modules, proc.stdout


def _within(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages)]


def test_import_coalmine_imports_no_feature_component_or_pydantic() -> None:
    modules, _ = _imported("-c", "import coalmine")
    assert _within(modules, FEATURES + COMPONENTS + HEAVY) == []


def test_import_cli_main_imports_no_command_feature_component_pydantic_or_rich() -> None:
    modules, _ = _imported("-c", "import coalmine.cli.main")
    assert _within(modules, FEATURES + COMPONENTS + HEAVY + ("rich",)) == []
    assert [m for m in modules if m.startswith("coalmine.cli.")] == ["coalmine.cli.main"]


def test_help_lists_every_command_without_importing_one() -> None:
    modules, out = _imported("-m", "coalmine", "--help")
    listed = [line.split()[0] for line in out.partition("Commands:\n")[2].splitlines() if line]
    assert listed == sorted(COMMANDS)
    command_modules = sorted({module for module, _, _ in COMMANDS.values()})
    assert [m for m in modules if m in command_modules] == []
    assert [m for m in modules if m.startswith("coalmine.cli.")] == ["coalmine.cli.main"]
    assert _within(modules, FEATURES + COMPONENTS + HEAVY + ("rich",)) == []


def test_version_prints_the_installed_version() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "coalmine", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert proc.stdout == f"coalmine, version {version('coalmine')}\n"
    assert _version() == version("coalmine")  # the build read the same line


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_table_names_each_command_with_its_own_help(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module, attribute, help_line = COMMANDS[name]
    command = cli.commands[name]
    assert command is getattr(sys.modules[module], attribute)
    assert command.name == name
    assert command.get_short_help_str(limit=1_000) == help_line  # --help shows what it would
    assert main([name, "--help"]) == 0
    assert f"Usage: coalmine {name} " in capsys.readouterr().out
