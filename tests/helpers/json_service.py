"""A generic JSON agent service on 127.0.0.1, for real HTTP tests of the ``http`` provider.

Real HTTP over a real socket: tests queue replies (status, body, delay, headers), then read
back every request the server received. It also counts the requests in flight and the most it
ever saw at once, so concurrency limits can be asserted from the server's side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.helpers.loopback import LoopbackServer


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


class JsonService(LoopbackServer[Reply, Received]):
    """The server; use it as a context manager (the ``json_service`` fixture does)."""

    def __init__(self) -> None:
        super().__init__(default=lambda r: Reply({"output": "default reply"}))

    @property
    def url(self) -> str:
        """The server's root, e.g. ``http://127.0.0.1:PORT``."""
        return self.root

    def enqueue(self, *replies: Reply | Any) -> None:
        """Queue replies, answered in order; anything but a ``Reply`` is a 200 with that JSON."""
        for reply in replies:
            self.replies.append(reply if isinstance(reply, Reply) else Reply(reply))

    def read(self, handler: BaseHTTPRequestHandler, raw: bytes) -> Received:
        """Record method, path, query, headers, raw bytes and the JSON body (or ``None``)."""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        split = urlsplit(handler.path)
        query = parse_qs(split.query, keep_blank_values=True)
        return Received(
            handler.command, split.path, query, dict(handler.headers.items()), raw, body
        )
