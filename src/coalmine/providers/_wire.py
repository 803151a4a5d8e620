"""HTTP/1.1 on asyncio: keep-alive connections per origin, parsed by httptools (llhttp).

Why not aiohttp's client here: measured with 200 requests in flight against a loopback server
(bench/perf/eval_throughput.py), aiohttp's ``ClientSession.request`` spent 0.36 ms of CPU a
request (0.31 on uvloop) in its Python layers (tracing, cookies, timers, a request and a
response object, header multidicts built twice); this client, on the same C parser family and
the event loop's own transports, spends 0.11–0.18. At the thousands of requests an eval run
makes, that difference is most of coalmine's CPU. Proxies are left to aiohttp (see
``_http.HttpClient``): a CONNECT tunnel and proxy credentials are its well-tested business, and
a proxied run is not one that counts microseconds.

What a provider needs of HTTP is here and no more: one request, the whole response back
(``Content-Length``, chunked or read to the close; ``gzip``/``deflate`` decoded), redirects
followed (at most 10; a 303, or a 301/302 after a POST, becomes a GET), a hard deadline from
connect to the last byte, and an idle connection reused. A request on a reused connection
that the server had closed meanwhile (the keep-alive race) is sent once more on a new one, but
only when not one byte of an answer came back.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import json
import os
import ssl
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import unquote, urljoin, urlsplit

import httptools
from multidict import CIMultiDict, CIMultiDictProxy

from coalmine._version import __version__

MAX_REDIRECTS = 10
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_USER_AGENT = f"coalmine/{__version__}"


class TransportError(Exception):
    """The request got no complete answer: refused, reset, closed early, or not HTTP."""


@dataclass(frozen=True)
class Answer:
    """A complete response as it came off the wire (the body decoded from its encoding)."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes
    url: str
    """The URL that answered (after redirects), without credentials."""

    @property
    def charset(self) -> str | None:
        """The ``charset`` parameter of ``Content-Type``, if any."""
        for param in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "charset":
                return value.strip().strip('"') or None
        return None


@dataclass(frozen=True)
class _Target:
    """Where one request goes: its origin and what its request line and headers carry."""

    scheme: str
    host: str
    port: int
    request_target: str
    host_header: str
    credentials: str | None
    """``user:password`` from the URL's userinfo, sent as Basic authorization."""
    shown: str
    """The URL without its userinfo: what a response says it came from."""

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


@functools.lru_cache(maxsize=256)  # a provider sends every request to one URL, or a few
def parse_target(url: str) -> _Target:
    """Split an already-quoted URL (``ValueError`` when it is not an http(s) URL)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"not an http or https URL: {parts.scheme or 'no scheme'}")
    host = parts.hostname
    if not host:
        raise ValueError("the URL has no host")
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    port = parts.port or _DEFAULT_PORTS[scheme]  # .port raises ValueError on a bad port
    named = f"[{host}]" if ":" in host else host
    host_header = named if port == _DEFAULT_PORTS[scheme] else f"{named}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    credentials = None
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    netloc = parts.netloc.rpartition("@")[2]
    shown = f"{scheme}://{netloc}{target}"
    return _Target(scheme, host, port, target, host_header, credentials, shown)


def _head(method: str, target: _Target, headers: Mapping[str, str], length: int | None) -> bytes:
    """The request line and headers, ``ValueError`` on a value that would split them."""
    names = {name.lower() for name in headers}
    lines = [f"{method} {target.request_target} HTTP/1.1", f"Host: {target.host_header}"]
    defaults = {
        "user-agent": _USER_AGENT,
        "accept": "*/*",
        "accept-encoding": "gzip, deflate",
    }
    lines += [f"{name}: {value}" for name, value in defaults.items() if name not in names]
    if target.credentials is not None:
        if "authorization" in names:
            raise ValueError("credentials in the URL beside an Authorization header")
        token = base64.b64encode(target.credentials.encode("utf-8")).decode("ascii")
        lines.append(f"Authorization: Basic {token}")
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n\0") or ":" in name:
            raise ValueError(f"the header {name.strip()!r} holds a line break, NUL or colon")
        if name.lower() in ("host", "content-length", "transfer-encoding"):
            continue  # this client frames the message itself
        lines.append(f"{name}: {value}")
    if length is not None:
        if "content-type" not in names:
            lines.append("Content-Type: application/json")
        lines.append(f"Content-Length: {length}")
    return "\r\n".join(lines).encode("utf-8") + b"\r\n\r\n"


@dataclass
class _Exchange:
    """What one response has brought so far."""

    waiter: asyncio.Future[tuple[int, list[tuple[str, str]], bytes]]
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: list[bytes] = field(default_factory=list)
    headers_done: bool = False
    framed: bool = False
    """A ``Content-Length`` or chunked body: its end is known without the close."""


class _Connection(asyncio.Protocol):
    """One keep-alive connection, one exchange at a time."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.exchange: _Exchange | None = None
        self.closed = False
        self.reusable = False
        self.answered = False
        """Some byte of the current exchange's answer came in."""

    # asyncio's side
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports, in a Ray actor's loop, are not asyncio.Transport subclasses)
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.answered = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(TransportError(f"the answer is not valid HTTP/1.1: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        ex = self.exchange
        if ex is None or ex.waiter.done():
            return
        if ex.headers_done and not ex.framed:  # a body that ends with the connection
            self._complete(keep=False)
            return
        why = f": {exc}" if exc else ""
        self._fail(TransportError(f"the server closed the connection before answering{why}"))

    # httptools' side
    def on_header(self, name: bytes, value: bytes) -> None:
        if self.exchange is not None:
            self.exchange.headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        ex = self.exchange
        if ex is None:
            return
        ex.headers_done = True
        status = self.parser.get_status_code()
        for name, value in ex.headers:
            lowered = name.lower()
            if lowered == "content-length" or (
                lowered == "transfer-encoding" and "chunked" in value.lower()
            ):
                ex.framed = True
        if status in (204, 304) or 100 <= status < 200:
            ex.framed = True

    def on_body(self, body: bytes) -> None:
        if self.exchange is not None:
            self.exchange.body.append(body)

    def on_message_complete(self) -> None:
        ex = self.exchange
        if ex is not None and 100 <= self.parser.get_status_code() < 200:
            # an interim answer (100 Continue, 103 Early Hints): the real one follows
            ex.headers, ex.body, ex.headers_done, ex.framed = [], [], False, False
            return
        self._complete(keep=self.parser.should_keep_alive())

    # ours
    def _complete(self, *, keep: bool) -> None:
        ex = self.exchange
        if ex is None or ex.waiter.done():
            return
        self.reusable = keep and not self.closed
        ex.waiter.set_result((self.parser.get_status_code(), ex.headers, b"".join(ex.body)))

    def _fail(self, exc: BaseException) -> None:
        ex = self.exchange
        if ex is not None and not ex.waiter.done():
            ex.waiter.set_exception(exc)

    def expire(self) -> None:
        """The deadline passed: the exchange fails and the connection is dropped."""
        self._fail(TimeoutError())
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    async def exchange_once(
        self, payload: bytes, deadline: float
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Send one request and wait for its whole answer (the connection is left as it is)."""
        loop = asyncio.get_running_loop()
        self.reusable = self.answered = False
        ex = self.exchange = _Exchange(loop.create_future())
        assert self.transport is not None
        self.transport.write(payload)
        timer = loop.call_at(deadline, self.expire)
        try:
            return await ex.waiter
        finally:
            timer.cancel()
            self.exchange = None


_TLS: ssl.SSLContext | None = None


def _tls() -> ssl.SSLContext:
    """The system's trust store, loaded once, when the first https origin is met."""
    global _TLS
    if _TLS is None:
        _TLS = ssl.create_default_context()
    return _TLS


def _decode(body: bytes, encoding: str) -> bytes:
    """A body decoded from its ``Content-Encoding`` (``TransportError`` when it cannot be)."""
    coding = encoding.strip().lower()
    if coding in ("", "identity"):
        return body
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if coding == "deflate":  # zlib-wrapped as the RFC says, or raw as some servers send
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise TransportError(f"the {coding} body does not decode: {exc}") from None
    raise TransportError(f"the body's Content-Encoding {encoding!r} is not supported")


class Wire:
    """Keep-alive connections by origin, unbounded (coalmine bounds what is in flight itself)."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}

    async def _connect(self, target: _Target, deadline: float) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = _tls() if target.scheme == "https" else None
        try:
            async with asyncio.timeout_at(deadline):
                _, conn = await loop.create_connection(
                    _Connection,
                    target.host,
                    target.port,
                    ssl=tls,
                    server_hostname=target.host if tls else None,
                )
        except TimeoutError:  # (an OSError too: it must not be called a refusal)
            raise
        except OSError as exc:  # refused, unreachable, DNS, a TLS failure
            why = os.strerror(exc.errno) if exc.errno else str(exc) or type(exc).__name__
            raise TransportError(f"Cannot connect to {target.host_header}: {why}") from None
        return conn

    async def _once(
        self, target: _Target, payload: bytes, deadline: float
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        idle = self._idle.get(target.origin)
        while idle:
            conn = idle.pop()
            if conn.closed:
                continue
            try:
                return await self._finish(target, conn, payload, deadline)
            except TransportError:
                if conn.answered:
                    raise
                # the keep-alive race: the server closed this idle connection as the request
                # went out, and no byte of an answer began, so it is sent once more on a new one
        conn = await self._connect(target, deadline)
        return await self._finish(target, conn, payload, deadline)

    async def _finish(
        self, target: _Target, conn: _Connection, payload: bytes, deadline: float
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        try:
            answer = await conn.exchange_once(payload, deadline)
        except BaseException:  # not HTTP, a timeout, or the caller cancelled: the answer is lost
            conn.close()
            raise
        if conn.reusable:
            self._idle.setdefault(target.origin, []).append(conn)
        else:
            conn.close()
        return answer

    async def request(
        self,
        method: str,
        url: str,
        *,
        timeout: float,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """One request, redirects followed, the whole answer read within ``timeout`` seconds.

        Raises:
            TransportError: no complete answer (refused, reset, closed early, not HTTP).
            TimeoutError: the deadline passed.
            ValueError: the URL or a header cannot be sent.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        sent = dict(headers or {})
        body = None if json_body is None else json.dumps(json_body).encode("utf-8")
        target = parse_target(url)
        for _ in range(MAX_REDIRECTS + 1):
            length = len(body) if body is not None else (0 if method in _BODY_METHODS else None)
            payload = _head(method, target, sent, length) + (body or b"")
            status, raw, content = await self._once(target, payload, deadline)
            answer = CIMultiDictProxy(CIMultiDict(raw))
            location = answer.get("location")
            if status not in _REDIRECTS or not location:
                content = _decode(content, answer.get("content-encoding", ""))
                return Answer(status, answer, content, target.shown)
            if status == 303 or (status in (301, 302) and method == "POST"):
                method, body = "GET", None
            following = parse_target(urljoin(target.shown, location))
            if following.origin == target.origin and following.credentials is None:
                following = dataclasses.replace(following, credentials=target.credentials)
            if following.origin != target.origin:
                # Another origin gets none of the caller's headers: any of them may be a key
                # (Authorization, x-api-key, a custom one), and we cannot tell which.
                sent = {}
            target = following
        raise TransportError(f"more than {MAX_REDIRECTS} redirects, the last to {target.shown}")

    async def aclose(self) -> None:
        """Close every idle connection."""
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()
