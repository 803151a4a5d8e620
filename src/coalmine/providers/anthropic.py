"""The ``anthropic`` provider: the Anthropic Messages API over HTTP/1.1 (no SDK needed).

The API key is read at call time from the environment variable ``api_key_env`` names
(``ANTHROPIC_API_KEY`` by default), sent as ``x-api-key`` and never stored; every error is
scrubbed of it. The spec's prompt is the one user message, byte for byte; the agent's own system
prompt (``system_prompt`` or ``system_prompt_file``) goes in ``system``; ``tools`` and
``tool_choice`` are sent as written. The answer's text is its text blocks joined in order (``""``
when there are none); its ``tool_use`` blocks become ``AgentOutput.tool_calls``, in order.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from coalmine._util.hashing import hash_text
from coalmine._util.locations import HttpURL
from coalmine.errors import ProviderError
from coalmine.providers._http import (
    BODY_EXCERPT,
    HttpClient,
    HttpResponse,
    Site,
    check_response,
    json_body,
    new_client,
    send,
)
from coalmine.providers.agent_file import PersonaSettings, resolve_persona
from coalmine.providers.base import AgentRequest, finish_reason, provider
from coalmine.results import AgentOutput, ToolCall

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_TIMEOUT = 600.0
CUT_WARNING = "the answer was cut at max_tokens"


class AnthropicSettings(PersonaSettings):
    """Settings of an ``anthropic`` agent (or judge)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: HttpURL = DEFAULT_BASE_URL
    """Endpoint root; requests go to ``{base_url}/v1/messages``."""
    api_key_env: str = Field("ANTHROPIC_API_KEY", min_length=1)
    """Name of the environment variable holding the API key (the key itself is never stored)."""
    api_version: str = "2023-06-01"
    """Sent as the ``anthropic-version`` header."""
    max_tokens: int = Field(4096, gt=0)
    """The longest answer, in tokens (the API requires it); a cut answer gets a warning."""
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, gt=0, le=1)
    stop_sequences: tuple[str, ...] | None = None
    """Strings that end the answer when the model writes one."""
    tools: list[dict[str, Any]] | None = None
    """Anthropic tool definitions (``{name, description, input_schema}``), sent as is."""
    tool_choice: dict[str, Any] | None = None
    """Sent as is: ``{type: auto}``, ``{type: any}``, ``{type: none}`` or ``{type: tool, name}``."""

    @model_validator(mode="after")
    def _tool_choice_needs_tools(self) -> AnthropicSettings:
        if self.tool_choice is not None and not self.tools:
            raise ValueError("tool_choice needs tools: add the tool definitions under tools")
        return self


@provider("anthropic", settings=AnthropicSettings, retries=2)
class AnthropicProvider:
    """Calls ``POST {base_url}/v1/messages``."""

    def __init__(self, *, agent: str, settings: BaseModel, base_dir: Path):
        assert isinstance(settings, AnthropicSettings)
        self.agent = agent
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/v1/messages"
        persona = resolve_persona(agent, settings, base_dir)
        self.model, self.system_prompt = persona.model, persona.system_prompt
        self._client: HttpClient | None = None

    def _body(self, request: AgentRequest) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": s.max_tokens,
            "messages": request.messages(),
        }
        optional = {
            "system": self.system_prompt,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "stop_sequences": list(s.stop_sequences) if s.stop_sequences is not None else None,
            "tools": s.tools,
            "tool_choice": s.tool_choice,
        }
        return body | {k: v for k, v in optional.items() if v is not None}

    def _api_key(self) -> str:
        name = self.settings.api_key_env
        key = os.environ.get(name)
        if not key:
            raise Site(self.agent, "anthropic").error(
                f"the environment variable {name} (api_key_env) is not set; "
                f"export {name}=<your Anthropic API key> and run again",
                kind="config",
            )
        return key

    async def call(self, request: AgentRequest) -> AgentOutput:
        """Send one message and return the answer's text, model, usage and warnings."""
        key = self._api_key()
        site = Site(self.agent, "anthropic", (key,))
        headers = {"x-api-key": key, "anthropic-version": self.settings.api_version}
        if self._client is None:
            self._client = new_client()
        response = await send(
            self._client,
            "POST",
            self.url,
            site,
            timeout=request.timeout or DEFAULT_TIMEOUT,
            json=self._body(request),
            headers=headers,
        )
        _check(response, site)
        payload = json_body(response, site)
        try:
            text, tool_calls = _read_content(payload["content"])
        except (KeyError, TypeError, AttributeError) as exc:
            raise site.error(
                f"unexpected response from {self.url} ({type(exc).__name__}: {exc}): "
                f"{response.text[:300]}",
                kind="bad_output",
            ) from None
        cut = payload.get("stop_reason") == "max_tokens"
        return AgentOutput(
            text=text,
            model=payload.get("model") or self.model,
            usage=_usage(payload.get("usage")),
            warnings=[CUT_WARNING] if cut else [],
            tool_calls=tool_calls,
            finish_reason=finish_reason(payload.get("stop_reason")),
        )

    def cache_identity(self) -> dict[str, Any]:
        """What shapes this agent's answer besides the prompt (never the API key)."""
        # Every setting but where the key lives, so a new sampling setting cannot be missed.
        shaping = self.settings.model_dump(
            mode="json",
            exclude={"api_key_env", "system_prompt", "system_prompt_file", "agent_file", "model"},
        )
        system = hash_text(self.system_prompt) if self.system_prompt is not None else None
        return {"provider": "anthropic", **shaping, "model": self.model, "system_prompt": system}

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _check(response: HttpResponse, site: Site) -> None:
    """``check_response``, with an Anthropic error body said as ``type: message``."""
    try:
        check_response(response, site)
    except ProviderError as exc:
        try:
            error = response.json()["error"]
            detail = f"{error['type']}: {error['message']}"[:BODY_EXCERPT]
        except (ValueError, LookupError, TypeError):
            raise exc from None
        request_id = response.headers.get("request-id")
        where = f" (request-id {request_id})" if request_id else ""
        raise site.error(
            f"HTTP {response.status_code} from {response.url}{where}: {detail}",
            kind=exc.kind,
            retryable=exc.retryable,
            retry_after=exc.retry_after,
        ) from None


def _read_content(content: Any) -> tuple[str, list[ToolCall]]:
    """The text blocks joined, and the ``tool_use`` blocks as tool calls; other blocks skipped."""
    if not isinstance(content, list):
        raise TypeError(f"content is {type(content).__name__}, not a list of blocks")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            if not isinstance(block["text"], str):
                raise TypeError(f"a text block holds {type(block['text']).__name__}")
            texts.append(block["text"])
        elif kind == "tool_use":
            name, arguments = block["name"], block["input"]
            if not isinstance(name, str) or not isinstance(arguments, dict):
                raise TypeError("a tool_use block needs a name (string) and an input (object)")
            call_id = block.get("id")
            calls.append(
                ToolCall(name=name, arguments=arguments, id=str(call_id) if call_id else None)
            )
    return "".join(texts), calls


def _usage(usage: Any) -> dict[str, int] | None:
    """Anthropic's counts, plus OpenAI's names: prompt tokens include cache reads and writes."""
    if not isinstance(usage, dict):
        return None
    counts = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    if "input_tokens" in counts:
        inputs = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        counts["prompt_tokens"] = sum(counts.get(k, 0) for k in inputs)
    if "output_tokens" in counts:
        counts["completion_tokens"] = counts["output_tokens"]
    if "prompt_tokens" in counts and "completion_tokens" in counts:
        counts["total_tokens"] = counts["prompt_tokens"] + counts["completion_tokens"]
    return counts
