"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for real HTTP tests.

It speaks real HTTP over a real socket (no transport mocking): tests queue replies, then read
back every request the server received, headers and JSON body included. A reply may carry
``tool_calls`` (see ``tool_call``) and may leave out ``usage``, as Ollama does. A request to
``/v1/responses`` (the Responses API, which the OpenAI Agents SDK uses) gets the same reply in
that API's shape: ``function_call`` output items, then the message.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.helpers.loopback import LoopbackServer


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

    def payload_for(self, received: Received) -> bytes:
        """The answer in the API the request used: chat completions, or the Responses API."""
        if self.body is not None or not received.path.rstrip("/").endswith("/responses"):
            return self.payload()
        output: list[dict[str, Any]] = []
        for i, call in enumerate(self.tool_calls or []):
            function = call["function"]
            arguments = function["arguments"]
            output.append({
                "type": "function_call", "id": f"fc_{i}", "call_id": call.get("id") or f"call_{i}",
                "name": function["name"], "status": "completed",
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            })  # fmt: skip
        if self.text is not None:
            output.append({
                "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": self.text, "annotations": []}],
            })  # fmt: skip
        usage = self.usage or {}
        response = {
            "id": "resp_1", "object": "response", "created_at": 0, "model": self.model,
            "status": "completed", "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [],
            "usage": {
                "input_tokens": usage.get("prompt_tokens", 0),
                "output_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }  # fmt: skip
        return json.dumps(response).encode()


@dataclass
class Received:
    """A request the server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float = 0.0
    """time.monotonic() when the request arrived."""


class FakeOpenAI(LoopbackServer[Reply, Received]):
    """The server; use it as a context manager (the ``openai_server`` fixture does)."""

    def __init__(self) -> None:
        super().__init__(default=lambda r: Reply(text="default reply"))

    def read(self, handler: BaseHTTPRequestHandler, raw: bytes) -> Received:
        """Record method, path, headers and the JSON body (text when it is not JSON)."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = dict(handler.headers.items())
        return Received(handler.command, handler.path, headers, body, time.monotonic())

    @property
    def base_url(self) -> str:
        """The provider's ``base_url``."""
        return f"{self.root}/v1"

    def enqueue(self, *replies: Reply | str) -> None:
        """Queue replies, answered in order; a string is a completion with that text."""
        for reply in replies:
            self.replies.append(Reply(text=reply) if isinstance(reply, str) else reply)
