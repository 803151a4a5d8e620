"""What every HTTP provider shares: responses and transport errors as ``ProviderError``.

Each failure gets its kind (``rate_limited``, ``http_error``, ``timeout``, ``connection``,
``bad_output``), whether a retry may help, the server's ``Retry-After``, and no secret.
"""

from __future__ import annotations

import email.utils
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx

from coalmine.errors import ProviderError
from coalmine.providers.base import redact

BODY_EXCERPT = 500


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


def check_response(response: httpx.Response, site: Site) -> None:
    """Raise the right ``ProviderError`` for a 4xx/5xx response."""
    status = response.status_code
    if status < 400:
        return
    message = f"HTTP {status} from {response.request.url}: {response.text[:BODY_EXCERPT].strip()}"
    retry_after = retry_after_seconds(response.headers.get("retry-after"))
    if status == 429:
        raise site.error(message, kind="rate_limited", retry_after=retry_after)
    retryable = status >= 500 or status in (408, 409)
    raise site.error(message, kind="http_error", retryable=retryable, retry_after=retry_after)


def transport_error(exc: httpx.HTTPError, url: str, site: Site) -> ProviderError:
    """A ``ProviderError`` for a request that got no response (timeout, reset, refused)."""
    kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "connection"
    return site.error(f"request to {url} failed: {type(exc).__name__}: {exc}", kind=kind)


def json_body(response: httpx.Response, site: Site) -> Any:
    """The response's JSON, or a ``bad_output`` error quoting the start of the body."""
    try:
        return response.json()
    except ValueError:
        excerpt = response.text[:300]
        raise site.error(
            f"unexpected response from {response.request.url}: not JSON: {excerpt!r}",
            kind="bad_output",
        ) from None


async def send(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    site: Site,
    *,
    timeout: float,
    shown_url: str | None = None,
    **kwargs: Any,
) -> httpx.Response:
    """Send one request under a hard deadline for the whole exchange.

    httpx times each phase (connect, each read) apart, so a server that trickles bytes could
    outlast its timeout; the outer deadline bounds connect to last byte. ``shown_url`` is what
    errors name (a URL template, when the real URL carries the prompt).
    """
    shown = shown_url or url
    try:
        with anyio.fail_after(timeout):
            return await client.request(method, url, timeout=httpx.Timeout(timeout), **kwargs)
    except httpx.HTTPError as exc:
        raise transport_error(exc, shown, site) from None
    except TimeoutError:
        raise site.error(
            f"no complete answer from {shown} within {timeout:g}s", kind="timeout"
        ) from None
