"""Costs: tokens priced from the config, the dry run, and the cost limit."""

from __future__ import annotations

import json

import pytest

from coalmine.config import Price
from coalmine.engine.costs import priced
from coalmine.store.evals import iter_attempts
from coalmine.store.runs import Store
from tests.helpers.cli import run_main
from tests.helpers.openai_server import FakeOpenAI, Reply
from tests.helpers.project import Project


def test_a_call_is_priced_per_million_tokens() -> None:
    price = Price(input=3.0, output=15.0, cached_input=0.3)
    usage = priced(
        {"prompt_tokens": 1_000, "completion_tokens": 200, "cached_tokens": 400}, "m", {"m": price}
    )
    assert usage is not None
    # (1000 - 400)·3 + 400·0.3 + 200·15 = 1800 + 120 + 3000 = 4920 per million = 0.00492
    assert usage.cost == 0.00492
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens) == (1000, 200, 400)


def test_anthropic_names_and_a_missing_price() -> None:
    usage = priced({"input_tokens": 10, "output_tokens": 5}, "claude", {})
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (10, 5)
    assert usage.cost is None
    assert priced(None, "m", {}) is None


def configure(project: Project, server: FakeOpenAI, *, priced_models: bool = True) -> None:
    endpoint = {"provider": "openai", "base_url": server.base_url}
    config = {
        "agents": {"QA Coordinator": {**endpoint, "model": "agent-model"}},
        "judge": {**endpoint, "model": "judge-model"},
        "pricing": {"agent-model": {"input": 2.0, "output": 8.0}} if priced_models else {},
    }
    project.config(config)
    graders = [
        {"type": "keyword", "config": {"required": ["injection"]}},
        {"type": "llm-judge", "config": {"criteria": ["accuracy"]}},
    ]
    for i in range(4):
        project.canary(f"qa-00{i}-case", prompt="x" * 400, graders=graders)


def answer(received: object) -> Reply:
    body = received.body  # type: ignore[attr-defined]
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    if body["model"] == "judge-model":
        text = json.dumps({"criteria": {"accuracy": {"score": 1, "reason": "fine"}}})
        return Reply(text=text, usage=usage, model="judge-model-2026-01-01")  # a dated name
    return Reply(text="SQL injection found", usage=usage, model="agent-model-2026-01-01")


@pytest.mark.slow
def test_a_run_sums_tokens_by_role_and_prices_what_it_can(
    project: Project, openai_server: FakeOpenAI
) -> None:
    openai_server.default = answer
    configure(project, openai_server)
    proc = project.run_cli("canary", "run", "--format", "json", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    summary = data["summary"]
    assert summary["tokens"]["agent"] == {
        "prompt_tokens": 4000, "completion_tokens": 400, "cached_tokens": 0
    }  # fmt: skip
    assert summary["tokens"]["judge"]["prompt_tokens"] == 4000
    # per case: 1000·2 + 100·8 = 2800 per million = 0.0028; four cases = 0.0112
    assert summary["cost"] == 0.0112
    assert summary["unpriced_models"] == ["judge-model-2026-01-01"]  # said once, for the run
    assert summary["by_agent"]["QA Coordinator"] == {
        "prompt_tokens": 4000, "completion_tokens": 400, "cost": 0.0112
    }  # fmt: skip
    assert "cost" not in summary["by_agent"]["judge"]  # no price, no cost
    table = project.run_cli("canary", "run", "--display", "none")
    assert table.stdout.count("No price for judge-model-2026-01-01") == 1
    assert "Cost: 0.0112" in table.stdout


@pytest.mark.slow
def test_max_cost_stops_the_run_resumably(project: Project, openai_server: FakeOpenAI) -> None:
    openai_server.default = answer
    configure(project, openai_server)
    # each case costs 0.0028: after the second (0.0056 >= 0.005) no case starts
    proc = project.run_cli("canary", "run", "--max-cost", "0.005", "--format", "json")
    assert proc.returncode == 3, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["interrupted"], data["stopped"]) == (True, "max_cost")
    assert len(data["results"]) == 2
    assert "stopped at the cost limit (0.005)" in proc.stderr
    resumed = project.run_cli("canary", "run", "--resume", "--format", "json")
    assert resumed.returncode == 0, resumed.stderr
    assert len(json.loads(resumed.stdout)["results"]) == 4


def test_dry_run_calls_nothing_and_estimates(project: Project, openai_server: FakeOpenAI) -> None:
    configure(project, openai_server)
    proc = project.run_cli("canary", "run", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert openai_server.requests == []
    lines = proc.stdout.splitlines()
    # four prompts of 400 characters: 4 · 100 tokens; at 2 per million: 0.0008
    assert any(ln.split()[:2] == ["QA", "Coordinator"] and "400" in ln and "0.0008" in ln
               for ln in lines), proc.stdout  # fmt: skip
    judge_line = next(ln for ln in lines if "(judge)" in ln)
    assert "judge-model" in judge_line and " 4 " in judge_line and "no price" in judge_line
    assert "No price for: judge-model" in proc.stdout


def test_a_cost_the_provider_reports_wins_over_the_token_price(project: Project) -> None:
    project.write(
        "agent.py",
        """\
        def call_api(prompt, options, context):
            return {"output": "ok " + prompt, "cost": 0.25,
                    "tokenUsage": {"prompt": 1000, "completion": 100, "total": 1100}}
        """,
    )
    project.write(
        "plain.py",
        """\
        def call_api(prompt, options, context):
            return {"output": "ok " + prompt,
                    "tokenUsage": {"prompt": 1000, "completion": 100, "total": 1100}}
        """,
    )
    python = {"provider": "python", "convention": "promptfoo"}
    project.config(
        {
            "agents": {
                "reports": {**python, "file": "agent.py"},
                "priced": {**python, "file": "plain.py"},
            },
            "pricing": {},
        }
    )
    graders = [{"type": "contains", "config": {"value": "ok"}}]
    lines = [
        {"id": "a", "prompt": "hi", "agent": "reports", "graders": graders},
        {"id": "b", "prompt": "hi", "agent": "priced", "graders": graders},
    ]
    project.write("harness/evals/s.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    code, output = run_main("eval", "run", "--root", str(project.root), "--display", "none")
    assert code == 0, output
    store = Store.open(project.root / ".coalmine" / "coalmine.db")
    try:
        run_id = store.list_runs(kind="eval", limit=1)[0].id
        costs = {a.case_id: a.cost for a in iter_attempts(store, run_id, "s")}
    finally:
        store.close()
    # a: the script's own 0.25; b: no price for its tokens, so no cost
    assert costs == {"a": 0.25, "b": None}
