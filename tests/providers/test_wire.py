"""The providers' HTTP/1.1 client (``_wire.Wire``) against raw loopback servers scripting every byte.

Each test starts an ``asyncio`` server on 127.0.0.1 (port 0) in its own event loop, reads the
client's request off the socket as bytes, and writes a hand-written answer, so what goes over
the wire, both ways, is the test's to choose and to check.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import json
import socket
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from coalmine.errors import ProviderError
from coalmine.providers._http import HttpClient, Site, send
from coalmine.providers._wire import TransportError, Wire, parse_target

T = TypeVar("T")

SECRET = "SECRET"
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


# -- the loopback server ---------------------------------------------------------------------


@dataclass
class Seen:
    """One request as the server read it off the socket."""

    line: str
    headers: list[tuple[str, str]]
    body: bytes
    connection: int
    """Which accepted connection it came on (1 for the first)."""

    def header(self, name: str) -> str | None:
        """The value of the header ``name`` (any case), which must not be repeated."""
        values = [value for key, value in self.headers if key.lower() == name.lower()]
        assert len(values) <= 1, f"{name} sent {len(values)} times: {values}"
        return values[0] if values else None


@dataclass
class Server:
    """What a loopback server saw: its connections, its requests, every byte it read."""

    host: str = "127.0.0.1"
    port: int = 0
    accepts: int = 0
    requests: list[Seen] = field(default_factory=list)
    raw: bytearray = field(default_factory=bytearray)
    writers: list[asyncio.StreamWriter] = field(default_factory=list)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def root(self) -> str:
        """``http://HOST:PORT``."""
        named = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{named}:{self.port}"

    async def read(self, reader: asyncio.StreamReader, connection: int) -> Seen | None:
        """The next request on a connection (``None`` when the client closed it first)."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            self.raw += exc.partial
            return None
        self.raw += head
        line, *rest = head[:-4].decode("utf-8").split("\r\n")
        headers = [(name, value.strip()) for name, _, value in (h.partition(":") for h in rest)]
        lengths = [value for name, value in headers if name.lower() == "content-length"]
        body = await reader.readexactly(int(lengths[0])) if lengths else b""
        self.raw += body
        seen = Seen(line, headers, body, connection)
        self.requests.append(seen)
        return seen


Handler = Callable[[Server, asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


@contextlib.asynccontextmanager
async def serving(handle: Handler, host: str = "127.0.0.1") -> AsyncIterator[Server]:
    """A server on ``host`` (an ephemeral port) whose connections ``handle`` serves."""
    server = Server(host)

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.accepts += 1
        number = server.accepts
        server.writers.append(writer)
        task = asyncio.current_task()
        assert task is not None
        server.tasks.add(task)
        try:
            await handle(server, reader, writer, number)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away: what it sent is recorded
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    listener = await asyncio.start_server(connected, host, 0)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()
        for writer in server.writers:
            writer.close()
        if server.tasks:
            await asyncio.wait(server.tasks, timeout=2)
        await listener.wait_closed()


@dataclass(frozen=True)
class Pieces:
    """An answer written in parts, ``pause`` seconds apart (each its own segment)."""

    parts: tuple[bytes, ...]
    pause: float = 0.01


Reply = bytes | Pieces


def _ends_connection(reply: bytes) -> bool:
    """Whether a real server would close after this answer: it says so, or has no framing."""
    head = reply.partition(b"\r\n\r\n")[0].lower()
    if b"connection: close" in head:
        return True
    return b"content-length:" not in head and b"transfer-encoding: chunked" not in head


def answering(*replies: Reply | Callable[[Seen], Reply]) -> Handler:
    """A handler answering each request, in order across connections, with the next reply.

    A reply may be a function of the request. With no reply left, the connection is closed
    without an answer. After an answer that ends its connection, the connection is closed.
    """
    queue = deque(replies)

    async def handle(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        while (seen := await server.read(reader, number)) is not None:
            if not queue:
                return
            reply = queue.popleft()
            if callable(reply):
                reply = reply(seen)
            if isinstance(reply, Pieces):
                for part in reply.parts:
                    writer.write(part)
                    await writer.drain()
                    await asyncio.sleep(reply.pause)
                whole = b"".join(reply.parts)
            else:
                writer.write(reply)
                await writer.drain()
                whole = reply
            if _ends_connection(whole):
                return

    return handle


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``main()`` in a new event loop, bounded so that a hang fails the test rather than CI."""

    async def bounded() -> T:
        async with asyncio.timeout(5):
            return await main()

    return asyncio.run(bounded())


async def fetch(server: Server, *calls: tuple[str, str, dict[str, Any]]) -> list[Any]:
    """Each ``(method, path, kwargs)`` through one ``Wire`` in turn: its answer or its error."""
    wire = Wire()
    results: list[Any] = []
    try:
        for method, path, kwargs in calls:
            kwargs = {"timeout": 2.0, **kwargs}
            try:
                results.append(await wire.request(method, server.root + path, **kwargs))
            except (TransportError, TimeoutError, ValueError) as exc:
                results.append(exc)
    finally:
        await wire.aclose()
    return results


def response(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    """An HTTP/1.1 answer with a ``Content-Length`` and the given header lines."""
    lines = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# -- framing ---------------------------------------------------------------------------------


def test_a_content_length_answer_comes_back_whole_and_the_request_is_framed_as_json() -> None:
    body = '{"answer": "café"}'.encode("latin-1")
    reply = response(body, "Content-Type: application/json; charset=latin-1", "X-Request-Id: req-7")
    payload = {"prompt": "say «hi»", "n": 1}

    async def main() -> tuple[Server, Any]:
        async with serving(answering(reply)) as server:
            kwargs = {"json_body": payload, "headers": {"X-Trace": "t-42"}}
            [answer] = await fetch(server, ("POST", "/v1/x?q=1", kwargs))
        return server, answer

    server, answer = run(main)
    assert answer.status == 200
    assert answer.body == body
    assert answer.headers["content-type"] == "application/json; charset=latin-1"
    assert answer.headers["X-REQUEST-ID"] == "req-7"
    assert answer.charset == "latin-1"
    assert answer.url == f"{server.root}/v1/x?q=1"
    [seen] = server.requests
    sent = json.dumps(payload).encode("utf-8")
    assert seen.line == "POST /v1/x?q=1 HTTP/1.1"
    assert seen.header("Host") == f"127.0.0.1:{server.port}"
    assert seen.header("Content-Type") == "application/json"
    assert seen.header("Content-Length") == str(len(sent))
    assert seen.body == sent
    assert json.loads(seen.body) == payload
    assert seen.header("Accept-Encoding") == "gzip, deflate"
    assert seen.header("X-Trace") == "t-42"
    assert (seen.header("User-Agent") or "").startswith("coalmine/")
    assert bytes(server.raw) == server.raw.partition(b"\r\n\r\n")[0] + b"\r\n\r\n" + sent


def test_a_chunked_answer_in_several_segments_is_joined_and_its_connection_kept() -> None:
    chunked = Pieces(
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"5\r\nhello\r\n",
            b"1\r\n,\r\n",
            b"6;ext=1\r\n world\r\n",
            b"0\r\n\r\n",
        )
    )

    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering(chunked, OK)) as server:
            results = await fetch(server, ("GET", "/c", {}), ("GET", "/d", {}))
        return server, results

    server, (first, second) = run(main)
    assert first.status == 200
    assert first.body == b"hello, world"
    assert second.body == b"ok"
    assert server.accepts == 1  # the chunked answer's end was found without the close


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("coding", "pack"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),  # zlib-wrapped, as RFC 9110 says
        ("deflate", _raw_deflate),  # raw, as some servers send it
    ],
    ids=["gzip", "deflate-zlib", "deflate-raw"],
)
def test_a_compressed_body_is_decoded(coding: str, pack: Callable[[bytes], bytes]) -> None:
    text = json.dumps({"text": "x" * 2000}).encode()
    packed = pack(text)
    assert packed != text and len(packed) < len(text)

    async def main() -> list[Any]:
        async with serving(answering(response(packed, f"Content-Encoding: {coding}"))) as server:
            return await fetch(server, ("GET", "/z", {}))

    [answer] = run(main)
    assert answer.body == text
    assert answer.headers["Content-Encoding"] == coding


def test_an_unsupported_or_corrupt_content_encoding_raises_transport_error() -> None:
    replies = (
        response(b"\x1b\x00\x00", "Content-Encoding: br"),
        response(b"not gzip at all", "Content-Encoding: gzip"),
    )

    async def main() -> list[Any]:
        async with serving(answering(*replies)) as server:
            return await fetch(server, ("GET", "/br", {}), ("GET", "/gz", {}))

    unsupported, corrupt = run(main)
    assert isinstance(unsupported, TransportError)
    assert "'br'" in str(unsupported) and "not supported" in str(unsupported)
    assert isinstance(corrupt, TransportError)
    assert "gzip" in str(corrupt) and "does not decode" in str(corrupt)


def test_a_body_ended_by_the_close_is_returned_whole_and_its_connection_not_reused() -> None:
    big = bytes(range(256)) * 400  # 100 kB: several reads
    unframed = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n" + big

    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering(unframed, OK)) as server:
            results = await fetch(server, ("GET", "/all", {}), ("GET", "/next", {}))
        return server, results

    server, (first, second) = run(main)
    assert first.status == 200
    assert first.body == big
    assert second.body == b"ok"
    assert server.accepts == 2
    assert [(s.line, s.connection) for s in server.requests] == [
        ("GET /all HTTP/1.1", 1),
        ("GET /next HTTP/1.1", 2),
    ]


# -- connections -----------------------------------------------------------------------------


def test_two_requests_to_one_origin_share_one_kept_alive_connection() -> None:
    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering(response(b"one"), response(b"two"))) as server:
            results = await fetch(server, ("GET", "/1", {}), ("POST", "/2", {"json_body": [2]}))
        return server, results

    server, (first, second) = run(main)
    assert (first.body, second.body) == (b"one", b"two")
    assert server.accepts == 1
    assert [s.connection for s in server.requests] == [1, 1]
    assert server.requests[1].body == b"[2]"


def test_an_answer_with_connection_close_is_not_reused_and_the_client_closes_it() -> None:
    closed_by_client: list[bool] = []

    async def handle(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        await server.read(reader, number)
        writer.write(response(f"answer {number}".encode(), "Connection: close"))
        await writer.drain()
        # the server does not close first: a client that reused the connection would send here
        while await server.read(reader, number) is not None:
            writer.write(response(b"reused", "Connection: close"))
            await writer.drain()
        closed_by_client.append(True)

    async def main() -> tuple[Server, list[Any]]:
        async with serving(handle) as server:
            results = await fetch(server, ("GET", "/1", {}), ("GET", "/2", {}))
            await asyncio.sleep(0.05)  # the second connection's close reaches the server
        return server, results

    server, (first, second) = run(main)
    assert (first.body, second.body) == (b"answer 1", b"answer 2")
    assert server.accepts == 2
    assert [s.connection for s in server.requests] == [1, 2]
    assert closed_by_client == [True, True]


def _one_answer_then_closed(*, read_the_next: bool) -> Handler:
    """Connection 1 answers ``one`` as if kept alive, then closes; later ones answer ``two``.

    With ``read_the_next`` it reads the next request before it closes: the keep-alive race.
    """

    async def handle(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        if number == 1:
            await server.read(reader, number)
            writer.write(response(b"one"))
            await writer.drain()
            if read_the_next:
                await server.read(reader, number)  # read, and dropped without a byte of answer
            return
        await answering(response(b"two"))(server, reader, writer, number)

    return handle


def _first_then(handle: Handler, method: str) -> tuple[Server, Any]:
    """``GET /first``, then ``method /second`` on one Wire; the server and the second's result."""

    async def main() -> tuple[Server, list[Any]]:
        async with serving(handle) as server:
            results = await fetch(server, ("GET", "/first", {}), (method, "/second", {}))
        return server, results

    server, (first, second) = run(main)
    assert first.body == b"one"
    assert not isinstance(second, Exception), second
    return server, second


def test_an_idle_connection_the_server_closed_is_replaced_and_the_request_sent_once() -> None:
    server, second = _first_then(_one_answer_then_closed(read_the_next=False), "GET")
    assert second.body == b"two"
    assert server.accepts == 2
    assert [(s.line, s.connection) for s in server.requests] == [
        ("GET /first HTTP/1.1", 1),
        ("GET /second HTTP/1.1", 2),
    ]


def test_a_request_lost_on_a_reused_connection_without_an_answer_is_sent_once_more() -> None:
    # the keep-alive race: the server closes the idle connection as the request comes in
    server, second = _first_then(_one_answer_then_closed(read_the_next=True), "POST")
    assert second.body == b"two"
    assert server.accepts == 2
    assert [(s.line, s.connection) for s in server.requests] == [
        ("GET /first HTTP/1.1", 1),
        ("POST /second HTTP/1.1", 1),
        ("POST /second HTTP/1.1", 2),
    ]


def test_a_reused_connection_closed_mid_answer_is_not_retried() -> None:
    # one byte of an answer came back: the server may have acted on the request
    async def handle(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        await server.read(reader, number)
        writer.write(response(b"one"))
        await writer.drain()
        await server.read(reader, number)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Le")
        await writer.drain()

    async def main() -> tuple[Server, list[Any]]:
        async with serving(handle) as server:
            results = await fetch(server, ("GET", "/first", {}), ("POST", "/second", {}))
        return server, results

    server, (first, second) = run(main)
    assert first.body == b"one"
    assert isinstance(second, TransportError)
    assert server.accepts == 1
    assert [s.line for s in server.requests] == ["GET /first HTTP/1.1", "POST /second HTTP/1.1"]


def test_a_fresh_connection_closed_without_an_answer_raises_and_is_not_retried() -> None:
    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering()) as server:  # reads the request, closes
            results = await fetch(server, ("POST", "/x", {"json_body": {"a": 1}}))
        return server, results

    server, [error] = run(main)
    assert isinstance(error, TransportError)
    assert "closed the connection before answering" in str(error)
    assert server.accepts == 1
    assert [s.line for s in server.requests] == ["POST /x HTTP/1.1"]


def test_an_answer_that_is_not_http_raises_transport_error() -> None:
    async def main() -> list[Any]:
        async with serving(answering(b"NOT HTTP\r\n\r\n")) as server:
            return await fetch(server, ("GET", "/x", {}))

    [error] = run(main)
    assert isinstance(error, TransportError)
    assert "not valid HTTP" in str(error)


def test_a_body_shorter_than_its_content_length_raises_rather_than_comes_back_cut() -> None:
    async def main() -> list[Any]:
        cut = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nabc"
        async with serving(answering(cut)) as server:
            return await fetch(server, ("GET", "/x", {}))

    [error] = run(main)
    assert isinstance(error, TransportError)


# -- the deadline ----------------------------------------------------------------------------


def test_a_server_that_never_answers_meets_the_deadline() -> None:
    async def handle(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        await server.read(reader, number)
        await reader.read()  # until the client gives up

    async def main() -> tuple[Server, list[Any], float]:
        async with serving(handle) as server:
            start = time.monotonic()
            results = await fetch(server, ("GET", "/slow", {"timeout": 0.3}))
            elapsed = time.monotonic() - start
        return server, results, elapsed

    server, [error], elapsed = run(main)
    assert isinstance(error, TimeoutError)
    assert 0.25 <= elapsed < 1.3
    assert len(server.requests) == 1


def test_a_server_that_trickles_its_body_cannot_outlast_the_deadline() -> None:
    async def handle(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        await server.read(reader, number)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
        for _ in range(100):  # a byte every 50 ms: 5 s in all, never idle for long
            if writer.is_closing() or reader.at_eof():
                return
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.05)

    async def main() -> tuple[list[Any], float]:
        async with serving(handle) as server:
            start = time.monotonic()
            results = await fetch(server, ("GET", "/trickle", {"timeout": 0.3}))
            elapsed = time.monotonic() - start
        return results, elapsed

    [error], elapsed = run(main)
    assert isinstance(error, TimeoutError)
    assert 0.25 <= elapsed < 1.3


def test_a_refused_connection_raises_transport_error_naming_the_origin() -> None:
    port = free_port()

    async def main() -> Any:
        wire = Wire()
        try:
            return await wire.request("GET", f"http://127.0.0.1:{port}/x", timeout=2)
        except TransportError as exc:
            return exc
        finally:
            await wire.aclose()

    error = run(main)
    assert isinstance(error, TransportError)
    assert str(error).startswith(f"Cannot connect to 127.0.0.1:{port}")


def test_a_connect_that_outlasts_the_deadline_raises_timeout_error() -> None:
    async def main() -> Any:
        # a listener whose accept queue is full: Linux drops further SYNs, the connect hangs
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            fillers.append(filler)
        await asyncio.sleep(0.05)
        wire = Wire()
        try:
            return await wire.request("GET", f"http://127.0.0.1:{port}/x", timeout=0.3)
        except (TransportError, TimeoutError) as exc:
            return exc
        finally:
            await wire.aclose()
            for filler in fillers:
                filler.close()
            listener.close()

    error = run(main)
    assert isinstance(error, TimeoutError), repr(error)


# -- redirects -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "method"),
    [
        ("301 Moved Permanently", "GET"),
        ("302 Found", "GET"),
        ("303 See Other", "GET"),
        ("307 Temporary Redirect", "POST"),
        ("308 Permanent Redirect", "POST"),
    ],
)
@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_a_redirected_post_is_followed_as_the_status_says(
    status: str, method: str, absolute: bool
) -> None:
    def moved(seen: Seen) -> bytes:
        where = f"http://{seen.header('Host')}/b?n=2" if absolute else "/b?n=2"
        return response(b"", f"Location: {where}", status=status)

    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering(moved, response(b"landed"))) as server:
            kwargs = {"json_body": {"k": "v"}, "headers": {"X-Caller": "c1"}}
            results = await fetch(server, ("POST", "/a", kwargs))
        return server, results

    server, [answer] = run(main)
    assert answer.status == 200
    assert answer.body == b"landed"
    assert answer.url == f"{server.root}/b?n=2"
    first, second = server.requests
    assert first.line == "POST /a HTTP/1.1"
    assert first.body == b'{"k": "v"}'
    assert second.line == f"{method} /b?n=2 HTTP/1.1"
    assert second.header("X-Caller") == "c1"  # same origin: the caller's headers go along
    if method == "GET":
        assert second.body == b""
        assert second.header("Content-Length") is None
        assert second.header("Content-Type") is None
    else:
        assert second.body == b'{"k": "v"}'
        assert second.header("Content-Length") == str(len(b'{"k": "v"}'))
    assert server.accepts == 1  # the same origin's connection, kept alive


def test_a_redirect_to_another_origin_carries_none_of_the_callers_headers() -> None:
    keys = {"Authorization": f"Bearer {SECRET}", "x-api-key": SECRET, "X-Custom": SECRET}

    async def main() -> tuple[Server, Server, list[Any]]:
        async with serving(answering(response(b"elsewhere"))) as other:
            moved = response(b"", f"Location: {other.root}/landing", status="307 Temporary")
            async with serving(answering(moved)) as origin:
                kwargs = {"json_body": {"q": 1}, "headers": keys}
                results = await fetch(origin, ("POST", "/start", kwargs))
        return origin, other, results

    origin, other, [answer] = run(main)
    assert answer.body == b"elsewhere"
    assert answer.url == f"{other.root}/landing"
    [asked] = origin.requests
    assert asked.header("Authorization") == f"Bearer {SECRET}"
    assert asked.header("x-api-key") == SECRET
    [landed] = other.requests
    assert landed.line == "POST /landing HTTP/1.1"
    assert landed.header("Host") == f"127.0.0.1:{other.port}"
    assert landed.body == b'{"q": 1}'
    assert SECRET.encode() not in other.raw
    assert SECRET.lower().encode() not in other.raw.lower()


def test_a_same_origin_redirect_keeps_the_callers_headers() -> None:
    keys = {"Authorization": f"Bearer {SECRET}", "x-api-key": SECRET}

    async def main() -> tuple[Server, list[Any]]:
        moved = response(b"", "Location: /there", status="302 Found")
        async with serving(answering(moved, OK)) as server:
            results = await fetch(server, ("GET", "/here", {"headers": keys}))
        return server, results

    server, [answer] = run(main)
    assert answer.body == b"ok"
    assert answer.url == f"{server.root}/there"
    first, second = server.requests
    assert second.line == "GET /there HTTP/1.1"
    for seen in (first, second):
        assert seen.header("Authorization") == f"Bearer {SECRET}"
        assert seen.header("x-api-key") == SECRET


def _hop(seen: Seen) -> bytes:
    n = int(seen.line.split()[1].removeprefix("/r"))
    return response(b"", f"Location: /r{n + 1}", status="302 Found")


def test_ten_redirects_are_followed_and_an_eleventh_raises_transport_error() -> None:
    async def main() -> tuple[Server, Server, list[Any], list[Any]]:
        async with serving(answering(*[_hop] * 10, response(b"end"))) as ten:
            enough = await fetch(ten, ("GET", "/r0", {}))
        async with serving(answering(*[_hop] * 20)) as endless:
            too_many = await fetch(endless, ("GET", "/r0", {}))
        return ten, endless, enough, too_many

    ten, endless, [answer], [error] = run(main)
    assert answer.body == b"end"
    assert answer.url == f"{ten.root}/r10"
    assert isinstance(error, TransportError)
    assert "redirects" in str(error)
    assert "/r11" in str(error)
    assert [s.line for s in endless.requests] == [f"GET /r{n} HTTP/1.1" for n in range(11)]


# -- URLs and headers ------------------------------------------------------------------------


def test_url_credentials_become_basic_authorization_and_leave_the_answers_url() -> None:
    async def main() -> tuple[Server, Any]:
        async with serving(answering(OK)) as server:
            wire = Wire()
            try:
                answer = await wire.request(
                    "GET", f"http://bot:p%40ss@127.0.0.1:{server.port}/x", timeout=2
                )
            finally:
                await wire.aclose()
        return server, answer

    server, answer = run(main)
    [seen] = server.requests
    token = base64.b64encode(b"bot:p@ss").decode("ascii")
    assert seen.header("Authorization") == f"Basic {token}"
    assert seen.header("Host") == f"127.0.0.1:{server.port}"
    assert answer.url == f"{server.root}/x"
    assert "bot" not in answer.url and "p%40ss" not in answer.url and "@" not in answer.url


def test_url_credentials_beside_an_authorization_header_raise_value_error_unsent() -> None:
    async def main() -> tuple[Server, Any]:
        async with serving(answering(OK)) as server:
            wire = Wire()
            try:
                await wire.request(
                    "GET",
                    f"http://bot:pw@127.0.0.1:{server.port}/x",
                    timeout=2,
                    headers={"authorization": "Bearer other"},
                )
            except ValueError as exc:
                return server, exc
            finally:
                await wire.aclose()
        return server, None

    server, error = run(main)
    assert isinstance(error, ValueError)
    assert "Authorization" in str(error)
    assert server.accepts == 0


def test_url_credentials_survive_a_same_origin_redirect() -> None:
    async def main() -> Server:
        moved = response(b"", "Location: /api/", status="301 Moved Permanently")
        async with serving(answering(moved, OK)) as server:
            wire = Wire()
            try:
                await wire.request("GET", f"http://bot:pw@127.0.0.1:{server.port}/api", timeout=2)
            finally:
                await wire.aclose()
        return server

    server = run(main)
    token = base64.b64encode(b"bot:pw").decode("ascii")
    assert [s.header("Authorization") for s in server.requests] == [f"Basic {token}"] * 2


def test_parse_target_reads_http_urls_and_rejects_the_rest() -> None:
    with pytest.raises(ValueError, match="not an http or https URL: ftp"):
        parse_target("ftp://example.com/file")
    with pytest.raises(ValueError, match="no scheme"):
        parse_target("example.com/x")
    with pytest.raises(ValueError, match="no host"):
        parse_target("http:///x")
    with pytest.raises(ValueError):
        parse_target("http://example.com:99999/x")  # no such port

    six = parse_target("http://[::1]:8080/x")
    assert (six.host, six.port, six.host_header) == ("::1", 8080, "[::1]:8080")
    assert six.request_target == "/x"
    plain = parse_target("http://example.com/x")
    assert (plain.host, plain.port, plain.host_header) == ("example.com", 80, "example.com")
    tls = parse_target("https://example.com:443/")
    assert (tls.port, tls.host_header, tls.request_target) == (443, "example.com", "/")
    assert parse_target("https://example.com:80/").host_header == "example.com:80"
    bare = parse_target("HTTP://Example.COM:8080?a=1&b=%20#frag")
    assert (bare.scheme, bare.host, bare.host_header) == ("http", "example.com", "example.com:8080")
    assert bare.request_target == "/?a=1&b=%20"
    assert bare.credentials is None
    keyed = parse_target("https://u%3Ax:@example.com/p")
    assert keyed.credentials == "u:x:"
    assert keyed.shown == "https://example.com/p"


def test_an_ipv6_literal_is_connected_to_and_named_in_brackets_in_the_host_header() -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")

    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering(OK), host="::1") as server:
            results = await fetch(server, ("GET", "/six", {}))
        return server, results

    server, [answer] = run(main)
    assert answer.body == b"ok"
    assert answer.url == f"http://[::1]:{server.port}/six"
    assert server.requests[0].header("Host") == f"[::1]:{server.port}"


@pytest.mark.parametrize(
    "headers",
    [{"X-Note": "a\nb"}, {"X-Note": "a\rb"}, {"X-No\nte": "a"}],
    ids=["lf-in-value", "cr-in-value", "lf-in-name"],
)
def test_a_lone_line_break_in_a_header_raises_value_error_before_anything_is_sent(
    headers: dict[str, str],
) -> None:
    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering(OK)) as server:
            results = await fetch(server, ("GET", "/x", {"headers": headers}))
        return server, results

    server, [error] = run(main)
    assert isinstance(error, ValueError)
    assert "line break" in str(error)
    assert server.accepts == 0
    assert server.raw == b""


def test_a_crlf_in_a_header_value_raises_value_error_before_anything_is_sent() -> None:
    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering(OK)) as server:
            headers = {"X-Note": "a\r\nX-Injected: 1"}
            results = await fetch(server, ("GET", "/x", {"headers": headers}))
        return server, results

    server, [error] = run(main)
    assert isinstance(error, ValueError), f"sent: {bytes(server.raw)!r}"
    assert server.accepts == 0
    assert server.raw == b""


def test_the_client_frames_the_message_itself_and_a_callers_header_replaces_a_default() -> None:
    caller = {
        "Host": "evil.example",
        "content-length": "999",
        "Transfer-Encoding": "chunked",
        "Content-Type": "application/vnd.api+json",
        "accept-encoding": "identity",
        "User-Agent": "probe/1",
    }

    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering(OK)) as server:
            kwargs = {"json_body": {"a": 1}, "headers": caller}
            results = await fetch(server, ("PUT", "/f", kwargs))
        return server, results

    server, [answer] = run(main)
    assert answer.body == b"ok"
    [seen] = server.requests
    assert seen.header("Host") == f"127.0.0.1:{server.port}"
    assert seen.header("Content-Length") == str(len(b'{"a": 1}'))
    assert seen.header("Transfer-Encoding") is None
    assert seen.header("Content-Type") == "application/vnd.api+json"
    assert seen.header("Accept-Encoding") == "identity"
    assert seen.header("User-Agent") == "probe/1"
    assert seen.body == b'{"a": 1}'


@pytest.mark.parametrize(
    ("method", "length"),
    [("GET", None), ("DELETE", None), ("POST", "0"), ("PUT", "0"), ("PATCH", "0")],
)
def test_a_request_without_json_body_sends_a_length_only_for_methods_with_a_body(
    method: str, length: str | None
) -> None:
    async def main() -> tuple[Server, list[Any]]:
        async with serving(answering(OK)) as server:
            results = await fetch(server, (method, "/n", {}))
        return server, results

    server, [answer] = run(main)
    assert answer.body == b"ok"
    [seen] = server.requests
    assert seen.line == f"{method} /n HTTP/1.1"
    assert seen.header("Content-Length") == length
    assert seen.body == b""
    assert server.raw.endswith(b"\r\n\r\n")


def test_an_interim_100_continue_is_skipped_and_the_final_answer_kept_with_its_request() -> None:
    async def handle(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        await server.read(reader, number)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(response(b"first"))
        await writer.drain()
        await answering(response(b"second"))(server, reader, writer, number)

    async def main() -> list[Any]:
        async with serving(handle) as server:
            return await fetch(server, ("GET", "/one", {}), ("GET", "/two", {}))

    first, second = run(main)
    assert (first.status, first.body) == (200, b"first")
    assert (second.status, second.body) == (200, b"second")


# -- through HttpClient and send() -----------------------------------------------------------


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy from the environment: requests go over ``Wire``."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ALL_PROXY", raising=False)


async def _send(url: str, timeout: float) -> ProviderError | None:
    client = HttpClient()
    site = Site("a", "openai", (SECRET,))
    try:
        await send(client, "POST", url, site, timeout=timeout, json={"x": 1})
    except ProviderError as exc:
        return exc
    finally:
        await client.aclose()
    return None


@pytest.mark.usefixtures("no_proxy")
def test_send_calls_a_refused_connection_a_retryable_connection_failure() -> None:
    port = free_port()
    error = run(lambda: _send(f"http://127.0.0.1:{port}/v1?key={SECRET}", 2))
    assert isinstance(error, ProviderError)
    assert error.kind == "connection"
    assert error.retryable is True
    assert (error.agent, error.provider) == ("a", "openai")
    assert f"Cannot connect to 127.0.0.1:{port}" in error.reason
    assert SECRET not in str(error)


@pytest.mark.usefixtures("no_proxy")
def test_send_calls_a_missed_deadline_a_retryable_timeout() -> None:
    async def handle(
        server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        await server.read(reader, number)
        await reader.read()

    async def main() -> tuple[Server, ProviderError | None]:
        async with serving(handle) as server:
            error = await _send(f"{server.root}/v1?key={SECRET}", 0.3)
        return server, error

    server, error = run(main)
    assert isinstance(error, ProviderError)
    assert error.kind == "timeout"
    assert error.retryable is True
    assert "within 0.3s" in error.reason
    assert SECRET not in str(error)
    assert len(server.requests) == 1
