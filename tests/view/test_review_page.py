"""The viewer's page of a review run: each role's input and output, the table, the note."""

from __future__ import annotations

import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from coalmine.store.runs import Store
from tests.helpers.viewer import serving

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "review"

pytestmark = pytest.mark.slow


def test_a_review_run_shows_each_roles_call_the_table_and_the_note(tmp_path: Path) -> None:
    root = tmp_path / "review"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".coalmine", "sessions"))
    done = subprocess.run(
        [sys.executable, "-m", "coalmine", "review", "run", "--root", str(root)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    store = root / ".coalmine" / "coalmine.db"
    opened = Store.open(store)
    try:
        [info] = opened.list_runs(kind="review")
    finally:
        opened.close()
    assert info.results_file is not None and info.results_file.startswith("evals/review/sessions/")
    with serving(store, root) as url:
        with urllib.request.urlopen(f"{url}/run/{info.id}", timeout=30) as response:
            page = response.read().decode()
        with urllib.request.urlopen(f"{url}/", timeout=30) as response:
            runs = response.read().decode()
    assert f'<tr class="run" data-run="{info.id}" data-kind="review">' in runs
    assert "<h1>Review run <code>" in page
    assert '<section class="review-eval" data-case="python-sql-injection' in page
    for role in ("resolver", "reviewer", "grader"):
        assert f'<details class="role-call" data-role="{role}">' in page, role
    assert "| **Total** | 13 | 13 | 0 | 0 |" in page  # the table the run printed
    note = (root / info.results_file).read_text(encoding="utf-8")
    assert f"<code>{info.results_file}</code>" in page
    assert note.splitlines()[0] in page
