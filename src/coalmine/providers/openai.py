"""The ``openai`` provider: any OpenAI-compatible chat-completions endpoint, over HTTP/1.1.

The API key is read from the environment variable the config names (``api_key_env``) at call
time and is never stored, logged or put in an error: messages are scrubbed of it. The spec's
prompt is the user message byte for byte; the only other message is the agent's own system
prompt (``system_prompt`` or ``system_prompt_file``), as production would send it. A case with
earlier ``turns`` is sent as that conversation: its turns, then the prompt as the last user
message.

``tools``, ``tool_choice`` and ``response_format`` are sent as written. The answer's
``tool_calls`` become ``AgentOutput.tool_calls``; the text is only the message content. Where
the answer is more than text, ``AgentOutput.data`` holds it as OpenAI-speaking tools (promptfoo's
chat provider) read it: the parsed JSON of a ``json_schema`` reply, the message itself when it
has text beside tool calls, the raw ``tool_calls`` when it has none. Servers
differ: OpenAI and vLLM send ``arguments`` as a JSON string, llama.cpp (and some vLLM versions)
as an object; Ollama may leave out the call ``id`` and ``usage``; the content beside tool calls
is ``null`` or ``""``. All of these are read alike.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from coalmine._util.hashing import hash_text
from coalmine._util.locations import HttpURL
from coalmine.errors import ProviderError
from coalmine.providers._http import HttpClient, Site, check_response, json_body, new_client, send
from coalmine.providers._tools import decode_arguments
from coalmine.providers.agent_file import PersonaSettings, resolve_persona
from coalmine.providers.base import AgentRequest, finish_reason, provider
from coalmine.results import AgentOutput, ToolCall

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAISettings(PersonaSettings):
    """Settings of an ``openai`` agent (or judge)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: HttpURL = DEFAULT_BASE_URL
    """Endpoint root, e.g. ``http://127.0.0.1:8000/v1`` for vLLM or llama.cpp."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (the key itself is never stored)."""
    temperature: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, gt=0)
    seed: int | None = None
    tools: list[dict[str, Any]] | None = None
    """OpenAI tool definitions (``{type: function, function: {name, parameters}}``), sent as is."""
    tool_choice: Literal["auto", "none", "required"] | dict[str, Any] | None = None
    """``auto``, ``none``, ``required`` or ``{type: function, function: {name: …}}``."""
    response_format: dict[str, Any] | None = None
    """Sent as is, e.g. ``{type: json_schema, json_schema: {name, schema, strict}}``."""

    @model_validator(mode="after")
    def _tool_choice_needs_tools(self) -> OpenAISettings:
        if self.tool_choice is not None and not self.tools:
            raise ValueError("tool_choice needs tools: add the tool definitions under tools")
        if self.response_format is not None and not isinstance(
            self.response_format.get("type"), str
        ):
            raise ValueError(
                "response_format needs a type: {type: json_object}, or {type: json_schema, "
                "json_schema: {name: …, schema: {…}}}"
            )
        return self


@provider("openai", settings=OpenAISettings, retries=2)
class OpenAIProvider:
    """Calls ``POST {base_url}/chat/completions``."""

    def __init__(self, *, agent: str, settings: BaseModel, base_dir: Path):
        assert isinstance(settings, OpenAISettings)
        self.agent = agent
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        persona = resolve_persona(agent, settings, base_dir)
        self.model, self.system_prompt = persona.model, persona.system_prompt
        self._client: HttpClient | None = None

    def _body(self, request: AgentRequest) -> dict[str, Any]:
        messages = []
        if self.system_prompt is not None:
            messages.append({"role": "system", "content": self.system_prompt})
        messages += request.messages()
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        for key in ("temperature", "max_tokens", "seed", "tools", "tool_choice", "response_format"):
            value = getattr(self.settings, key)
            if value is not None:
                body[key] = value
        return body

    def _api_key(self) -> str | None:
        name = self.settings.api_key_env
        if name is None:
            return None
        key = os.environ.get(name)
        if not key:
            raise ProviderError(
                f"the environment variable {name} (api_key_env) is not set; "
                f"export {name}=<your API key> and run again",
                agent=self.agent,
                provider="openai",
                kind="config",
            )
        return key

    async def call(self, request: AgentRequest) -> AgentOutput:
        """Send one chat completion and return the first choice's text."""
        key = self._api_key()
        secrets = [key] if key else []
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if self._client is None:
            self._client = new_client()
        site = Site(self.agent, "openai", tuple(secrets))
        response = await send(
            self._client,
            "POST",
            self.url,
            site,
            timeout=request.timeout or 600.0,
            json=self._body(request),
            headers=headers,
        )
        check_response(response, site)
        payload = json_body(response, site)
        warnings: list[str] = []
        try:
            message = payload["choices"][0]["message"]
            text = _message_text(message)
            tool_calls = _tool_calls(message.get("tool_calls"), warnings)
            stopped = finish_reason(payload["choices"][0].get("finish_reason"))
            data = _structured(message, self.settings.response_format)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise site.error(
                f"unexpected response from {self.url} ({type(exc).__name__}: {exc}): "
                f"{response.text[:300]}",
                kind="bad_output",
            ) from None
        usage = payload.get("usage") if isinstance(payload, dict) else None
        return AgentOutput(
            text=text,
            model=payload.get("model") or self.model,
            usage=_usage(usage),
            tool_calls=tool_calls,
            warnings=warnings,
            finish_reason=stopped,
            data=data,
        )

    def cache_identity(self) -> dict[str, Any]:
        """What shapes this agent's answer besides the prompt (never the API key)."""
        s = self.settings
        system = hash_text(self.system_prompt) if self.system_prompt is not None else None
        return {
            "provider": "openai",
            "model": self.model,
            "base_url": s.base_url,
            "system_prompt": system,
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "seed": s.seed,
            "tools": s.tools,
            "tool_choice": s.tool_choice,
            "response_format": s.response_format,
        }

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones, in order
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if content is None:  # an answer of tool calls only (some servers send "" instead)
        return ""
    raise TypeError(f"message content is {type(content).__name__}")


def _structured(message: dict[str, Any], response_format: dict[str, Any] | None) -> Any:
    """The answer when it is more than the text (else ``None``), as promptfoo reads a reply."""
    content, calls = message.get("content"), message.get("tool_calls")
    called = message.get("function_call") or calls
    answer: Any
    if content and called:
        answer = content if isinstance(calls, list) and not calls else message
    elif content is None or (content == "" and calls is not None and calls != ""):
        answer = message.get("function_call") or calls
    else:
        answer = content
    if isinstance(answer, str) and (response_format or {}).get("type") == "json_schema":
        try:
            answer = json.loads(answer, parse_constant=_not_json)
        except ValueError:
            pass  # promptfoo keeps a reply that does not parse as the text it is
    return None if isinstance(answer, str) else answer


def _not_json(word: str) -> Any:
    raise ValueError(f"{word} is not JSON")


def _tool_calls(calls: Any, warnings: list[str]) -> list[ToolCall]:
    """``message.tool_calls`` as ``ToolCall``s; a shape we cannot read raises ``TypeError``."""
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise TypeError(f"tool_calls is {type(calls).__name__}, not a list")
    result = []
    for index, call in enumerate(calls):
        function = call["function"]
        name = function["name"]
        if not isinstance(name, str) or not name:
            raise TypeError(f"tool_calls[{index}] has no function name")
        arguments = decode_arguments(
            function.get("arguments"), f"tool call {index} ({name})", warnings
        )
        call_id = call.get("id")
        result.append(ToolCall(name=name, arguments=arguments, id=_id(call_id)))
    return result


def _id(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _usage(usage: Any) -> dict[str, int] | None:
    if not isinstance(usage, dict):
        return None
    return {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
