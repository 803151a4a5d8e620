"""A case with earlier turns: messages to the chat providers, a transcript to every other agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.anthropic_server import FakeAnthropic
from tests.helpers.cli import run_main
from tests.helpers.openai_server import FakeOpenAI

TURNS = [
    {"role": "user", "content": "Can you help me with admin tasks?"},
    {"role": "assistant", "content": "Of course. What do you need?"},
]
EARLIER = [{"role": t["role"], "content": t["content"]} for t in TURNS]


def project(root: Path, agent: dict[str, object], cases: list[dict[str, object]]) -> Path:
    (root / "harness" / "evals").mkdir(parents=True)
    (root / "coalmine.yaml").write_text(yaml.safe_dump({"agents": {"app": agent}, "judge": "none"}))
    (root / "harness" / "evals" / "talk.yaml").write_text("agent: app\n")
    lines = "".join(json.dumps(c) + "\n" for c in cases)
    (root / "harness" / "evals" / "talk.jsonl").write_text(lines)
    return root


def case(case_id: str, turns: list[dict[str, str]] | None) -> dict[str, object]:
    found: dict[str, object] = {
        "id": case_id,
        "prompt": "Now delete the old backups.",
        "graders": [{"type": "contains", "config": {"value": "ok"}}],
    }
    if turns is not None:
        found["turns"] = turns
    return found


def run(root: Path, *args: str) -> tuple[int, str]:
    return run_main("eval", "run", "--root", str(root), "--display", "none", *args)


def test_openai_gets_the_turns_as_messages(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    agent = {"provider": "openai", "model": "m", "base_url": openai_server.base_url,
             "system_prompt": "You are careful."}  # fmt: skip
    root = project(tmp_path, agent, [case("talk", TURNS), case("alone", None)])
    openai_server.enqueue("ok", "ok")
    code, out = run(root, "--concurrency", "1")
    assert code == 0, out
    bodies = {r.body["messages"][-1]["content"]: r.body["messages"] for r in openai_server.requests}
    [talk, alone] = sorted(openai_server.requests, key=lambda r: -len(r.body["messages"]))
    assert talk.body["messages"] == [
        {"role": "system", "content": "You are careful."},
        *EARLIER,
        {"role": "user", "content": "Now delete the old backups."},
    ]
    assert alone.body["messages"] == [
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": "Now delete the old backups."},
    ]
    assert len(bodies) == 1  # the same last message, two conversations


def test_anthropic_gets_the_turns_as_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COALMINE_TEST_ANTHROPIC_KEY", "sk-ant-test")
    with FakeAnthropic() as server:
        agent = {"provider": "anthropic", "model": "claude-x", "base_url": server.base_url,
                 "api_key_env": "COALMINE_TEST_ANTHROPIC_KEY"}  # fmt: skip
        root = project(tmp_path, agent, [case("talk", TURNS)])
        server.enqueue("ok")
        code, out = run(root)
        [request] = server.requests
    assert code == 0, out
    assert request.body["messages"] == [
        *EARLIER,
        {"role": "user", "content": "Now delete the old backups."},
    ]


def test_any_other_agent_gets_the_transcript(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    script = tmp_path / "agent.py"
    script.write_text(
        "import sys\ntext = sys.stdin.read()\n"
        f"open({str(seen)!r}, 'a').write(text + '\\n---\\n')\nprint('ok')\n"
    )
    agent = {"provider": "command", "argv": [sys.executable, str(script)]}
    root = project(tmp_path / "p", agent, [case("talk", TURNS)])
    code, out = run(root)
    assert code == 0, out
    assert seen.read_text() == (
        "Conversation so far:\n"
        "User: Can you help me with admin tasks?\n"
        "Assistant: Of course. What do you need?\n"
        "User: Now delete the old backups.\n---\n"
    )


def test_two_conversations_ending_alike_are_two_cached_calls(
    tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    other = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    agent = {"provider": "openai", "model": "m", "base_url": openai_server.base_url}
    root = project(tmp_path, agent, [case("a", TURNS), case("b", other), case("c", TURNS)])
    openai_server.enqueue("ok", "ok", "ok")
    code, out = run(root, "--cache", "--concurrency", "1")
    assert code == 0, out
    assert len(openai_server.requests) == 2  # c is a's conversation again: from the cache


def test_turns_that_do_not_alternate_are_a_bad_line(tmp_path: Path) -> None:
    agent = {"provider": "command", "argv": ["echo", "ok"]}
    wrong = [{"role": "assistant", "content": "I start"}, {"role": "user", "content": "no"}]
    odd = [{"role": "user", "content": "and no answer"}]
    root = project(tmp_path, agent, [case("wrong", wrong), case("odd", odd), case("fine", TURNS)])
    code, out = run(root)
    assert code == 2, out  # a bad line is an error; the good case still ran
    assert "talk   1      1       0" in out
    assert "talk.jsonl:1" in out and "turn 1 is 'assistant'" in out
    assert "talk.jsonl:2" in out and "the last turn must be the assistant's" in out
    assert "Traceback" not in out
