"""A judge grader's pass rate beside the rate people's labels correct (prediction-powered).

Hand-computed PPI on a small suite, then a real run: a python agent, a python judge that passes
what says "shiny", people who disagree with it on some cases, through ``eval run`` and
``coalmine judge rate``.
"""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stderr, redirect_stdout
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from coalmine._util.ppi import ppi_mean
from coalmine.cli.main import main
from coalmine.evals.judged import JudgeRates, judge_verdict
from coalmine.judge.rates import labels_of
from coalmine.store.runs import Store

SCHEMA = json.loads((files("coalmine") / "schemas" / "eval-result.v1.json").read_text("utf-8"))


def judged(passed: bool, output: str = "out") -> dict[str, Any]:
    """A stored case run's record with a contains grade and a judge grade."""
    return {
        "output": output,
        "grades": {
            "contains": {"score": 1.0, "passed": True},
            "llm-rubric": {"score": 0.9 if passed else 0.1, "passed": passed,
                           "prompt_sha256": "x", "judge_model": "m"},
        },
    }  # fmt: skip


def test_the_judge_verdict_is_the_first_judge_grade_not_another_grader() -> None:
    assert judge_verdict(judged(False)) == ("llm-rubric", 0.0)
    assert judge_verdict({"grades": {"contains": {"passed": True}}}) is None
    assert judge_verdict({"output": "x"}) is None


def test_ppi_on_a_small_suite_by_hand() -> None:
    # four cases nobody labelled, judged 1 1 1 0; four labelled (human, judge):
    # (1, 1) (0, 1) (1, 1) (0, 0). mean_N(f) = 0.75, the rectifier mean(f - Y) = 1/4, so the
    # corrected rate is 0.5; the raw rate is 6/8 = 0.75. Var(f) over the unlabelled = 0.25
    # (ddof 1) and Var(f - Y) = Var(0, 1, 0, 0) = 0.25: SE = sqrt(0.25/4 + 0.25/4) = 0.35355,
    # and 0.5 ± 1.96 · 0.35355 reaches past both ends: [0, 1].
    labels = {"s/l0": ("out", 1.0), "s/l1": ("out", 0.0), "s/l2": ("out", 1.0),
              "s/l3": ("out", 0.0)}  # fmt: skip
    rates = JudgeRates("s", labels)
    for i, passed in enumerate([True, True, True, False]):
        rates.add(f"u{i}", judged(passed))
    for i, passed in enumerate([True, True, True, False]):
        rates.add(f"l{i}", judged(passed))
    r = rates.result()
    assert r is not None
    assert (r.raw, r.corrected, r.cases, r.labelled) == (0.75, 0.5, 8, 4)
    assert r.ci95 == (0.0, 1.0)
    assert "corrected by 4 labelled cases" in r.note


def test_a_label_on_another_output_or_an_unsure_one_does_not_count(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    items = [
        {"id": f"s/{case}", "prompt": "p", "output": output, "rubric": "r",
         "labels": [{"labeller": "x", "verdict": verdict}]}
        for case, output, verdict in [("a", "out", "fail"), ("b", "old", "fail"),
                                      ("c", "out", "unsure")]
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    labels = labels_of([path])
    assert labels == {"s/a": ("out", 0.0), "s/b": ("old", 0.0)}  # unsure: no verdict
    rates = JudgeRates("s", labels)
    for case in "abc":
        rates.add(case, judged(True))
    r = rates.result()
    assert r is not None and r.labelled == 1  # b's label is about another output
    assert r.corrected is None and "uncorrected" in r.note  # one label: too few


AGENT = """
async def run(prompt, context):
    return prompt

async def judge(prompt, context):
    if "shiny" in prompt:
        return '{"pass": true, "score": 0.9, "reason": "it shines"}'
    return '{"pass": false, "score": 0.2, "reason": "too dull"}'
"""


def coalmine(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue() + ("\n" + err.getvalue() if code else "")


def test_a_run_reports_the_judge_rate_and_people_correct_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "p"
    (root / "harness" / "evals").mkdir(parents=True)
    (root / "rateagent.py").write_text(AGENT, encoding="utf-8")
    config = {
        "agents": {"Bot": {"provider": "python", "target": "rateagent:run"}},
        "judge": {"provider": "python", "target": "rateagent:judge"},
    }
    (root / "coalmine.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    prompts = [f"shiny answer {i}" for i in range(24)] + [f"dull answer {i}" for i in range(12)]
    lines = [json.dumps({"id": f"c{i}", "prompt": p}) for i, p in enumerate(prompts)]
    (root / "harness" / "evals" / "s.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    meta = {"agent": "Bot", "graders": [{"type": "llm-rubric", "config": {"value": "good?"}}]}
    (root / "harness" / "evals" / "s.yaml").write_text(yaml.safe_dump(meta), "utf-8")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(__import__("sys").modules, "rateagent", raising=False)

    code, out = coalmine("eval", "run", "--root", str(root), "--format", "json", "--display",
                         "none")  # fmt: skip
    [suite] = json.loads(out)
    jsonschema.validate(suite, SCHEMA)
    rate = suite["judgeRate"]
    assert rate["raw"] == pytest.approx(24 / 36, abs=1e-4) and rate["labelled"] == 0
    assert rate["corrected"] is None and "no case of this run has a human label" in rate["note"]

    # people label 12 cases: of 8 shiny ones the judge passed they fail 3; 4 dull ones, fail
    labelled = {f"c{i}": ("fail" if i < 3 else "pass") for i in range(8)}
    labelled |= {f"c{i}": "fail" for i in range(24, 28)}
    items = [
        {"id": f"s/{c}", "prompt": prompts[int(c[1:])], "output": prompts[int(c[1:])],
         "rubric": "good?", "labels": [{"labeller": "ann", "verdict": v}]}
        for c, v in labelled.items()
    ]  # fmt: skip
    set_path = root / "labels.jsonl"
    set_path.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    run_id = suite["runId"]
    code, out = coalmine("judge", "rate", run_id, "--root", str(root), "--labels", str(set_path),
                         "--format", "json")  # fmt: skip
    assert code == 0, out
    [found] = json.loads(out)
    # unlabelled: 16 shiny (judge 1) and 8 dull (0); labelled (human, judge): 3 × (0, 1),
    # 5 × (1, 1), 4 × (0, 0). PPI: 16/24 - mean(f - Y) = 2/3 - 3/12 = 0.41667
    want = ppi_mean([1.0] * 16 + [0.0] * 8, [(0.0, 1.0)] * 3 + [(1.0, 1.0)] * 5 + [(0.0, 0.0)] * 4)
    assert found["suite"] == "s" and found["labelled"] == 12
    assert found["corrected"] == pytest.approx(2 / 3 - 0.25, abs=1e-4)
    assert want.ci95 is not None and found["ci95"] == pytest.approx(list(want.ci95), abs=1e-4)
    var_f = (16 * (1 / 3) ** 2 + 8 * (2 / 3) ** 2) / 23
    var_r = (3 * 0.75**2 + 9 * 0.25**2) / 11  # f - Y: three 1s, nine 0s, mean 0.25
    se = math.sqrt(var_f / 24 + var_r / 12)
    assert found["ci95"][0] == pytest.approx(max(0.0, 5 / 12 - 1.959964 * se), abs=1e-4)
    code, text = coalmine("judge", "rate", run_id, "--root", str(root), "--labels",
                          str(set_path))  # fmt: skip
    assert "corrected: 0.417" in text

    # once the judge's calibration names that set, the next run corrects its own rate
    store = Store.open(root / ".coalmine" / "coalmine.db")
    try:
        record = {"judge": {"agent": "judge"}, "calibration_set": {"path": str(set_path)}}
        store.record_calibration("k", may_block=False, record=record, replies={})
    finally:
        store.close()
    code, out = coalmine("eval", "run", "--root", str(root), "--format", "json", "--display",
                         "none")  # fmt: skip
    [again] = json.loads(out)
    assert again["judgeRate"]["corrected"] == pytest.approx(found["corrected"], abs=1e-4)
