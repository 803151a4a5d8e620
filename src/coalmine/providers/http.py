"""The ``http`` provider: a generic JSON agent service, called as production calls it.

The request comes from templates: ``{{prompt}}``, ``{{case_id}}`` and ``{{agent}}`` in any
string value of ``body`` (or in ``url``, percent-encoded) are replaced in a single pass, so text
that came from the prompt is never expanded again. The answer's text is read at
``response_path``: dotted (``choices.0.message.content``) or a small, safe JSONPath subset
(``$.a.b[0].c``, ``$['a b']``; no wildcards, filters or evaluation). Header values written as
``{env: NAME}`` are read from the environment at each call and, like plain values of headers
whose names mark credentials, are secrets: scrubbed from errors; the cache identity holds a
digest of a plain one and nothing of the other.
``tool_calls_path`` points at a list of tool calls, each ``{"name", "arguments"}`` or
OpenAI-style ``{"function": {"name", "arguments": "<JSON>"}}``; when the service made calls the
text may be empty or missing.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from coalmine._util.jsonpath import PathNotFound, lookup, parse_path, render_path
from coalmine._util.locations import HttpURL
from coalmine._util.secrets import secret_digest, sensitive_header
from coalmine.errors import ProviderError
from coalmine.providers._http import HttpClient, Site, check_response, json_body, new_client, send
from coalmine.providers._tools import decode_arguments, json_kind
from coalmine.providers.base import AgentRequest, provider
from coalmine.results import AgentOutput, ToolCall

PLACEHOLDERS = ("prompt", "case_id", "agent")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_DEFAULT_BODY: dict[str, JsonValue] = {"prompt": "{{prompt}}"}


class EnvHeader(BaseModel):
    """A header value read from the environment at call time (a secret: never stored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env: str = Field(min_length=1)
    """Name of the environment variable holding the value."""
    prefix: str = ""
    """Text sent before the value, e.g. ``"Bearer "``."""


class HttpSettings(BaseModel):
    """Settings of an ``http`` agent: a JSON service reached by one request per prompt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: HttpURL
    """Endpoint; ``{{prompt}}``, ``{{case_id}}`` and ``{{agent}}`` here are percent-encoded."""
    method: Literal["GET", "POST", "PUT", "PATCH"] = "POST"
    """HTTP method; ``GET`` sends no body, so its ``url`` must hold ``{{prompt}}``."""
    headers: dict[str, str | EnvHeader] = {}
    """Header name → value, or ``{env: NAME, prefix: "Bearer "}`` to read it at call time."""
    body: JsonValue = Field(default_factory=lambda: _DEFAULT_BODY.copy())
    """JSON template; placeholders in its string values are replaced (keys are left alone)."""
    response_path: str = "output"
    """Where the text is: ``output.text``, ``choices.0.message.content`` or ``$['a b'][0]``."""
    tool_calls_path: str | None = None
    """Where a list of tool calls is: ``{name, arguments}`` or ``{function: {name, arguments}}``."""

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("response_path", "tool_calls_path")
    @classmethod
    def _valid_path(cls, value: str | None) -> str | None:
        if value is not None:
            parse_path(value)
        return value

    @field_validator("url", "body")
    @classmethod
    def _known_placeholders(cls, value: JsonValue) -> JsonValue:
        found = {name for text in _strings(value) for name in _PLACEHOLDER.findall(text)}
        unknown = sorted(found - set(PLACEHOLDERS))
        if unknown:
            known = ", ".join("{{" + p + "}}" for p in PLACEHOLDERS)
            raise ValueError(f"unknown placeholder {{{{{unknown[0]}}}}}; known: {known}")
        return value

    @model_validator(mode="after")
    def _prompt_is_sent(self) -> HttpSettings:
        if self.method == "GET" and "body" in self.model_fields_set:
            raise ValueError("GET sends no body; put {{prompt}} in the url, or use POST")
        sent = [self.url, *(_strings(self.body) if self.method != "GET" else [])]
        if not any("prompt" in _PLACEHOLDER.findall(text) for text in sent):
            where = "the url (e.g. ?q={{prompt}})" if self.method == "GET" else "body or url"
            raise ValueError(f"the prompt is sent nowhere: put {{{{prompt}}}} in {where}")
        return self

    def secret_env_names(self) -> list[str]:
        """The environment variables whose values are secrets (for the runner to scrub)."""
        return [v.env for v in self.headers.values() if isinstance(v, EnvHeader)]


@provider("http", settings=HttpSettings, retries=2)
class HttpProvider:
    """Sends one templated JSON request per prompt and reads the text at ``response_path``."""

    def __init__(self, *, agent: str, settings: BaseModel, base_dir: Path):
        assert isinstance(settings, HttpSettings)
        self.agent = agent
        self.settings = settings
        self._path = parse_path(settings.response_path)
        tools = settings.tool_calls_path
        self._tools_path = parse_path(tools) if tools is not None else None
        self._client: HttpClient | None = None

    async def call(self, request: AgentRequest) -> AgentOutput:
        """Send the request built from the templates and return the text it answers."""
        headers, secrets = self._headers()
        site = Site(self.agent, "http", tuple(secrets))
        ctx = request.context
        values = {"prompt": request.prompt, "case_id": ctx.case_id, "agent": ctx.agent}
        url = _PLACEHOLDER.sub(lambda m: quote(values[m.group(1)], safe=""), self.settings.url)
        body = None if self.settings.method == "GET" else _fill(self.settings.body, values)
        timeout = request.timeout or 600.0
        if self._client is None:
            self._client = new_client()
        response = await send(
            self._client,
            self.settings.method,
            url,
            site,
            timeout=timeout,
            shown_url=self.settings.url,
            json=body,
            headers=headers,
        )
        check_response(response, site)
        return self._output(json_body(response, site), site)

    def cache_identity(self) -> dict[str, Any]:
        """What shapes the answer besides the prompt: never a secret header value.

        A credential header's value is there as its digest (a new key is a new identity); a
        header read at call time is not there at all.
        """
        s = self.settings
        headers = {
            name: (secret_digest(value) if sensitive_header(name) else value)
            if isinstance(value, str)
            else None
            for name, value in sorted(s.headers.items())
        }
        return {
            "provider": "http",
            "url": s.url,
            "method": s.method,
            "headers": headers,
            "body": s.body if s.method != "GET" else None,
            "response_path": s.response_path,
            "tool_calls_path": s.tool_calls_path,
        }

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _headers(self) -> tuple[dict[str, str], list[str]]:
        headers: dict[str, str] = {}
        secrets: list[str] = []
        for name, value in self.settings.headers.items():
            if isinstance(value, str):
                headers[name] = value
                if sensitive_header(name) and value.split():
                    secrets += [value, value.split()[-1]]  # "Bearer KEY": the key alone too
                continue
            secret = os.environ.get(value.env)
            if not secret:
                raise ProviderError(
                    f"the environment variable {value.env} (header {name!r}) is not set; "
                    f"export {value.env}=<value> and run again",
                    agent=self.agent,
                    provider="http",
                    kind="config",
                )
            headers[name] = value.prefix + secret
            secrets.append(secret)
        return headers, secrets

    def _output(self, payload: Any, site: Site) -> AgentOutput:
        warnings: list[str] = []
        calls = self._tool_calls(payload, site, warnings)
        spec = self.settings.response_path
        try:
            value = lookup(payload, self._path)
        except PathNotFound as miss:
            if calls:  # a turn of tool calls only: services often send no text at all
                return AgentOutput(text="", tool_calls=calls, warnings=warnings)
            at = (
                repr(render_path(self._path[: miss.depth], spec)) if miss.depth else "the top level"
            )
            message = f"response_path {spec!r} not found in the response: at {at}, {miss.reason}"
            raise site.error(message, kind="bad_output") from None
        if value is None and calls:
            return AgentOutput(text="", tool_calls=calls, warnings=warnings)
        text, warning = _as_text(value, f"response_path {spec!r}")
        return AgentOutput(
            text=text, tool_calls=calls, warnings=([warning] if warning else []) + warnings
        )

    def _tool_calls(self, payload: Any, site: Site, warnings: list[str]) -> list[ToolCall]:
        if self._tools_path is None:
            return []
        spec = self.settings.tool_calls_path
        try:
            items = lookup(payload, self._tools_path)
        except PathNotFound:
            return []  # services commonly leave the key out when no tool was called
        if items is None:
            return []
        if not isinstance(items, list):
            message = f"tool_calls_path {spec!r} holds {json_kind(items)}, not a list"
            raise site.error(message, kind="bad_output")
        calls = []
        for index, item in enumerate(items):
            try:
                calls.append(_tool_call(item, f"tool call {index}", warnings))
            except (ValueError, TypeError) as exc:
                message = (
                    f"tool_calls_path {spec!r}, item {index}: {exc}; expected "
                    '{"name": …, "arguments": {…}} or {"function": {"name": …, "arguments": …}}'
                )
                raise site.error(message, kind="bad_output") from None
        return calls


def _tool_call(item: Any, where: str, warnings: list[str]) -> ToolCall:
    """One item of the list: flat ``{name, arguments}`` or OpenAI's ``{function: {…}}``."""
    if not isinstance(item, dict):
        raise ValueError(f"{json_kind(item)}, not an object")
    function = item.get("function")
    fields = function if isinstance(function, dict) else item
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("no name")
    call_id = item.get("id")
    arguments = decode_arguments(fields.get("arguments"), f"{where} ({name})", warnings)
    return ToolCall(name=name, arguments=arguments, id=str(call_id) if call_id else None)


def _as_text(value: Any, where: str) -> tuple[str, str | None]:
    if isinstance(value, str):
        return value, None
    if value is None:
        return "", f"{where} is null; the text is empty"
    as_json = isinstance(value, dict | list | bool)
    text = json.dumps(value, ensure_ascii=False) if as_json else str(value)
    how = "converted to JSON" if as_json else "converted with str()"
    return text, f"{where} holds {json_kind(value)}, not text; {how}"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [text for item in items for text in _strings(item)]


def _fill(template: JsonValue, values: dict[str, str]) -> JsonValue:
    """Replace the placeholders in every string of ``template`` (one pass: no re-expansion)."""
    if isinstance(template, str):
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
    if isinstance(template, list):
        return [_fill(item, values) for item in template]
    if isinstance(template, dict):
        return {key: _fill(item, values) for key, item in template.items()}
    return template
