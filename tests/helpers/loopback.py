"""The plumbing every loopback test server shares: a real HTTP server on 127.0.0.1 in a thread.

Tests queue replies, then read back every request the server received. The server counts the
requests in flight and the most it ever saw at once (to assert concurrency limits from its own
side). A reply may wait (``delay``) or send its body a byte at a time (``trickle``); closing the
server wakes both, so shutdown never waits for them. Protocol servers (OpenAI, Anthropic, a
generic JSON service) subclass it and say how to read a request and what else to answer.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Protocol, Self, TypeVar


class ReplyLike(Protocol):
    """What the server needs of a scripted reply."""

    status: int
    delay: float
    headers: dict[str, str]

    def payload(self) -> bytes: ...


R = TypeVar("R", bound=ReplyLike)
Q = TypeVar("Q")


class LoopbackServer(Generic[R, Q]):
    """Queued replies of type ``R``, recorded requests of type ``Q``; a context manager."""

    def __init__(self, default: Callable[[Q], R]) -> None:
        self.replies: deque[R] = deque()
        self.requests: list[Q] = []
        self.default = default
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests the server was handling at once."""
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_port}"

    # -- what a protocol server decides ----------------------------------------------------

    def read(self, handler: BaseHTTPRequestHandler, raw: bytes) -> Q:
        """Turn the raw request into the recorded request type."""
        raise NotImplementedError

    def refuse(self, received: Q) -> R | None:
        """The answer to a request the real service would refuse (``None``: no refusal)."""
        return None

    def extra_headers(self, received: Q) -> dict[str, str]:
        """Headers sent with the answer to ``received`` (e.g. a request id)."""
        return {}

    # -- the shared part -------------------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", "0"))
        raw = handler.rfile.read(length) if length else b""
        received = self.read(handler, raw)
        with self._lock:
            self.requests.append(received)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            reply = self.refuse(received)
            if reply is None and self.replies:
                reply = self.replies.popleft()
        answered = False

        def answered_now() -> None:
            # The count drops before the body's last byte goes out: the client can only send
            # its next request after reading it, so a drop after the write would race that
            # next request's rise and count one more than the client ever had open.
            nonlocal answered
            if not answered:
                answered = True
                with self._lock:
                    self.in_flight -= 1

        try:
            reply = reply or self.default(received)
            if reply.delay and self._closing.wait(reply.delay):
                return  # shutting down: drop the connection, as a hung server would
            answer_for = getattr(reply, "payload_for", None)
            data = answer_for(received) if answer_for is not None else reply.payload()
            extra = self.extra_headers(received)
            headers = {"Content-Type": "application/json", **extra, **reply.headers}
            handler.send_response(reply.status)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            trickle: float = getattr(reply, "trickle", 0.0)
            if not trickle:
                answered_now()
                handler.wfile.write(data)
            for i in range(len(data) if trickle else 0):
                if i == len(data) - 1:
                    answered_now()
                handler.wfile.write(data[i : i + 1])
                handler.wfile.flush()
                if self._closing.wait(trickle):
                    return
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)
        finally:
            answered_now()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                server._serve(self)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET  # noqa: N815 - stdlib names

        return Handler

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()  # wakes delayed and trickling replies
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
