"""An ``openai`` agent (not the judge) in a whole canary run, served by the loopback server."""

from __future__ import annotations

import pytest

from tests.helpers.openai_server import FakeOpenAI, Reply
from tests.helpers.project import Project

KEY = "sk-agent-SECRET-987654"
PROMPT = "---\nReview «login.py» 🚀\r\n\tthen list issues.  \n\n  trailing   "


def configure(project: Project, server: FakeOpenAI) -> None:
    project.write("prompts/qa.md", "You are the QA Coordinator.\n")
    project.config(
        {
            "agents": {
                "QA Coordinator": {
                    "provider": "openai",
                    "model": "qa-model",
                    "base_url": server.base_url,
                    "api_key_env": "AGENT_KEY",
                    "system_prompt_file": "prompts/qa.md",
                    "temperature": 0,
                    "backoff_seconds": 0.01,
                }
            },
            "judge": "none",
        }
    )
    project.canary("qa-001-login", prompt=PROMPT)


def test_openai_agent_passes_a_canary(
    project: Project, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", KEY)
    configure(project, openai_server)
    openai_server.enqueue(Reply(text="Found SQL injection in login().", model="qa-model-v2"))
    proc = project.run_cli("canary", "run", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    [request] = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers.get("Authorization") == f"Bearer {KEY}"
    assert request.body["model"] == "qa-model"
    assert request.body["temperature"] == 0
    system, user = request.body["messages"]
    assert system == {"role": "system", "content": "You are the QA Coordinator.\n"}
    assert user["role"] == "user"
    assert user["content"].encode("utf-8") == PROMPT.encode("utf-8")
    [result] = project.last_result()["results"]
    assert result["verdict"] == "PASS"
    assert result["agent"] == "QA Coordinator"
    assert result["output"] == "Found SQL injection in login()."
    assert result["grader_scores"]["keyword"]["score"] == 1.0
    assert "| qa-001 | qa |" in proc.stdout


def test_openai_agent_http_error_is_an_agent_error(
    project: Project, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", KEY)
    configure(project, openai_server)
    # 503 is retried (2 retries by default for HTTP providers); three in a row fail the case.
    openai_server.enqueue(*[Reply(status=503, body=f"overloaded; your key {KEY} is fine")] * 3)
    proc = project.run_cli("canary", "run", "--display", "none")
    assert proc.returncode == 1, proc.stderr
    [result] = project.last_result()["results"]
    assert (result["verdict"], result["reason"]) == ("FAIL", "agent_error")
    assert (result["error_kind"], result["attempts"]) == ("http_error", 3)
    assert len(result["call_failures"]) == 3
    assert project.last_result()["summary"]["call_failures"] == {"http_error": 3}
    assert len(openai_server.requests) == 3
    assert result["composite_score"] == 0
    assert "HTTP 503" in result["error"]
    assert KEY not in project.results()[0].read_text(encoding="utf-8")
    assert KEY not in proc.stdout + proc.stderr


def test_openai_agent_without_its_key_stops_the_run_before_any_call(
    project: Project, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENT_KEY", raising=False)
    configure(project, openai_server)
    proc = project.run_cli("canary", "run", "--display", "none")
    assert proc.returncode == 2, proc.stderr
    assert "the environment variable AGENT_KEY is not set" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert project.results() == []
    assert openai_server.requests == []


def test_500_then_success_passes_and_records_the_failed_attempt(
    project: Project, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", KEY)
    configure(project, openai_server)
    openai_server.enqueue(Reply(status=500, body="boom"), Reply(text="SQL injection found"))
    proc = project.run_cli("canary", "run", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    [result] = project.last_result()["results"]
    assert (result["verdict"], result["attempts"]) == ("PASS", 2)
    assert result["call_failures"][0].startswith("http_error: HTTP 500")


def test_429_waits_for_retry_after_then_succeeds(
    project: Project, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", KEY)
    configure(project, openai_server)
    openai_server.enqueue(
        Reply(status=429, body="slow down", headers={"Retry-After": "0.3"}),
        Reply(text="SQL injection found"),
    )
    proc = project.run_cli("canary", "run", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    first, second = openai_server.requests
    assert second.received_at - first.received_at >= 0.3  # the server's Retry-After was honoured
    [result] = project.last_result()["results"]
    assert result["call_failures"][0].startswith("rate_limited: HTTP 429")


def test_a_400_is_the_callers_fault_and_is_not_retried(
    project: Project, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", KEY)
    configure(project, openai_server)
    openai_server.enqueue(Reply(status=400, body='{"error": "bad request"}'))
    project.run_cli("canary", "run", "--display", "none")
    [result] = project.last_result()["results"]
    assert (result["error_kind"], result.get("attempts")) == ("http_error", None)
    assert len(openai_server.requests) == 1
