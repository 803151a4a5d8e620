"""What every HTTP provider shares: responses and transport errors as ``ProviderError``.

Each failure gets its kind (``rate_limited``, ``http_error``, ``timeout``, ``connection``,
``bad_output``), whether a retry may help, the server's ``Retry-After``, and no secret.
"""

from __future__ import annotations

import email.utils
import json
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
import yarl

from coalmine._util.secrets import redact
from coalmine.errors import ProviderError

BODY_EXCERPT = 500


@dataclass(frozen=True)
class HttpResponse:
    """A complete HTTP response: status, headers and the whole body."""

    status_code: int
    headers: Mapping[str, str]
    """Case-insensitive."""
    content: bytes
    url: str
    charset: str | None = None

    @property
    def text(self) -> str:
        """The body as text (its charset, else UTF-8; undecodable bytes replaced)."""
        return self.content.decode(self.charset or "utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON (``ValueError`` when it is not)."""
        return json.loads(self.content)


class HttpClient:
    """The HTTP client of one provider instance, on aiohttp (opened at the first request).

    Why aiohttp and not httpx: measured with 200 requests in flight
    (bench/perf/eval_throughput.py), httpx spent 1.4 ms of CPU a request at best and, past a
    few dozen connections, its pool scanned every connection on every event (17 ms a request
    at 200); aiohttp's connector and C parser spend 0.3 ms. coalmine bounds what is in flight
    itself (--concurrency, an agent's max_concurrency), so the pool is unbounded.
    """

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[tuple[str, str], str | None] = {}

    def _proxy(self, url: yarl.URL) -> str | None:
        """The proxy for ``url`` from HTTP(S)_PROXY / NO_PROXY, looked up once per host.

        (aiohttp's ``trust_env`` would do this, and read ~/.netrc in a thread, per request.)
        """
        key = (url.scheme, url.host or "")
        if key not in self._proxies:
            proxies = urllib.request.getproxies_environment()
            bypass = bool(url.host) and urllib.request.proxy_bypass(url.host or "")
            self._proxies[key] = None if bypass else proxies.get(url.scheme)
        return self._proxies[key]

    async def request(
        self,
        method: str,
        url: str,
        *,
        timeout: float,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> HttpResponse:
        """Send one request and read the whole response (``aiohttp.ClientError`` on failure)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        target = yarl.URL(url, encoded=True)  # placeholders are quoted already; never twice
        async with self._session.request(
            method,
            target,
            proxy=self._proxy(target),
            json=json,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
            allow_redirects=True,
        ) as response:
            body = await response.read()
            return HttpResponse(
                response.status, response.headers, body, str(response.url), response.charset
            )

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._session is not None:
            await self._session.close()
            self._session = None


def new_client() -> HttpClient:
    """The HTTP client of one provider instance."""
    return HttpClient()


@dataclass(frozen=True)
class Site:
    """Who is calling, for error messages: the agent, the provider, and what to scrub."""

    agent: str
    provider: str
    secrets: tuple[str, ...] = ()

    def error(self, message: str, **kwargs: Any) -> ProviderError:
        """A ``ProviderError`` from this site, secrets scrubbed from the message."""
        return ProviderError(
            redact(message, list(self.secrets)), agent=self.agent, provider=self.provider, **kwargs
        )


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Parse ``Retry-After``: delta-seconds or an HTTP date; ``None`` when absent or invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def check_response(response: HttpResponse, site: Site) -> None:
    """Raise the right ``ProviderError`` for a 4xx/5xx response."""
    status = response.status_code
    if status < 400:
        return
    message = f"HTTP {status} from {response.url}: {response.text[:BODY_EXCERPT].strip()}"
    retry_after = retry_after_seconds(response.headers.get("retry-after"))
    if status == 429:
        raise site.error(message, kind="rate_limited", retry_after=retry_after)
    retryable = status >= 500 or status in (408, 409)
    raise site.error(message, kind="http_error", retryable=retryable, retry_after=retry_after)


def transport_error(exc: Exception, url: str, site: Site) -> ProviderError:
    """A ``ProviderError`` for a request that got no response (timeout, reset, refused)."""
    kind = "timeout" if isinstance(exc, TimeoutError) else "connection"
    return site.error(f"request to {url} failed: {type(exc).__name__}: {exc}", kind=kind)


def json_body(response: HttpResponse, site: Site) -> Any:
    """The response's JSON, or a ``bad_output`` error quoting the start of the body."""
    try:
        return response.json()
    except ValueError:
        excerpt = response.text[:300]
        raise site.error(
            f"unexpected response from {response.url}: not JSON: {excerpt!r}",
            kind="bad_output",
        ) from None


async def send(
    client: HttpClient,
    method: str,
    url: str,
    site: Site,
    *,
    timeout: float,
    shown_url: str | None = None,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
) -> HttpResponse:
    """Send one request under a hard deadline for the whole exchange.

    The deadline (aiohttp's ``total``) bounds connect to last byte, so a server that trickles
    bytes cannot outlast it. ``shown_url`` is what errors name (a URL template, when the real
    URL carries the prompt).
    """
    shown = shown_url or url
    try:
        return await client.request(method, url, timeout=timeout, json=json, headers=headers)
    except aiohttp.ClientError as exc:
        raise transport_error(exc, shown, site) from None
    except ValueError as exc:  # e.g. credentials in the URL beside an Authorization header
        raise site.error(f"cannot send a request to {shown}: {exc}", kind="config") from None
    except TimeoutError:
        raise site.error(
            f"no complete answer from {shown} within {timeout:g}s", kind="timeout"
        ) from None
