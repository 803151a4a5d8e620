"""``coalmine eval plan``: real runs of a real python agent, the real store, through the CLI.

The agent fails the cases whose numbers ``failing.txt`` (beside it) lists, so between two runs
exactly the cases in one list and not the other flip. It follows promptfoo's convention, the
way a python agent reports tokens and a cost: a python agent cannot name its model, so the
config's ``pricing:`` (looked up by model) never prices it; what it reports as ``cost`` does.
The sample sizes are checked against Connor's formula computed here with scipy's quantiles.
"""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy.stats import norm

from coalmine._util.power import cases_to_detect, mcnemar_exact_power
from coalmine.cli.main import main

CASES = 60
Z = 1.959964

AGENT = """
from pathlib import Path

FAILING = Path(__file__).with_name("failing.txt")
COST = {cost!r}


def run(prompt, options, context):
    number = prompt.split()[-1]
    answer = {{"output": "no" if number in FAILING.read_text().split() else "yes"}}
    answer["tokenUsage"] = {{"prompt": 100, "completion": 50}}
    if COST is not None:
        answer["cost"] = COST
    return answer
"""


def project(
    root: Path, monkeypatch: pytest.MonkeyPatch, *, cost: float | None = 0.002, repeats: int = 2
) -> Path:
    """A project with suite ``s`` of ``CASES`` cases run ``repeats`` times by a python agent."""
    root.mkdir(parents=True)
    module = f"planagent_{abs(hash(root)) % 10**8}"  # one module a test: imports are cached
    (root / f"{module}.py").write_text(AGENT.format(cost=cost), encoding="utf-8")
    config = {
        "agents": {
            "Bot": {"provider": "python", "convention": "promptfoo", "target": f"{module}:run"}
        },
        "pricing": {"gpt-4o-mini": {"input": 0.15, "output": 0.6}},
    }
    (root / "coalmine.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    folder = root / "harness" / "evals"
    folder.mkdir(parents=True)
    lines = [json.dumps({"id": f"c{i:02}", "prompt": f"case {i}"}) for i in range(CASES)]
    (folder / "s.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    meta = {
        "agent": "Bot",
        "repeats": repeats,
        "graders": [{"type": "contains", "config": {"value": "yes"}}],
    }
    (folder / "s.yaml").write_text(yaml.safe_dump(meta), encoding="utf-8")
    fail(root)
    monkeypatch.syspath_prepend(str(root))
    return root


def fail(root: Path, *numbers: int) -> None:
    (root / "failing.txt").write_text(" ".join(map(str, numbers)) + "\n", encoding="utf-8")


def coalmine(*args: str) -> tuple[int, str, str]:
    """``coalmine ARGS`` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def eval_run(root: Path) -> dict[str, Any]:
    """Run suite ``s`` once; its result."""
    code, out, err = coalmine(
        "eval", "run", "--root", str(root), "--format", "json", "--display", "none"
    )
    assert code in (0, 1), err  # 1: the suite failed its gate, as it does with any failure
    [suite] = json.loads(out)
    return dict(suite)


def plan(root: Path, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    code, out, err = coalmine("eval", "plan", "--root", str(root), "--format", "json", *args)
    return code, json.loads(out) if out.startswith("[") else [], err


def connor_cases(drop: float, psi: float) -> int:
    """``⌈(z_{.975}·√ψ + z_{.8}·√(ψ − δ²))² / δ²⌉``."""
    z_a, z_b = float(norm.ppf(0.975)), float(norm.ppf(0.8))
    root = z_a * math.sqrt(psi) + z_b * math.sqrt(psi - drop**2)
    return math.ceil(root**2 / drop**2)


def test_the_discordance_is_measured_between_the_two_latest_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", monkeypatch)
    fail(root, 1, 2, 3)
    first = eval_run(root)
    fail(root, 1, 4, 5, 6, 7, 8, 9)  # 2, 3 fixed; 4–9 broken: 8 flips
    second = eval_run(root)
    assert (first["passed"], second["passed"]) == (57, 53)
    assert (second["cost"], second["repeats"]) == (pytest.approx(60 * 2 * 0.002), 2)

    code, [found], err = plan(root, "s", "--detect", "0.05")
    assert code == 0, err
    psi = 8 / CASES
    needed = cases_to_detect(0.05, discordance=psi)
    assert needed == connor_cases(0.05, psi) == 417
    assert found["suite"] == "s" and found["discordance"] == round(psi, 6)
    assert found["discordanceSource"] == (
        f"8 of 60 shared cases flipped between runs {first['runId']} and {second['runId']}"
    )
    assert found["casesNeeded"] == needed and found["casesNow"] == CASES
    assert found["exactPower"] == round(mcnemar_exact_power(needed, discordance=psi, delta=0.05), 4)
    assert found["exactPower"] < 0.8  # the exact test is conservative
    assert found["repeats"] == 2 and found["calls"] == needed * 2 == 834
    assert found["costPerCall"] == pytest.approx(0.002)
    assert found["cost"] == pytest.approx(834 * 0.002)
    assert found["costSource"] == "at the cost a call of its latest run"

    fail(root)  # a third run: 1 and 4–9 fixed, and the oldest run drops out
    third = eval_run(root)
    _, [found], _ = plan(root, "harness/evals/s.jsonl", "--detect", "0.05", "--repeats", "3")
    assert found["discordance"] == round(7 / CASES, 6)
    assert found["discordanceSource"] == (
        f"7 of 60 shared cases flipped between runs {second['runId']} and {third['runId']}"
    )
    assert found["casesNeeded"] == cases_to_detect(0.05, discordance=7 / CASES)
    assert found["calls"] == found["casesNeeded"] * 3 and found["repeats"] == 3


def test_runs_with_no_flip_plan_with_wilsons_upper_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", monkeypatch)
    first, second = eval_run(root), eval_run(root)
    _, [found], _ = plan(root, "s", "--detect", "0.05")
    psi = Z**2 / (CASES + Z**2)  # Wilson's upper bound at 0 of 60
    assert found["discordance"] == pytest.approx(psi, abs=1e-6)
    assert found["discordanceSource"] == (
        f"no case of 60 flipped between runs {first['runId']} and {second['runId']}; "
        "Wilson's 95% upper bound on the share"
    )
    assert found["casesNeeded"] == connor_cases(0.05, psi)


def test_a_run_that_reports_tokens_but_no_cost_is_not_priced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", monkeypatch, cost=None)
    run = eval_run(root)
    assert run["tokens"] == {"prompt": 60 * 2 * 100, "completion": 60 * 2 * 50}
    assert run.get("cost") is None  # pricing: is by model, and a python agent names none
    _, [found], _ = plan(root, "s", "--detect", "0.05")
    assert found["costPerCall"] is None and found["cost"] is None
    assert found["costSource"] == "its latest run was not priced (no model of it in pricing:)"
    assert found["calls"] == found["casesNeeded"] * 2


def test_with_no_run_the_discordance_is_assumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", monkeypatch)
    code, found, err = plan(root, "s", "--detect", "0.05")
    assert code == 0, err
    code, [wide], _ = plan(root, "s", "--detect", "0.08")
    [narrow] = found
    assert (narrow["discordance"], wide["discordance"]) == (0.1, 0.16)  # max(0.1, 2 × drop)
    assert narrow["discordanceSource"].startswith("assumed, max(0.10, 2 × the drop)")
    assert narrow["casesNeeded"] == cases_to_detect(0.05, discordance=0.1) == 312
    assert (
        wide["casesNeeded"] == cases_to_detect(0.08, discordance=0.16) == connor_cases(0.08, 0.16)
    )
    for each in (narrow, wide):
        assert each["casesNow"] == 60 and each["cost"] is None  # counted in the suite's file
        assert each["repeats"] == 2  # the suite's repeats: before any run, from its YAML
        assert each["costSource"] == "no run of the suite yet to price a call from"
        assert each["calls"] == each["casesNeeded"] * each["repeats"]


def test_the_table_says_paired_cases_and_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", monkeypatch)
    fail(root, 1, 2, 3)
    eval_run(root)
    fail(root, 1, 4, 5, 6, 7, 8, 9)
    eval_run(root)
    code, out, err = coalmine("eval", "plan", "s", "--root", str(root), "--detect", "0.05")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == (
        "s: to see a drop of 5 points in pass rate with 80% power (two-sided McNemar, "
        "alpha 0.05), compare 417 paired cases."
    )
    assert lines[1].startswith("  discordance 0.133: 8 of 60 shared cases flipped between runs ")
    assert "  the suite has 60 cases: 357 more are needed" in lines
    assert lines[-1] == (
        "  417 cases × 2 repeats = 834 calls, about $1.6680 a run "
        "(at the cost a call of its latest run)"
    )


def test_a_drop_beyond_the_given_discordance_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", monkeypatch)
    code, found, err = plan(root, "s", "--discordance", "0.02", "--detect", "0.05")
    assert (code, found) == (2, [])
    assert err == (
        "error: --detect 0.05: a drop of 0.05 flips at least 0.05 of the cases, more than the "
        "discordance 0.02 (given); give a larger --discordance\n"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--power", "0.04", "--alpha", "0.05"], "--power 0.04 must be above --alpha 0.05"),
        (["--detect", "1.5"], "--detect 1.5: a drop in pass rate is between 0 and 1, not 1.5"),
        (["--detect", "0.05", "--", "nosuch"], "no eval suite 'nosuch'"),
    ],
)
def test_out_of_range_figures_exit_2_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], said: str
) -> None:
    root = project(tmp_path / "p", monkeypatch)
    code, out, err = coalmine("eval", "plan", "s", "--root", str(root), "--detect", "0.05", *args)
    assert (code, out) == (2, "")
    assert said in err and "Traceback" not in err
