"""Write the adapter ``init`` would write for a repository's entry, and run it as coalmine does."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coalmine.harness.adapters import plan_agent
from coalmine.harness.entry import Entry, find_entries


def write_adapter(root: Path, entries: Sequence[Entry] | None = None) -> str:
    """Plan the best of ``entries`` (default: those found in ``root``) and write its adapter."""
    plan = plan_agent(root, list(find_entries(root) if entries is None else entries))
    assert plan.adapter_path is not None and plan.adapter_text is not None, plan
    (root / plan.adapter_path).parent.mkdir(parents=True, exist_ok=True)
    (root / plan.adapter_path).write_text(plan.adapter_text)
    return plan.adapter_path


def run_adapter(
    root: Path,
    adapter: str,
    prompt: str,
    tmp_path: Path,
    *,
    env: dict[str, str] | None = None,
    python: str = "python3",
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Run ``adapter`` as the command provider does: prompt on stdin, a trajectory file.

    ``python`` is ``python3`` on the ``PATH`` of ``env`` (a developer's activated environment),
    unless a test names the interpreter itself.
    """
    trajectory = tmp_path / "trajectory.jsonl"
    trajectory.write_text("")
    done = subprocess.run(
        [python, adapter],
        input=prompt,
        text=True,
        capture_output=True,
        cwd=root,
        env={**(os.environ if env is None else env), "COALMINE_TRAJECTORY": str(trajectory)},
        timeout=120,
        check=False,
    )
    calls = [json.loads(line) for line in trajectory.read_text().splitlines()]
    return done, calls
