"""Record a run against a live (loopback) server, stop it, replay: same results, no calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.openai_server import FakeOpenAI, Reply
from tests.helpers.project import Project

KEY = "sk-record-SECRET-424242"
GRADERS = [
    {"type": "keyword", "weight": 0.5, "config": {"required": ["injection"]}},
    {"type": "llm-judge", "weight": 0.5, "config": {"criteria": ["accuracy"]}},
]


def answer(received: Any) -> Reply:
    """The agent and the judge, by model: deterministic answers for each prompt."""
    body = received.body
    if body["model"] == "judge-model":
        return Reply(text=json.dumps({"criteria": {"accuracy": {"score": 1, "reason": "ok"}}}))
    prompt = body["messages"][-1]["content"]
    return Reply(text=f"SQL injection in {prompt.split()[0]}")


def configure(project: Project, base_url: str) -> None:
    endpoint = {"provider": "openai", "base_url": base_url, "api_key_env": "REC_KEY"}
    project.config(
        {
            "agents": {"QA Coordinator": {**endpoint, "model": "agent-model"}},
            "judge": {**endpoint, "model": "judge-model"},
        }
    )
    for i in range(3):
        project.canary(f"qa-00{i}-case", prompt=f"handler{i} needs a review", graders=GRADERS)


def stable(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (r["id"], r["verdict"], r["composite_score"], r["output"],
         {k: g["score"] for k, g in r["grader_scores"].items()})
        for r in data["results"]
    ]  # fmt: skip


def test_record_then_replay_with_the_server_gone(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REC_KEY", KEY)
    cassette = tmp_path / "run.cassette.jsonl"
    with FakeOpenAI() as server:
        server.default = answer
        configure(project, server.base_url)
        live = project.run_cli(
            "canary", "run", "--record", str(cassette), "--format", "json", "--display", "none"
        )
        assert live.returncode == 0, live.stderr
        assert len(server.requests) == 6  # 3 agent calls + 3 judge calls
    assert KEY not in cassette.read_text()  # the Authorization header is never recorded
    assert len(cassette.read_text().splitlines()) == 6

    with FakeOpenAI() as watcher:  # same config, but this server must see nothing
        configure(project, watcher.base_url)
        monkeypatch.delenv("REC_KEY")  # a fork's pull request has no key
        replayed = project.run_cli(
            "canary", "run", "--replay", str(cassette), "--format", "json", "--display", "none"
        )
        assert replayed.returncode == 0, replayed.stderr
        assert watcher.requests == []  # zero connections
    assert stable(json.loads(replayed.stdout)) == stable(json.loads(live.stdout))
    for result in json.loads(replayed.stdout)["results"]:
        # recorded against another endpoint: the replay says so, but answers the same
        assert any("recorded with other settings (base_url)" in w for w in result["warnings"])


def test_replay_fails_clearly_on_a_request_the_cassette_lacks(
    project: Project, tmp_path: Path
) -> None:
    cassette = tmp_path / "empty.jsonl"
    cassette.write_text("")
    configure(project, "http://127.0.0.1:9/v1")
    proc = project.run_cli("canary", "run", "--replay", str(cassette), "--format", "json")
    result = json.loads(proc.stdout)["results"][0]
    assert (result["verdict"], result["error_kind"]) == ("FAIL", "config")
    assert "has no answer for case 'qa-000-case'" in result["error"]
    assert "record it again with --record" in result["error"]


def test_a_damaged_cassette_line_is_named(project: Project, tmp_path: Path) -> None:
    cassette = tmp_path / "bad.jsonl"
    cassette.write_text('{"key": "k", "output": {"text": "x"}}\nnot json\n')
    configure(project, "http://127.0.0.1:9/v1")
    proc = project.run_cli("canary", "run", "--replay", str(cassette))
    assert proc.returncode == 2
    assert f"{cassette}:2: damaged cassette entry" in proc.stderr


def test_a_replay_agent_in_the_config(project: Project, tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        server.default = answer
        configure(project, server.base_url)
        project.config(
            {
                "agents": {"QA Coordinator": {"provider": "openai", "base_url": server.base_url,
                                              "model": "agent-model"}},
                "judge": "none",
            }
        )  # fmt: skip
        cassette = project.root / "cassettes" / "qa.jsonl"
        recorded = project.run_cli("canary", "run", "--record", str(cassette))
        assert recorded.returncode == 0, recorded.stderr
    project.config(
        {
            "agents": {"QA Coordinator": {"provider": "replay", "cassette": "cassettes/qa.jsonl"}},
            "judge": "none",
        }
    )
    proc = project.run_cli("canary", "run", "--format", "json", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    assert [r["verdict"] for r in json.loads(proc.stdout)["results"]] == ["PASS"] * 3


@pytest.mark.slow
def test_an_eval_run_records_then_replays_with_the_server_gone(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REC_KEY", KEY)
    cassette = tmp_path / "evals.cassette.jsonl"
    project.write("harness/evals/sec.yaml", "agent: QA Coordinator\nprompt_template: '{{ q }}'\n")
    project.write(
        "harness/evals/sec.jsonl",
        "".join(
            json.dumps({"id": f"c{i}", "vars": {"q": f"handler{i} review"},
                        "graders": [{"type": "contains", "config": {"value": f"handler{i}"}}]})
            + "\n"
            for i in range(3)
        ),
    )  # fmt: skip

    def run(*args: str) -> Any:
        proc = project.run_cli("eval", "run", *args, "--format", "json", "--display", "none")
        assert proc.returncode == 0, proc.stderr
        return [(s["suiteId"], s["passed"], s["failed"]) for s in json.loads(proc.stdout)]

    with FakeOpenAI() as server:
        server.default = answer
        configure(project, server.base_url)
        live = run("--record", str(cassette))
        assert len(server.requests) == 3
    assert KEY not in cassette.read_text() and len(cassette.read_text().splitlines()) == 3
    with FakeOpenAI() as watcher:
        configure(project, watcher.base_url)
        monkeypatch.delenv("REC_KEY")
        assert run("--replay", str(cassette)) == live == [("sec", 3, 0)]
        assert watcher.requests == []
    both = project.run_cli("eval", "run", "--record", "a.jsonl", "--replay", str(cassette))
    assert both.returncode == 2 and "--record and --replay exclude each other" in both.stderr
