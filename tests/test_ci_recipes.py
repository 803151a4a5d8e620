"""The CI recipes of docs/ci/, step by step on the bundled example, as their runner would.

Every ``run:`` (GitHub) and ``script:`` (GitLab) command is run with bash in a copy of the
example, in the jobs' order, with the runner's rules for a failed step (GitHub: only steps
with ``if: always()`` go on; GitLab: the script stops, ``after_script`` runs). The replay job
runs with the example's agents deleted: its answers come from the cassette alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parent.parent
RECIPES = ROOT / "docs" / "ci"
EXAMPLE = ROOT / "examples" / "sdlc"
INSTALL = "pip install coalmine"
"""The one step not run here: this coalmine is installed already (and first on PATH)."""

pytestmark = pytest.mark.slow


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "sdlc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".coalmine", "results"))
    return root


def _bash(command: str, cwd: Path, summary: Path) -> int:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_STEP_SUMMARY": str(summary),
        "OPENAI_API_KEY": "sk-not-used-by-the-example",
    }
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, timeout=300,
                          capture_output=True, text=True)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode


def _github_job(job: dict[str, Any], cwd: Path, summary: Path) -> list[tuple[str, int]]:
    codes: list[tuple[str, int]] = []
    failed = False
    for step in job["steps"]:
        if "run" not in step:
            continue
        if step["run"] == INSTALL:
            continue
        if failed and step.get("if") != "always()":
            continue
        code = _bash(step["run"], cwd, summary)
        codes.append((step.get("name", step["run"]), code))
        failed = failed or code != 0
    return codes


def _junit_cases(path: Path) -> int:
    return len(ET.parse(path).getroot().findall(".//testcase"))


def test_the_github_workflow_is_pinned_and_reads_only() -> None:
    text = (RECIPES / "github-actions.yml").read_text(encoding="utf-8")
    workflow = yaml.safe_load(text)
    assert workflow["permissions"] == {"contents": "read"}
    uses = re.findall(r"^\s*-?\s*uses: (\S+)(.*)", text, re.M)
    assert uses
    for action, comment in uses:
        assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", action), action
        assert re.fullmatch(r"\s+# v\d+\.\d+\.\d+", comment), (action, comment)
    for name, job in workflow["jobs"].items():
        assert "permissions" not in job, name  # nothing more than the workflow's read
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False
    replay, live = workflow["jobs"]["replay"], workflow["jobs"]["live"]
    assert "secrets." not in yaml.safe_dump(replay)  # a fork's pull request gets no secret
    assert "head.repo.full_name == github.repository" in live["if"]


def test_the_github_jobs_record_then_replay_with_reports_and_a_job_summary(
    example: Path, tmp_path: Path
) -> None:
    jobs = yaml.safe_load((RECIPES / "github-actions.yml").read_text(encoding="utf-8"))["jobs"]
    summary = tmp_path / "summary.md"

    live = dict(_github_job(jobs["live"], example, summary))
    assert live["canaries, recorded"] == 1  # two of the example's canaries fail on purpose
    assert live["eval reports"] == 0 and live["job summary"] == 0
    assert _junit_cases(example / "out" / "canaries.xml") == 9
    assert _junit_cases(example / "out" / "evals.xml") == 6
    text = summary.read_text(encoding="utf-8")
    assert "Canary Run Results" in text and "triage" in text
    cassette = example / "harness" / "cassettes" / "canaries.jsonl"
    assert cassette.is_file() and cassette.read_text(encoding="utf-8").strip()

    shutil.rmtree(example / "agents")  # replay: nothing may be called
    shutil.rmtree(example / "out")
    summary.write_text("")
    replay = dict(_github_job(jobs["replay"], example, summary))
    assert replay["canaries, answered from the cassette"] == 1  # the same verdicts
    assert replay["job summary"] == 0
    assert _junit_cases(example / "out" / "canaries.xml") == 9
    assert "**Summary:** 7/9 passed" in summary.read_text(encoding="utf-8")


def test_the_gitlab_jobs_run_as_their_scripts_say(example: Path, tmp_path: Path) -> None:
    pipeline = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text(encoding="utf-8"))
    assert pipeline["default"]["before_script"] == [INSTALL]
    summary = tmp_path / "unused.md"
    for name in ("live", "replay"):
        job = pipeline[name]
        # GitLab runs a job's script in one shell and stops at its first failing command
        code = _bash("set -e\n" + "\n".join(job["script"]), example, summary)
        assert code == 1, name  # two of the example's canaries fail on purpose
        reports = job["artifacts"]["reports"]["junit"]
        for report in [reports] if isinstance(reports, str) else reports:
            assert _junit_cases(example / report) >= 1, report
        if name == "live":
            assert _junit_cases(example / "out" / "evals.xml") == 6  # the eval run went on
            shutil.rmtree(example / "agents")  # replay next: nothing may be called
            shutil.rmtree(example / "out")


def _action_step(name: str) -> dict[str, Any]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    (step,) = [s for s in action["runs"]["steps"] if s.get("name") == name]
    return step


def _run_action(example: Path, tmp_path: Path, **inputs: str) -> tuple[int, Path, Path]:
    step = _action_step("run")
    assert all("${{" not in line for line in step["run"].splitlines())  # inputs only as env
    values = {"run": "canary", "args": "", "root": str(example), **inputs}
    env = {k: re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: values[m[1]], v)
           for k, v in step["env"].items()}  # fmt: skip
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    summary.write_text(""), output.write_text("")
    done = subprocess.run(
        ["bash", "-c", step["run"]], cwd=example, timeout=300, capture_output=True, text=True,
        env={**os.environ, **env, "GITHUB_STEP_SUMMARY": str(summary),
             "GITHUB_OUTPUT": str(output),
             "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"},
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, summary, output


def test_the_composite_action_runs_reports_and_summarises(example: Path, tmp_path: Path) -> None:
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    for action, comment in re.findall(r"^\s*-?\s*uses: (\S+)(.*)", text, re.M):
        assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", action), action
        assert re.fullmatch(r"\s+# v\d+\.\d+\.\d+", comment), comment
    assert _action_step("install coalmine")["run"] == 'pip install "$REQUIREMENT"'

    code, summary, output = _run_action(example, tmp_path)
    assert code == 1 and output.read_text() == "exit-code=1\n"
    assert _junit_cases(example / "out" / "coalmine-canary.xml") == 9
    assert "**Summary:** 7/9 passed" in summary.read_text(encoding="utf-8")

    code, summary, _ = _run_action(example, tmp_path, run="eval", args="triage --no-judge")
    # the suite holds at 80% (min_score): its one near miss does not fail the run
    assert code == 0 and _junit_cases(example / "out" / "coalmine-eval.xml") == 6
    assert "triage" in summary.read_text(encoding="utf-8")


def test_the_composite_action_runs_nothing_its_inputs_hold(example: Path, tmp_path: Path) -> None:
    planted = tmp_path / "pwned"
    code, _, output = _run_action(example, tmp_path, args=f"$(touch {planted}) *")
    assert code == 2 and output.read_text() == "exit-code=2\n"  # an unknown selector, not a shell
    assert not planted.exists()
    code, _, _ = _run_action(example, tmp_path, run="canary; touch " + str(planted))
    assert code == 2 and not planted.exists()
