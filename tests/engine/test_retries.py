"""Retries through the runner's caller, for every HTTP provider against its own loopback server.

500 then success, 429 with Retry-After, a connection that hangs past the timeout, a malformed
body: what is retried is retried, what is not fails at once, and every attempt is counted. The
timeout is the whole call's: the retries and the waits between them share it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from coalmine.config import AgentConfig, CallPolicy
from coalmine.engine.call import Caller, CallOutcome
from coalmine.errors import ProviderError
from coalmine.providers.anthropic import AnthropicProvider, AnthropicSettings
from coalmine.providers.base import AgentRequest, CallContext, Provider
from coalmine.providers.http import HttpProvider, HttpSettings
from coalmine.providers.openai import OpenAIProvider, OpenAISettings
from tests.helpers import anthropic_server, json_service, openai_server


@dataclass
class Endpoint:
    """One provider wired to its loopback server, with the server's reply vocabulary."""

    name: str
    provider: Provider
    ok: Callable[[str], Any]
    fail: Callable[..., Any]
    enqueue: Callable[..., None]
    requests: Callable[[], list[Any]]


@pytest.fixture(params=["openai", "anthropic", "http"])
def endpoint(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Endpoint]:
    kind = request.param
    if kind == "openai":
        with openai_server.FakeOpenAI() as server:
            yield Endpoint(
                kind,
                OpenAIProvider(agent="A", settings=OpenAISettings(model="m",
                               base_url=server.base_url), base_dir=tmp_path),
                lambda text: openai_server.Reply(text=text),
                lambda status, body="x", headers=None, delay=0.0: openai_server.Reply(
                    status=status, body=body, headers=headers or {}, delay=delay),
                server.enqueue, lambda: server.requests,
            )  # fmt: skip
    elif kind == "anthropic":
        with anthropic_server.FakeAnthropic() as server:
            settings = AnthropicSettings(model="m", base_url=server.base_url, api_key_env="AK")
            yield Endpoint(
                kind,
                AnthropicProvider(agent="A", settings=settings, base_dir=tmp_path),
                lambda text: anthropic_server.Reply(text=text),
                lambda status, body="x", headers=None, delay=0.0: anthropic_server.Reply(
                    status=status, body=body, headers=headers or {}, delay=delay),
                server.enqueue, lambda: server.requests,
            )  # fmt: skip
    else:
        with json_service.JsonService() as server:
            settings = HttpSettings(url=server.url + "/agent", response_path="output")
            yield Endpoint(
                kind,
                HttpProvider(agent="A", settings=settings, base_dir=tmp_path),
                lambda text: json_service.Reply(body={"output": text}),
                lambda status, body="x", headers=None, delay=0.0: json_service.Reply(
                    status=status, body=body, headers=headers or {}, delay=delay),
                server.enqueue, lambda: server.requests,
            )  # fmt: skip


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AK", "sk-ant-retry-test")


def call(endpoint: Endpoint, *, timeout: float = 5.0) -> CallOutcome:
    agent = AgentConfig(
        "A", endpoint.name, CallPolicy(), Path(), policy=CallPolicy(backoff_seconds=0.01)
    )
    caller = Caller.for_agent(endpoint.provider, agent, cache=None, secrets=(), retries=2)

    async def go() -> CallOutcome:
        try:
            return await caller.call(AgentRequest("Review it.", CallContext("c", "A")), timeout)
        finally:
            await endpoint.provider.aclose()

    return anyio.run(go)


def test_500_then_success(endpoint: Endpoint) -> None:
    endpoint.enqueue(endpoint.fail(500, "boom"), endpoint.ok("found it"))
    outcome = call(endpoint)
    assert (outcome.output.text, outcome.attempts) == ("found it", 2)
    assert outcome.failures[0].startswith("http_error: HTTP 500")


def test_429_with_retry_after_is_honoured(endpoint: Endpoint) -> None:
    endpoint.enqueue(endpoint.fail(429, "slow down", {"Retry-After": "0.4"}), endpoint.ok("ok"))
    started = time.monotonic()
    outcome = call(endpoint)
    assert time.monotonic() - started >= 0.4
    assert (outcome.output.text, outcome.attempts) == ("ok", 2)
    assert outcome.failures[0].startswith("rate_limited")


def test_the_timeout_bounds_the_whole_call_retries_included(endpoint: Endpoint) -> None:
    endpoint.enqueue(*[endpoint.fail(200, "late", delay=5.0)] * 3)
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        call(endpoint, timeout=1.0)  # 2 retries, each would have had 1 s of its own
    assert time.monotonic() - started < 2.0  # one 1 s deadline, not three
    assert (info.value.kind, info.value.attempt) == ("timeout", 1)


def test_a_retry_gets_only_what_is_left_of_the_timeout(endpoint: Endpoint) -> None:
    endpoint.enqueue(endpoint.fail(500, "boom"), *[endpoint.fail(200, "late", delay=5.0)] * 2)
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        call(endpoint, timeout=1.0)
    assert time.monotonic() - started < 2.0
    # the attempt that was cut is the timeout; the failure before it is kept
    assert (info.value.kind, info.value.attempt) == ("timeout", 2)
    assert [f.split(":")[0] for f in info.value.failures] == ["http_error"]
    assert len(endpoint.requests()) == 2


def test_no_retry_starts_when_its_back_off_outlasts_the_timeout(endpoint: Endpoint) -> None:
    endpoint.enqueue(endpoint.fail(429, "slow down", {"Retry-After": "5"}), endpoint.ok("ok"))
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        call(endpoint, timeout=1.0)
    assert time.monotonic() - started < 1.0  # the 5 s wait would end past the deadline
    assert (info.value.kind, info.value.attempt) == ("rate_limited", 1)
    assert len(endpoint.requests()) == 1


def test_a_malformed_body_is_not_retried(endpoint: Endpoint) -> None:
    endpoint.enqueue(endpoint.fail(200, "<html>not json</html>"))
    with pytest.raises(ProviderError) as info:
        call(endpoint)
    assert (info.value.kind, info.value.attempt) == ("bad_output", 1)
    assert len(endpoint.requests()) == 1
