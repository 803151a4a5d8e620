"""Render a bundled kit into a temporary repository, then run its suites and gates for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.resources import files
from pathlib import Path
from typing import Any

from coalmine.cli.main import main
from coalmine.graders.base import grader_configs
from coalmine.harness.kits import Kit, load_kit, render_kit
from coalmine.specs.suite import load_suite

CONFIG = (
    f"agents: {{app: {{provider: command, argv: {json.dumps([sys.executable, 'agent.py'])}}}}}\n"
)
"""A project whose one agent, ``app``, is ``agent.py``: the prompt on stdin, the answer on stdout
(run by this Python: ``python3`` may be a slow version-manager shim)."""


def kit_folder(kit_id: str) -> Path:
    """The folder of a bundled kit (found without importing, so registering, every kit)."""
    return Path(str(files("coalmine.harness.kits") / "builtin" / kit_id))


def load_bundled(kit_id: str) -> Kit:
    """The bundled kit ``kit_id``, read and checked by ``load_kit``."""
    return load_kit(kit_folder(kit_id))


EMPTY_FACTS: dict[str, Any] = {
    "routes": [],
    "docs": [],
    "go_module": None,
    "go_mains": [],
    "nix": {"flake": False, "shell_nix": False, "envrc": False, "tools": []},
    "charm": [],
    "mcp_servers": [],
    "mcp": [],
    "near_misses": [],
    "tools": [],
    "dangerous_tools": {"destroy": [], "pay": [], "send": [], "execute": [], "change": []},
    "agent_files": [],
    "agent_adapter": "",
    "redteam": {},
    "node_package_manager": None,
    "dev_command": None,
}
"""The facts of an empty repository, written out by hand (tests/profile/test_facts.py checks)."""


def context(
    *,
    project: str = "demo",
    agent: str = "app",
    signals: dict[str, list[dict[str, Any]]] | None = None,
    **facts: Any,
) -> dict[str, Any]:
    """The render context the engine builds, with empty facts unless given."""
    unknown = set(facts) - set(EMPTY_FACTS)
    assert not unknown, f"not a fact: {unknown}"
    return {
        "project": project,
        "agent": agent,
        "signals": dict(signals or {}),
        "facts": {**EMPTY_FACTS, **facts},
    }


def render_into(root: Path, kit_id: str, ctx: dict[str, Any]) -> list[str]:
    """Write the kit's files under ``root`` as the engine does (``.sh`` executable)."""
    written = []
    for rendered in render_kit(load_bundled(kit_id), ctx):
        path = root / rendered.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered.text, encoding="utf-8")
        if rendered.executable:
            path.chmod(0o755)
        written.append(rendered.path)
    return written


def write_agent(root: Path, body: str) -> None:
    """Write ``agent.py`` (dedented) and the config that makes it the agent ``app``."""
    (root / "agent.py").write_text(textwrap.dedent(body), encoding="utf-8")
    (root / "coalmine.yaml").write_text(CONFIG, encoding="utf-8")


def suite_problems(root: Path) -> dict[str, list[str]]:
    """Each suite's problems: coalmine's bad lines, blank lines, a missing final newline."""
    found = {}
    for path in sorted((root / "harness" / "evals").glob("*.jsonl")):
        suite = load_suite(path, grader_configs=grader_configs())
        problems = [str(bad) for bad in suite.bad]
        text = path.read_text(encoding="utf-8")
        problems += [
            f"line {n} is blank" for n, line in enumerate(text.splitlines(), 1) if not line
        ]
        problems += [] if text.endswith("\n") else ["no newline at the end"]
        problems += [] if suite.cases else ["no case"]
        found[path.stem] = problems
    return found


def gate_env(tmp: Path) -> dict[str, str]:
    """The environment of ``coalmine gates run``: this coalmine first on ``PATH``."""
    shims = tmp / "shims"
    shims.mkdir(exist_ok=True)
    shim = shims / "coalmine"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m coalmine "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}"}


def run_gate(
    root: Path, script: str, *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run ``bash gates/<script>`` from elsewhere (the script must find the root itself)."""
    return subprocess.run(
        ["bash", str(root / "gates" / script), "--display", "none", *args],
        cwd=root.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def eval_run(root: Path, *args: str) -> int:
    """The exit code of ``coalmine eval run ARGS`` on ``root``, judge graders skipped.

    It runs in this process, to save an interpreter start; the agents are real subprocesses.
    """
    return main(["eval", "run", *args, "--no-judge", "--display", "none", "--root", str(root)])


def last_result(root: Path, suite: str) -> dict[str, Any]:
    """The newest result JSON of ``suite`` (``.coalmine/reports/evals/<suite>/<run>.json``)."""
    runs = sorted((root / ".coalmine" / "reports" / "evals" / suite).glob("*.json"))
    assert runs, f"{suite} wrote no result"
    result: dict[str, Any] = json.loads(runs[-1].read_text(encoding="utf-8"))
    return result


def failures(result: dict[str, Any]) -> dict[str, str]:
    """Failed case id → why, for the blocking failures of a result."""
    return {f["id"]: f["reason"] for f in result["failures"] if not f.get("advisory")}
