"""``coalmine judge label``: label a finished run's cases into a calibration set, by hand.

Runs are made through the real CLI (an eval run with a python agent, a canary run with a
command agent); the labeller's answers are piped in, one line an answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from coalmine.graders.judged import judge_prompt_identity
from coalmine.judge.labelling import judge_asks
from coalmine.judge.labels import load_labels
from coalmine.specs.models import GraderSpec
from tests.helpers.openai_server import FakeOpenAI, Received, Reply
from tests.helpers.project import Project

CRITERIA = ("--criteria", "correct=the policy is applied right", "--criteria", "polite")


def label(
    project: Project, *args: str, answers: str, user: str = "ann"
) -> subprocess.CompletedProcess[str]:
    """Run ``coalmine judge label latest ARGS`` with ``answers`` on stdin (a pipe)."""
    env = {**os.environ, "USER": user}
    return subprocess.run(
        [sys.executable, "-m", "coalmine", "judge", "label", "latest", *args,
         "--root", str(project.root)],
        input=answers, capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip


def eval_run(project: Project, *, yaml_meta: dict[str, Any], cases: list[dict[str, Any]]) -> None:
    project.write("label_agent.py", "def run(prompt, context):\n    return 'answer: ' + prompt\n")
    agents = project.root / "coalmine.yaml"
    if not agents.exists():
        project.config({"agents": {"Bot": {"provider": "python", "target": "label_agent:run"}}})
    project.write("harness/evals/refunds.yaml", yaml.safe_dump(yaml_meta))
    project.write("harness/evals/refunds.jsonl", "\n".join(json.dumps(c) for c in cases) + "\n")
    proc = project.run_cli("eval", "run", "--display", "none")
    assert proc.returncode in (0, 1), proc.stderr


def items(path: Path) -> dict[str, Any]:
    loaded = load_labels(path)
    assert loaded.bad == []
    return {item.id: item for item in loaded.items}


@pytest.mark.slow
def test_label_an_eval_run_resume_and_add_a_second_labeller(project: Project) -> None:
    contains = {"type": "contains", "config": {"value": "answer"}}
    long_prompt = "x" * 5000
    eval_run(
        project,
        yaml_meta={"agent": "Bot", "repeats": 2, "graders": [contains]},
        cases=[{"id": "a", "prompt": "refund 1"}, {"id": "b", "prompt": "refund 2"},
               {"id": "c", "prompt": long_prompt}],
    )  # fmt: skip
    out = project.root / "labels" / "refunds.jsonl"
    first = label(project, "--out", str(out), *CRITERIA, answers="p\nf\ns\n")
    assert first.returncode == 0, first.stderr
    # every case once (repeat 0 only), in the run's order; the long output is cut on screen
    assert "[1/3] refunds/a" in first.stdout and "[3/3] refunds/c" in first.stdout
    assert "answer: refund 1" in first.stdout
    assert "[… cut here: 4000 of 5008 characters shown]" in first.stdout
    assert "  correct: the policy is applied right\n  polite\n" in first.stdout
    assert "labelled 2 (1 pass, 1 fail, 0 unsure), skipped 1, remaining 1: " in first.stdout
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines == [
        {"id": "refunds/a", "prompt": "refund 1", "output": "answer: refund 1",
         "criteria": {"correct": "the policy is applied right", "polite": ""},
         "labels": [{"labeller": "ann", "verdict": "pass"}]},
        {"id": "refunds/b", "prompt": "refund 2", "output": "answer: refund 2",
         "criteria": {"correct": "the policy is applied right", "polite": ""},
         "labels": [{"labeller": "ann", "verdict": "fail"}]},
    ]  # fmt: skip

    # again: only the skipped case is asked; the file keeps what was there and grows by a line
    second = label(project, "--out", str(out), *CRITERIA, answers="u\n")
    assert second.returncode == 0, second.stderr
    assert "refunds/a" not in second.stdout and "[1/1] refunds/c" in second.stdout
    assert "labelled 1 (0 pass, 0 fail, 1 unsure), skipped 0, remaining 0 (2 labelled before)" in (
        second.stdout
    )
    found = items(out)
    assert list(found) == ["refunds/a", "refunds/b", "refunds/c"]
    assert found["refunds/c"].output == "answer: " + long_prompt  # whole in the file
    assert found["refunds/c"].split is None  # assigned by hash when the set is used

    # a second labeller needs no criteria: the items are stored, and are shown as stored
    bob = label(project, "--out", str(out), "--labeller", "bob", answers="f\np\n")
    assert bob.returncode == 0, bob.stderr
    assert "shown as stored" in bob.stdout
    assert "ann" not in bob.stdout  # never the other labeller's verdict
    assert "labelled 2 (1 pass, 1 fail, 0 unsure), skipped 0, remaining 1: " in bob.stdout
    found = items(out)  # no duplicate id, the order kept
    assert list(found) == ["refunds/a", "refunds/b", "refunds/c"]
    assert [(lb.labeller, lb.verdict) for lb in found["refunds/a"].labels] == [
        ("ann", "pass"), ("bob", "fail"),
    ]  # fmt: skip
    assert [(lb.labeller, lb.verdict) for lb in found["refunds/b"].labels] == [
        ("ann", "fail"), ("bob", "pass"),
    ]  # fmt: skip
    assert [lb.labeller for lb in found["refunds/c"].labels] == ["ann"]
    assert not list(out.parent.glob(".*.tmp"))
    # bob goes on (the default labeller is $USER) and finishes
    rest = label(project, "--out", str(out), answers="pass\n", user="bob")
    assert "[1/1] refunds/c" in rest.stdout
    assert [lb.labeller for lb in items(out)["refunds/c"].labels] == ["ann", "bob"]
    done = label(project, "--out", str(out), answers="", user="bob")
    assert done.returncode == 0
    assert "labelled 0 (0 pass, 0 fail, 0 unsure), skipped 0, remaining 0 (3 labelled before)" in (
        done.stdout
    )


def scripted_judge(received: Received) -> Reply:
    verdict = {"criteria": {"correct": {"score": 1, "reason": "ok"}}}
    return Reply(text=json.dumps(verdict), model=received.body["model"])


@pytest.mark.slow
def test_criteria_come_from_the_cases_judge_grader_and_notes_are_asked(
    project: Project, openai_server: FakeOpenAI
) -> None:
    openai_server.default = scripted_judge
    judge = {"provider": "openai", "model": "j", "base_url": openai_server.base_url}
    project.config(
        {
            "agents": {"Bot": {"provider": "python", "target": "label_agent:run"}, "J": judge},
            "judge": "J",
        }
    )
    grader = {"type": "llm-judge", "config": {"criteria": {"correct": "the refund is right"}}}
    eval_run(
        project,
        yaml_meta={"agent": "Bot", "graders": [grader]},
        cases=[{"id": "a", "prompt": "refund 1"}, {"id": "b", "prompt": "refund 2"}],
    )
    out = project.root / "refunds.jsonl"
    proc = label(project, "--out", str(out), "--notes", answers="p\nterse but right\nf\n\n")
    assert proc.returncode == 0, proc.stderr
    assert "  correct: the refund is right" in proc.stdout
    assert "note (enter to skip): " in proc.stdout
    found = items(out)
    assert found["refunds/a"].labels[0].note == "terse but right"
    assert found["refunds/b"].labels[0].note is None
    # the labels ask what the suite's grader asks: a calibration from them covers that grader
    item = found["refunds/a"]
    assert item.criteria == {"correct": "the refund is right"}
    assert judge_prompt_identity(item.grader, item.grader_config) == judge_prompt_identity(
        "llm-judge", grader["config"]
    )


@pytest.mark.slow
def test_a_canary_run_needs_criteria_or_a_rubric_and_q_stops(project: Project) -> None:
    argv = project.agent_script("qa", "import sys\nsys.stdin.read()\nprint('SQL injection')\n")
    project.config({"agents": {"QA Coordinator": {"provider": "command", "argv": argv}}})
    project.canary("qa-001-login")
    project.canary("qa-002-logout", prompt="Review the logout handler.")
    assert project.run_cli("canary", "run").returncode == 0
    out = project.root / "canary.jsonl"

    missing = label(project, "--out", str(out), answers="p\n")
    assert missing.returncode == 2
    assert "pass --criteria NAME=DESCRIPTION (repeat for more) or --rubric TEXT" in missing.stderr
    assert "qa-001-login" in missing.stderr and not out.exists()
    both = label(project, "--out", str(out), "--rubric", "r", *CRITERIA, answers="")
    assert both.returncode == 2 and "not both" in both.stderr

    rubric = ("--rubric", "Names the vulnerability.")
    stop = label(project, "--out", str(out), *rubric, answers="q\np\n")
    assert stop.returncode == 0, stop.stderr
    assert "labelled 0 (0 pass, 0 fail, 0 unsure), skipped 0, remaining 2: " in stop.stdout
    assert not out.exists()

    go = label(project, "--out", str(out), *rubric, answers="maybe\np\nq\n")
    assert go.returncode == 0, go.stderr
    assert "'maybe'? answer p, f, u, s or q" in go.stdout
    assert "Review the login handler." in go.stdout and "SQL injection" in go.stdout
    assert "--- rubric ---\nNames the vulnerability." in go.stdout
    assert "labelled 1 (1 pass, 0 fail, 0 unsure), skipped 0, remaining 1: " in go.stdout
    [item] = items(out).values()
    assert (item.id, item.rubric, item.criteria) == (
        "qa-001-login",
        "Names the vulnerability.",
        None,
    )
    assert item.prompt == "Review the login handler." and item.output.strip() == "SQL injection"


def test_judge_asks_reads_the_spec_and_falls_back_to_the_graded_names() -> None:
    judge = GraderSpec(
        type="llm-judge", config={"criteria": {"correct": "right", "polite": "kind"}}
    )
    keyword = GraderSpec(type="keyword", config={"required": ["x"]})
    graded = {"keyword": {"score": 1.0}, "llm-judge": {"criteria": {"correct": 1, "polite": 0}}}
    assert judge_asks(graded, [keyword, judge]).criteria == {"correct": "right", "polite": "kind"}  # type: ignore[union-attr]
    # the spec no longer asks what the run graded: the graded names, without descriptions
    renamed = GraderSpec(type="llm-judge", config={"criteria": {"accurate": "right"}})
    assert judge_asks(graded, [keyword, renamed]).criteria == ["correct", "polite"]  # type: ignore[union-attr]
    assert judge_asks(graded, None).criteria == ["correct", "polite"]  # type: ignore[union-attr]
    rubric = GraderSpec(type="llm-rubric", config={"value": "Is right."})
    assert judge_asks({"llm-rubric": {"score": 1.0}}, [rubric]).rubric == "Is right."  # type: ignore[union-attr]
    assert judge_asks({"keyword": {"score": 1.0}}, [keyword]) is None
