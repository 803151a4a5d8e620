"""The ``anthropic`` provider against a real Messages API server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from pydantic import ValidationError

from coalmine.canary.plan import plan_canaries
from coalmine.canary.run import run_canaries
from coalmine.errors import ConfigError, ProviderError
from coalmine.providers.base import (
    AgentRequest,
    CacheableProvider,
    CallContext,
    registry,
)
from coalmine.results import AgentOutput, ToolCall
from tests.helpers.anthropic_server import FakeAnthropic, Reply, text_block, tool_use_block
from tests.helpers.project import Project

KEY = "sk-ant-test-SECRET-123456"
PROMPT = "---\ntitle: x\n---\r\nRévise «ceci» 🚀\t日本語  \r\n\n  trailing   "
MODULE = "coalmine.providers.anthropic"


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COALMINE_TEST_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropic]:
    """A real Anthropic Messages API server on 127.0.0.1 for this test."""
    with FakeAnthropic() as server:
        yield server


def make(tmp_path: Path, server: FakeAnthropic | str, **settings: Any) -> CacheableProvider:
    item = registry.get("anthropic")
    values = {
        "model": "claude-test",
        "base_url": server if isinstance(server, str) else server.base_url,
        "api_key_env": "COALMINE_TEST_KEY",
        **settings,
    }
    built = item.factory(
        agent="Model", settings=item.settings.model_validate(values), base_dir=tmp_path
    )
    return cast(CacheableProvider, built)


def call(
    provider: CacheableProvider, prompt: str = PROMPT, timeout: float | None = None
) -> AgentOutput:
    async def main() -> AgentOutput:
        try:
            with anyio.fail_after(10):
                return await provider.call(AgentRequest(prompt, CallContext("c", "Model"), timeout))
        finally:
            await provider.aclose()

    return anyio.run(main)


def fail(provider: CacheableProvider, timeout: float | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider, timeout=timeout)
    assert (info.value.provider, info.value.agent) == ("anthropic", "Model")
    return info.value


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# The request


def test_request_path_headers_and_body(tmp_path: Path, anthropic_server: FakeAnthropic) -> None:
    anthropic_server.enqueue("the answer")
    output = call(make(tmp_path, anthropic_server))
    assert output.text == "the answer"
    [received] = anthropic_server.requests
    assert (received.method, received.path) == ("POST", "/v1/messages")
    assert received.headers["x-api-key"] == KEY
    assert received.headers["anthropic-version"] == "2023-06-01"
    assert received.headers["content-type"] == "application/json"
    assert "authorization" not in received.headers
    assert received.body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": PROMPT}],
    }
    assert received.body["messages"][0]["content"].encode("utf-8") == PROMPT.encode("utf-8")


def test_system_and_sampling_are_sent_when_set(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    provider = make(
        tmp_path,
        anthropic_server,
        system_prompt="You are QA.\n",
        max_tokens=64,
        temperature=0.0,
        top_p=0.9,
        stop_sequences=["END"],
        api_version="2024-01-01",
    )
    call(provider)
    [received] = anthropic_server.requests
    assert received.headers["anthropic-version"] == "2024-01-01"
    assert received.body == {
        "model": "claude-test",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": PROMPT}],
        "system": "You are QA.\n",
        "temperature": 0.0,
        "top_p": 0.9,
        "stop_sequences": ["END"],
    }


TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    }
]


def test_tools_and_tool_choice_are_sent_as_written(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    choice = {"type": "tool", "name": "read_file"}
    anthropic_server.enqueue("ok")
    assert call(make(tmp_path, anthropic_server, tools=TOOLS, tool_choice=choice)).text == "ok"
    body = anthropic_server.requests[0].body
    assert (body["tools"], body["tool_choice"]) == (TOOLS, choice)
    assert body["messages"] == [{"role": "user", "content": PROMPT}]


def test_tool_choice_without_tools_is_rejected() -> None:
    settings = registry.get("anthropic").settings
    with pytest.raises(ValidationError, match="tool_choice needs tools"):
        settings.model_validate({"model": "m", "tool_choice": {"type": "any"}})


def test_a_tool_the_api_refuses_is_a_400(tmp_path: Path, anthropic_server: FakeAnthropic) -> None:
    error = fail(make(tmp_path, anthropic_server, tools=[{"name": "read_file"}]))
    assert (error.kind, error.retryable) == ("http_error", False)
    assert "tools.0.input_schema: Field required" in str(error)


def test_trailing_slash_in_base_url(tmp_path: Path, anthropic_server: FakeAnthropic) -> None:
    call(make(tmp_path, anthropic_server.base_url + "/"))
    assert anthropic_server.requests[0].path == "/v1/messages"


def test_system_prompt_file_is_relative_to_base_dir(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "qa.md").write_text("# Rôle\nYou review code.\n", encoding="utf-8")
    call(make(tmp_path, anthropic_server, system_prompt_file="prompts/qa.md"))
    assert anthropic_server.requests[0].body["system"] == "# Rôle\nYou review code.\n"


def test_missing_system_prompt_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        make(tmp_path, "http://127.0.0.1:9", system_prompt_file="prompts/none.md")
    assert "prompts/none.md" in str(info.value)
    assert "Model" in str(info.value)


def test_settings_reject_two_system_prompts_and_unknown_keys() -> None:
    settings = registry.get("anthropic").settings
    with pytest.raises(ValidationError, match="only one of"):
        settings.model_validate({"model": "m", "system_prompt": "a", "system_prompt_file": "b"})
    with pytest.raises(ValidationError, match="max_token"):
        settings.model_validate({"model": "m", "max_token": 5})


def test_key_comes_from_anthropic_api_key_by_default(
    tmp_path: Path, anthropic_server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-default-7890")
    item = registry.get("anthropic")
    settings = item.settings.model_validate({"model": "m", "base_url": anthropic_server.base_url})
    call(cast(CacheableProvider, item.factory(agent="Model", settings=settings, base_dir=tmp_path)))
    assert anthropic_server.requests[0].headers["x-api-key"] == "sk-ant-default-7890"


def test_key_is_read_at_each_call(
    tmp_path: Path, anthropic_server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = make(tmp_path, anthropic_server)
    monkeypatch.setenv("COALMINE_TEST_KEY", "sk-ant-rotated-0001")
    call(provider)
    assert anthropic_server.requests[0].headers["x-api-key"] == "sk-ant-rotated-0001"
    assert "sk-ant-rotated" not in repr(vars(provider))


def test_missing_key_variable_names_it_and_sends_nothing(
    tmp_path: Path, anthropic_server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COALMINE_TEST_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # never used in place of the named one
    error = fail(make(tmp_path, anthropic_server))
    assert "COALMINE_TEST_KEY" in str(error) and "not set" in str(error)
    assert KEY not in str(error)
    assert anthropic_server.requests == []


# The answer


def test_text_blocks_are_joined_in_order(tmp_path: Path, anthropic_server: FakeAnthropic) -> None:
    blocks = [
        text_block("Hello, "),
        {"type": "thinking", "thinking": "hmm", "signature": "x"},
        tool_use_block("lookup", {"q": "x"}),
        text_block("wörld"),
    ]
    anthropic_server.enqueue(Reply(blocks=blocks))
    output = call(make(tmp_path, anthropic_server))
    assert output.text == "Hello, wörld"
    assert output.tool_calls == [ToolCall(name="lookup", arguments={"q": "x"}, id="toolu_01")]
    assert output.warnings == []


def test_tool_use_blocks_mixed_with_text_become_tool_calls_in_order(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    blocks = [
        text_block("I will read the file, "),
        tool_use_block("read_file", {"path": "login.py"}, id="toolu_A"),
        text_block("then search it."),
        tool_use_block("grep", {"pattern": "café", "context": 2}, id="toolu_B"),
        tool_use_block("list_files", {}, id="toolu_C"),
    ]
    anthropic_server.enqueue(Reply(blocks=blocks))
    output = call(make(tmp_path, anthropic_server, tools=TOOLS))
    assert output.text == "I will read the file, then search it."
    assert output.tool_calls == [
        ToolCall(name="read_file", arguments={"path": "login.py"}, id="toolu_A"),
        ToolCall(name="grep", arguments={"pattern": "café", "context": 2}, id="toolu_B"),
        ToolCall(name="list_files", arguments={}, id="toolu_C"),
    ]
    assert output.warnings == []


def test_a_tool_use_only_answer_has_empty_text(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    blocks = [tool_use_block("read_file", {"path": "login.py"}, id="toolu_A")]
    anthropic_server.enqueue(Reply(blocks=blocks))
    output = call(make(tmp_path, anthropic_server))
    assert output.text == ""
    assert output.tool_calls == [
        ToolCall(name="read_file", arguments={"path": "login.py"}, id="toolu_A")
    ]
    assert AgentOutput.model_validate_json(output.model_dump_json()) == output


def test_an_empty_answer_is_empty_text(tmp_path: Path, anthropic_server: FakeAnthropic) -> None:
    anthropic_server.enqueue(Reply(blocks=[]))
    output = call(make(tmp_path, anthropic_server))
    assert (output.text, output.tool_calls) == ("", [])


def test_usage_is_mapped_and_the_model_reported(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    usage = {
        "input_tokens": 30,
        "output_tokens": 12,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 5,
        "cache_creation": {"ephemeral_5m_input_tokens": 5},
        "service_tier": "standard",
    }
    anthropic_server.enqueue(Reply(text="ok", model="claude-served-2025", usage=usage))
    output = call(make(tmp_path, anthropic_server))
    assert output.model == "claude-served-2025"
    assert output.usage == {
        "input_tokens": 30,
        "output_tokens": 12,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 5,
        "prompt_tokens": 135,
        "completion_tokens": 12,
        "total_tokens": 147,
    }


def test_plain_usage_and_model_fallback(tmp_path: Path, anthropic_server: FakeAnthropic) -> None:
    anthropic_server.enqueue(Reply(text="ok"))
    output = call(make(tmp_path, anthropic_server))
    assert output.usage == {
        "input_tokens": 11,
        "output_tokens": 7,
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 18,
    }
    body = json.dumps({"content": [text_block("hi")], "stop_reason": "end_turn"})
    anthropic_server.enqueue(Reply(body=body))
    output = call(make(tmp_path, anthropic_server))
    assert (output.text, output.model, output.usage) == ("hi", "claude-test", None)


def test_an_answer_cut_at_max_tokens_warns(tmp_path: Path, anthropic_server: FakeAnthropic) -> None:
    anthropic_server.enqueue(Reply(text="The first half", stop_reason="max_tokens"))
    output = call(make(tmp_path, anthropic_server, max_tokens=4))
    assert output.text == "The first half"
    assert output.warnings == ["the answer was cut at max_tokens"]


@pytest.mark.parametrize(
    ("stop_reason", "finish_reason"),
    [("end_turn", "stop"), ("max_tokens", "length"), ("tool_use", "tool_calls"),
     ("refusal", "content_filter"), ("pause_turn", "pause_turn"), ("Odd_One", "odd_one")],
)  # fmt: skip
def test_the_stop_reason_is_kept_in_openais_names(
    tmp_path: Path, anthropic_server: FakeAnthropic, stop_reason: str, finish_reason: str
) -> None:
    anthropic_server.enqueue(Reply(text="x", stop_reason=stop_reason))
    assert call(make(tmp_path, anthropic_server)).finish_reason == finish_reason


# Failures


def test_429_is_rate_limited_with_retry_after(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    reply = Reply.error(429, "rate_limit_error", "slow down", headers={"Retry-After": "7"})
    anthropic_server.enqueue(reply)
    error = fail(make(tmp_path, anthropic_server))
    assert (error.kind, error.retryable, error.retry_after) == ("rate_limited", True, 7.0)
    assert "HTTP 429" in str(error) and "rate_limit_error: slow down" in str(error)
    assert "request-id req_fake_1" in str(error)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (500, '{"type":"error","error":{"type":"api_error","message":"boom"}}', "api_error: boom"),
        (529, '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
         "overloaded_error: Overloaded"),
        (502, "<html>bad gateway</html>", "bad gateway"),
    ],
)  # fmt: skip
def test_server_errors_are_retryable_http_errors(
    tmp_path: Path, anthropic_server: FakeAnthropic, status: int, body: str, expected: str
) -> None:
    anthropic_server.enqueue(Reply(status=status, body=body))
    error = fail(make(tmp_path, anthropic_server))
    assert (error.kind, error.retryable) == ("http_error", True)
    assert f"HTTP {status}" in str(error) and expected in str(error)


def test_400_with_an_error_body_is_not_retryable(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    message = "max_tokens: 100000 > 64000, which is the maximum for this model"
    anthropic_server.enqueue(Reply.error(400, "invalid_request_error", message))
    error = fail(make(tmp_path, anthropic_server))
    assert (error.kind, error.retryable, error.retry_after) == ("http_error", False, None)
    assert f"HTTP 400 from {anthropic_server.base_url}/v1/messages" in str(error)
    assert f"invalid_request_error: {message}" in str(error)


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "{}",
        "[]",
        '{"content": "text"}',
        '{"content": ["text"]}',
        '{"content": [{"type": "text", "text": 5}]}',
        '{"content": [{"type": "tool_use", "name": "x"}]}',
        '{"content": [{"type": "tool_use", "id": "t", "name": "x", "input": "q=1"}]}',
        '{"content": [{"type": "tool_use", "id": "t", "name": 5, "input": {}}]}',
    ],
)
def test_malformed_body_is_bad_output(
    tmp_path: Path, anthropic_server: FakeAnthropic, body: str
) -> None:
    anthropic_server.enqueue(Reply(body=body))
    error = fail(make(tmp_path, anthropic_server))
    assert (error.kind, error.retryable) == ("bad_output", False)
    assert "unexpected response" in str(error)


def test_a_server_that_hangs_times_out_quickly(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    anthropic_server.enqueue(Reply(text="too late", delay=3.0))
    started = time.monotonic()
    error = fail(make(tmp_path, anthropic_server), timeout=0.5)
    assert time.monotonic() - started < 2.0
    assert (error.kind, error.retryable) == ("timeout", True)


def test_a_server_that_trickles_times_out_at_the_deadline(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    # Each byte comes before httpx's read timeout; only the whole-call deadline stops it.
    anthropic_server.enqueue(Reply(text="x" * 200, trickle=0.1))
    started = time.monotonic()
    error = fail(make(tmp_path, anthropic_server), timeout=0.5)
    assert time.monotonic() - started < 2.0
    assert error.kind == "timeout"
    assert "within 0.5s" in str(error)


def test_connection_refused_is_a_connection_error(tmp_path: Path) -> None:
    port = free_port()
    error = fail(make(tmp_path, f"http://127.0.0.1:{port}"))
    assert (error.kind, error.retryable) == ("connection", True)
    assert f"127.0.0.1:{port}" in str(error) and "Cannot connect" in str(error)


@pytest.mark.parametrize(
    "reply",
    [
        Reply.error(401, "authentication_error", f"invalid x-api-key {KEY}"),
        Reply(status=500, body=f"upstream rejected {KEY}"),
        Reply(status=200, body=f"<html>bad gateway for {KEY}</html>"),
    ],
)
def test_a_key_echoed_in_an_error_is_redacted(
    tmp_path: Path, anthropic_server: FakeAnthropic, reply: Reply
) -> None:
    anthropic_server.enqueue(reply)
    error = fail(make(tmp_path, anthropic_server))
    assert KEY not in str(error)
    assert KEY not in repr(error.args) and KEY not in error.reason
    assert "***" in str(error)


def test_the_server_counts_requests_in_flight(
    tmp_path: Path, anthropic_server: FakeAnthropic
) -> None:
    anthropic_server.default = lambda r: Reply(text="slow", delay=0.3)
    provider = make(tmp_path, anthropic_server)

    async def main() -> None:
        try:
            async with anyio.create_task_group() as tg:
                for i in range(3):
                    request = AgentRequest(f"p{i}", CallContext(f"c{i}", "Model"), 5.0)
                    tg.start_soon(provider.call, request)
        finally:
            await provider.aclose()

    anyio.run(main)
    assert len(anthropic_server.requests) == 3
    assert anthropic_server.max_in_flight == 3
    deadline = time.monotonic() + 2  # the handler counts down just after the client has read
    while anthropic_server.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert anthropic_server.in_flight == 0


# Identity and registration


def test_cache_identity_has_no_key_and_follows_what_shapes_answers(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9"
    base = make(tmp_path, url).cache_identity()
    assert KEY not in json.dumps(base) and "COALMINE_TEST_KEY" not in json.dumps(base)
    assert base["provider"] == "anthropic"
    assert make(tmp_path, url).cache_identity() == base
    for changed in (
        {"model": "claude-other"},
        {"system_prompt": "Be brief."},
        {"temperature": 0.5},
        {"tools": TOOLS},
        {"tools": TOOLS, "tool_choice": {"type": "any"}},
    ):
        assert make(tmp_path, url, **changed).cache_identity() != base, changed
    with_tools = make(tmp_path, url, tools=TOOLS, tool_choice={"type": "any"}).cache_identity()
    assert with_tools["tools"] == TOOLS and with_tools["tool_choice"] == {"type": "any"}
    assert with_tools != make(tmp_path, url, tools=TOOLS).cache_identity()


def test_registered_with_http_retries() -> None:
    item = registry.get("anthropic")
    assert (item.name, item.retries) == ("anthropic", 2)


# A whole run


def test_an_anthropic_agent_passes_a_canary(
    project: Project, anthropic_server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", KEY)
    project.write("prompts/qa.md", "You are the QA Coordinator.\n")
    project.config(
        {
            "agents": {
                "QA Coordinator": {
                    "provider": "anthropic",
                    "model": "claude-qa",
                    "base_url": anthropic_server.base_url,
                    "api_key_env": "AGENT_KEY",
                    "system_prompt_file": "prompts/qa.md",
                    "temperature": 0,
                }
            },
            "judge": "none",
        }
    )
    project.canary("qa-001-login", prompt=PROMPT)
    anthropic_server.enqueue(Reply(text=f"Found SQL injection in login(). {KEY}"))

    outcome = anyio.run(lambda: run_canaries(plan_canaries(project.root)))

    assert outcome.exit_code == 0
    [request] = anthropic_server.requests
    assert request.headers["x-api-key"] == KEY
    assert request.body == {
        "model": "claude-qa",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": PROMPT}],
        "system": "You are the QA Coordinator.\n",
        "temperature": 0,
    }
    [result] = project.last_result()["results"]
    assert (result["verdict"], result["agent"]) == ("PASS", "QA Coordinator")
    assert result["output"] == "Found SQL injection in login(). ***"
    assert result["grader_scores"]["keyword"]["score"] == 1.0
    assert KEY not in project.results()[0].read_text(encoding="utf-8")
