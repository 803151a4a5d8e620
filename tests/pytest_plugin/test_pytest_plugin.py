"""``pytest --coalmine`` in a subprocess, as a team runs it on its project.

The bundled example (a copy): its nine canaries and six triage cases are collected with their
ids, ``-k`` and ``-m`` select them, a failure reports coalmine's words, and the session is one
stored run of each kind, with and without pytest-xdist. A small project of its own shows a bad
line failing with its place and an advisory failure as an expected one.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.project import Project

EXAMPLE = Path(__file__).parents[2] / "examples" / "sdlc"
CANARIES = {
    f"{spec.relative_to(EXAMPLE)}::{spec.stem}"  # each example spec's file is named by its id
    for spec in (EXAMPLE / "bench" / "canaries").rglob("*.yaml")
}

pytestmark = pytest.mark.slow


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _runs(root: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(root / ".coalmine" / "coalmine.db") as db:
        rows = db.execute("SELECT id, kind, status FROM runs ORDER BY started_at, id")
        return [tuple(r) for r in rows]


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "sdlc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".coalmine", "results"))
    return root


def _ids(done: subprocess.CompletedProcess[str]) -> set[str]:
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_the_cases_are_collected_with_their_ids_and_selected_by_k_and_m(example: Path) -> None:
    collected = _ids(_pytest(example, "--coalmine", "--collect-only"))
    cases = {line.split("::")[1] for line in collected if line.startswith("harness/")}
    assert len(CANARIES) == 9
    assert {c for c in collected if c.startswith("bench/")} == CANARIES
    assert cases == {"login-reset", "sql-injection", "slow-checkout", "bad-rollout",
                     "refund-twice", "near-miss-timeout"}  # fmt: skip
    assert "harness/evals/triage.jsonl::sql-injection" in collected

    picked = _ids(_pytest(example, "--coalmine", "--collect-only", "-k", "qa-001 or refund"))
    assert picked == {"bench/canaries/qa/qa-001-security-review.yaml::qa-001-security-review",
                      "harness/evals/triage.jsonl::refund-twice"}  # fmt: skip
    marked = _ids(_pytest(example, "--coalmine", "--collect-only", "-m", "canary and qa"))
    assert marked == {"bench/canaries/qa/qa-001-security-review.yaml::qa-001-security-review"}
    assert len(_ids(_pytest(example, "--coalmine", "--collect-only", "-m", "eval"))) == 6

    idle = _pytest(example, "--collect-only")  # without --coalmine the plugin collects nothing
    assert idle.returncode == 5 and not _ids(idle)


def test_a_session_is_one_stored_run_of_each_kind_and_a_failure_says_why(example: Path) -> None:
    done = _pytest(example, "--coalmine", "-rf")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "3 failed, 12 passed" in done.stdout
    failed = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED")}
    assert failed == {
        "bench/canaries/qa/qa-001-security-review.yaml::qa-001-security-review",
        "bench/canaries/rai/rai-001-bias-assessment.yaml::rai-001-bias-assessment",
        "harness/evals/triage.jsonl::near-miss-timeout",
    }
    assert "**triage/near-miss-timeout**: FAIL" in done.stdout
    assert "recall@k failed: recall@2 is 0" in done.stdout  # the grader's own words
    assert "| grader | score | passed | what cost points |" in done.stdout
    assert "Traceback" not in done.stdout
    runs = _runs(example)
    assert [(kind, status) for _, kind, status in runs] == [("canary", "finished"),
                                                           ("eval", "finished")]  # fmt: skip
    assert f"(coalmine run {runs[1][0]})" in done.stdout

    selected = _pytest(example, "--coalmine", "-k", "refund")
    assert selected.returncode == 0 and "1 passed" in selected.stdout
    latest = _runs(example)[-1]
    with sqlite3.connect(example / ".coalmine" / "coalmine.db") as db:
        stored = db.execute("SELECT case_id FROM eval_attempts WHERE run_id = ?", (latest[0],))
        assert [c for (c,) in stored] == ["refund-twice"]  # only what was selected ran

    compared = subprocess.run(
        [sys.executable, "-m", "coalmine", "compare", runs[1][0], latest[0], "--root", str(example)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert compared.returncode in (0, 1) and compared.stdout  # a stored run like any other


def test_pytest_xdist_spreads_the_items_over_one_run(example: Path) -> None:
    done = _pytest(example, "--coalmine", "-n", "2")
    assert done.returncode == 1 and "3 failed, 12 passed" in done.stdout, done.stdout
    assert [(kind, status) for _, kind, status in _runs(example)] == [("canary", "finished"),
                                                                      ("eval", "finished")]  # fmt: skip


def test_a_bad_line_fails_with_its_place_and_an_advisory_failure_is_expected(
    project: Project,
) -> None:
    argv = project.agent_script("echo", "import sys\nsys.stdout.write(sys.stdin.read())\n")
    project.config({"agents": {"echo": {"provider": "command", "argv": argv}}, "judge": "none"})
    project.write("harness/evals/soft.yaml", "agent: echo\nblocking: false\n")
    lines = [
        {"id": "same", "prompt": "x", "expected": "x", "graders": [{"type": "equals"}]},
        {"id": "differs", "prompt": "x", "expected": "y", "graders": [{"type": "equals"}]},
    ]
    project.write("harness/evals/soft.jsonl",
                  "\n".join(json.dumps(x) for x in lines) + "\n{not json\n")  # fmt: skip
    done = _pytest(project.root, "--coalmine", "-rfx")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed, 1 xfailed" in done.stdout
    assert "XFAIL harness/evals/soft.jsonl::differs" in done.stdout
    assert "FAILED harness/evals/soft.jsonl::line-3" in done.stdout
    assert f"{project.root / 'harness' / 'evals' / 'soft.jsonl'}:3: not valid JSON" in done.stdout
