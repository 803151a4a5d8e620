"""The eval engine in-process: real suite files, a real python agent, the real SQLite store.

The agent is a module written into each test's project (a unique name per test, so the
python provider imports a fresh one). What it answers depends on the prompt:

- ``raise:…`` raises; ``sleep:S`` sleeps S seconds; ``tools:a,b`` calls tools ``a`` and ``b``;
- ``flaky:N`` answers ``PASS`` on the first N of every 4 calls of its case, else ``FAIL``;
- anything else is echoed back.

It counts its calls (``CALLS``, per case ``COUNTS``) and the most calls in flight at once.
"""

from __future__ import annotations

import io
import json
import random
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from importlib.resources import files
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import jsonschema
import pytest
import yaml

from coalmine._util.clock import FixedClock
from coalmine.cli.display import PlainDisplay
from coalmine.engine.events import EvalEnd, EvalProgress, EvalStart, Hooks
from coalmine.errors import ConfigError, UsageError
from coalmine.evals.plan import EvalPlan, Selection, plan_evals
from coalmine.evals.run import EvalOutcome, run_evals
from coalmine.results import EvalSuiteResult, eval_result_json_schema
from coalmine.store.evals import suite_summaries
from coalmine.store.runs import Store
from tests.helpers.openai_server import FakeOpenAI, Reply, tool_call

AT = datetime(2026, 4, 13, 7, 30, tzinfo=UTC)

AGENT = """\
import anyio

CALLS = []
COUNTS = {}
STATE = {"in_flight": 0, "max": 0}


async def run(prompt, context):
    CALLS.append(context.case_id)
    count = COUNTS[context.case_id] = COUNTS.get(context.case_id, 0) + 1
    STATE["in_flight"] += 1
    STATE["max"] = max(STATE["max"], STATE["in_flight"])
    try:
        verb, _, arg = prompt.partition(":")
        if verb == "sleep":
            await anyio.sleep(float(arg))
            return "slept"
        await anyio.sleep(0)
        if verb == "raise":
            raise RuntimeError(f"agent crashed on {context.case_id}")
        if verb == "tools":
            calls = [{"name": n, "arguments": {"q": context.case_id}} for n in arg.split(",")]
            return {"output": "used tools", "tool_calls": calls}
        if verb == "flaky":
            return "PASS" if (count - 1) % 4 < int(arg) else "FAIL"
        return prompt
    finally:
        STATE["in_flight"] -= 1


async def judge(prompt, context):
    CALLS.append("judge:" + context.case_id)
    if "shiny" in prompt:
        return '{"pass": true, "score": 0.9, "reason": "it shines"}'
    return '{"pass": false, "score": 0.2, "reason": "too dull"}'


async def mumble(prompt, context):
    CALLS.append("mumble:" + context.case_id)
    return "hmm, hard to say"
"""


def contains(value: str, **more: Any) -> dict[str, Any]:
    return {"type": "contains", "config": {"value": value}, **more}


def case(case_id: str, prompt: str, *graders: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"id": case_id, "prompt": prompt, "graders": list(graders), **more}


class Evals:
    """A project with the agent module, suites, and helpers to plan and run them."""

    def __init__(self, root: Path, module: str):
        self.root = root
        self.module = module
        root.mkdir(parents=True)
        (root / f"{module}.py").write_text(AGENT, encoding="utf-8")

    def config(self, **extra: Any) -> None:
        """coalmine.yaml with the agent ``Bot`` (and ``extra`` top-level keys)."""
        bot = {"provider": "python", "target": f"{self.module}:run", **extra.pop("bot", {})}
        data = {"agents": {"Bot": bot, **extra.pop("agents", {})}, **extra}
        (self.root / "coalmine.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")

    def suite(
        self, name: str, cases: list[dict[str, Any] | str], meta: dict[str, Any] | None = None
    ) -> Path:
        """``harness/evals/<name>.jsonl`` (a string is written as a raw line) and its YAML."""
        folder = self.root / "harness" / "evals"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [c if isinstance(c, str) else json.dumps(c) for c in cases]
        path = folder / f"{name}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if meta is not None:
            (folder / f"{name}.yaml").write_text(yaml.safe_dump(meta), encoding="utf-8")
        return path

    @property
    def agent(self) -> ModuleType:
        """The agent module as the provider imported it (its call counters)."""
        return sys.modules[self.module]

    def calls(self) -> list[str]:
        return list(self.agent.CALLS) if self.module in sys.modules else []

    def plan(self, *names: str, **selection: Any) -> EvalPlan:
        return plan_evals(self.root, names, selection=Selection(**selection))

    def store(self) -> Store:
        return Store.open(self.root / ".coalmine" / "coalmine.db")

    def run(self, plan: EvalPlan | None = None, **options: Any) -> EvalOutcome:
        plan = plan or self.plan()
        store = self.store()
        try:
            return anyio.run(partial(run_evals, plan, store=store, **options))
        finally:
            store.close()

    def rows(self, run_id: str) -> list[sqlite3.Row]:
        conn = sqlite3.connect(self.root / ".coalmine" / "coalmine.db")
        conn.row_factory = sqlite3.Row
        try:
            return conn.execute(
                "SELECT * FROM eval_attempts WHERE run_id = ? ORDER BY suite, case_id, rep",
                (run_id,),
            ).fetchall()
        finally:
            conn.close()

    def row(self, run_id: str, case_id: str, rep: int = 0) -> sqlite3.Row:
        [found] = [r for r in self.rows(run_id) if (r["case_id"], r["rep"]) == (case_id, rep)]
        return found


@pytest.fixture
def evals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Evals]:
    module = f"evagent_{uuid.uuid4().hex[:12]}"
    monkeypatch.setattr(sys, "path", list(sys.path))  # the provider adds the project folder
    yield Evals(tmp_path / "proj", module)
    sys.modules.pop(module, None)


SCHEMA = json.loads((files("coalmine") / "schemas" / "eval-result.v1.json").read_text("utf-8"))


def check_schema(data: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(data)


def result_file(evals: Evals, outcome: EvalOutcome, index: int = 0) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(outcome.paths[index].read_text(encoding="utf-8"))
    check_schema(data)
    return data


# -- verdicts ------------------------------------------------------------------------------------


def test_pass_fail_counts_and_the_result_file(evals: Evals) -> None:
    evals.config()
    evals.suite(
        "basic",
        [
            case("a", "hello world", contains("hello")),
            case("b", "hello there", contains("hello")),
            case("c", "goodbye", contains("hello")),
            case("d", "raise:now", contains("hello")),
        ],
    )
    outcome = evals.run()

    assert (outcome.exit_code, outcome.interrupted) == (1, False)  # a blocking suite failed
    [r] = outcome.suites
    assert (r.suite_id, r.cases, r.passed, r.failed, r.errored) == ("basic", 4, 2, 2, 0)
    # case values [1, 1, 0, 0]: mean 0.5; s² = (4 · 0.25)/3 = 1/3; SE = sqrt(1/3/4) = 0.288675
    assert r.score == 0.5
    assert r.stderr == 0.2887
    # Wilson for 2 of 4: centre (0.5 + z²/8)/(1 + z²/4) = 0.5,
    # half z·sqrt(0.0625 + z²/64)/(1 + z²/4) = 1.959964·0.350033/1.960365 = 0.349961
    assert r.ci95 == (0.15, 0.85)
    assert (r.verdict, r.blocking, r.gate.rule, r.gate.blocking_failures) == (
        "fail",
        True,
        "every case passes",
        2,
    )
    # the agent crashing on d did not stop the rest: every case was called once
    assert sorted(evals.calls()) == ["a", "b", "c", "d"]
    assert [(f.id, f.status) for f in r.failures] == [("c", "fail"), ("d", "fail")]
    assert r.failures[0].reason == "contains failed: missing 'hello'"
    assert r.failures[1].reason.startswith("agent 'Bot' (python): raised RuntimeError: agent")
    # grader means over the three graded runs (d never reached a grader): 2/3
    assert r.graders["contains"].model_dump() == {"mean": 0.6667, "n": 3, "skipped": 0}
    assert (r.provider, r.repeats, r.reducer, r.bad_lines) == ("Bot", 1, "mean", 0)
    assert r.tokens.prompt == r.tokens.completion == 0 and r.cost is None
    assert r.judge_prompt_hash is None
    assert r.latency_seconds is not None and r.latency_seconds >= 0

    crashed = evals.row(outcome.run_id, "d")
    assert (crashed["status"], crashed["error_kind"], crashed["blocks"]) == ("fail", "crash", 1)
    assert crashed["score"] == 0.0
    record = json.loads(crashed["record"])
    assert "RuntimeError: agent crashed on d" in record["error"]
    [failure] = record["call_failures"]
    assert failure.startswith("crash: raised RuntimeError: agent crashed on d")
    passed = evals.row(outcome.run_id, "a")
    assert (passed["status"], passed["error_kind"], passed["blocks"]) == ("pass", None, 0)
    assert json.loads(passed["record"])["output"] == "hello world"
    assert json.loads(passed["scores"]) == {"contains": 1.0}

    # the result file: where the contract says, the same as the outcome, and in the store
    path = evals.root / ".coalmine" / "reports" / "evals" / "basic" / f"{outcome.run_id}.json"
    assert outcome.paths == [path]
    data = result_file(evals, outcome)
    assert data == r.model_dump(mode="json", by_alias=True)
    assert data["schema"] == "coalmine.eval.result.v1"
    assert data["reportPath"] == f".coalmine/reports/evals/basic/{outcome.run_id}.json"
    assert (data["suiteId"], data["runId"], data["badLines"]) == ("basic", outcome.run_id, 0)
    store = evals.store()
    try:
        assert suite_summaries(store, outcome.run_id) == [data]
        info = store.get_run(outcome.run_id)
        assert (info.kind, info.status, info.results_file) == ("eval", "finished", str(path))
    finally:
        store.close()


def test_every_case_passing_exits_0(evals: Evals) -> None:
    evals.config()
    evals.suite("ok", [case("a", "yes", contains("yes")), case("b", "yes!", contains("yes"))])
    outcome = evals.run()
    [r] = outcome.suites
    assert (outcome.exit_code, r.verdict, r.passed, r.score, r.stderr) == (0, "pass", 2, 1.0, 0.0)
    # Wilson for 2 of 2: lower bound n/(n + z²) = 2/5.841459 = 0.3424, upper 1
    assert r.ci95 == (0.3424, 1.0)


def test_a_grader_config_error_is_an_error_naming_the_case(evals: Evals) -> None:
    evals.config()
    evals.suite(
        "cfg",
        [
            case("ok", "hello", contains("hello")),
            # equals takes the case's expected when its config has no value
            case("from-expected", "hello", {"type": "equals"}, expected="hello"),
            # an expected that the grader cannot take is found when the case is graded
            case("bad-expected", "hello", {"type": "levenshtein"}, expected={"not": "text"}),
            case("bad-calls", "hello", {"type": "tool-call-f1"}, expected_tool_calls=[{"x": 1}]),
        ],
    )
    outcome = evals.run()
    [r] = outcome.suites
    assert (r.cases, r.passed, r.failed, r.errored) == (4, 2, 0, 2)
    assert (r.verdict, r.gate.blocking_failures, outcome.exit_code) == ("fail", 2, 1)
    # only the graded cases are scored: values [1, 1]
    assert (r.score, r.stderr) == (1.0, 0.0)
    for case_id, grader in [("bad-expected", "levenshtein"), ("bad-calls", "tool-call-f1")]:
        row = evals.row(outcome.run_id, case_id)
        assert (row["status"], row["error_kind"], row["blocks"], row["score"]) == (
            "error",
            "config",
            1,
            None,
        )
        error = json.loads(row["record"])["error"]
        assert error.startswith(f"case {case_id!r}: {grader}")
    assert (
        "the case's 'expected' is not a valid value for levenshtein"
        in (json.loads(evals.row(outcome.run_id, "bad-expected")["record"])["error"])
    )
    assert [(f.id, f.status) for f in r.failures] == [
        ("bad-calls", "error"),
        ("bad-expected", "error"),
    ]
    assert r.failures[1].reason.startswith("case 'bad-expected': levenshtein")
    assert evals.row(outcome.run_id, "from-expected")["status"] == "pass"
    result_file(evals, outcome)


def test_a_grader_with_nothing_to_compare_with_is_a_bad_line_at_load(evals: Evals) -> None:
    evals.config()
    path = evals.suite(
        "cfg",
        [
            case("ok", "hello", contains("hello")),
            case("no-value", "hello", {"type": "equals"}),
            case("no-calls", "hello", {"type": "tool-call-f1"}),
            case("no-relevant", "hello", {"type": "ndcg@k"}),
            case("no-context", "hello", {"type": "context-faithfulness"}),
        ],
        meta={"graders": [{"type": "json-path", "config": {"path": "a"}}]},
    )
    outcome = evals.run(no_judge=True)
    [r] = outcome.suites
    assert (r.cases, r.bad_lines, outcome.exit_code) == (0, 5, 2)
    examples = r.bad_line_examples
    assert examples[0].startswith(f"{path}:1: case 'ok': json-path has nothing to compare with")
    assert "give it an 'equals' or a 'matches' or the case an 'expected'" in examples[0]
    assert (
        "equals has nothing to compare with: give it a 'value' or the case an 'expected'"
        in (examples[1])
    )
    assert "tool-call-f1 has nothing to compare with: give it an 'expected'" in examples[2]
    assert "ndcg@k needs the case's 'relevant', and the case has none" in examples[3]
    assert "context-faithfulness needs the case's 'context'" in examples[4]
    assert evals.calls() == []  # found before anything was called


def test_threshold_passes_on_the_weighted_score_and_a_gate_still_fails(evals: Evals) -> None:
    evals.config()
    forbid = {"type": "forbidden-tools", "config": {"tools": ["delete_db"]}}
    evals.suite(
        "rules",
        [
            # 1·1 + 1·0 over weight 2 = 0.5: reaches the suite's threshold 0.5
            case("half", "tools:search", contains("used"), contains("zzz")),
            # the case's own threshold 0.6 is above 0.5
            case("short", "tools:search", contains("used"), contains("zzz"), threshold=0.6),
            # (3·1 + 1·0)/4 = 0.75 ≥ 0.5, but the forbidden-tools gate failed
            case(
                "gated",
                "tools:search,delete_db",
                contains("used", weight=3),
                forbid,
            ),
            # forbidden tools from the case, none called: 1.0
            case(
                "clean",
                "tools:search",
                contains("used"),
                {"type": "forbidden-tools"},
                forbidden_tools=["delete_db"],
            ),
            # without a threshold every grader must pass
            case("strict", "tools:search", contains("used"), contains("zzz"), threshold=None),
        ],
        meta={"threshold": 0.5},
    )
    outcome = evals.run()
    [r] = outcome.suites
    status = {row["case_id"]: row["status"] for row in evals.rows(outcome.run_id)}
    # "strict" has threshold null in its line, which means "not set": the suite's 0.5 applies
    assert status == {
        "half": "pass",
        "short": "fail",
        "gated": "fail",
        "clean": "pass",
        "strict": "pass",
    }
    gated = evals.row(outcome.run_id, "gated")
    assert gated["score"] == 0.75
    record = json.loads(gated["record"])
    assert record["grades"]["forbidden-tools"]["gate"] is True
    assert record["grades"]["forbidden-tools"]["violations"] == {"delete_db": 1}
    assert "forbidden-tools (a gate) failed" in record["why"]
    assert [t["name"] for t in record["tool_calls"]] == ["search", "delete_db"]
    short = json.loads(evals.row(outcome.run_id, "short")["record"])
    assert short["why"].startswith("score 0.500 < threshold 0.6")
    assert evals.row(outcome.run_id, "half")["score"] == 0.5
    # 3 passed of 5: score 0.6
    assert (r.passed, r.failed, r.score) == (3, 2, 0.6)


# -- repeats and reducers --------------------------------------------------------------------


FLAKY = [case(f"p{n}", f"flaky:{n}", contains("PASS")) for n in range(5)]
"""Five cases; case pN passes N of every 4 runs."""


@pytest.mark.parametrize(
    ("reducer", "score", "passed", "stderr", "ci95"),
    [
        # case values c/4: 0, .25, .5, .75, 1 → mean 0.5; s² = (.25+.0625+0+.0625+.25)/4
        # = 0.15625; SE = sqrt(0.15625/5) = 0.176777; normal: 0.5 ± 1.96·SE = ±0.346479
        ("mean", 0.5, 3, 0.1768, (0.1535, 0.8465)),
        # more than half: only c = 3, 4 → [0,0,0,1,1]; mean 0.4; SE = sqrt(0.3/5) = 0.244949;
        # Wilson 2 of 5: centre 0.443449, half 0.325828
        ("majority", 0.4, 2, 0.2449, (0.1176, 0.7693)),
        # pass@4 is "any passed": [0,1,1,1,1] → 0.8; SE = sqrt(0.2/5) = 0.2;
        # Wilson 4 of 5: centre 0.669902, half 0.294133 → (0.3755, 0.9638)
        ("pass@k", 0.8, 4, 0.2, (0.3755, 0.9638)),
        # pass^4 is "every run passed": [0,0,0,0,1] → 0.2; Wilson 1 of 5 → (0.0362, 0.6245)
        ("pass^k", 0.2, 1, 0.2, (0.0362, 0.6245)),
        # pass@2 = 1 - C(4-c,2)/6: 0, 1/2, 5/6, 1, 1 → 10/3 / 5 = 0.666667; a case passes at
        # ≥ 0.5, so 4 pass; deviations² sum 0.444444+0.027778+0.027778+0.111111+0.111111
        # = 0.722222; s² = 0.180556; SE = sqrt(0.180556/5) = 0.190029; 1.96·SE = 0.372450
        ("pass@2", 0.6667, 4, 0.19, (0.2942, 1.0)),
        # pass^2 = C(c,2)/6: 0, 0, 1/6, 1/2, 1 → 5/3 / 5 = 0.333333; 2 pass (c = 3, 4);
        # deviations² 0.111111·2 + 0.027778 + 0.027778 + 0.444444 = 0.722222 as above
        ("pass^2", 0.3333, 2, 0.19, (0.0, 0.7058)),
    ],
)
def test_repeats_reduce_by_the_reducer(
    evals: Evals,
    reducer: str,
    score: float,
    passed: int,
    stderr: float,
    ci95: tuple[float, float],
) -> None:
    evals.config()
    evals.suite("flaky", FLAKY)  # type: ignore[arg-type]
    outcome = evals.run(evals.plan(repeats=4, reducer=reducer), concurrency=4)
    [r] = outcome.suites
    assert (r.cases, r.passed, r.failed, r.errored) == (5, passed, 5 - passed, 0)
    assert (r.score, r.stderr, r.ci95) == (score, stderr, ci95)
    assert (r.repeats, r.reducer) == (4, reducer)
    rows = evals.rows(outcome.run_id)
    assert len(rows) == 20  # 5 cases × 4 repeats, each its own row
    passes = {f"p{n}": 0 for n in range(5)}
    for row in rows:
        passes[row["case_id"]] += row["status"] == "pass"
    assert passes == {"p0": 0, "p1": 1, "p2": 2, "p3": 3, "p4": 4}
    # every run was scored: 10 passes of 20 runs
    assert r.graders["contains"].model_dump() == {"mean": 0.5, "n": 20, "skipped": 0}
    result_file(evals, outcome)


def test_repeats_come_from_the_suite_yaml_and_k_above_them_is_refused(evals: Evals) -> None:
    evals.config()
    evals.suite("flaky", FLAKY, meta={"repeats": 4})  # type: ignore[arg-type]
    plan = evals.plan(reducer="pass^k")
    assert (plan.suites[0].repeats, plan.attempts) == (4, 20)
    assert evals.run(plan).suites[0].score == 0.2  # as pass^k above
    with pytest.raises(UsageError, match=r"--reducer pass@5: k must be between 1 and .* \(4\)"):
        evals.plan(reducer="pass@5")
    with pytest.raises(UsageError, match="unknown reducer 'median'"):
        evals.plan(reducer="median")


# -- selection ---------------------------------------------------------------------------------

IDS = ["math-1", "math-2", "geo-1", "math-3", "geo-2", "misc"]


def selection_suite(evals: Evals) -> None:
    evals.config()
    tags = {"geo-1": ["hard"], "math-3": ["hard", "slow"], "misc": ["slow"]}
    evals.suite("sel", [case(i, f"echo {i}", contains("echo"), tags=tags.get(i, [])) for i in IDS])


def planned_ids(plan: EvalPlan) -> list[str]:
    [suite] = plan.suites
    return list(suite.index.ids)


def test_filters_limit_and_shuffle_pick_the_cases(evals: Evals) -> None:
    selection_suite(evals)
    assert planned_ids(evals.plan()) == IDS
    assert planned_ids(evals.plan(filters=("math-*",))) == ["math-1", "math-2", "math-3"]
    assert planned_ids(evals.plan(filters=("tag:hard",))) == ["geo-1", "math-3"]
    # a case runs when any filter matches
    assert planned_ids(evals.plan(filters=("tag:slow", "geo-?"))) == [
        "geo-1",
        "math-3",
        "geo-2",
        "misc",
    ]
    assert planned_ids(evals.plan(filters=("tag:none",))) == []
    assert planned_ids(evals.plan(limit=2)) == ["math-1", "math-2"]
    assert planned_ids(evals.plan(limit=2, filters=("geo-*",))) == ["geo-1", "geo-2"]

    # the seed's permutation of positions, the same every time
    order = list(range(6))
    random.Random(7).shuffle(order)
    shuffled = [IDS[i] for i in order]
    assert shuffled != IDS
    assert planned_ids(evals.plan(shuffle=7)) == shuffled
    assert planned_ids(evals.plan(shuffle=7)) == shuffled
    other = list(range(6))
    random.Random(8).shuffle(other)
    assert [IDS[i] for i in other] != shuffled
    assert planned_ids(evals.plan(shuffle=8)) == [IDS[i] for i in other]
    # the limit applies after the shuffle
    assert planned_ids(evals.plan(shuffle=7, limit=3)) == shuffled[:3]


def test_a_shuffled_limited_run_calls_the_selected_cases_in_that_order(evals: Evals) -> None:
    selection_suite(evals)
    order = list(range(6))
    random.Random(7).shuffle(order)
    expected = [IDS[i] for i in order][:4]
    outcome = evals.run(evals.plan(shuffle=7, limit=4), concurrency=1)
    assert evals.calls() == expected
    [r] = outcome.suites
    assert (r.cases, r.passed) == (4, 4)
    assert sorted(row["case_id"] for row in evals.rows(outcome.run_id)) == sorted(expected)
    tagged = evals.run(evals.plan(filters=("tag:slow",)))
    assert sorted(row["case_id"] for row in evals.rows(tagged.run_id)) == ["math-3", "misc"]


# -- the suite's rule and the exit code --------------------------------------------------------

HALF = [case("good", "yes", contains("yes")), case("bad", "no", contains("yes"))]


def test_min_score_decides_the_suite(evals: Evals) -> None:
    evals.config()
    evals.suite("lenient", HALF, meta={"min_score": 0.5})  # type: ignore[arg-type]
    evals.suite("strict", HALF, meta={"min_score": 0.75})  # type: ignore[arg-type]
    outcome = evals.run()
    lenient, strict = outcome.suites  # in name order
    assert (lenient.suite_id, lenient.score, lenient.verdict) == ("lenient", 0.5, "pass")
    assert (lenient.gate.passed, lenient.gate.rule) == (True, "score >= 0.5")
    assert lenient.gate.blocking_failures == 1  # one case failed, but the score holds
    assert (strict.suite_id, strict.score, strict.verdict) == ("strict", 0.5, "fail")
    assert strict.gate.rule == "score >= 0.75"
    assert outcome.exit_code == 1
    for index in (0, 1):
        result_file(evals, outcome, index)


def test_min_score_fails_on_a_blocking_error_whatever_the_score(evals: Evals) -> None:
    evals.config()
    broken = case("broken", "yes", {"type": "levenshtein"}, expected=["not", "text"])
    cases = [case("good", "yes", contains("yes")), broken]
    evals.suite("errs", cases, meta={"min_score": 0.5})  # type: ignore[arg-type]
    [r] = evals.run().suites
    assert (r.score, r.errored, r.verdict) == (1.0, 1, "fail")


def test_a_failing_non_blocking_suite_exits_0(evals: Evals) -> None:
    evals.config()
    evals.suite("advisory", HALF, meta={"blocking": False})  # type: ignore[arg-type]
    evals.suite("fine", [case("good", "yes", contains("yes"))])
    outcome = evals.run()
    advisory, fine = outcome.suites
    assert (advisory.blocking, advisory.passed, advisory.failed) == (False, 1, 1)
    # the suite says it fails; being advisory, it does not fail the run
    assert (advisory.gate.blocking_failures, advisory.verdict) == (1, "fail")
    assert (fine.blocking, fine.verdict) == (True, "pass")
    assert outcome.exit_code == 0
    row = evals.row(outcome.run_id, "bad")
    assert (row["status"], row["blocks"]) == ("fail", 1)
    result_file(evals, outcome)


def test_a_non_blocking_suite_whose_cases_fail_has_verdict_fail(evals: Evals) -> None:
    evals.config()
    evals.suite("advisory", [case("bad", "no", contains("yes"))], meta={"blocking": False})
    outcome = evals.run()
    [r] = outcome.suites
    assert (r.passed, r.failed, outcome.exit_code) == (0, 1, 0)
    assert r.verdict == "fail"


def test_bad_lines_are_counted_and_the_rest_runs(evals: Evals) -> None:
    evals.config()
    path = evals.suite(
        "messy",
        [
            case("good", "yes", contains("yes")),
            "{not json",
            case("good", "yes again", contains("yes")),  # duplicate id
            {"id": "no-graders", "prompt": "yes"},
            case("unknown-grader", "yes", {"type": "no-such-grader"}),
            case("who", "yes", contains("yes"), agent="Nobody"),
            {"id": "vars", "vars": {"x": 1}, "graders": [contains("yes")]},
            "",
            case("also-good", "yes", contains("yes")),
        ],
    )
    outcome = evals.run()
    [r] = outcome.suites
    assert (r.cases, r.passed, r.bad_lines, r.verdict) == (2, 2, 6, "pass")
    assert outcome.exit_code == 2  # a bad line is a usage error, even when the rest passes
    examples = r.bad_line_examples
    assert [e.split(": ", 1)[0] for e in examples] == [f"{path}:{n}" for n in (2, 3, 4, 5, 6, 7)]
    assert "not valid JSON" in examples[0]
    assert "duplicate id 'good' (first on line 1)" in examples[1]
    assert "no graders" in examples[2]
    assert "no-such-grader" in examples[3]
    assert "agent 'Nobody'" in examples[4] and "agents: Bot" in examples[4]
    assert "prompt_template" in examples[5]
    assert sorted(evals.calls()) == ["also-good", "good"]
    assert result_file(evals, outcome)["badLines"] == 6


def test_without_a_default_agent_a_case_without_one_is_a_bad_line(evals: Evals) -> None:
    evals.config(agents={"Other": {"provider": "python", "target": f"{evals.module}:run"}})
    evals.suite(
        "two",
        [case("mine", "yes", contains("yes"), agent="Bot"), case("x", "yes", contains("yes"))],
    )
    plan = evals.plan()
    [suite] = plan.suites
    assert suite.default_agent is None
    assert list(suite.index.ids) == ["mine"]
    [bad] = suite.index.bad
    assert (bad.line, bad.case_id) == (2, "x")
    assert "no agent" in bad.message and "agents: Bot, Other" in bad.message
    outcome = evals.run(plan)
    assert (outcome.exit_code, outcome.suites[0].bad_lines, outcome.suites[0].passed) == (2, 1, 1)


def test_a_broken_suite_yaml_is_reported_and_the_other_suites_run(evals: Evals) -> None:
    evals.config()
    evals.suite("zero", [case("a", "yes", contains("yes"))], meta={"repeats": 0})
    evals.suite("ghost", [case("a", "yes", contains("yes"))], meta={"agent": "Nobody"})
    evals.suite("fine", [case("a", "yes", contains("yes"))])
    plan = evals.plan()
    assert [s.name for s in plan.suites] == ["fine"]
    broken = {b.path.stem: b.message for b in plan.broken}
    assert set(broken) == {"ghost", "zero"}
    assert "agent 'Nobody'" in broken["ghost"] and "agents: Bot" in broken["ghost"]
    assert "repeats" in broken["zero"]
    outcome = evals.run(plan)
    assert [s.suite_id for s in outcome.suites] == ["fine"]
    assert (outcome.suites[0].verdict, outcome.exit_code) == ("pass", 2)


def test_no_suites_or_no_root_is_a_usage_error(evals: Evals, tmp_path: Path) -> None:
    evals.config()
    with pytest.raises(UsageError, match="no eval suites in .*harness/evals") as caught:
        evals.plan()
    assert "smoke.jsonl" in str(caught.value)  # it shows how a suite looks
    with pytest.raises(UsageError, match="is not a folder"):
        plan_evals(tmp_path / "missing")


def test_the_suite_yaml_names_the_agent_renders_vars_and_grades_first(
    evals: Evals, tmp_path: Path
) -> None:
    evals.config(agents={"Other": {"provider": "python", "target": f"{evals.module}:run"}})
    evals.suite(
        "templated",
        [
            {"id": "t", "vars": {"name": "Ada"}, "graders": [contains("hi Ada")]},
            {"id": "u", "vars": {"name": "Bob"}, "metadata": {"lang": "en"}},
        ],
        meta={"agent": "Other", "prompt_template": "hi {{ name }}", "graders": [contains("hi")]},
    )
    elsewhere = tmp_path / "reports-elsewhere"
    outcome = evals.run(reports_dir=elsewhere)
    [r] = outcome.suites
    assert (r.passed, r.provider) == (2, "Other")
    record = json.loads(evals.row(outcome.run_id, "t")["record"])
    assert record["agent"] == "Other"
    # the suite's grader comes first; a second grader of a type is keyed '#2'
    assert list(record["grades"]) == ["contains", "contains#2"]
    assert list(json.loads(evals.row(outcome.run_id, "u")["record"])["grades"]) == ["contains"]
    # a report folder outside the project is shown as an absolute path
    assert outcome.paths == [elsewhere / "templated" / f"{outcome.run_id}.json"]
    assert r.report_path == str(outcome.paths[0])
    # the suite grader ran on both cases, its case twin on one: 2 + 1 scored runs
    assert r.graders["contains"].n == 2 and r.graders["contains#2"].n == 1


def test_a_long_output_is_graded_whole_and_stored_truncated(evals: Evals) -> None:
    evals.config()
    long = "x" * 70_000 + " END"
    evals.suite("long", [case("big", long, contains("END"))])
    outcome = evals.run()
    assert outcome.suites[0].passed == 1  # the grader saw the whole output
    record = json.loads(evals.row(outcome.run_id, "big")["record"])
    assert record["output_truncated"] is True
    assert len(record["output"]) == 65536


def test_an_agent_timeout_from_the_suite_yaml_fails_the_case(evals: Evals) -> None:
    evals.config()
    evals.suite(
        "slow",
        [case("slow", "sleep:30", contains("slept")), case("quick", "hi", contains("hi"))],
        meta={"timeout_seconds": 0.2},
    )
    outcome = evals.run()
    row = evals.row(outcome.run_id, "slow")
    assert (row["status"], row["error_kind"]) == ("fail", "timeout")
    assert (outcome.suites[0].passed, outcome.suites[0].failed) == (1, 1)


def test_at_most_20_failures_are_listed_and_an_empty_selection_passes(evals: Evals) -> None:
    evals.config()
    evals.suite("many", [case(f"f{n:02d}", "no", contains("yes")) for n in range(25)])
    [r] = evals.run().suites
    assert (r.failed, len(r.failures), r.failures[-1].id) == (25, 20, "f19")
    assert r.gate.blocking_failures == 25
    [empty] = evals.run(evals.plan(filters=("nothing-*",))).suites
    assert (empty.cases, empty.score, empty.stderr, empty.ci95) == (0, 0.0, None, None)
    assert empty.verdict == "pass"


# -- judges ------------------------------------------------------------------------------------


def rubric(value: str = "Is it good?") -> dict[str, Any]:
    return {"type": "llm-rubric", "config": {"value": value}}


def test_an_uncalibrated_judge_advises_and_no_judge_skips(evals: Evals) -> None:
    evals.config(judge={"provider": "python", "target": f"{evals.module}:judge"})
    evals.suite(
        "judged",
        [
            case("shiny", "a shiny answer", contains("answer"), rubric()),
            case("dull", "a dull answer", contains("answer"), rubric()),
        ],
    )
    outcome = evals.run()
    [r] = outcome.suites
    # the judge failed "dull", but an uncalibrated judge may not block
    assert (r.passed, r.failed, r.verdict, outcome.exit_code) == (1, 1, "pass", 0)
    assert r.gate.blocking_failures == 0
    [failure] = r.failures
    assert (failure.id, failure.advisory) == ("dull", True)
    row = evals.row(outcome.run_id, "dull")
    assert (row["status"], row["blocks"]) == ("fail", 0)
    assert json.loads(row["record"])["advisory"] is True
    assert sorted(c for c in evals.calls() if c.startswith("judge:")) == [
        "judge:dull",
        "judge:shiny",
    ]
    # the rubric's score: 0.9 and 0.2, mean 0.55
    assert r.graders["llm-rubric"].model_dump() == {"mean": 0.55, "n": 2, "skipped": 0}
    assert r.judge_prompt_hash is not None
    result_file(evals, outcome)

    skipped = evals.run(no_judge=True)
    [s] = skipped.suites
    assert (s.passed, s.failed, skipped.exit_code) == (2, 0, 0)
    assert s.graders["llm-rubric"].model_dump() == {"mean": None, "n": 0, "skipped": 2}


def test_a_judge_that_gives_no_verdict_makes_an_error_that_does_not_block(evals: Evals) -> None:
    # the judge is a configured agent (callers are shared): it never answers in JSON
    evals.config(
        agents={"Judge": {"provider": "python", "target": f"{evals.module}:mumble"}},
        judge="Judge",
    )
    evals.suite(
        "judged", [case("vague", "an answer", contains("answer"), rubric())], meta={"agent": "Bot"}
    )
    outcome = evals.run()
    [r] = outcome.suites
    assert (r.cases, r.errored, r.verdict, outcome.exit_code) == (1, 1, "pass", 0)
    row = evals.row(outcome.run_id, "vague")
    assert (row["status"], row["error_kind"], row["blocks"]) == ("error", "judge", 0)
    error = json.loads(row["record"])["error"]
    assert error.startswith("case 'vague': ") and "no usable verdict" in error
    assert evals.calls() == ["vague", "mumble:vague", "mumble:vague"]  # asked twice
    assert (r.failures[0].id, r.failures[0].status) == ("vague", "error")


def test_judge_graders_without_a_judge_are_a_config_error_or_an_error_when_skipped(
    evals: Evals,
) -> None:
    evals.config()
    evals.suite("judged", [case("only", "a shiny answer", rubric())])
    with pytest.raises(ConfigError, match="use judge graders"):
        evals.run()
    outcome = evals.run(no_judge=True)
    [r] = outcome.suites
    assert (r.cases, r.errored) == (1, 1)
    row = evals.row(outcome.run_id, "only")
    assert (row["status"], row["error_kind"], row["blocks"]) == ("error", "no_graders", 0)


# -- resume, interrupt -------------------------------------------------------------------------


class StopAfter(Hooks):
    """Sets ``stop`` once ``count`` case runs are done; records the events it saw."""

    def __init__(self, count: int, stop: anyio.Event):
        self.count = count
        self.stop = stop
        self.starts: list[EvalStart] = []
        self.ends: list[EvalEnd] = []
        self.progress: list[EvalProgress] = []

    async def on_eval_start(self, event: EvalStart) -> None:
        self.starts.append(event)

    async def on_eval_progress(self, event: EvalProgress) -> None:
        self.progress.append(event)
        if event.done >= self.count:
            self.stop.set()

    async def on_eval_end(self, event: EvalEnd) -> None:
        self.ends.append(event)


def run_with_stop(
    evals: Evals, plan: EvalPlan, count: int, **options: Any
) -> tuple[EvalOutcome, StopAfter]:
    """Run ``plan``, setting ``stop`` once ``count`` case runs are done."""
    store = evals.store()

    async def main() -> tuple[EvalOutcome, StopAfter]:
        hook = StopAfter(count, anyio.Event())
        # a clock that advances 1 s a read: every finished case emits progress
        clock = FixedClock(at=AT, step=1.0)
        outcome = await run_evals(
            plan, store=store, stop=hook.stop, hooks=[hook], clock=clock, **options
        )
        return outcome, hook

    try:
        return anyio.run(main)
    finally:
        store.close()


def test_an_interrupted_run_keeps_its_cases_and_resumes_without_calling_them_again(
    evals: Evals,
) -> None:
    evals.config()
    ids = [f"c{n:02d}" for n in range(10)]
    evals.suite("long", [case(i, "sleep:0.01", contains("slept")) for i in ids])
    plan = evals.plan()
    outcome, _ = run_with_stop(evals, plan, 3, concurrency=1)
    assert (outcome.interrupted, outcome.exit_code) == (True, 3)
    stored = [row["case_id"] for row in evals.rows(outcome.run_id)]
    assert stored == ids[: len(stored)] and 3 <= len(stored) < 10
    calls_before = evals.calls()
    [r] = outcome.suites
    assert (r.interrupted, r.cases, r.passed) == (True, len(stored), len(stored))
    assert result_file(evals, outcome)["interrupted"] is True
    store = evals.store()
    try:
        assert store.get_run(outcome.run_id).status == "interrupted"
    finally:
        store.close()

    resumed, second = run_with_stop(evals, plan, 100, concurrency=4, resume=outcome.run_id)
    assert resumed.run_id == outcome.run_id
    assert (resumed.interrupted, resumed.exit_code) == (False, 0)
    [start] = second.starts
    assert (start.total, start.resumed) == (10, len(stored))
    assert second.progress[-1].done == 10
    new_calls = evals.calls()[len(calls_before) :]
    assert sorted(new_calls) == sorted(set(ids) - set(stored))  # each once, none stored
    assert [row["case_id"] for row in evals.rows(outcome.run_id)] == ids
    [done] = resumed.suites
    assert (done.cases, done.passed, done.interrupted, done.score) == (10, 10, False, 1.0)
    assert resumed.paths == outcome.paths  # the same file, now complete
    assert result_file(evals, resumed)["cases"] == 10
    store = evals.store()
    try:
        assert store.get_run(outcome.run_id).status == "finished"
    finally:
        store.close()

    with pytest.raises(UsageError, match="already finished"):
        evals.run(plan, resume=outcome.run_id)


def test_finished_cases_are_committed_on_a_timer_while_a_slow_case_runs(evals: Evals) -> None:
    evals.config()
    fast = [f"c{n}" for n in range(5)]
    slow = case("slow", "sleep:1.5", contains("slept"))
    evals.suite("mixed", [slow, *[case(i, "hi", contains("hi")) for i in fast]])
    plan = evals.plan()
    store = evals.store()
    seen: list[str] = []

    async def main() -> None:
        async def look() -> None:  # as another process would see the store, mid-run
            await anyio.sleep(1.0)
            conn = sqlite3.connect(evals.root / ".coalmine" / "coalmine.db")
            try:
                seen.extend(r[0] for r in conn.execute("SELECT case_id FROM eval_attempts"))
            finally:
                conn.close()

        async with anyio.create_task_group() as tg:
            tg.start_soon(look)
            await run_evals(plan, store=store, concurrency=6)

    try:
        anyio.run(main)
    finally:
        store.close()
    assert sorted(seen) == fast  # committed within 0.5 s, though no case finished after them


def test_repeats_resume_by_case_and_repeat(evals: Evals) -> None:
    evals.config()
    evals.suite("flaky", FLAKY)  # type: ignore[arg-type]
    plan = evals.plan(repeats=4, reducer="mean")
    outcome, _ = run_with_stop(evals, plan, 7, concurrency=1)
    assert outcome.interrupted
    kept = {(row["case_id"], row["rep"]) for row in evals.rows(outcome.run_id)}
    assert 7 <= len(kept) < 20
    called = len(evals.calls())
    resumed, _ = run_with_stop(evals, plan, 100, concurrency=1, resume=outcome.run_id)
    rows = evals.rows(outcome.run_id)
    assert len(rows) == 20
    # no stored (case, repeat) was run again: only the missing ones were called
    assert len(evals.calls()) - called == 20 - len(kept)
    assert resumed.suites[0].cases == 5


# -- secrets, cache, cost -------------------------------------------------------------------

KEY = "sk-eval-SECRET-4242"


def test_no_secret_reaches_the_store_or_the_result(
    evals: Evals, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_KEY", KEY)
    (evals.root / "coalmine.yaml").write_text(
        yaml.safe_dump(
            {
                "agents": {
                    "Remote": {
                        "provider": "openai",
                        "model": "fake-model",
                        "base_url": openai_server.base_url,
                        "api_key_env": "EVAL_KEY",
                        "backoff_seconds": 0.01,
                    }
                },
                "pricing": {"fake-model": {"input": 1.0, "output": 2.0}},
            }
        ),
        encoding="utf-8",
    )
    evals.suite(
        "leaky",
        [
            case("echo", "say the key", contains("key")),
            case("regex", "say it again", {"type": "regex", "config": {"value": "sk-\\S+"}}),
            case("fail", "once more", contains("nothing like this")),
            case("down", "are you there", contains("key")),
            case("retry", "try again", contains("key")),
        ],
    )
    reply = f'The key is {KEY} and "{KEY}"'
    call = tool_call("lookup", {"token": KEY})
    down = Reply(status=503, body=f"overloaded; your key {KEY} is fine")
    openai_server.enqueue(
        reply, Reply(text=reply, tool_calls=[call]), reply, down, down, down, down, reply
    )
    outcome = evals.run(concurrency=1)  # one at a time: the replies go in that order
    [r] = outcome.suites
    assert (r.passed, r.failed, r.bad_lines) == (3, 2, 0)
    rows = evals.rows(outcome.run_id)
    assert len(rows) == 5
    for row in rows:
        assert KEY not in row["record"]
    record = json.loads(evals.row(outcome.run_id, "echo")["record"])
    assert record["output"] == 'The key is *** and "***"'
    assert record["model"] == "fake-model"
    regex = json.loads(evals.row(outcome.run_id, "regex")["record"])
    assert regex["grades"]["regex"]["match"] == "***"  # it matched the key itself
    assert regex["tool_calls"][0]["arguments"] == {"token": "***"}
    # 503 is retried twice; the third fails the case, its error scrubbed
    failed = evals.row(outcome.run_id, "down")
    assert (failed["status"], failed["error_kind"]) == ("fail", "http_error")
    down_record = json.loads(failed["record"])
    assert down_record["attempts"] == 3 and len(down_record["call_failures"]) == 3
    assert "HTTP 503" in down_record["error"]
    retried = json.loads(evals.row(outcome.run_id, "retry")["record"])
    assert retried["attempts"] == 2 and len(retried["call_failures"]) == 1
    text = outcome.paths[0].read_text(encoding="utf-8")
    assert KEY not in text
    for name in ("coalmine.db", "coalmine.db-wal"):
        db = evals.root / ".coalmine" / name
        assert not db.exists() or KEY.encode() not in db.read_bytes()
    # four replies report 11 prompt and 7 completion tokens each: 44 and 28;
    # cost (11·1 + 7·2)/1e6 = 25e-6 a reply, 100e-6 in all
    assert (r.tokens.prompt, r.tokens.completion) == (44, 28)
    assert r.cost == pytest.approx(100e-6, abs=1e-12)
    assert "Remote:fake-model" in r.provider.split(", ")
    assert len(openai_server.requests) == 8
    auth = {req.headers.get("Authorization") for req in openai_server.requests}
    assert auth == {f"Bearer {KEY}"}
    result_file(evals, outcome)


def test_cache_answers_a_second_run_without_calling_the_agent(evals: Evals) -> None:
    evals.config()
    evals.suite(
        "flaky", [case("p1", "flaky:1", contains("PASS")), case("p4", "flaky:4", contains("PASS"))]
    )
    plan = evals.plan(repeats=2)
    first = evals.run(plan, cache=True, concurrency=1)
    assert len(evals.calls()) == 4  # 2 cases × 2 repeats
    # p1 passes its first call only: repeat 0 passes, repeat 1 fails; p4 passes both
    first_status = {(r["case_id"], r["rep"]): r["status"] for r in evals.rows(first.run_id)}
    assert first_status == {
        ("p1", 0): "pass",
        ("p1", 1): "fail",
        ("p4", 0): "pass",
        ("p4", 1): "pass",
    }
    assert json.loads(evals.row(first.run_id, "p1")["record"])["cache"].startswith("miss")

    second = evals.run(plan, cache=True, concurrency=1)
    assert len(evals.calls()) == 4  # nothing new: each repeat answered from its own entry
    second_status = {(r["case_id"], r["rep"]): r["status"] for r in evals.rows(second.run_id)}
    assert second_status == first_status
    for row in evals.rows(second.run_id):
        assert json.loads(row["record"])["cache"] == "hit"
        assert row["latency"] is None
    [r] = second.suites
    # p1: mean of [1, 0] = 0.5 (passes at ≥ 0.5), p4: 1 → score 0.75
    assert (r.score, r.passed, r.latency_seconds) == (0.75, 2, None)
    assert first.suites[0].score == 0.75

    third = evals.run(plan, cache=False, concurrency=1)
    assert len(evals.calls()) == 8  # without the cache the agent is called again
    # p1's calls 3 and 4 fail (it passes the first of every 4): [0, 0] and p4's [1, 1]
    assert third.suites[0].score == 0.5


# -- concurrency -------------------------------------------------------------------------------


def test_concurrency_bounds_calls_in_flight_and_the_agents_limit_holds(evals: Evals) -> None:
    evals.config()
    evals.suite("slow", [case(f"s{n}", "sleep:0.05", contains("slept")) for n in range(9)])
    outcome = evals.run(concurrency=3)
    assert outcome.suites[0].passed == 9
    assert evals.agent.STATE["max"] == 3

    evals.agent.STATE["max"] = 0
    evals.config(bot={"max_concurrency": 2})
    outcome = evals.run(concurrency=8)
    assert outcome.suites[0].passed == 9
    assert evals.agent.STATE["max"] == 2


# -- the contract --------------------------------------------------------------------------------


def test_the_shipped_schema_is_the_models_schema() -> None:
    shipped = json.loads((files("coalmine") / "schemas" / "eval-result.v1.json").read_text("utf-8"))
    assert shipped == eval_result_json_schema()
    assert shipped["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(shipped)
    # the seed's fields and coalmine's additions are all required
    required = set(shipped["required"])
    seed = {
        "schema", "suiteId", "runId", "profileId", "startedAt", "endedAt", "cases", "passed",
        "failed", "score", "blocking", "judgePromptHash", "provider", "reportPath",
    }  # fmt: skip
    assert seed | {"errored", "stderr", "ci95", "graders", "tokens", "cost"} <= required


def test_the_schema_refuses_what_the_contract_does_not_allow(evals: Evals) -> None:
    evals.config()
    evals.suite("ok", [case("a", "yes", contains("yes"))])
    data = result_file(evals, evals.run())
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for broken in [
        {k: v for k, v in data.items() if k != "suiteId"},
        {**data, "schema": "coalmine.eval.result.v2"},
        {**data, "verdict": "maybe"},
        {**data, "startedAt": "2026-04-13"},
    ]:
        assert not validator.is_valid(broken)
    assert EvalSuiteResult.model_validate(data).suite_id == "ok"


# -- known bugs --------------------------------------------------------------------------------


def test_a_cached_run_can_be_interrupted(evals: Evals) -> None:
    evals.config()
    evals.suite("cached", [case(f"c{n:02d}", "hi", contains("hi")) for n in range(50)])
    plan = evals.plan()
    evals.run(plan, cache=True)  # fills the cache
    outcome, _ = run_with_stop(evals, plan, 3, concurrency=1, cache=True)
    assert outcome.interrupted
    assert outcome.suites[0].cases < 50


def test_blocking_graders_of_weight_0_do_not_crash_the_run(evals: Evals) -> None:
    evals.config()
    evals.suite(
        "weights",
        [
            case(
                "a",
                "yes",
                contains("yes", blocking=False),
                contains("zzz", weight=0),
            )
        ],
    )
    outcome = evals.run()
    assert outcome.suites[0].failed == 1


def test_plain_progress_prints_the_final_line_once(evals: Evals) -> None:
    evals.config()
    evals.suite("one", [case("a", "yes", contains("yes"))])
    stream = io.StringIO()
    evals.run(hooks=[PlainDisplay(stream)])
    assert stream.getvalue().count("[1/1] 1 passed, 0 failed, 0 errored") == 1


def test_two_suites_with_the_same_name_do_not_mix(evals: Evals) -> None:
    evals.config()
    evals.suite("a", [case("c1", "yes", contains("yes")), case("c2", "yes", contains("yes"))])
    (evals.root / "other").mkdir()
    (evals.root / "other" / "a.jsonl").write_text(
        json.dumps(case("c1", "no", contains("yes"))) + "\n", encoding="utf-8"
    )
    try:
        plan = evals.plan("harness/evals/a.jsonl", "other/a.jsonl")
    except UsageError:
        return  # refusing two suites of one name is a fine answer too
    outcome = evals.run(plan)
    assert [(s.cases, s.passed, s.failed) for s in outcome.suites] == [(2, 2, 0), (1, 0, 1)]
    assert outcome.paths[0] != outcome.paths[1]


def test_a_failed_call_does_not_add_a_provider(evals: Evals, openai_server: FakeOpenAI) -> None:
    agent = {"provider": "openai", "model": "fake-model", "base_url": openai_server.base_url}
    (evals.root / "coalmine.yaml").write_text(
        yaml.safe_dump({"agents": {"Remote": {**agent, "retries": 0}}}), encoding="utf-8"
    )
    evals.suite("mixed", [case("ok", "hi", contains("hi")), case("down", "hi", contains("hi"))])
    openai_server.enqueue("hi there", Reply(status=503, body="overloaded"))
    outcome = evals.run(concurrency=1)
    assert (outcome.suites[0].passed, outcome.suites[0].failed) == (1, 1)
    assert outcome.suites[0].provider == "Remote:fake-model"


def test_a_case_timeout_covers_its_retries(evals: Evals, openai_server: FakeOpenAI) -> None:
    agent = {"provider": "openai", "model": "fake-model", "base_url": openai_server.base_url}
    (evals.root / "coalmine.yaml").write_text(
        yaml.safe_dump({"agents": {"Remote": {**agent, "retries": 2, "backoff_seconds": 0.01}}}),
        encoding="utf-8",
    )
    evals.suite("hung", [case("hangs", "hi", contains("hi"))], meta={"timeout_seconds": 1})
    openai_server.enqueue(*[Reply(text="late", delay=5.0)] * 3)
    started = time.monotonic()
    outcome = evals.run()
    assert time.monotonic() - started < 2.0  # the case's 1 s, not 1 s per attempt
    row = evals.row(outcome.run_id, "hangs")
    assert (row["status"], row["error_kind"]) == ("fail", "timeout")
    assert len(openai_server.requests) == 1
