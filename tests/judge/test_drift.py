"""Drift: the anchors, the comparison, the record it stores and how the gate reads it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from coalmine.engine.grading import judge_gate
from coalmine.engine.history import project_config
from coalmine.engine.policy import Calibration, grader_policy, withdrawn_reason
from coalmine.engine.wiring import Wiring
from coalmine.graders.judged import judge_prompt_identity
from coalmine.judge.drift import (
    AnchorResult,
    DriftReport,
    allocate,
    choose_anchors,
    compare,
    drift_record,
)
from coalmine.judge.labels import LabelledItem
from coalmine.judge.stats import Rate
from coalmine.store.runs import Store
from tests.helpers.project import Project


@pytest.mark.parametrize(
    ("sizes", "count", "expected"),
    [
        ({"fail": 30, "pass": 30}, 30, {"fail": 15, "pass": 15}),
        ({"fail": 20, "pass": 60}, 30, {"fail": 8, "pass": 22}),  # 7.5 : 22.5, tie to the first
        ({"fail": 10, "pass": 20}, 50, {"fail": 10, "pass": 20}),  # fewer than asked: all
        ({"fail": 1, "pass": 99}, 20, {"fail": 1, "pass": 19}),  # 0.2 rounds to 0: one anyway
        ({"fail": 0, "pass": 40}, 20, {"fail": 0, "pass": 20}),
    ],
)
def test_anchors_are_allocated_in_proportion(
    sizes: dict[str, int], count: int, expected: dict[str, int]
) -> None:
    assert allocate(sizes, count) == expected


def item(n: int, verdict: str, split: str = "heldout") -> LabelledItem:
    return LabelledItem.model_validate(
        {"id": f"i{n}", "prompt": "p", "output": "o", "rubric": "r", "split": split,
         "labels": [{"labeller": "a", "verdict": verdict}]}
    )  # fmt: skip


def test_anchors_are_held_out_stratified_and_the_same_for_one_judge() -> None:
    items = [item(n, "pass" if n % 3 else "fail") for n in range(90)]
    items += [item(100 + n, "fail", "dev") for n in range(10)] + [item(200, "unsure")]
    chosen = choose_anchors(items, key="sha256:judge-a", count=30)
    assert len(chosen) == 30
    assert sum(1 for _, human in chosen if human == "fail") == 10  # 30 of 90 fail → 10 of 30
    assert all(i.assigned_split == "heldout" and i.id != "i200" for i, _ in chosen)
    again = choose_anchors(list(reversed(items)), key="sha256:judge-a", count=30)
    assert [i.id for i, _ in again] == [i.id for i, _ in chosen]  # the input's order is moot
    other = choose_anchors(items, key="sha256:judge-b", count=30)
    assert {i.id for i, _ in other} != {i.id for i, _ in chosen}


RECORD: dict[str, Any] = {
    "intervals": {"agreement": {"successes": 54, "n": 60, "ci95": (0.7985, 0.9534)}},
    "judge": {"model": "m", "served_models": ["m-2024"]},
    "why_not": [],
    "may_block": True,
    "judge_prompt_sha256": "sha256:t",
    "rubric_sha256s": ["sha256:r"],
}


def anchors(agree: int, total: int = 20) -> list[AnchorResult]:
    return [
        AnchorResult(f"a{n}", "pass", "pass", "pass" if n < agree else "fail") for n in range(total)
    ]


def test_agreement_under_the_calibrations_lower_bound_is_drift() -> None:
    # 16/20 = 0.80 is inside (0.7985, 0.9534): steady; 15/20 = 0.75 is under it
    agreement, then, changed, reasons = compare(RECORD, 4, anchors(16), ["m-2024"])
    assert (agreement.value, then and then.value, changed, reasons) == (0.8, 1.0, 4, [])
    agreement, _, changed, reasons = compare(RECORD, 4, anchors(15), ["m-2024"])
    assert reasons == [
        "on 20 anchors it agrees with the humans 0.750 (15/20), under 0.798, the lower end of "
        "calibration #4's 95% agreement interval"
    ]


def test_a_model_that_did_not_answer_at_calibration_is_drift() -> None:
    *_, reasons = compare(RECORD, 4, anchors(20), ["m-2025"])
    assert reasons == ["calibrated on model m-2024, it answers now as m-2025"]
    old = {**RECORD, "judge": {"model": "m"}}  # made before served models were kept
    assert compare(old, 4, anchors(20), ["m-2025"])[3] == []


def test_the_drift_record_is_a_copy_that_may_not_block() -> None:
    results = anchors(15)
    agreement, then, changed, reasons = compare(RECORD, 4, results, ["m-2024"])
    report = DriftReport("J", "k", 4, results, agreement, then, RECORD["intervals"]["agreement"],
                         changed, ["m-2024"], ["m-2024"], reasons)  # fmt: skip
    now = datetime(2025, 1, 2, tzinfo=UTC)
    new = drift_record(RECORD, report, now=now)
    assert new["may_block"] is False and new["created_at"] == "2025-01-02T00:00:00+00:00"
    assert new["judge_prompt_sha256"] == "sha256:t"  # it covers what the calibration covered
    assert new["drifted"]["calibration"] == 4
    assert new["drifted"]["wrong"] == [f"a{n}" for n in range(15, 20)]
    assert new["why_not"][0].startswith("it drifted since calibration #4: on 20 anchors")
    assert withdrawn_reason(new, "m") == new["why_not"][0]
    assert report.as_dict()["agreement"]["successes"] == 15
    assert DriftReport("J", "k", None, [], Rate.of(0, 0), None, None, 0, None, [], []).floor is None


ASKS = ("sha256:t", "sha256:r")


def test_a_withdrawn_record_advises_and_says_why() -> None:
    drifted = Calibration(5, True, RECORD, withdrawn="it drifted since calibration #4: …")
    policy = grader_policy([drifted], ASKS, configured_blocking=False)
    assert (policy.blocking, policy.uncalibrated) == (False, False)
    assert policy.reason == "advisory: it drifted since calibration #4: … (#5)"
    forced = grader_policy([drifted], ASKS, configured_blocking=True)
    assert (forced.blocking, forced.uncalibrated) == (True, True)
    assert forced.reason.startswith("judge.blocking is set, but it drifted")
    held = grader_policy([Calibration(5, True, RECORD)], ASKS, configured_blocking=False)
    assert held.blocking is True


def test_a_record_of_another_model_is_withdrawn() -> None:
    assert withdrawn_reason(RECORD, "m") is None
    assert withdrawn_reason(RECORD, "other") == "calibrated on model m, this run's judge is other"
    assert withdrawn_reason(RECORD, None) is None
    assert withdrawn_reason({"judge_prompt_sha256": "x"}, "other") is None


def judge_config(project: Project, model: str) -> None:
    judge = {"provider": "openai", "model": model, "base_url": "http://127.0.0.1:9/v1"}
    project.config({"agents": {"J": judge}, "judge": "J"})


def test_a_run_whose_judge_has_another_model_is_told_which_was_calibrated(
    project: Project, tmp_path: Path
) -> None:
    criteria = {"criteria": {"correct": "right"}}
    asks = judge_prompt_identity("llm-judge", criteria)
    assert asks is not None
    store = Store.open(tmp_path / "store.db")
    try:
        judge_config(project, "m1")
        config = project_config(project.root)
        assert config.judge is not None
        caller = Wiring(None, (), None, None).caller(config.judge)
        record = {"judge_prompt_sha256": asks.template_sha256, "rubric_sha256s": [asks.rubric_sha256],
                  "judge": {"agent": "J", "model": "m1"}}  # fmt: skip
        store.record_calibration(caller.identity_key(), may_block=True, record=record)
        assert judge_gate(store, caller, configured_blocking=False).blocks("llm-judge", criteria)
        judge_config(project, "m2")
        config = project_config(project.root)
        assert config.judge is not None
        moved = Wiring(None, (), None, None).caller(config.judge)
        assert moved.identity_key() != caller.identity_key()
        gate = judge_gate(store, moved, configured_blocking=False)
    finally:
        store.close()
    policy = gate.policy("llm-judge", criteria)
    assert policy.blocking is False
    assert policy.reason == "advisory: calibrated on model m1, this run's judge is m2 (#1)"
