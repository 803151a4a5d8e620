"""The HTTP client under the HTTP providers: proxies from the environment, Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from coalmine.providers._http import HttpClient, retry_after_seconds


def test_a_proxy_comes_from_the_environment_and_no_proxy_bypasses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,.corp.example")
    client = HttpClient()
    assert client._proxy("https", "api.example.com") == "http://proxy.internal:3128"
    assert client._proxy("https", "llm.corp.example") is None
    assert client._proxy("http", "api.example.com") is None  # no HTTP_PROXY
    # looked up once per host: a later change of the environment is not seen by this client
    monkeypatch.setenv("HTTPS_PROXY", "http://other:1")
    assert client._proxy("https", "api.example.com") == "http://proxy.internal:3128"


def test_retry_after_is_seconds_or_an_http_date() -> None:
    now = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds("-5") == 0.0
    assert retry_after_seconds("Mon, 30 Nov 2026 12:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Mon, 30 Nov 2026 11:59:00 GMT", now=now) == 0.0  # past
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("") is None
    assert retry_after_seconds(None) is None
