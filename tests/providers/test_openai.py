"""The ``openai`` provider against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from coalmine.errors import ConfigError, ProviderError
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.providers.openai import OpenAIProvider, OpenAISettings
from coalmine.results import AgentOutput, ToolCall
from tests.helpers.openai_server import FakeOpenAI, Reply, tool_call

KEY = "sk-test-SECRET-123456"
PROMPT = "---\ntitle: x\n---\r\nRévise «ceci» 🚀\t日本語  \r\n\n  trailing   "


def make(tmp_path: Path, server: FakeOpenAI | str, **settings: Any) -> OpenAIProvider:
    base_url = server if isinstance(server, str) else server.base_url
    return OpenAIProvider(
        agent="Model",
        settings=OpenAISettings(model="agent-model", base_url=base_url, **settings),
        base_dir=tmp_path,
    )


def call(
    provider: OpenAIProvider, prompt: str = PROMPT, timeout: float | None = None
) -> AgentOutput:
    async def main() -> AgentOutput:
        try:
            with anyio.fail_after(10):
                return await provider.call(AgentRequest(prompt, CallContext("c", "Model"), timeout))
        finally:
            await provider.aclose()

    return anyio.run(main)


def fail(provider: OpenAIProvider, timeout: float | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider, timeout=timeout)
    assert info.value.provider == "openai"
    assert info.value.agent == "Model"
    return info.value


def headers(server: FakeOpenAI, index: int = 0) -> dict[str, str]:
    return {k.lower(): v for k, v in server.requests[index].headers.items()}


def test_request_path_and_body(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    openai_server.enqueue("the answer")
    output = call(make(tmp_path, openai_server))
    assert output.text == "the answer"
    [received] = openai_server.requests
    assert (received.method, received.path) == ("POST", "/v1/chat/completions")
    assert received.body == {
        "model": "agent-model",
        "messages": [{"role": "user", "content": PROMPT}],
    }
    assert received.body["messages"][0]["content"].encode("utf-8") == PROMPT.encode("utf-8")
    assert headers(openai_server)["content-type"] == "application/json"


def test_trailing_slash_in_base_url(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    call(make(tmp_path, openai_server.base_url + "/"))
    assert openai_server.requests[0].path == "/v1/chat/completions"


def test_sampling_settings_are_sent_when_set(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    call(make(tmp_path, openai_server, temperature=0.0, max_tokens=64, seed=0))
    body = openai_server.requests[0].body
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.0, 64, 0)


def test_system_prompt_comes_first(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    call(make(tmp_path, openai_server, system_prompt="You are QA.\n"))
    assert openai_server.requests[0].body["messages"] == [
        {"role": "system", "content": "You are QA.\n"},
        {"role": "user", "content": PROMPT},
    ]


def test_system_prompt_file_is_relative_to_base_dir(
    tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "qa.md").write_text("# Rôle\nYou review code.\n", encoding="utf-8")
    call(make(tmp_path, openai_server, system_prompt_file="prompts/qa.md"))
    messages = openai_server.requests[0].body["messages"]
    assert messages[0] == {"role": "system", "content": "# Rôle\nYou review code.\n"}
    assert messages[1] == {"role": "user", "content": PROMPT}


def test_missing_system_prompt_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        make(tmp_path, "http://127.0.0.1:9/v1", system_prompt_file="prompts/none.md")
    assert "prompts/none.md" in str(info.value)
    assert "Model" in str(info.value)


def test_both_system_prompts_are_rejected() -> None:
    with pytest.raises(ValidationError) as info:
        OpenAISettings(model="m", system_prompt="a", system_prompt_file="b.txt")
    assert "only one of" in str(info.value)


def test_bearer_key_from_the_named_variable(
    tmp_path: Path, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COALMINE_TEST_KEY", KEY)
    call(make(tmp_path, openai_server, api_key_env="COALMINE_TEST_KEY"))
    assert headers(openai_server)["authorization"] == f"Bearer {KEY}"


def test_no_authorization_without_api_key_env(
    tmp_path: Path, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # never picked up implicitly
    call(make(tmp_path, openai_server))
    assert "authorization" not in headers(openai_server)


def test_missing_key_variable_names_it_and_sends_nothing(
    tmp_path: Path, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COALMINE_TEST_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    error = fail(make(tmp_path, openai_server, api_key_env="COALMINE_TEST_KEY"))
    assert "COALMINE_TEST_KEY" in str(error)
    assert "not set" in str(error)
    assert KEY not in str(error)
    assert openai_server.requests == []


def test_http_500_is_a_provider_error_with_the_status(
    tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    openai_server.enqueue(Reply(status=500, body='{"error": {"message": "overloaded"}}'))
    error = fail(make(tmp_path, openai_server))
    assert "HTTP 500" in str(error)
    assert "overloaded" in str(error)


def test_error_body_echoing_the_key_is_redacted(
    tmp_path: Path, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COALMINE_TEST_KEY", KEY)
    body = json.dumps({"error": f"Incorrect API key provided: {KEY}"})
    openai_server.enqueue(Reply(status=500, body=body))
    error = fail(make(tmp_path, openai_server, api_key_env="COALMINE_TEST_KEY"))
    assert KEY not in str(error)
    assert KEY not in repr(error.args)
    assert "Incorrect API key provided: ***" in str(error)


def test_credentials_in_the_url_beside_a_key_are_a_config_failure_not_a_crash(
    tmp_path: Path, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COALMINE_TEST_KEY", KEY)
    url = openai_server.base_url.replace("http://", "http://bot:pw@")
    error = fail(make(tmp_path, url, api_key_env="COALMINE_TEST_KEY"))
    assert (error.kind, error.retryable) == ("config", False)
    assert "credentials in the URL beside an Authorization header" in str(error)
    assert openai_server.requests == []


def test_malformed_body_echoing_the_key_is_redacted(
    tmp_path: Path, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COALMINE_TEST_KEY", KEY)
    openai_server.enqueue(Reply(status=200, body=f"<html>bad gateway for {KEY}</html>"))
    error = fail(make(tmp_path, openai_server, api_key_env="COALMINE_TEST_KEY"))
    assert "unexpected response" in str(error)
    assert KEY not in str(error)


@pytest.mark.parametrize(
    "body",
    ["not json", "{}", '{"choices": []}', '{"choices": [{"message": {"content": 5}}]}'],
)
def test_malformed_response_is_unexpected(
    tmp_path: Path, openai_server: FakeOpenAI, body: str
) -> None:
    openai_server.enqueue(Reply(status=200, body=body))
    assert "unexpected response" in str(fail(make(tmp_path, openai_server)))


def test_content_given_as_a_list_of_parts(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    parts = [
        {"type": "text", "text": "Hello, "},
        {"type": "image_url", "image_url": {"url": "data:,"}},
        {"type": "text", "text": "wörld"},
    ]
    payload = {"model": "m", "choices": [{"message": {"role": "assistant", "content": parts}}]}
    openai_server.enqueue(Reply(body=json.dumps(payload)))
    assert call(make(tmp_path, openai_server)).text == "Hello, wörld"


def test_usage_and_model_are_reported(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    usage = {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}
    openai_server.enqueue(Reply(text="ok", model="served-model-2024", usage=usage))
    output = call(make(tmp_path, openai_server))
    assert output.model == "served-model-2024"
    assert output.usage == usage


def test_model_falls_back_to_the_configured_one(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    payload = {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}
    openai_server.enqueue(Reply(body=json.dumps(payload)))
    output = call(make(tmp_path, openai_server))
    assert (output.text, output.model, output.usage) == ("hi", "agent-model", None)


def test_connection_refused_is_a_provider_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = fail(make(tmp_path, f"http://127.0.0.1:{port}/v1"))
    assert f"127.0.0.1:{port}" in str(error)
    assert "Cannot connect" in str(error)


def test_request_timeout_is_passed_to_http(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    openai_server.enqueue(Reply(text="slow", delay=1.0))
    error = fail(make(tmp_path, openai_server), timeout=0.2)
    assert error.kind == "timeout"
    assert "within 0.2s" in str(error)


def test_agent_file_gives_the_system_prompt_and_the_model(
    tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    definition = tmp_path / ".claude" / "agents" / "analyst.md"
    definition.parent.mkdir(parents=True)
    definition.write_text(
        "---\nname: analyst\nmodel: file-model\ntools: Read, Grep\n---\nYou write requirements.\n"
    )
    settings = OpenAISettings(
        base_url=openai_server.base_url, agent_file=".claude/agents/analyst.md"
    )
    provider = OpenAIProvider(agent="Analyst", settings=settings, base_dir=tmp_path)
    openai_server.enqueue("ok")
    call(provider, "Write them.")
    body = openai_server.requests[0].body
    assert body["model"] == "file-model"
    assert body["messages"][0] == {"role": "system", "content": "You write requirements.\n"}
    explicit = OpenAISettings(
        model="mine", base_url=openai_server.base_url, agent_file=".claude/agents/analyst.md"
    )
    assert OpenAIProvider(agent="A", settings=explicit, base_dir=tmp_path).model == "mine"


def test_a_model_is_required_somewhere(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="model is required"):
        OpenAISettings()
    (tmp_path / "a.md").write_text("---\nname: a\n---\nbody\n")
    settings = OpenAISettings(agent_file="a.md")
    with pytest.raises(ConfigError, match="no model"):
        OpenAIProvider(agent="A", settings=settings, base_dir=tmp_path)


# Tools, tool calls and response formats

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "finding",
        "strict": True,
        "schema": {"type": "object", "properties": {"severity": {"type": "string"}}},
    },
}


def test_tools_tool_choice_and_response_format_are_sent_as_written(
    tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    choice = {"type": "function", "function": {"name": "read_file"}}
    call(
        make(
            tmp_path, openai_server, tools=TOOLS, tool_choice=choice, response_format=SCHEMA_FORMAT
        )
    )
    body = openai_server.requests[0].body
    assert body["tools"] == TOOLS
    assert body["tool_choice"] == choice
    assert body["response_format"] == SCHEMA_FORMAT
    assert body["messages"] == [{"role": "user", "content": PROMPT}]


def test_the_finish_reason_is_kept(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    assert call(make(tmp_path, openai_server)).finish_reason == "stop"


def test_tool_choice_as_a_word(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    call(make(tmp_path, openai_server, tools=TOOLS, tool_choice="required"))
    assert openai_server.requests[0].body["tool_choice"] == "required"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"tool_choice": "auto"}, "tool_choice needs tools"),
        ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
        ({"response_format": {"json_schema": {}}}, "response_format needs a type"),
        ({"tools": {"type": "function"}}, "tools"),
    ],
)
def test_invalid_tool_settings_are_rejected(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        OpenAISettings.model_validate({"model": "m", **settings})


# What OpenAI, vLLM, llama.cpp and Ollama send back for the same two calls.
READ = ToolCall(name="read_file", arguments={"path": "login.py"}, id="call_A")
GREP = ToolCall(name="grep", arguments={"pattern": "café", "flags": ["-n"]}, id="call_B")


@pytest.mark.parametrize(
    ("content", "calls", "expected"),
    [
        pytest.param(
            None,
            [
                tool_call("read_file", '{"path": "login.py"}', id="call_A"),
                tool_call("grep", '{"pattern": "café", "flags": ["-n"]}', id="call_B"),
            ],
            [READ, GREP],
            id="openai-string-arguments-content-null",
        ),
        pytest.param(
            "",
            [
                tool_call("read_file", {"path": "login.py"}, id="call_A"),
                tool_call("grep", {"pattern": "café", "flags": ["-n"]}, id="call_B"),
            ],
            [READ, GREP],
            id="llama-cpp-object-arguments-content-empty",
        ),
        pytest.param(
            None,
            [tool_call("read_file", {"path": "login.py"}, id=None)],
            [ToolCall(name="read_file", arguments={"path": "login.py"})],
            id="ollama-no-id",
        ),
        pytest.param(
            "",
            [tool_call("list_files", ""), tool_call("status", "{}", id="call_2")],
            [
                ToolCall(name="list_files", arguments={}, id="call_1"),
                ToolCall(name="status", arguments={}, id="call_2"),
            ],
            id="no-arguments",
        ),
    ],
)
def test_tool_calls_are_parsed_whatever_the_server(
    tmp_path: Path,
    openai_server: FakeOpenAI,
    content: str | None,
    calls: list[dict[str, Any]],
    expected: list[ToolCall],
) -> None:
    openai_server.enqueue(Reply(text=content, tool_calls=calls))
    output = call(make(tmp_path, openai_server, tools=TOOLS))
    assert output.text == ""
    assert output.tool_calls == expected
    assert output.warnings == []
    assert output.usage == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def test_text_beside_tool_calls_stays_the_text(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    calls = [tool_call("read_file", '{"path": "a.py"}')]
    openai_server.enqueue(Reply(text="Let me look at a.py.", tool_calls=calls))
    output = call(make(tmp_path, openai_server))
    assert output.text == "Let me look at a.py."
    assert output.tool_calls == [
        ToolCall(name="read_file", arguments={"path": "a.py"}, id="call_1")
    ]


@pytest.mark.parametrize(
    ("arguments", "warning"),
    [
        ('{"path": "login.py"', "arguments are not valid JSON; kept as _raw"),
        ("path=login.py", "arguments are not valid JSON; kept as _raw"),
        ('["login.py"]', "arguments are JSON but not an object; kept as _raw"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_kept_raw_with_a_warning(
    tmp_path: Path, openai_server: FakeOpenAI, arguments: str, warning: str
) -> None:
    calls = [tool_call("grep", '{"pattern": "x"}', id="c0"), tool_call("read_file", arguments)]
    openai_server.enqueue(Reply(text=None, tool_calls=calls))
    output = call(make(tmp_path, openai_server))
    assert output.tool_calls == [
        ToolCall(name="grep", arguments={"pattern": "x"}, id="c0"),
        ToolCall(name="read_file", arguments={"_raw": arguments}, id="call_1"),
    ]
    assert output.warnings == [f"tool call 1 (read_file): {warning}"]


def test_usage_left_out_is_none(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    calls = [tool_call("read_file", {"path": "a.py"}, id=None)]
    openai_server.enqueue(Reply(text="", tool_calls=calls, usage=None))
    output = call(make(tmp_path, openai_server))
    assert output.usage is None
    assert output.tool_calls == [ToolCall(name="read_file", arguments={"path": "a.py"})]


@pytest.mark.parametrize(
    "calls",
    [
        "read_file",
        ["read_file"],
        [{"id": "c", "type": "function"}],
        [{"function": {"arguments": "{}"}}],
        [{"function": {"name": "", "arguments": "{}"}}],
        [{"function": {"name": "read_file", "arguments": 5}}],
    ],
)
def test_unreadable_tool_calls_are_bad_output(
    tmp_path: Path, openai_server: FakeOpenAI, calls: Any
) -> None:
    payload = {"choices": [{"message": {"content": None, "tool_calls": calls}}]}
    openai_server.enqueue(Reply(body=json.dumps(payload)))
    error = fail(make(tmp_path, openai_server))
    assert error.kind == "bad_output"
    assert "unexpected response" in str(error)


def test_tool_calls_survive_the_output_round_trip(
    tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    openai_server.enqueue(Reply(text=None, tool_calls=[tool_call("read_file", '{"path": "é"}')]))
    output = call(make(tmp_path, openai_server))
    assert AgentOutput.model_validate_json(output.model_dump_json()) == output


def test_a_json_schema_reply_is_kept_parsed_as_the_answers_data(
    tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    openai_server.enqueue('{"severity": "high", "lines": [3, 4]}', "not json", "NaN")
    provider = make(tmp_path, openai_server, response_format=SCHEMA_FORMAT)
    parsed = call(provider)
    assert parsed.text == '{"severity": "high", "lines": [3, 4]}'
    assert parsed.data == {"severity": "high", "lines": [3, 4]}
    assert AgentOutput.model_validate_json(parsed.model_dump_json()) == parsed
    assert call(provider).data is None  # a reply that does not parse stays the text
    assert call(provider).data is None  # NaN is not JSON for JSON.parse
    openai_server.enqueue('{"a": 1}')
    assert call(make(tmp_path, openai_server, response_format={"type": "json_object"})).data is None


def test_a_reply_of_tool_calls_is_kept_as_the_answers_data(
    tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    calls = [tool_call("read_file", '{"path": "a.py"}', id="c1")]
    openai_server.enqueue(Reply(text=None, tool_calls=calls), Reply(text="", tool_calls=calls))
    openai_server.enqueue(Reply(text="Looking.", tool_calls=calls), "plain")
    provider = make(tmp_path, openai_server, tools=TOOLS)
    assert call(provider).data == calls  # no text: the calls themselves
    assert call(provider).data == calls
    beside = call(provider)  # text beside calls: the whole message
    assert beside.data == {"role": "assistant", "content": "Looking.", "tool_calls": calls}
    assert beside.text == "Looking."
    assert call(provider).data is None


def test_cache_identity_follows_tools_and_formats(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"
    base = make(tmp_path, url).cache_identity()
    assert make(tmp_path, url).cache_identity() == base
    variants: list[dict[str, Any]] = [
        {"tools": TOOLS},
        {"tools": TOOLS, "tool_choice": "required"},
        {"response_format": {"type": "json_object"}},
        {"response_format": SCHEMA_FORMAT},
    ]
    identities = [make(tmp_path, url, **v).cache_identity() for v in variants]
    assert len({json.dumps(i, sort_keys=True) for i in [base, *identities]}) == 5
    assert identities[1]["tools"] == TOOLS and identities[1]["tool_choice"] == "required"
