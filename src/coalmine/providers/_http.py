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

from coalmine._util.secrets import redact
from coalmine.errors import ProviderError
from coalmine.providers._wire import TransportError, Wire, parse_target

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
    """The HTTP client of one provider instance (its connections opened at the first request).

    A direct request goes over :class:`~coalmine.providers._wire.Wire` (why not aiohttp's
    client there: that module's docstring, with the numbers). A request that the environment's
    ``HTTP(S)_PROXY`` sends through a proxy goes over aiohttp, imported only then: its CONNECT
    tunnels and proxy credentials are well tested, and a proxied run is not the one that counts
    microseconds. Why neither is httpx: measured with 200 requests in flight, it spent 1.4 ms
    of CPU a request at best and, past a few dozen connections, its pool scanned every
    connection on every event (17 ms a request at 200). coalmine bounds what is in flight itself
    (--concurrency, an agent's max_concurrency), so the pools are unbounded.
    """

    def __init__(self) -> None:
        self._wire = Wire()
        self._session: Any = None  # aiohttp.ClientSession, for proxied requests only
        self._proxies: dict[tuple[str, str], str | None] = {}

    def _proxy(self, scheme: str, host: str) -> str | None:
        """The proxy for a URL from HTTP(S)_PROXY / NO_PROXY, looked up once per host.

        (aiohttp's ``trust_env`` would do this, and read ~/.netrc in a thread, per request.)
        """
        key = (scheme, host)
        if key not in self._proxies:
            proxies = urllib.request.getproxies_environment()
            bypass = bool(host) and urllib.request.proxy_bypass(host)
            self._proxies[key] = None if bypass else proxies.get(scheme)
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
        """Send one request and read the whole response.

        Raises:
            TransportError: no complete answer (refused, reset, closed early, not HTTP).
            TimeoutError: no complete answer within ``timeout`` seconds.
            ValueError: the URL or a header cannot be sent.
        """
        target = parse_target(url)
        proxy = self._proxy(target.scheme, target.host)
        if proxy is not None:
            return await self._proxied(method, url, proxy, timeout, json, headers)
        answer = await self._wire.request(
            method, url, timeout=timeout, json_body=json, headers=headers
        )
        return HttpResponse(answer.status, answer.headers, answer.body, answer.url, answer.charset)

    async def _proxied(
        self,
        method: str,
        url: str,
        proxy: str,
        timeout: float,
        json: Any,
        headers: Mapping[str, str] | None,
    ) -> HttpResponse:
        import aiohttp
        import yarl

        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        target = yarl.URL(url, encoded=True)  # placeholders are quoted already; never twice
        try:
            async with self._session.request(
                method,
                target,
                proxy=proxy,
                json=json,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
                allow_redirects=True,
            ) as response:
                body = await response.read()
        except aiohttp.ClientError as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from None
        shown = str(response.url.with_user(None))
        return HttpResponse(response.status, response.headers, body, shown, response.charset)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._wire.aclose()
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
    why = str(exc) if isinstance(exc, TransportError) else f"{type(exc).__name__}: {exc}"
    return site.error(f"request to {url} failed: {why}", kind=kind)


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

    The deadline bounds connect to last byte, so a server that trickles
    bytes cannot outlast it. ``shown_url`` is what errors name (a URL template, when the real
    URL carries the prompt).
    """
    shown = shown_url or url
    try:
        return await client.request(method, url, timeout=timeout, json=json, headers=headers)
    except TransportError as exc:
        raise transport_error(exc, shown, site) from None
    except ValueError as exc:  # e.g. credentials in the URL beside an Authorization header
        raise site.error(f"cannot send a request to {shown}: {exc}", kind="config") from None
    except TimeoutError:
        raise site.error(
            f"no complete answer from {shown} within {timeout:g}s", kind="timeout"
        ) from None
