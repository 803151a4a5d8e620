"""The commit and dirty flag of the repository being evaluated, for the run record.

This is the one subprocess outside the providers: asking git is the only faithful way to know
whether the work tree is dirty. Any failure (no git, not a repository) is simply "unknown".
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GitState:
    """HEAD's commit and whether tracked files differ from it; ``None`` when unknown."""

    commit: str | None = None
    dirty: bool | None = None


def read_git_state(root: Path) -> GitState:
    """Ask git about the repository that holds ``root``."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
        if head.returncode != 0:
            return GitState()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return GitState()
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return GitState(head.stdout.strip() or None, dirty)
