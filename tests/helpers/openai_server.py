"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for real HTTP tests.

It speaks real HTTP over a real socket (no transport mocking): tests queue replies, then read
back every request the server received, headers and JSON body included. A reply may carry
``tool_calls`` (see ``tool_call``) and may leave out ``usage``, as Ollama does.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(
    name: str,
    arguments: str | dict[str, Any],
    id: str | None = "call_1",  # noqa: A002 - the API's name
) -> dict[str, Any]:
    """One item of ``message.tool_calls``.

    ``arguments`` is a JSON string (OpenAI, vLLM) or an object (llama.cpp); ``id=None`` leaves
    the id out (Ollama).
    """
    item: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    return item if id is None else {"id": id, **item}


@dataclass
class Reply:
    """One scripted answer: a chat completion with ``text``, or a raw status and body."""

    text: str | None = None
    """The message content; ``None`` is sent as ``"content": null``."""
    tool_calls: list[dict[str, Any]] | None = None
    """``message.tool_calls`` (left out when ``None``)."""
    status: int = 200
    body: str | bytes | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    model: str = "fake-model"
    usage: dict[str, int] | None = field(
        default_factory=lambda: {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    )
    """Token counts; ``None`` leaves ``usage`` out of the answer (Ollama)."""

    def payload(self) -> bytes:
        if self.body is not None:
            return self.body if isinstance(self.body, bytes) else self.body.encode()
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls is not None:
            message["tool_calls"] = self.tool_calls
        completion: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if self.tool_calls else "stop",
                }
            ],
        }
        if self.usage is not None:
            completion["usage"] = self.usage
        return json.dumps(completion).encode()


@dataclass
class Received:
    """A request the server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float = 0.0
    """time.monotonic() when the request arrived."""


class FakeOpenAI:
    """The server; use it as a context manager (the ``openai_server`` fixture does)."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests the server was handling at once (to check concurrency limits)."""
        self.default: Callable[[Received], Reply] = lambda r: Reply(text="default reply")
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                received = Received(
                    "POST", self.path, dict(self.headers.items()), body, time.monotonic()
                )
                with server._lock:
                    server.requests.append(received)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    reply = server.replies.popleft() if server.replies else None
                if reply is None:
                    reply = server.default(received)
                try:
                    if reply.delay:
                        time.sleep(reply.delay)
                    data = reply.payload()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def enqueue(self, *replies: Reply | str) -> None:
        """Queue replies, answered in order; a string is a completion with that text."""
        for reply in replies:
            self.replies.append(Reply(text=reply) if isinstance(reply, str) else reply)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
