"""``coalmine judge check``: a calibrated judge served over HTTP is asked about its anchors again.

The project, the labels and the scripted judge are those of ``test_calibrate_e2e``: items 40–99
are held out, 30 GOOD (the humans pass) and 30 BAD (they fail); ``judge-strict`` agrees with
every label, so its calibration may block, with agreement 60/60 and a Wilson 95% interval
(0.940, 1.000). A check asks it afresh (the cache would answer as at calibration) about 30 of
the held-out items, 15 of each kind, the same ones every time.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from coalmine.store.memory import list_lessons
from coalmine.store.runs import Store
from tests.helpers.openai_server import FakeOpenAI, Received, Reply
from tests.helpers.project import Project
from tests.judge.test_calibrate_e2e import CRITERIA, scripted_judge, suite
from tests.judge.test_calibrate_e2e import calibrate as calibrate_judge
from tests.judge.test_calibrate_e2e import setup as setup_project


def check(project: Project, *args: str) -> tuple[int, dict[str, Any]]:
    proc = project.run_cli("judge", "check", "--judge", "judge-strict", "--format", "json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def eval_gate(project: Project) -> tuple[int, dict[str, Any]]:
    """Run the two-case suite (GOOD-2 passes, BAD-3 fails): the exit code and its result."""
    run = project.run_cli("eval", "run", "--display", "none", "--format", "json")
    [result] = json.loads(run.stdout)
    return run.returncode, result


def calibrated(project: Project, server: FakeOpenAI) -> None:
    setup_project(project, server, "judge-strict")
    code, record = calibrate_judge(project, "judge-strict")
    assert (code, record["may_block"]) == (0, True)
    suite(project, CRITERIA)
    code, result = eval_gate(project)
    assert (code, result["gate"]["blockingFailures"]) == (1, 1)  # the calibrated judge blocks


def asked_items(server: FakeOpenAI, since: int) -> list[str]:
    """The outputs the judge was asked about after the first ``since`` requests."""
    found = []
    for received in server.requests[since:]:
        prompt = received.body["messages"][-1]["content"]
        match = re.search(r"<response-\w+>\n((?:GOOD|BAD)-\d+)", prompt)
        assert match is not None
        found.append(match.group(1))
    return found


@pytest.mark.slow
def test_a_judge_that_answers_as_at_calibration_has_not_drifted(
    project: Project, openai_server: FakeOpenAI
) -> None:
    calibrated(project, openai_server)
    before = len(openai_server.requests)
    code, report = check(project)
    assert code == 0 and report["drifted"] is False and report["reasons"] == []
    asked = asked_items(openai_server, before)
    # asked afresh, once each: 30 held-out items, 15 GOOD and 15 BAD
    assert len(asked) == 30 and len(set(asked)) == 30
    assert all(int(a.split("-")[1]) >= 40 for a in asked)
    assert sum(a.startswith("GOOD") for a in asked) == 15
    assert report["agreement"]["successes"] == 30 and report["agreement_then"]["n"] == 30
    assert report["changed"] == 0 and report["floor"] == pytest.approx(60 / 63.8415, abs=1e-4)
    assert (report["models_then"], report["models_now"]) == (["judge-strict"], ["judge-strict"])
    # the same anchors on the next check
    again = len(openai_server.requests)
    table = project.run_cli("judge", "check", "--judge", "judge-strict")
    assert table.returncode == 0, table.stderr
    assert sorted(asked_items(openai_server, again)) == sorted(asked)
    assert "verdict: STEADY" in table.stdout
    assert "agreement, anchors" in table.stdout and "1.000 (0.886–1.000) 30/30" in table.stdout
    code, result = eval_gate(project)
    assert (code, result["gate"]["blockingFailures"]) == (1, 1)  # it still blocks


def flipping(received: Received) -> Reply:
    """The judge now passes the BAD outputs whose number is not a multiple of 3."""
    reply = scripted_judge(received)
    prompt = received.body["messages"][-1]["content"]
    match = re.search(r"<response-\w+>\nBAD-(\d+)", prompt)
    if match and int(match.group(1)) % 3:
        reply.text = json.dumps({"criteria": {"correct": {"score": 1, "reason": "flipped"}}})
    return reply


@pytest.mark.slow
def test_a_judge_that_now_flips_many_verdicts_is_drifted_until_calibrated_again(
    project: Project, openai_server: FakeOpenAI
) -> None:
    calibrated(project, openai_server)
    openai_server.default = flipping
    code, report = check(project)
    assert code == 1 and report["drifted"] is True
    flipped = [a for a in report["anchors"] if a["now"] != a["human"]]
    assert flipped and all(a["human"] == "fail" and a["then"] == "fail" for a in flipped)
    assert report["changed"] == len(flipped)
    n = report["agreement"]["successes"]
    assert report["reasons"] == [
        f"on 30 anchors it agrees with the humans {n / 30:.3f} ({n}/30), under 0.940, the lower "
        "end of calibration #1's 95% agreement interval"
    ]
    assert report["drift_id"] == 2 and len(report["lessons"]) == 1
    # the next run treats the judge as advisory, and says why
    code, result = eval_gate(project)
    assert (code, result["failed"], result["gate"]["blockingFailures"]) == (0, 1, 0)
    store = Store.open(project.root / ".coalmine" / "coalmine.db")
    try:
        [lesson] = [x for x in list_lessons(store) if "drift" in x.tags]
        [(_, may_block, record, _)] = store.calibrations(report["judge_key"])[:1]
    finally:
        store.close()
    assert lesson.kind == "risk-note"
    assert lesson.text.startswith(
        "Judge 'judge-strict' drifted since calibration #1: on 30 anchors"
    )
    assert may_block is False and record["drifted"]["calibration"] == 1
    shown = project.run_cli("judge", "report", "--judge", "judge-strict")
    assert "verdict: ADVISORY" in shown.stdout and "it drifted since calibration #1" in shown.stdout
    # a second check finds it drifted again, and stores nothing more
    code, again = check(project)
    assert (code, again["drift_id"], again["calibration_id"]) == (1, None, 1)
    assert any("marked drifted already (#2)" in note for note in again["notes"])
    # a new calibration that succeeds lets it block again
    openai_server.default = scripted_judge
    code, record = calibrate_judge(project, "judge-strict")
    assert (code, record["may_block"]) == (0, True)
    code, result = eval_gate(project)
    assert (code, result["gate"]["blockingFailures"]) == (1, 1)


@pytest.mark.slow
def test_another_model_under_the_judge_is_drift_and_a_run_with_another_model_advises(
    project: Project, openai_server: FakeOpenAI
) -> None:
    calibrated(project, openai_server)

    def renamed(received: Received) -> Reply:
        reply = scripted_judge(received)
        reply.model = "judge-strict-2025-06"  # the vendor moved the alias
        return reply

    openai_server.default = renamed
    code, report = check(project)
    assert code == 1
    assert report["reasons"] == [
        "calibrated on model judge-strict, it answers now as judge-strict-2025-06"
    ]
    assert report["agreement"]["successes"] == 30  # it agrees; the model alone is the drift
    code, result = eval_gate(project)
    assert (code, result["gate"]["blockingFailures"]) == (0, 0)
    # a config that names another model: no calibration of its own, and the run says whose
    openai_server.default = scripted_judge
    config = (project.root / "coalmine.yaml").read_text(encoding="utf-8")
    judges = config.replace("model: judge-strict\n", "model: judge-strict-v2\n")
    assert judges != config
    (project.root / "coalmine.yaml").write_text(judges, encoding="utf-8")
    code, result = eval_gate(project)
    assert (code, result["gate"]["blockingFailures"]) == (0, 0)
    code, report = check(project)
    assert code == 1 and report["calibration_id"] is None and report["anchors"] == []
    assert report["reasons"] == [
        "calibrated on model judge-strict (#1), it is configured with judge-strict-v2 now"
    ]


def test_a_judge_never_calibrated_is_a_usage_error(project: Project) -> None:
    project.config({"agents": {"J": {"provider": "openai", "model": "m",
                                     "base_url": "http://127.0.0.1:9/v1"}}, "judge": "J"})  # fmt: skip
    proc = project.run_cli("judge", "check")
    assert proc.returncode == 2
    assert "judge 'J' has no calibration to check against" in proc.stderr
    bad = project.run_cli("judge", "check", "--anchors", "10")
    assert bad.returncode == 2 and "10 is not in the range 20<=x<=50" in bad.stderr
