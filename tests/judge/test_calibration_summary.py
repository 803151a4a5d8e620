"""``summarize``: the dev split picks the threshold, the held-out split is measured."""

from __future__ import annotations

from typing import Any

import pytest

from coalmine.config import CalibrationLimits
from coalmine.judge.calibration import JudgedItem, summarize
from coalmine.judge.labels import LabelledItem


def item(n: int, split: str, *verdicts: str) -> LabelledItem:
    labels = [{"labeller": f"l{i}", "verdict": v} for i, v in enumerate(verdicts)]
    data: dict[str, Any] = {"id": f"i{n}", "prompt": "p", "output": "o", "rubric": "r",
                            "labels": labels, "split": split}  # fmt: skip
    return LabelledItem.model_validate(data)


def test_the_threshold_comes_from_dev_and_the_figures_from_heldout() -> None:
    judged = [
        # dev: pass scores 0.6 and 0.8, fail scores 0.2 and 0.4 → 0.6 separates them exactly
        JudgedItem(item(1, "dev", "pass"), [0.6]),
        JudgedItem(item(2, "dev", "pass"), [0.8]),
        JudgedItem(item(3, "dev", "fail"), [0.2]),
        JudgedItem(item(4, "dev", "fail"), [0.4]),
        # held-out at 0.6: i5 pass/pass (tp), i6 fail/pass (fp, 0.65), i7 fail/fail (tn),
        # i8 pass/fail (fn, 0.5); i9 unsure; i10 the judge never graded
        JudgedItem(item(5, "heldout", "pass", "pass"), [0.9, 0.9]),
        JudgedItem(item(6, "heldout", "fail", "fail"), [0.65, 0.7]),
        JudgedItem(item(7, "heldout", "fail", "pass"), [0.1, 0.1]),  # humans tie: unsure
        JudgedItem(item(8, "heldout", "pass"), [0.5, 0.55]),
        JudgedItem(item(9, "heldout", "unsure"), [0.9, 0.9]),
        JudgedItem(item(10, "heldout", "fail"), [None, None]),
        JudgedItem(item(11, "heldout", "fail", "fail"), [0.3, 0.9]),  # reruns split: fail
    ]
    record = summarize(judged, default_threshold=0.5, limits=CalibrationLimits())
    assert record["threshold"] == 0.6
    # usable held-out: i5 (tp), i6 (fp), i8 (fn), i11 (tn: 0.3 fails, 0.9 passes → 1–1 fails)
    assert record["confusion"] == {"tp": 1, "fp": 1, "tn": 1, "fn": 1}
    assert (record["n_heldout"], record["n_dev"], record["n_unsure"], record["n_errors"]) == (
        4, 4, 2, 1,
    )  # fmt: skip
    assert record["agreement"] == 0.5 and record["kappa"] == 0.0
    # i11's reruns disagree, the others agree: 3 of 4 stable
    assert record["rerun_stability"] == 0.75
    # spreads: i5 0, i6 0.05, i8 0.05, i11 0.6 → mean 0.175
    assert abs(record["score_spread"] - 0.175) < 1e-12
    # human–human: i5 (pass, pass), i6 (fail, fail), i7 (fail, pass), i11 (fail, fail):
    # p_o 3/4; rater a passes 1/4, b 2/4 → p_e = 1/4·2/4 + 3/4·2/4 = 0.5 → κ = 0.5
    assert record["human_kappa"] == 0.5
    assert record["may_block"] is False
    assert record["why_not"] == [
        "4 held-out items with a verdict; at least 20 are needed",
        "false-pass rate 0.500 (1 of 2 held-out items the humans fail) is at or over 0.15 "
        "itself: more labels cannot bring its bound under",
        "false-block rate 0.500 (1 of 2 held-out items the humans pass) is at or over 0.2 "
        "itself: more labels cannot bring its bound under",
        "rerun stability 0.750 is under 0.95",
        "kappa 0.000 is under 0.7 itself: more labels cannot raise its bound to it",
    ]
    assert record["labels_needed"] is None
    # each item's verdict at the threshold, for a later drift check (i10 never graded)
    assert record["verdicts"]["i6"] == "pass" and record["verdicts"]["i10"] is None


def test_nothing_held_out_says_what_cannot_be_measured() -> None:
    record = summarize(
        [JudgedItem(item(1, "dev", "pass"), [1.0])],
        default_threshold=0.7,
        limits=CalibrationLimits(min_heldout=1),
    )
    assert record["threshold"] == 0.7  # one class on dev: the grader's own threshold
    assert record["why_not"] == [
        "0 held-out items with a verdict; at least 1 are needed",
        "no false-pass rate: no held-out item the humans fail",
        "no false-block rate: no held-out item the humans pass",
        "no rerun stability: no held-out item to measure it on",
        "no kappa: no held-out item to measure it on",
    ]
    assert record["bounds"]["false_pass_rate"] is None and record["bounds"]["kappa"] is None


# -- deciding on evidence (issue 21): the acceptance examples --------------------------------


def heldout(*, tp: int, fp: int, tn: int, fn: int) -> list[JudgedItem]:
    """Held-out items with that confusion (one rerun each: score 1 passes, 0 fails)."""
    rows = [("pass", 1.0)] * tp + [("fail", 1.0)] * fp + [("fail", 0.0)] * tn
    rows += [("pass", 0.0)] * fn
    return [JudgedItem(item(n, "heldout", human), [score]) for n, (human, score) in
            enumerate(rows)]  # fmt: skip


def decide(judged: list[JudgedItem]) -> dict[str, Any]:
    return summarize(judged, default_threshold=0.5, limits=CalibrationLimits())


def test_a_judge_that_agrees_on_40_items_may_block() -> None:
    record = decide(heldout(tp=20, fp=0, tn=20, fn=0))
    # 0 of 20 each way: z²/(20 + z²) = 2.7055/22.7055 = 0.1192, under 0.15 and 0.20;
    # perfect agreement: SE 0, kappa's bound 1.0
    assert record["bounds"]["false_pass_rate"] == pytest.approx(0.119158, abs=1e-6)
    assert record["bounds"]["false_block_rate"] == pytest.approx(0.119158, abs=1e-6)
    assert record["bounds"]["kappa"] == 1.0
    assert (record["may_block"], record["why_not"], record["labels_needed"]) == (True, [], None)


def test_two_false_passes_and_two_false_blocks_in_40_may_not() -> None:
    record = decide(heldout(tp=18, fp=2, tn=18, fn=2))
    # 2 of 20: p̂ 0.1, u = (0.1 + 0.06764 + 1.6449·√(0.0045 + 0.001691)) / 1.13528 = 0.2617
    # kappa 0.8, SE² = (A + B − C)/(n(1 − p_e)²) = (0.576 + 0.004 − 0.49)/(40·0.25) = 0.009
    assert record["bounds"]["false_pass_rate"] == pytest.approx(0.261663, abs=1e-6)
    assert record["bounds"]["kappa_se"] == pytest.approx(0.0948683, abs=1e-7)
    assert record["bounds"]["kappa"] == pytest.approx(0.8 - 1.6448536 * 0.0948683, abs=1e-6)
    assert record["may_block"] is False
    assert record["why_not"] == [
        "false-pass rate 0.100 (2 of 20 held-out items the humans fail): its 95% upper bound "
        "0.262 is over 0.15",
        "false-block rate 0.100 (2 of 20 held-out items the humans pass): its 95% upper bound "
        "0.262 is over 0.2",
        "kappa 0.800: its 95% lower bound 0.644 is under 0.7",
        "short of evidence only: 118 more held-out items the humans fail and 45 more held-out "
        "items the humans pass would let it block at its current rates (new items without a "
        "split go 60% to held-out: label about 272)",
    ]
    assert record["labels_needed"] == {"fail": 118, "pass": 45, "either": 0}


def test_no_false_pass_on_15_human_fail_items_is_too_little_evidence() -> None:
    record = decide(heldout(tp=20, fp=0, tn=15, fn=0))
    # z²/(15 + z²) = 2.7055/17.7055 = 0.1528 > 0.15; with 16: 2.7055/18.7055 = 0.1446
    assert record["bounds"]["false_pass_rate"] == pytest.approx(0.152808, abs=1e-6)
    assert record["may_block"] is False
    assert record["why_not"] == [
        "false-pass rate 0.000 (0 of 15 held-out items the humans fail): its 95% upper bound "
        "0.153 is over 0.15",
        "short of evidence only: 1 more held-out item the humans fail would let it block at its "
        "current rates (new items without a split go 60% to held-out: label about 2)",
    ]
    assert record["labels_needed"] == {"fail": 1, "pass": 0, "either": 0}
    assert decide(heldout(tp=20, fp=0, tn=16, fn=0))["may_block"] is True


def test_one_false_pass_in_20_may_not_block_and_one_false_block_in_20_may() -> None:
    # 1 of 20: u = 0.1960 (over 0.15 for a false pass, under 0.20 for a false block)
    one_false_pass = decide(heldout(tp=20, fp=1, tn=19, fn=0))
    assert one_false_pass["bounds"]["false_pass_rate"] == pytest.approx(0.196007, abs=1e-6)
    assert one_false_pass["may_block"] is False
    assert one_false_pass["labels_needed"] == {"fail": 15, "pass": 0, "either": 0}
    one_false_block = decide(heldout(tp=19, fp=0, tn=20, fn=1))
    assert one_false_block["bounds"]["false_block_rate"] == pytest.approx(0.196007, abs=1e-6)
    assert one_false_block["may_block"] is True


def test_a_judge_short_only_of_items_overall_is_told_to_label_either_kind() -> None:
    limits = CalibrationLimits(min_heldout=50)
    record = summarize(heldout(tp=20, fp=0, tn=20, fn=0), default_threshold=0.5, limits=limits)
    assert record["labels_needed"] == {"fail": 0, "pass": 0, "either": 10}
    assert record["why_not"][-1].startswith("short of evidence only: 10 more of either kind")


def test_an_unstable_judge_is_not_told_that_labels_would_help() -> None:
    judged = heldout(tp=20, fp=0, tn=15, fn=0)
    judged[0].scores = [1.0, 0.0, 1.0]  # still passes (2 of 3), but its reruns disagree
    judged[1].scores = [1.0, 0.0, 1.0]
    record = decide(judged)
    assert record["rerun_stability"] == 33 / 35
    assert record["labels_needed"] is None
    assert not any(w.startswith("short of evidence") for w in record["why_not"])
