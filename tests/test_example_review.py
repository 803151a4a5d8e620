"""The bundled review example runs offline, writes its note, and shows a regression."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parent.parent / "examples" / "review"


def review(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coalmine", "review", "run", "--root", str(root)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_the_example_passes_then_a_sloppier_reviewer_regresses(tmp_path: Path) -> None:
    root = tmp_path / "review"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".coalmine", "sessions"))
    first = review(root)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "| **Total** | 13 | 13 | 0 | 0 |" in first.stdout
    [note] = (root / "evals" / "review" / "sessions").glob("harness-*-eval-runs.md")
    assert "| python-sql-injection | 2.1–2.3 (3) | 3 | 0 | 0 |" in note.read_text("utf-8")
    pipeline = root / "evals" / "review" / "pipeline.yaml"
    assert "agent: reviewer " in pipeline.read_text("utf-8")
    pipeline.write_text(
        pipeline.read_text("utf-8").replace("agent: reviewer ", "agent: reviewer-sloppy ", 1),
        encoding="utf-8",
    )
    second = review(root)
    assert second.returncode == 1, second.stdout + second.stderr
    assert "| python-sql-injection | 2.1–2.3 (3) | 1 | 2 | 0 |" in second.stdout
    assert "- python-sql-injection 2.2: pass → fail" in second.stdout
    assert "- python-sql-injection 2.3: pass → fail" in second.stdout
