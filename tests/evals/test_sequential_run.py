"""``eval run --sequential``: real suites, a real python agent, the real store and the CLI.

The agent passes a case when its prompt names a passing case, so each suite's true pass rate is
set exactly; it appends every prompt to a file, so the calls it got are counted from outside.
The statistics themselves (error rates over 2,000 runs, the fraction saved) are tested in
``tests/_util/test_sequential.py``; here: that the run stops calling agents once decided, in
draw order, says so in its result, resumes to the same decision and refuses what it cannot do.
"""

from __future__ import annotations

import io
import json
import random
import sqlite3
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime
from functools import partial
from importlib.resources import files
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
import yaml

from coalmine._util.clock import FixedClock
from coalmine.cli.main import main
from coalmine.engine.events import EvalProgress, Hooks
from coalmine.evals.plan import PlannedSuite, Selection, plan_evals
from coalmine.evals.run import run_evals
from coalmine.evals.sequential import Stopping, SuiteSequence
from coalmine.store.evals import Attempt
from coalmine.store.runs import Store

SCHEMA = json.loads((files("coalmine") / "schemas" / "eval-result.v1.json").read_text("utf-8"))

AGENT = """
import os

async def run(prompt, context):
    with open(os.environ["SEQ_CALLS"], "a", encoding="utf-8") as f:
        f.write(prompt + "\\n")
    if prompt.startswith("boom"):
        raise RuntimeError("the agent fell over")
    return "yes" if prompt.startswith("good") else "no"
"""


def project(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    cases: int,
    passing: int,
    min_score: float | None = 0.8,
    errors: int = 0,
    name: str = "s",
    seed: int = 7,
) -> Path:
    """A project whose suite ``name`` has ``passing`` of ``cases`` cases that the agent passes."""
    root.mkdir(parents=True, exist_ok=True)
    module = f"seqagent_{abs(hash(root)) % 10**8}"
    (root / f"{module}.py").write_text(AGENT, encoding="utf-8")
    config = {"agents": {"Bot": {"provider": "python", "target": f"{module}:run"}}}
    (root / "coalmine.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    kinds = ["good"] * passing + ["boom"] * errors + ["bad"] * (cases - passing - errors)
    random.Random(seed).shuffle(kinds)
    folder = root / "harness" / "evals"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"id": f"c{i:04}", "prompt": f"{kind} {i}"}) for i, kind in enumerate(kinds)
    ]
    (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    meta: dict[str, Any] = {
        "agent": "Bot",
        "graders": [{"type": "contains", "config": {"value": "yes"}}],
    }
    if min_score is not None:
        meta["min_score"] = min_score
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(meta), encoding="utf-8")
    calls = root / "calls.txt"
    monkeypatch.setenv("SEQ_CALLS", str(calls))
    monkeypatch.syspath_prepend(str(root))
    return calls


def called(calls: Path) -> list[str]:
    return calls.read_text("utf-8").splitlines() if calls.exists() else []


def coalmine(*args: str) -> tuple[int, str, str]:
    """``coalmine ARGS`` in-process, as the script runs it: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def eval_run(root: Path, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    code, out, err = coalmine(
        "eval", "run", "--root", str(root), "--format", "json", "--display", "none", *args
    )
    return code, json.loads(out) if out.startswith("[") else [], err


def stored_cases(root: Path, run_id: str) -> list[tuple[str, int]]:
    conn = sqlite3.connect(root / ".coalmine" / "coalmine.db")
    try:
        rows = conn.execute(
            "SELECT case_id, rep FROM eval_attempts WHERE run_id = ?", (run_id,)
        ).fetchall()
    finally:
        conn.close()
    return [(r[0], r[1]) for r in rows]


def test_a_suite_well_above_its_gate_stops_early_and_says_what_it_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = project(tmp_path / "p", monkeypatch, cases=400, passing=384)  # 0.96 against 0.8
    code, [suite], _ = eval_run(tmp_path / "p", "--sequential", "--shuffle", "3")
    jsonschema.validate(suite, SCHEMA)
    seq = suite["sequential"]
    assert code == 0 and suite["verdict"] == "pass"
    assert seq["decision"] == "pass" and seq["stoppedEarly"] is True
    assert seq["seed"] == 3 and seq["alpha"] == 0.05
    assert seq["casesTotal"] == 400
    assert seq["casesRun"] == suite["cases"] < 200
    assert seq["decidedAfter"] <= seq["casesRun"]
    assert seq["casesSkipped"] == 400 - seq["casesRun"]
    assert seq["callsSaved"] == seq["casesSkipped"]  # one repeat a case
    assert len(called(calls)) == suite["cases"]  # no case was called that the result omits
    assert "decided at alpha 0.05 after" in suite["gate"]["rule"]


def test_a_suite_well_below_its_gate_fails_early_with_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = project(tmp_path / "p", monkeypatch, cases=300, passing=150)  # 0.5 against 0.8
    code, [suite], _ = eval_run(tmp_path / "p", "--sequential")
    assert code == 1 and suite["verdict"] == "fail"
    assert suite["sequential"]["decision"] == "fail"
    assert suite["sequential"]["casesRun"] < 100
    assert len(called(calls)) == suite["cases"]


def test_the_cases_are_drawn_in_the_recorded_seeds_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = project(tmp_path / "p", monkeypatch, cases=200, passing=196)
    code, [suite], _ = eval_run(tmp_path / "p", "--sequential", "--shuffle", "11", "-c", "1")
    order = list(range(200))
    random.Random(11).shuffle(order)
    ran = [int(line.split()[1]) for line in called(calls)]
    assert code == 0 and ran == order[: len(ran)]  # one in flight: exactly the drawn prefix
    assert len(ran) == suite["sequential"]["decidedAfter"]


def test_a_seed_is_chosen_and_recorded_when_none_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path / "p", monkeypatch, cases=120, passing=118)
    _, [first], _ = eval_run(tmp_path / "p", "--sequential")
    _, [second], _ = eval_run(tmp_path / "p", "--sequential")
    assert isinstance(first["sequential"]["seed"], int)
    assert first["sequential"]["seed"] != second["sequential"]["seed"]  # 1 in 2**31 to clash


def test_without_min_score_the_first_blocking_failure_decides_and_a_clean_suite_runs_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = project(tmp_path / "p", monkeypatch, cases=100, passing=97, min_score=None)
    code, [suite], _ = eval_run(tmp_path / "p", "--sequential", "-c", "1")
    assert code == 1 and suite["sequential"]["decision"] == "fail"
    assert suite["failed"] == 1 and suite["cases"] == len(called(calls)) < 100  # stopped at it
    clean = tmp_path / "q"
    calls = project(clean, monkeypatch, cases=60, passing=60, min_score=None)
    code, [suite], _ = eval_run(clean, "--sequential")
    assert code == 0 and suite["cases"] == 60 == len(called(calls))
    assert suite["sequential"]["decision"] is None and not suite["sequential"]["stoppedEarly"]


def planned_suite(tmp_path: Path, cases: int = 10) -> PlannedSuite:
    """A suite of ``cases`` cases with ``min_score: 0.5``, planned (nothing runs)."""
    (tmp_path / "harness" / "evals").mkdir(parents=True)
    (tmp_path / "coalmine.yaml").write_text(
        "agents:\n  Bot: {provider: python, target: 'x:run'}\n", encoding="utf-8"
    )
    lines = [json.dumps({"id": f"c{i}", "prompt": "p"}) for i in range(cases)]
    (tmp_path / "harness" / "evals" / "s.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    (tmp_path / "harness" / "evals" / "s.yaml").write_text(
        "agent: Bot\nmin_score: 0.5\ngraders: [{type: contains, config: {value: y}}]\n", "utf-8"
    )
    [planned] = plan_evals(tmp_path, (), selection=Selection()).suites
    return planned


def done(case_id: str, status: str, *, blocks: bool = True) -> Attempt:
    """A stored case run of suite ``s``."""
    return Attempt("s", case_id, 0, status, blocks, None, {}, None, None, None, None, None, {})


def test_values_count_in_draw_order_not_in_the_order_cases_finish(tmp_path: Path) -> None:
    seq = SuiteSequence(planned_suite(tmp_path), "score", 0.05)
    seq.add(done("c2", "pass"))
    seq.add(done("c1", "pass"))
    assert seq.drawn == 0  # c0, drawn first, has not finished: nothing counts yet
    seq.add(done("c0", "fail"))
    assert seq.drawn == 3 and seq.gate is not None and seq.gate.total == 2.0
    for i in range(3, 10):
        seq.add(done(f"c{i}", "fail"))
    assert seq.decision == "fail" and seq.decided_after is not None


def test_a_case_that_errored_on_what_may_block_fails_the_gate_at_once(tmp_path: Path) -> None:
    seq = SuiteSequence(planned_suite(tmp_path, 100), "score", 0.05)
    seq.add(done("c0", "pass"))
    seq.add(done("c1", "error"))
    assert seq.decision == "fail" and seq.decided_after == 2
    assert not seq.wants("c2")


def test_a_case_that_errored_on_advisory_graders_only_makes_the_suite_one_smaller(
    tmp_path: Path,
) -> None:
    seq = SuiteSequence(planned_suite(tmp_path, 4), "score", 0.05)
    seq.add(done("c0", "pass"))
    seq.add(done("c1", "error", blocks=False))
    assert seq.gate is not None and seq.gate.size == 3 and seq.decision is None
    seq.add(done("c2", "pass"))  # 2 of the 3 with a value pass, whatever c3 does: 2/3 >= 0.5
    assert seq.decision == "pass" and seq.decided_after == 2


class _StopAfter(Hooks):
    def __init__(self, stop: anyio.Event, after: int):
        self.stop, self.after = stop, after

    async def on_eval_progress(self, event: EvalProgress) -> None:
        if event.done >= self.after:
            self.stop.set()


def test_an_interrupted_sequential_run_resumes_to_its_decision_calling_no_case_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "p"
    calls = project(root, monkeypatch, cases=400, passing=390)
    plan = plan_evals(root, (), selection=Selection(shuffle=5))
    store = Store.open(root / ".coalmine" / "coalmine.db")
    stop = anyio.Event()
    try:
        outcome = anyio.run(
            partial(
                run_evals, plan, store=store, stopping=Stopping(), stop=stop, concurrency=1,
                hooks=[_StopAfter(stop, 10)],
                clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC), step=1.0),
            )
        )  # fmt: skip
    finally:
        store.close()
    assert outcome.interrupted and outcome.exit_code == 3
    before = len(called(calls))
    assert 10 <= before < 40
    code, [suite], _ = eval_run(root, "--resume", outcome.run_id)
    assert code == 0 and suite["sequential"]["decision"] == "pass"
    assert suite["sequential"]["seed"] == 5 and not suite["interrupted"]
    prompts = called(calls)
    assert len(prompts) == len(set(prompts)) == suite["cases"]  # nothing called twice
    assert sorted(stored_cases(root, outcome.run_id)) == sorted(
        {(c, 0) for c, _ in stored_cases(root, outcome.run_id)}
    )
    # the resumed run drew the same order: its calls are the seed's prefix
    order = list(range(400))
    random.Random(5).shuffle(order)
    assert [int(p.split()[1]) for p in prompts] == order[: len(prompts)]


def test_against_a_baseline_an_unchanged_agent_is_no_worse_and_a_broken_one_is_worse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "p"
    project(root, monkeypatch, cases=400, passing=380)
    code, [base], _ = eval_run(root)
    assert code == 0 and base["cases"] == 400
    code, [same], _ = eval_run(root, "--sequential", "--baseline", base["runId"])
    seq = same["sequential"]
    assert code == 0 and seq["decision"] == "pass" and seq["stoppedEarly"]
    assert seq["baselineRun"] == base["runId"] and seq["margin"] == 0.05
    assert "no worse than run" in same["gate"]["rule"]
    # the same suite, now answered badly by half the cases that passed
    project(root, monkeypatch, cases=400, passing=190)
    code, [worse], _ = eval_run(root, "--sequential", "--baseline", base["runId"])
    assert code == 1 and worse["sequential"]["decision"] == "fail"
    assert worse["sequential"]["casesRun"] < 100


def test_a_case_the_baseline_lacks_still_runs_after_the_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "p"
    project(root, monkeypatch, cases=300, passing=300)
    _, [base], _ = eval_run(root)
    folder = root / "harness" / "evals"
    with (folder / "s.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "new-case", "prompt": "good new"}) + "\n")
    calls = root / "calls.txt"
    calls.unlink()
    code, [suite], _ = eval_run(root, "--sequential", "--baseline", base["runId"])
    assert code == 0 and suite["sequential"]["stoppedEarly"]
    assert "good new" in called(calls)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--alpha", "0.1"], "go with --sequential"),
        (["--baseline", "x"], "go with --sequential"),
        (["--sequential", "--margin", "0.1"], "give the run"),
        (["--sequential", "--alpha", "1.5"], "--alpha"),
        (["--sequential", "--baseline", "nope"], "nope"),
    ],
)
def test_what_sequential_cannot_do_is_refused_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], says: str
) -> None:
    calls = project(tmp_path / "p", monkeypatch, cases=20, passing=20)
    code, out, err = coalmine("eval", "run", "--root", str(tmp_path / "p"), *args)
    assert code == 2, out + err
    assert says in err and "Traceback" not in out + err
    assert called(calls) == []


def test_resume_refuses_a_new_sequential_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path / "p", monkeypatch, cases=20, passing=20)
    code, _, err = coalmine(
        "eval", "run", "--root", str(tmp_path / "p"), "--resume", "x", "--sequential"
    )
    assert code == 2 and "--sequential" in err


def test_sequential_runs_in_one_process_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path / "p", monkeypatch, cases=50, passing=50)
    code, [suite], stderr = eval_run(tmp_path / "p", "--sequential", "--workers", "2")
    assert code == 0 and "--sequential decides as the cases finish, in one process" in stderr
    assert suite["sequential"] is not None


def test_a_suite_result_says_what_a_comparison_with_its_previous_run_detects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coalmine.compare import detectable

    root = tmp_path / "p"

    def kinds() -> list[bool]:
        path = root / "harness" / "evals" / "s.jsonl"
        lines = path.read_text("utf-8").splitlines()
        return [json.loads(line)["prompt"].startswith("good") for line in lines]

    project(root, monkeypatch, cases=200, passing=180, seed=1)
    before = kinds()
    _, [first], _ = eval_run(root)
    assert first["detectable"] is None  # no earlier run of the suite
    project(root, monkeypatch, cases=200, passing=170, seed=2)
    flips = sum(a != b for a, b in zip(before, kinds(), strict=True))
    _, [second], _ = eval_run(root)
    d = second["detectable"]
    want = detectable(200, flips)
    assert want is not None and want.difference is not None
    assert (d["against"], d["cases"], d["flips"]) == (first["runId"], 200, flips)
    assert d["difference"] == pytest.approx(want.difference, abs=1e-6)
    jsonschema.validate(second, SCHEMA)
