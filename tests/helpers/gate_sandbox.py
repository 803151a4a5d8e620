"""Render a bundled kit into a folder and run its gate scripts with fake tools on a bare PATH.

The gate scripts call tools that are not installed here (go, nix, npx). A :class:`Sandbox` is a
repository folder plus a ``bin`` folder that is the whole ``PATH``: links to the few system
tools the scripts need (bash, python3, mktemp …) and the shims a test adds. A shim is a small
Python script that appends its argv and some environment (``GOOS`` …) to a log, runs the
test's snippet, and exits with the test's code. A tool with no shim is missing, as on a
machine without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import coalmine.harness.kits
from coalmine.harness.kits import RenderedFile, load_kit, render_kit
from tests.helpers.kit_project import context

KITS = Path(coalmine.harness.kits.__file__).parent / "builtin"

SYSTEM_TOOLS = ("bash", "dirname", "mktemp", "rm", "env", "cat", "sleep", "find", "sort")
"""What the scripts (and shims) may use besides the shims: present on any machine."""

PYTHON = os.path.realpath(sys.executable)
"""The base interpreter (a venv's python needs its pyvenv.cfg beside it; this one does not)."""

LOGGED_ENV = ("GOOS", "GOARCH", "CGO_ENABLED", "PORT")


def make_context(
    *,
    project: str = "demo",
    facts: Mapping[str, Any] | None = None,
    signals: Mapping[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """A render context as the engine builds it: every fact present, ``facts`` overriding."""
    return context(
        project=project, agent="demo-agent", signals=dict(signals or {}), **(facts or {})
    )


def render(kit_id: str, context: Mapping[str, Any]) -> dict[str, RenderedFile]:
    """The files of the bundled kit ``kit_id`` rendered with ``context``, by path.

    The kit is loaded from its folder rather than through the registry, which loads all
    bundled kits: a neighbour's broken template must not fail this kit's tests.
    """
    kit = load_kit(KITS / kit_id)
    return {f.path: f for f in render_kit(kit, context)}


class Sandbox:
    """A rendered repository and the PATH its gate scripts run with."""

    def __init__(self, tmp_path: Path, kit_id: str, context: Mapping[str, Any]):
        self.root = tmp_path / "repo"
        self.bin = tmp_path / "bin"
        self.log = tmp_path / "calls.jsonl"
        self.root.mkdir()
        self.bin.mkdir()
        self.files = render(kit_id, context)
        for path, rendered in self.files.items():
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(rendered.text, encoding="utf-8")
            if rendered.executable:
                target.chmod(0o755)
        for tool in SYSTEM_TOOLS:
            found = shutil.which(tool)
            assert found, f"{tool} is needed to run the gate scripts"
            (self.bin / tool).symlink_to(found)
        (self.bin / "python3").symlink_to(PYTHON)

    def shim(self, name: str, *, code: int = 0, body: str = "") -> None:
        """Put a fake ``name`` on PATH: it logs its call, runs ``body`` (Python), exits ``code``."""
        script = (
            f"#!{PYTHON}\n"
            "import json, os, sys\n"
            f"with open({str(self.log)!r}, 'a') as _log:\n"
            f"    _env = {{k: os.environ[k] for k in {LOGGED_ENV!r} if k in os.environ}}\n"
            f"    _log.write(json.dumps({{'tool': {name!r}, 'argv': sys.argv[1:], 'env': _env, 'cwd': os.getcwd()}}) + '\\n')\n"
            f"{body}\n"
            f"sys.exit({code})\n"
        )
        path = self.bin / name
        path.write_text(script, encoding="utf-8")
        path.chmod(0o755)

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        """The logged shim calls, in order (of ``tool`` only, when given)."""
        if not self.log.exists():
            return []
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [c for c in calls if tool is None or c["tool"] == tool]

    def run(
        self, script: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        """``bash <script> args…`` from the repository root, with only the sandbox on PATH."""
        return subprocess.run(
            [shutil.which("bash") or "bash", script, *args],
            cwd=self.root,
            env={"PATH": str(self.bin), "HOME": str(self.root.parent), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
