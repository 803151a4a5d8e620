"""A generic JSON agent service on 127.0.0.1, for real HTTP tests of the ``http`` provider.

Real HTTP over a real socket: tests queue replies (status, body, delay, headers), then read
back every request the server received. It also counts the requests in flight and the most it
ever saw at once, so concurrency limits can be asserted from the server's side.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    """One scripted answer; ``body`` is JSON-encoded unless it is already ``str`` or ``bytes``."""

    body: Any = None
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    trickle: float = 0.0
    """Seconds between body bytes: a server that keeps a connection busy but never finishes."""

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


@dataclass
class Received:
    """A request the server got: ``body`` is the parsed JSON (``None`` when there was none)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    raw: bytes
    body: Any

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (case-insensitive), or ``None``."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)


class JsonService:
    """The server; use it as a context manager (the ``json_service`` fixture does)."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        self.default: Callable[[Received], Reply] = lambda r: Reply({"output": "default reply"})
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """The server's root, e.g. ``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def enqueue(self, *replies: Reply | Any) -> None:
        """Queue replies, answered in order; anything but a ``Reply`` is a 200 with that JSON."""
        for reply in replies:
            self.replies.append(reply if isinstance(reply, Reply) else Reply(reply))

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", "0"))
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        split = urlsplit(handler.path)
        received = Received(
            handler.command,
            split.path,
            parse_qs(split.query, keep_blank_values=True),
            dict(handler.headers.items()),
            raw,
            body,
        )
        with self._lock:
            self.requests.append(received)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            reply = self.replies.popleft() if self.replies else None
        try:
            reply = reply or self.default(received)
            if reply.delay and self._closing.wait(reply.delay):
                return  # shutting down: drop the connection, as a hung server would
            data = reply.payload()
            handler.send_response(reply.status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            if not reply.trickle:
                handler.wfile.write(data)
            for i in range(len(data) if reply.trickle else 0):
                handler.wfile.write(data[i : i + 1])
                handler.wfile.flush()
                if self._closing.wait(reply.trickle):
                    return
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                service._serve(self)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET  # noqa: N815 - stdlib names

        return Handler

    def __enter__(self) -> JsonService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
