"""Calibrate a judge served over HTTP, then run with it: label → calibrate → run.

The loopback judge reads the response it is asked to grade (``GOOD-n`` or ``BAD-n``) and scores
the criterion 1 for GOOD, 0 for BAD. ``judge-strict`` always agrees with the labels;
``judge-lax`` also passes the BAD items whose number is a multiple of 5, a known disagreement.
Items 0–39 are the dev split, 40–99 the held-out split: 30 GOOD (even n), 30 BAD (odd n).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from tests.helpers.openai_server import FakeOpenAI, Received, Reply
from tests.helpers.project import Project

CRITERIA = {"correct": "the answer is the right one"}


def scripted_judge(received: Received) -> Reply:
    prompt = received.body["messages"][-1]["content"]
    response = re.search(r"<response-(\w+)>\n(.*?)\n</response-\1>", prompt, re.S)
    assert response is not None
    # the verbosity check pads the output: the judge reads what it starts with
    kind, number = re.match(r"(GOOD|BAD)-(\d+)", response.group(2)).groups()  # type: ignore[union-attr]
    score = 1 if kind == "GOOD" else 0
    if received.body["model"] == "judge-lax" and kind == "BAD" and int(number) % 5 == 0:
        score = 1
    verdict = {"criteria": {"correct": {"score": score, "reason": "scripted"}}}
    return Reply(text=json.dumps(verdict), model=received.body["model"])


def labelled(n: int) -> dict[str, Any]:
    good = n % 2 == 0
    return {
        "id": f"item-{n:03d}",
        "prompt": f"Answer question {n}.",
        "output": f"{'GOOD' if good else 'BAD'}-{n}",
        "criteria": CRITERIA,
        "labels": [
            {"labeller": "ann", "verdict": "pass" if good else "fail"},
            {"labeller": "bob", "verdict": "pass" if good else "fail"},
        ],
        "split": "dev" if n < 40 else "heldout",
    }


def setup(project: Project, server: FakeOpenAI, judge: str) -> None:
    server.default = scripted_judge
    judges = {
        name: {"provider": "openai", "model": name, "base_url": server.base_url, "retries": 0}
        for name in ("judge-strict", "judge-lax")
    }
    project.write("e2e_agent.py", "def run(prompt, context):\n    return prompt\n")
    agents = {"Bot": {"provider": "python", "target": "e2e_agent:run"}, **judges}
    project.config({"agents": agents, "judge": judge})
    lines = [json.dumps(labelled(n)) for n in range(100)]
    project.write("labels/correctness.jsonl", "\n".join(lines) + "\n")


def calibrate(project: Project, judge: str) -> tuple[int, dict[str, Any]]:
    proc = project.run_cli(
        "judge", "calibrate", str(project.root / "labels" / "correctness.jsonl"),
        "--judge", judge, "--reruns", "2", "--format", "json",
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def suite(project: Project, criteria: dict[str, str]) -> None:
    grader = {"type": "llm-judge", "config": {"criteria": criteria}}
    project.write(
        "harness/evals/answers.yaml", yaml.safe_dump({"agent": "Bot", "graders": [grader]})
    )
    project.write(
        "harness/evals/answers.jsonl",
        json.dumps({"id": "good", "prompt": "GOOD-2"}) + "\n"
        + json.dumps({"id": "bad", "prompt": "BAD-3"}) + "\n",
    )  # fmt: skip


@pytest.mark.slow
def test_a_judge_that_disagrees_at_a_known_rate_stays_advisory(
    project: Project, openai_server: FakeOpenAI
) -> None:
    setup(project, openai_server, "judge-lax")
    code, record = calibrate(project, "judge-lax")
    # held-out: 30 GOOD all passed (tp 30, fn 0); of 30 BAD, n in 45 55 65 75 85 95 passed
    assert record["confusion"] == {"tp": 30, "fp": 6, "tn": 24, "fn": 0}
    assert record["n_heldout"] == 60 and record["n_dev"] == 40
    assert record["false_pass_rate"] == 6 / 30  # 0.2
    assert record["intervals"]["false_pass_rate"]["successes"] == 6
    assert record["false_block_rate"] == 0.0
    assert record["agreement"] == 54 / 60  # 0.9
    # p_o 0.9; judge passes 36/60, humans 30/60: p_e = 0.6·0.5 + 0.4·0.5 = 0.5 → (0.9−0.5)/0.5
    assert abs(record["kappa"] - 0.8) < 1e-12
    assert record["human_kappa"] == 1.0
    assert record["rerun_stability"] == 1.0
    assert record["quorum_disagreement"] is None
    # every held-out item was also asked padded; this judge ignores the padding
    assert record["verbosity_flip_rate"] == 0.0
    assert record["intervals"]["verbosity_flip_rate"]["n"] == 60
    assert (code, record["may_block"]) == (1, False)
    assert record["why_not"] == [
        "false-pass rate 0.200 (6 of 30 held-out items the humans fail) is at or over 0.15 "
        "itself: more labels cannot bring its bound under",
        # SE (Fleiss et al. 1969) of this table 0.07589: 0.8 - 1.6449·0.07589 = 0.675
        "kappa 0.800: its 95% lower bound 0.675 is under 0.7",
    ]
    assert record["labels_needed"] is None  # a rate past its limit: more labels cannot help
    assert abs(record["bounds"]["false_pass_rate"] - 0.34251) < 1e-5
    assert record["judge_prompt_sha256"].startswith("sha256:")
    assert record["calibration_set"]["sha256"].startswith("sha256:")
    # a run with that judge: its failures only advise
    suite(project, CRITERIA)
    run = project.run_cli("eval", "run", "--display", "none", "--format", "json")
    [result] = json.loads(run.stdout)
    assert (run.returncode, result["failed"], result["gate"]["blockingFailures"]) == (0, 1, 0)


@pytest.mark.slow
def test_an_agreeing_judge_may_block_until_the_rubric_is_edited(
    project: Project, openai_server: FakeOpenAI
) -> None:
    setup(project, openai_server, "judge-strict")
    code, record = calibrate(project, "judge-strict")
    assert record["confusion"] == {"tp": 30, "fp": 0, "tn": 30, "fn": 0}
    assert (record["kappa"], record["false_pass_rate"]) == (1.0, 0.0)
    assert (code, record["may_block"], record["why_not"]) == (0, True, [])
    # 0 of 30 each way: z²/(30 + z²) = 2.7055/32.7055; a perfect table has SE 0, so kappa's is 1
    assert record["bounds"]["false_pass_rate"] == pytest.approx(0.082724, abs=1e-6)
    assert record["bounds"]["kappa"] == 1.0
    assert record["judge"]["served_models"] == ["judge-strict"]
    suite(project, CRITERIA)
    run = project.run_cli("eval", "run", "--display", "none", "--format", "json")
    [result] = json.loads(run.stdout)
    # the calibrated judge fails BAD-3, and that failure blocks
    assert (run.returncode, result["failed"], result["gate"]["blockingFailures"]) == (1, 1, 1)
    # the rubric is edited: the record no longer holds, and the judge only advises again
    suite(project, {"correct": "the answer is right and well explained"})
    again = project.run_cli("eval", "run", "--display", "none", "--format", "json")
    [result] = json.loads(again.stdout)
    assert (again.returncode, result["failed"], result["gate"]["blockingFailures"]) == (0, 1, 0)
    html = project.root / "out" / "calibration.html"
    report = project.run_cli("judge", "report", "--html", str(html))
    assert report.returncode == 0 and "MAY BLOCK" in report.stdout
    assert "judge pass               30           0" in report.stdout
    page = html.read_text(encoding="utf-8")
    assert '<span class="block">may block</span>' in page
    assert '<tr><th>judge pass</th><td class="num">30</td><td class="num">0</td></tr>' in page
    assert "<script" not in page


@pytest.mark.slow
def test_a_quorum_reports_how_often_its_judges_disagree(
    project: Project, openai_server: FakeOpenAI
) -> None:
    setup(project, openai_server, "judge-strict")
    proc = project.run_cli(
        "judge", "calibrate", str(project.root / "labels" / "correctness.jsonl"),
        "--judge", "judge-strict", "--quorum", "judge-lax", "--reruns", "1",
        "--no-verbosity-check", "--format", "json",
    )  # fmt: skip
    record = json.loads(proc.stdout)
    # lax also passes BAD 45 55 65 75 85 95: the two judges disagree on 6 of 60 held-out items
    assert record["quorum_disagreement"] == 6 / 60
    # a 1–1 split fails, so the majority is the strict judge's verdict on every item
    assert record["quorum"]["judges"] == ["judge-lax"]
    assert record["quorum"]["confusion"] == {"tp": 30, "fp": 0, "tn": 30, "fn": 0}
    assert record["verbosity_flip_rate"] is None  # the check was switched off
    table = project.run_cli("judge", "report", "--judge", "judge-strict")
    assert "quorum disagreement 0.100" in table.stdout


@pytest.mark.slow
def test_a_calibration_on_two_workers_gives_the_record_of_one_process(
    project: Project, openai_server: FakeOpenAI
) -> None:
    setup(project, openai_server, "judge-lax")
    asked: list[str] = []
    scripted = openai_server.default

    def counting(received: Received) -> Reply:
        asked.append(received.body["model"])
        return scripted(received)

    openai_server.default = counting
    _, alone = calibrate(project, "judge-lax")
    calls_alone = len(asked)
    proc = project.run_cli(
        "judge", "calibrate", str(project.root / "labels" / "correctness.jsonl"),
        "--judge", "judge-lax", "--reruns", "2", "--format", "json", "--workers", "2",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    sharded = json.loads(proc.stdout)
    # the workers ask afresh (the cache is the store's): 100 items x 2 reruns + 60 padded
    assert calls_alone == 260 and len(asked) - calls_alone == 260
    volatile = {"created_at", "id"}
    assert {k: v for k, v in sharded.items() if k not in volatile} == {
        k: v for k, v in alone.items() if k not in volatile
    }
    assert sharded["id"] == alone["id"] + 1  # both are stored


def test_address_without_the_ray_backend_is_refused(project: Project) -> None:
    project.config({"agents": {"judge": {"provider": "openai", "model": "m",
                                         "base_url": "http://127.0.0.1:9/v1"}}})  # fmt: skip
    project.write("labels.jsonl", json.dumps(labelled(0)) + "\n")
    proc = project.run_cli(
        "judge", "calibrate", str(project.root / "labels.jsonl"), "--address", "auto"
    )
    assert proc.returncode == 2
    assert "--address names a Ray cluster: it goes with --backend ray" in proc.stderr
    assert "Traceback" not in proc.stderr
