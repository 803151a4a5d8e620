"""A small Anthropic Messages API server on 127.0.0.1, for real HTTP tests.

It speaks real HTTP over a real socket (no transport mocking). Tests queue replies (text,
``tool_use`` blocks, usage, a status with an Anthropic error body, a raw body, a delay, a slow
trickle, extra headers such as ``Retry-After``), then read back every request the server got,
headers and JSON body included. A request with ``"stream": true`` gets the reply as the API's
server-sent events (``message_start`` … ``message_stop``, a tool's input as ``input_json_delta``),
as the Claude Agent SDK's CLI asks for it. Like the real API it rejects a wrong path, a missing
``anthropic-version``, a body without ``model``, ``max_tokens`` or ``messages``, a
``tool_choice`` without ``tools`` and a tool without ``name`` or ``input_schema`` before any
scripted reply is used. ``in_flight`` and ``max_in_flight`` count requests being answered, so a
test can assert a concurrency limit from the server's side.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.helpers.loopback import LoopbackServer

MESSAGES_PATH = "/v1/messages"


def text_block(text: str) -> dict[str, Any]:
    """A ``text`` content block."""
    return {"type": "text", "text": text}


def tool_use_block(name: str, input: dict[str, Any], id: str = "toolu_01") -> dict[str, Any]:  # noqa: A002 - the API's names
    """A ``tool_use`` content block."""
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def error_body(error_type: str, message: str) -> str:
    """The body of an Anthropic API error."""
    return json.dumps({"type": "error", "error": {"type": error_type, "message": message}})


@dataclass
class Reply:
    """One scripted answer: a message with ``text`` or ``blocks``, or a raw status and body."""

    text: str | None = None
    blocks: list[dict[str, Any]] | None = None
    """Content blocks sent as they are (``text`` is ignored when given)."""
    status: int = 200
    body: str | bytes | None = None
    """A raw body sent instead of a message (an error body, or something malformed)."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    trickle: float = 0.0
    """Send the body one byte at a time with this pause (a server that never quite stalls)."""
    headers: dict[str, str] = field(default_factory=dict)
    model: str = "claude-fake-1"
    stop_reason: str | None = None
    """Default: ``tool_use`` when the blocks hold one, else ``end_turn``."""
    usage: dict[str, Any] = field(default_factory=lambda: {"input_tokens": 11, "output_tokens": 7})

    @classmethod
    def error(cls, status: int, error_type: str, message: str, **kwargs: Any) -> Reply:
        """A reply with an Anthropic error body (JSON, a streaming request's too)."""
        headers = {"Content-Type": "application/json", **kwargs.pop("headers", {})}
        return cls(status=status, body=error_body(error_type, message), headers=headers, **kwargs)

    def payload_for(self, received: Received) -> bytes:
        """The message as JSON, or as server-sent events when the request streams."""
        if self.body is not None or not _streams(received):
            return self.payload()
        message = self._message()
        blocks = message.pop("content")
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"message": {**message, "content": [], "stop_reason": None}})
        ]
        for index, block in enumerate(blocks):
            if block.get("type") == "tool_use":
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                start = {**block, "text": ""}
                delta = {"type": "text_delta", "text": block.get("text", "")}
            events += [
                ("content_block_start", {"index": index, "content_block": start}),
                ("content_block_delta", {"index": index, "delta": delta}),
                ("content_block_stop", {"index": index}),
            ]
        stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        events += [
            ("message_delta", {"delta": stop, "usage": {"output_tokens": 7}}),
            ("message_stop", {}),
        ]
        return "".join(
            f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"
            for name, data in events
        ).encode()

    def payload(self) -> bytes:
        if self.body is not None:
            return self.body if isinstance(self.body, bytes) else self.body.encode()
        return json.dumps(self._message()).encode()

    def _message(self) -> dict[str, Any]:
        blocks = self.blocks if self.blocks is not None else []
        if self.blocks is None and self.text is not None:
            blocks = [text_block(self.text)]
        stop_reason = self.stop_reason or (
            "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
        )
        message = {
            "id": "msg_01fake",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": blocks,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": self.usage,
        }
        return message


@dataclass
class Received:
    """A request the server got."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: Any
    request_id: str = ""


class FakeAnthropic(LoopbackServer[Reply, Received]):
    """The server; use it as a context manager (the ``anthropic_server`` fixture does)."""

    def __init__(self) -> None:
        super().__init__(default=lambda r: Reply(text="default reply"))
        self._ids = itertools.count(1)

    def read(self, handler: BaseHTTPRequestHandler, raw: bytes) -> Received:
        """Record the path, lower-cased headers and the JSON body (text when it is not JSON)."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in handler.headers.items()}
        request_id = f"req_fake_{next(self._ids)}"
        return Received(handler.command, handler.path, headers, body, request_id)

    def refuse(self, received: Received) -> Reply | None:
        """What the real API answers to a request it would refuse (a wrong path, no version …)."""
        return _rejection(received)

    def extra_headers(self, received: Received) -> dict[str, str]:
        """Every answer carries a request id, as the real API's do; a stream is an event stream."""
        stream = {"Content-Type": "text/event-stream"} if _streams(received) else {}
        return {"request-id": received.request_id, **stream}

    @property
    def base_url(self) -> str:
        """The provider's ``base_url`` (requests go to ``{base_url}/v1/messages``)."""
        return self.root

    def enqueue(self, *replies: Reply | str) -> None:
        """Queue replies, answered in order; a string is a message with that text."""
        for reply in replies:
            self.replies.append(Reply(text=reply) if isinstance(reply, str) else reply)


def _streams(received: Received) -> bool:
    return isinstance(received.body, dict) and received.body.get("stream") is True


def _rejection(received: Received) -> Reply | None:
    """The real API's answer to a request it would refuse, or ``None``."""
    if received.path.partition("?")[0] != MESSAGES_PATH:
        return Reply.error(404, "not_found_error", "Not Found")
    if "anthropic-version" not in received.headers:
        return Reply.error(400, "invalid_request_error", "anthropic-version: header is required")
    body = received.body
    if not isinstance(body, dict):
        return Reply.error(400, "invalid_request_error", "There was an issue with the JSON body")
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return Reply.error(400, "invalid_request_error", f"{name}: Field required")
    if "tool_choice" in body and not body.get("tools"):
        message = "tool_choice may only be specified while providing tools."
        return Reply.error(400, "invalid_request_error", message)
    for index, tool in enumerate(body.get("tools") or []):
        for name in ("name", "input_schema"):
            if not isinstance(tool, dict) or name not in tool:
                return Reply.error(
                    400, "invalid_request_error", f"tools.{index}.{name}: Field required"
                )
    return None
