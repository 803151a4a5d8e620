"""``summarize``: the dev split picks the threshold, the held-out split is measured."""

from __future__ import annotations

from typing import Any

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
        "4 held-out items with a verdict; at least 30 are needed",
        "false-pass rate 0.500 is not under 0.05",
        "false-block rate 0.500 is not under 0.1",
        "rerun stability 0.750 is under 0.95",
        "kappa 0.000 is under 0.6",
    ]


def test_nothing_held_out_says_what_cannot_be_measured() -> None:
    record = summarize(
        [JudgedItem(item(1, "dev", "pass"), [1.0])],
        default_threshold=0.7,
        limits=CalibrationLimits(min_heldout=1),
    )
    assert record["threshold"] == 0.7  # one class on dev: the grader's own threshold
    assert record["why_not"] == [
        "0 held-out items with a verdict; at least 1 are needed",
        "no false-pass rate: no held-out item to measure it on",
        "no false-block rate: no held-out item to measure it on",
        "no rerun stability: no held-out item to measure it on",
        "kappa none is under 0.6",
    ]
