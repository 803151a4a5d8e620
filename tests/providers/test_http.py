"""The ``http`` provider against a real generic JSON service on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from coalmine.errors import ProviderError
from coalmine.providers.base import AgentRequest, CallContext, registry
from coalmine.providers.http import HttpProvider, HttpSettings
from coalmine.results import AgentOutput, ToolCall
from tests.helpers.json_service import JsonService, Reply

KEY = "tok-test-SECRET-98765"
PROMPT = 'Say "hi"\n\tthen {{prompt}} and {{case_id}} {{ agent }} \\u0041 {{ }} «ü» 🚀\r\n  '


def make(service: JsonService | str, **settings: Any) -> HttpProvider:
    url = service if isinstance(service, str) else service.url + "/agent"
    return HttpProvider(
        agent="Svc", settings=HttpSettings.model_validate({"url": url, **settings}), base_dir=Path()
    )


def call(provider: HttpProvider, prompt: str = PROMPT, timeout: float | None = None) -> AgentOutput:
    async def main() -> AgentOutput:
        try:
            with anyio.fail_after(10):
                return await provider.call(AgentRequest(prompt, CallContext("c-1", "Svc"), timeout))
        finally:
            await provider.aclose()

    return anyio.run(main)


def fail(provider: HttpProvider, timeout: float | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider, timeout=timeout)
    assert (info.value.agent, info.value.provider) == ("Svc", "http")
    return info.value


def answer(json_service: JsonService, payload: Any, **settings: Any) -> AgentOutput:
    json_service.enqueue(payload)
    return call(make(json_service, **settings))


def test_registered_as_a_provider() -> None:
    item = registry.get("http")
    assert (item.settings, item.factory, item.retries) == (HttpSettings, HttpProvider, 2)


def test_default_body_and_path(json_service: JsonService) -> None:
    output = answer(json_service, {"output": "the answer"})
    assert (output.text, output.warnings) == ("the answer", [])
    [received] = json_service.requests
    assert (received.method, received.path) == ("POST", "/agent")
    assert received.body == {"prompt": PROMPT}
    assert received.header("content-type") == "application/json"


def test_template_substitution_is_byte_for_byte_and_never_reexpanded(
    json_service: JsonService,
) -> None:
    body = {
        "input": "{{prompt}}",
        "wrapped": "<q>{{prompt}}</q> for {{case_id}}/{{agent}}",
        "meta": {"case": "{{ case_id }}", "n": 3, "flag": True, "none": None},
        "list": ["{{agent}}", 1.5, ["{{prompt}}"]],
        "{{prompt}}": "keys are left alone",
    }
    answer(json_service, {"output": "ok"}, body=body)
    sent = json_service.requests[0].body
    assert sent == {
        "input": PROMPT,
        "wrapped": f"<q>{PROMPT}</q> for c-1/Svc",
        "meta": {"case": "c-1", "n": 3, "flag": True, "none": None},
        "list": ["Svc", 1.5, [PROMPT]],
        "{{prompt}}": "keys are left alone",
    }
    assert sent["input"].encode("utf-8") == PROMPT.encode("utf-8")


def test_get_sends_no_body_and_puts_the_prompt_in_the_url(json_service: JsonService) -> None:
    url = json_service.url + "/ask?q={{prompt}}&case={{case_id}}"
    output = answer(json_service, {"output": "got it"}, url=url, method="get")
    assert output.text == "got it"
    [received] = json_service.requests
    assert (received.method, received.path, received.raw) == ("GET", "/ask", b"")
    assert received.query == {"q": [PROMPT], "case": ["c-1"]}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"method": "GET", "body": {"q": "{{prompt}}"}}, "GET sends no body"),
        ({"method": "GET"}, "put {{prompt}} in the url"),
        ({"body": {"q": "{{promt}}"}}, "unknown placeholder {{promt}}"),
        ({"body": {"q": "fixed"}}, "the prompt is sent nowhere"),
        ({"method": "DELETE"}, "method"),
        ({"response_path": "output..text"}, "empty part"),
        ({"response_path": "$.items[?(@.ok)]"}, "unsupported JSONPath"),
        ({"response_path": "$..text"}, "unsupported JSONPath"),
        ({"tool_calls_path": "$.calls[*]"}, "unsupported JSONPath"),
        ({"headers": {"X-Key": {"env": "K", "value": "v"}}}, "headers"),
    ],
)
def test_invalid_settings_are_rejected(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        HttpSettings.model_validate({"url": "http://127.0.0.1:9/a", **settings})
    assert message in str(info.value)


def test_env_header_is_read_at_call_time_and_kept_secret(
    json_service: JsonService, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {"Authorization": {"env": "COALMINE_HTTP_KEY", "prefix": "Bearer "}, "X-Team": "qa"}
    provider = make(json_service, headers=headers)
    monkeypatch.setenv("COALMINE_HTTP_KEY", KEY)  # after the provider was built
    json_service.enqueue(Reply(status=500, body=json.dumps({"error": f"bad token {KEY}"})))
    error = fail(provider)
    assert json_service.requests[0].header("authorization") == f"Bearer {KEY}"
    assert json_service.requests[0].header("x-team") == "qa"
    assert KEY not in str(error) and KEY not in repr(error.args)
    assert "bad token ***" in str(error)
    identity = provider.cache_identity()
    assert KEY not in json.dumps(identity)
    assert identity["headers"] == {"Authorization": None, "X-Team": "qa"}
    assert provider.settings.secret_env_names() == ["COALMINE_HTTP_KEY"]


def test_missing_env_variable_names_it_and_sends_nothing(
    json_service: JsonService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COALMINE_HTTP_KEY", raising=False)
    error = fail(make(json_service, headers={"X-Api-Key": {"env": "COALMINE_HTTP_KEY"}}))
    assert "COALMINE_HTTP_KEY" in str(error) and "'X-Api-Key'" in str(error)
    assert "not set" in str(error)
    assert (error.kind, error.retryable) == ("config", False)
    assert json_service.requests == []


def test_plain_value_of_a_credential_header_is_treated_as_secret(
    json_service: JsonService,
) -> None:
    # e.g. written as "Bearer ${TOKEN}" in coalmine.yaml and expanded at load time
    provider = make(json_service, headers={"Authorization": f"Bearer {KEY}"})
    json_service.enqueue(Reply(status=404, body=f"no such key {KEY}"))
    error = fail(provider)
    assert KEY not in str(error)
    assert KEY not in json.dumps(provider.cache_identity())
    # a new key is a new identity: the response cache does not answer for the old one
    other = make(json_service, headers={"Authorization": "Bearer another-key-0000"})
    assert other.cache_identity() != provider.cache_identity()


@pytest.mark.parametrize(
    ("path", "payload", "text"),
    [
        ("output.text", {"output": {"text": "dotted"}}, "dotted"),
        ("choices.0.message.content", {"choices": [{"message": {"content": "c0"}}]}, "c0"),
        ("data.-1", {"data": ["a", "last"]}, "last"),
        ("map.0", {"map": {"0": "digit key"}}, "digit key"),
        ("$.a.b[0].c", {"a": {"b": [{"c": "jp"}]}}, "jp"),
        ("$['a b'][1]", {"a b": ["x", "quoted"]}, "quoted"),
        ('$["it\'s"]["x.y"]', {"it's": {"x.y": "double"}}, "double"),
        ("$['it\\'s']", {"it's": "escaped"}, "escaped"),
        ("$[0].out", [{"out": "top list"}], "top list"),
        ("$", Reply('"whole document"'), "whole document"),
    ],
)
def test_response_paths(json_service: JsonService, path: str, payload: Any, text: str) -> None:
    assert answer(json_service, payload, response_path=path).text == text


@pytest.mark.parametrize(
    ("path", "payload", "where"),
    [
        (
            "output.text",
            {"output": {"answer": 1, "meta": {}}},
            "at 'output', no key 'text'; keys there: 'answer', 'meta'",
        ),
        (
            "output",
            {"result": "x", "id": 7},
            "at the top level, no key 'output'; keys there: 'result', 'id'",
        ),
        (
            "$.choices[2].text",
            {"choices": [{}, {}]},
            "at '$.choices', no index 2: the list has 2 item(s)",
        ),
        ("$['a b'].c", {"a b": "text"}, "at \"$['a b']\", cannot take 'c' of a string"),
        ("items.first", {"items": []}, "at 'items', cannot take 'first' of a list"),
    ],
)
def test_missing_path_is_bad_output_naming_it(
    json_service: JsonService, path: str, payload: Any, where: str
) -> None:
    json_service.enqueue(payload)
    error = fail(make(json_service, response_path=path))
    assert (error.kind, error.retryable) == ("bad_output", False)
    assert f"response_path {path!r} not found" in str(error)
    assert where in str(error)


@pytest.mark.parametrize(
    ("value", "text", "warning"),
    [
        (42, "42", "holds a number, not text; converted with str()"),
        (0.5, "0.5", "holds a number, not text; converted with str()"),
        ({"k": "ü"}, '{"k": "ü"}', "holds an object, not text; converted to JSON"),
        ([1, "a"], '[1, "a"]', "holds a list, not text; converted to JSON"),
        (True, "true", "holds a boolean, not text; converted to JSON"),
        (None, "", "is null; the text is empty"),
    ],
)
def test_non_string_value_is_converted_with_a_warning(
    json_service: JsonService, value: Any, text: str, warning: str
) -> None:
    output = answer(json_service, {"output": value})
    assert output.text == text
    assert output.warnings == [f"response_path 'output' {warning}"]


CALLS = [{"name": "search", "arguments": {"q": "ü"}}]
SEARCH = ToolCall(name="search", arguments={"q": "ü"})


@pytest.mark.parametrize(
    ("payload", "text", "calls"),
    [
        ({"output": "", "tools": CALLS}, "", [SEARCH]),
        ({"output": None, "tools": CALLS}, "", [SEARCH]),
        ({"tools": CALLS}, "", [SEARCH]),
        ({"output": "said something", "tools": CALLS}, "said something", [SEARCH]),
        ({"output": "no tools"}, "no tools", []),
        ({"output": "no tools", "tools": None}, "no tools", []),
        ({"output": "", "tools": []}, "", []),
    ],
)
def test_tool_calls_are_parsed_and_the_text_stays_the_response_path(
    json_service: JsonService, payload: Any, text: str, calls: list[ToolCall]
) -> None:
    output = answer(json_service, payload, tool_calls_path="$.tools")
    assert (output.text, output.tool_calls) == (text, calls)
    assert output.warnings == []


def test_both_item_styles_in_one_list(json_service: JsonService) -> None:
    items = [
        {"name": "read_file", "arguments": {"path": "login.py"}, "id": "t1"},
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "grep", "arguments": '{"pattern": "café", "n": 2}'},
        },
        {"name": "list_files"},
        {"type": "function", "function": {"name": "status", "arguments": ""}},
    ]
    payload = {"result": {"message": "Looking.", "calls": items}}
    output = answer(
        json_service, payload, response_path="result.message", tool_calls_path="result.calls"
    )
    assert output.text == "Looking."
    assert output.tool_calls == [
        ToolCall(name="read_file", arguments={"path": "login.py"}, id="t1"),
        ToolCall(name="grep", arguments={"pattern": "café", "n": 2}, id="call_2"),
        ToolCall(name="list_files", arguments={}),
        ToolCall(name="status", arguments={}),
    ]
    assert output.warnings == []


@pytest.mark.parametrize(
    ("arguments", "warning"),
    [
        ('{"path": "login.py"', "arguments are not valid JSON; kept as _raw"),
        ('"login.py"', "arguments are JSON but not an object; kept as _raw"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_kept_raw(
    json_service: JsonService, arguments: str, warning: str
) -> None:
    items = [CALLS[0], {"function": {"name": "read_file", "arguments": arguments}}]
    output = answer(json_service, {"output": "", "calls": items}, tool_calls_path="calls")
    assert output.tool_calls == [SEARCH, ToolCall(name="read_file", arguments={"_raw": arguments})]
    assert output.warnings == [f"tool call 1 (read_file): {warning}"]


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        ("search", "a string, not an object"),
        (["search", {}], "a list, not an object"),
        ({"arguments": {"q": "x"}}, "no name"),
        ({"name": ""}, "no name"),
        ({"function": {"arguments": "{}"}}, "no name"),
        ({"tool": "search", "input": {}}, "no name"),
        ({"name": "search", "arguments": [1, 2]}, "arguments are a list"),
        ({"function": {"name": "search", "arguments": 5}}, "arguments are a number"),
    ],
)
def test_an_item_that_is_not_a_tool_call_is_bad_output_naming_its_index(
    json_service: JsonService, item: Any, problem: str
) -> None:
    json_service.enqueue({"output": "", "calls": [CALLS[0], CALLS[0], item]})
    error = fail(make(json_service, tool_calls_path="calls"))
    assert (error.kind, error.retryable) == ("bad_output", False)
    assert f"tool_calls_path 'calls', item 2: {problem}" in str(error)
    assert '{"name": …, "arguments": {…}}' in str(error)


def test_tool_calls_that_are_not_a_list_are_bad_output(json_service: JsonService) -> None:
    json_service.enqueue({"output": "", "tools": {"name": "x"}})
    error = fail(make(json_service, tool_calls_path="tools"))
    assert error.kind == "bad_output"
    assert "tool_calls_path 'tools' holds an object, not a list" in str(error)


def test_a_missing_text_without_tool_calls_is_still_bad_output(json_service: JsonService) -> None:
    json_service.enqueue({"calls": []})
    error = fail(make(json_service, tool_calls_path="calls"))
    assert error.kind == "bad_output"
    assert "response_path 'output' not found" in str(error)


def test_429_with_retry_after_is_rate_limited(json_service: JsonService) -> None:
    json_service.enqueue(Reply({"error": "slow down"}, status=429, headers={"Retry-After": "7"}))
    error = fail(make(json_service))
    assert (error.kind, error.retryable, error.retry_after) == ("rate_limited", True, 7.0)
    assert "HTTP 429" in str(error)


def test_503_is_a_retryable_http_error(json_service: JsonService) -> None:
    json_service.enqueue(Reply({"error": "overloaded"}, status=503))
    error = fail(make(json_service))
    assert (error.kind, error.retryable) == ("http_error", True)
    assert "HTTP 503" in str(error) and "overloaded" in str(error)


def test_404_is_not_retryable(json_service: JsonService) -> None:
    json_service.enqueue(Reply({"error": "no route"}, status=404))
    error = fail(make(json_service))
    assert (error.kind, error.retryable) == ("http_error", False)


def test_hang_past_the_timeout_is_a_timeout(json_service: JsonService) -> None:
    json_service.enqueue(Reply({"output": "too late"}, delay=5.0))
    started = time.monotonic()
    error = fail(make(json_service), timeout=0.3)
    assert (error.kind, error.retryable) == ("timeout", True)
    assert time.monotonic() - started < 3


def test_a_trickling_response_is_cut_at_the_deadline(json_service: JsonService) -> None:
    # every byte arrives well within httpx's read timeout; only the total deadline stops it
    json_service.enqueue(Reply({"output": "x" * 100}, trickle=0.05))
    started = time.monotonic()
    error = fail(make(json_service), timeout=0.5)
    assert (error.kind, error.retryable) == ("timeout", True)
    assert "within 0.5s" in str(error)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("body", ["not json", "<html>502</html>", '{"output": "cut'])
def test_malformed_json_is_bad_output(json_service: JsonService, body: str) -> None:
    json_service.enqueue(Reply(body))
    error = fail(make(json_service))
    assert (error.kind, error.retryable) == ("bad_output", False)
    assert "not JSON" in str(error)


def test_connection_refused_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = fail(make(f"http://127.0.0.1:{port}/agent"))
    assert (error.kind, error.retryable) == ("connection", True)
    assert f"127.0.0.1:{port}" in str(error)


def test_cache_identity_holds_what_shapes_the_answer() -> None:
    provider = make(
        "http://svc.local/run",
        method="PUT",
        headers={"X-Version": "2", "X-Key": {"env": "SVC_KEY"}},
        body={"input": "{{prompt}}", "mode": "strict"},
        response_path="$.out",
        tool_calls_path="calls",
    )
    assert provider.cache_identity() == {
        "provider": "http",
        "url": "http://svc.local/run",
        "method": "PUT",
        "headers": {"X-Key": None, "X-Version": "2"},
        "body": {"input": "{{prompt}}", "mode": "strict"},
        "response_path": "$.out",
        "tool_calls_path": "calls",
    }


def test_one_client_for_many_calls(json_service: JsonService) -> None:
    provider = make(json_service)
    json_service.enqueue({"output": "one"}, {"output": "two"})

    async def main() -> list[str]:
        request = AgentRequest("p", CallContext("c", "Svc"))
        texts = [(await provider.call(request)).text for _ in range(2)]
        await provider.aclose()
        await provider.aclose()  # closing twice is harmless
        return texts

    assert anyio.run(main) == ["one", "two"]
    assert json_service.max_in_flight == 1


def test_concurrent_calls_share_the_client_and_the_server_counts_them(
    json_service: JsonService,
) -> None:
    provider = make(json_service, body={"prompt": "{{prompt}}", "case": "{{case_id}}"})
    json_service.default = lambda r: Reply({"output": r.body["case"]}, delay=0.2)

    async def main() -> dict[str, str]:
        texts: dict[str, str] = {}

        async def one(case: str) -> None:
            request = AgentRequest("p", CallContext(case, "Svc"), timeout=5)
            texts[case] = (await provider.call(request)).text

        async with anyio.create_task_group() as tg:
            for case in ("a", "b", "c"):
                tg.start_soon(one, case)
        await provider.aclose()
        return texts

    assert anyio.run(main) == {"a": "a", "b": "b", "c": "c"}
    assert json_service.max_in_flight == 3
