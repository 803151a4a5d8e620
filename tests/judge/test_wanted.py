"""``judge label`` offers first the cases likely of the kind its calibration still wants."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coalmine.judge.labelling import Asked, Draft, other_graders_failed
from coalmine.judge.wanted import Wanted, describe_wanted, find_wanted, offer_first
from coalmine.store.runs import Store
from tests.helpers.project import Project
from tests.judge.test_label_cli import CRITERIA, eval_run, label


def test_other_graders_hint_without_the_judge() -> None:
    judge = {"score": 0.0, "passed": False, "judge_model": "j"}
    assert other_graders_failed({"contains": {"passed": True}, "llm-judge": judge}) is False
    assert other_graders_failed({"contains": {"passed": False}, "llm-judge": judge}) is True
    assert other_graders_failed({"llm-judge": judge}) is None  # the judge's verdict is not used
    assert other_graders_failed({"skipped": {"skipped": True}}) is None


def draft(n: int, failed_other: bool | None) -> Draft:
    return Draft(f"c{n}", "p", "o", Asked(rubric="r"), failed_other=failed_other)


def test_the_wanted_kinds_come_first_in_turn_then_the_rest_in_order() -> None:
    drafts = [draft(1, False), draft(2, False), draft(3, True), draft(4, None), draft(5, True),
              draft(6, True)]  # fmt: skip
    ordered = offer_first(drafts, Wanted(7, "J", fail=2, pass_=1))
    assert [d.id for d in ordered] == ["c3", "c1", "c5", "c2", "c4", "c6"]
    only_fail = offer_first(drafts, Wanted(7, "J", fail=5, pass_=0))
    assert [d.id for d in only_fail] == ["c3", "c5", "c6", "c1", "c2", "c4"]
    assert offer_first(drafts, Wanted(7, "J", fail=0, pass_=0, either=3)) == drafts


def test_the_message_says_what_is_wanted_and_whether_the_order_can_follow() -> None:
    wanted = Wanted(7, "J", fail=1, pass_=0)
    assert describe_wanted(wanted, [draft(1, True)]) == (
        "calibration #7 of J on this set wants 1 more held-out item the humans fail: the cases "
        "another grader failed (for fail) or passed (for pass) come first; never chosen by the "
        "judge's own verdict"
    )
    assert describe_wanted(wanted, [draft(1, None)]).endswith(
        "no other grader hints which cases those are, so they keep the run's order"
    )


def record(path: str, needed: dict[str, int] | None) -> dict[str, object]:
    return {"calibration_set": {"path": path}, "judge": {"agent": "J"}, "labels_needed": needed}


def test_the_newest_calibration_of_the_set_decides(tmp_path: Path) -> None:
    out = tmp_path / "labels" / "set.jsonl"
    rows = [
        (3, record(str(out), {"fail": 2, "pass": 0, "either": 0})),
        (5, record(str(tmp_path / "other.jsonl"), {"fail": 9, "pass": 9, "either": 0})),
        (1, record(str(out), {"fail": 40, "pass": 0, "either": 0})),
    ]
    assert find_wanted(rows, out, root=tmp_path) == Wanted(3, "J", 2, 0, 0)
    relative = [(3, record("labels/set.jsonl", {"fail": 1, "pass": 1, "either": 0}))]
    assert find_wanted(relative, out, root=tmp_path) == Wanted(3, "J", 1, 1, 0)
    assert find_wanted([(4, record(str(out), None)), *rows], out, root=tmp_path) is None
    assert find_wanted([], out, root=tmp_path) is None


@pytest.mark.slow
def test_label_offers_first_the_cases_another_grader_failed(project: Project) -> None:
    contains = {"type": "contains", "config": {"value": "good"}}
    cases = [{"id": name, "prompt": f"{name} refund"} for name in
             ("good-a", "good-b", "bad-c", "bad-d", "good-e")]  # fmt: skip
    eval_run(project, yaml_meta={"agent": "Bot", "graders": [contains]}, cases=cases)
    out = project.root / "labels" / "refunds.jsonl"
    store = Store.open(project.root / ".coalmine" / "coalmine.db")
    try:
        needed = {"fail": 2, "pass": 1, "either": 0}
        store.record_calibration("k", may_block=False, record=record(str(out), needed))
    finally:
        store.close()
    proc = label(project, "--out", str(out), *CRITERIA, answers="q\n")
    assert proc.returncode == 0, proc.stderr
    assert "calibration #1 of J on this set wants 2 more held-out items the humans fail and 1 " in (
        proc.stdout
    )
    # one likely fail, one likely pass, the other likely fail, then the rest in the run's order
    assert "[1/5] refunds/bad-c" in proc.stdout
    assert "refunds/good-a" not in proc.stdout  # it quit after the first
    order = label(project, "--out", str(out), *CRITERIA, answers="s\ns\ns\ns\ns\n")
    shown = re.findall(r"^\[\d+/5\] (\S+)$", order.stdout, re.M)
    assert shown == ["refunds/bad-c", "refunds/good-a", "refunds/bad-d", "refunds/good-b",
                     "refunds/good-e"]  # fmt: skip
