"""promptfoo's model providers (``openai:``, ``anthropic:``, ``ollama:``) as coalmine agents.

Each reads the provider's ``config`` as promptfoo 0.121.20 does and writes the settings of
coalmine's ``openai`` or ``anthropic`` provider. What promptfoo sends without being asked is
written out: ``temperature: 0`` and ``max_tokens: 1024`` (``openai`` chat models and
``anthropic``; not for OpenAI reasoning models, ``o1``/``o3``/``o4``/``gpt-5``, which get
neither). promptfoo lets ``OPENAI_TEMPERATURE``, ``OPENAI_MAX_TOKENS``,
``ANTHROPIC_TEMPERATURE`` and ``ANTHROPIC_MAX_TOKENS`` change those defaults, and reads the
endpoint from ``OPENAI_API_HOST`` and ``OPENAI_API_BASE_URL`` too: the agents read only
``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL`` and ``OLLAMA_BASE_URL``. A config key coalmine has no
setting for becomes a note; an API key written in the config is never copied (coalmine reads
keys from the environment). Where promptfoo parses a prompt written as a JSON (or ``- role:``
YAML) list of chat messages, coalmine sends the prompt as one user message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Found", "literal", "map_anthropic", "map_ollama", "map_openai"]

OPENAI_URL = "${OPENAI_BASE_URL:-https://api.openai.com/v1}"
ANTHROPIC_URL = "${ANTHROPIC_BASE_URL:-https://api.anthropic.com}"
OLLAMA_URL = "${OLLAMA_BASE_URL:-http://localhost:11434}/v1"
DEFAULT_MAX_TOKENS = 1024
OPENAI_DEFAULT_MODEL = "gpt-4.1-2025-04-14"
"""promptfoo's model for ``openai:chat`` and ``openai:responses`` without a model name."""
_OPENAI_OTHER_APIS = {
    "embedding", "embeddings", "completion", "moderation", "realtime", "transcription", "tts",
    "speech", "image", "video", "assistant", "agents", "chatkit", "codex", "codex-sdk",
    "codex-app-server", "codex-desktop",
}  # fmt: skip
_TOOL_CHOICES = ("auto", "none", "required")
_ENV_KEY = re.compile(r"^\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")


@dataclass
class Found:
    """An agent entry being written, with what could not be carried over."""

    agent: dict[str, Any] | None = None
    problem: str | None = None
    notes: list[str] = field(default_factory=list)


def literal(value: Any) -> Any:
    """``value`` for coalmine.yaml, whose strings expand ``${VAR}``: every ``${`` kept literal."""
    if isinstance(value, str):
        return value.replace("${", "$${")
    if isinstance(value, Mapping):
        return {k: literal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [literal(v) for v in value]
    return value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive_int(value: Any) -> bool:
    return _integer(value) and bool(value > 0)


def _unused(config: Mapping[str, Any], used: set[str], provider: str, found: Found) -> None:
    for key in config:
        if key not in used:
            found.notes.append(
                f"config.{key} has no setting in coalmine's {provider} provider: not sent"
            )


def _api_key_env(config: Mapping[str, Any], default: str | None, found: Found) -> str | None:
    """The variable holding the key: an unrendered ``{{ env.X }}`` names it, else the default."""
    key = config.get("apiKey")
    if isinstance(key, str) and (match := _ENV_KEY.match(key.strip())):
        return match.group(1)
    if key:
        found.notes.append(
            f"config.apiKey is not copied (coalmine reads keys from the environment): "
            f"export it as {default or 'the variable named by api_key_env'}"
        )
    return default


def _reasoning(model: str) -> bool:
    name = re.sub(r"(^|/)ft:", r"\1", model)
    return name.startswith(("o1", "o3", "o4", "gpt-5")) or any(
        f"/{p}" in name for p in ("o1", "o3", "o4", "gpt-5")
    )


def map_openai(implementation: str, config: Mapping[str, Any]) -> Found:
    """``openai:<model>``, ``openai:chat:<model>`` and ``openai:responses:<model>``."""
    found = Found()
    parts = implementation.split(":")
    kind, name = parts[1] if len(parts) > 1 else "", ":".join(parts[2:])
    configured = config.get("model") if isinstance(config.get("model"), str) else None
    if kind in _OPENAI_OTHER_APIS:
        found.problem = (
            f"promptfoo's OpenAI {kind!r} provider is not a chat model: coalmine's openai "
            "provider calls chat completions only"
        )
        return found
    if kind in ("chat", "responses"):
        model = name or (configured or "").strip() or OPENAI_DEFAULT_MODEL
    else:
        model = kind
    if not model:
        found.problem = "no model: write openai:chat:<model>"
        return found
    if kind == "responses":
        found.notes.append(
            "promptfoo calls the Responses API; coalmine's openai agent calls chat completions"
        )
    agent: dict[str, Any] = {"provider": "openai", "model": literal(model)}
    used = {"model", "apiHost", "apiBaseUrl", "apiKey", "apiKeyEnvar", "apiKeyRequired"}
    used |= {"omitDefaults", "temperature", "max_tokens", "seed"}
    if isinstance(config.get("apiHost"), str) and config["apiHost"]:
        agent["base_url"] = literal(f"https://{config['apiHost']}/v1")
    elif isinstance(config.get("apiBaseUrl"), str) and config["apiBaseUrl"]:
        agent["base_url"] = literal(config["apiBaseUrl"])
    else:
        agent["base_url"] = OPENAI_URL
    envar = config.get("apiKeyEnvar")
    default_env = envar if isinstance(envar, str) and envar else "OPENAI_API_KEY"
    key_env = _api_key_env(config, default_env, found)
    if config.get("apiKeyRequired") is not False:
        agent["api_key_env"] = key_env
    omit = config.get("omitDefaults") is True
    if _reasoning(model):
        for key in ("temperature", "max_tokens"):
            if key in config:
                found.notes.append(f"config.{key}: promptfoo does not send it to {model}")
    else:
        _sampling(agent, config, "temperature", None if omit else 0, found)
        _sampling(agent, config, "max_tokens", None if omit else DEFAULT_MAX_TOKENS, found)
    if "seed" in config:
        _copy_if(agent, config, "seed", _integer(config["seed"]), found)
    used |= _openai_tools(agent, config, found)
    _unused(config, used, "openai", found)
    found.agent = agent
    return found


def _sampling(
    agent: dict[str, Any], config: Mapping[str, Any], key: str, default: Any, found: Found
) -> None:
    value: Any = config.get(key)
    valid = _positive_int(value) if key == "max_tokens" else _number(value) and bool(value >= 0)
    if value is None:
        if default is not None:
            agent[key] = default
        return
    _copy_if(agent, config, key, valid, found)


def _copy_if(
    agent: dict[str, Any], config: Mapping[str, Any], key: str, valid: bool, found: Found
) -> None:
    if valid:
        agent[key] = literal(config[key])
    else:
        found.notes.append(f"config.{key} = {config[key]!r} is not a valid value: not sent")


def _openai_tools(agent: dict[str, Any], config: Mapping[str, Any], found: Found) -> set[str]:
    """``tools``, ``tool_choice`` and ``response_format``, when coalmine can send them as is."""
    tools, choice, fmt = (
        config.get("tools"),
        config.get("tool_choice"),
        config.get("response_format"),
    )
    if tools is not None:
        listed = isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
        _copy_if(agent, config, "tools", listed and bool(tools), found)
    if choice is not None:
        valid = choice in _TOOL_CHOICES or isinstance(choice, dict)
        _copy_if(agent, config, "tool_choice", valid and "tools" in agent, found)
    if fmt is not None:
        typed = isinstance(fmt, dict) and isinstance(fmt.get("type"), str)
        _copy_if(agent, config, "response_format", typed, found)
    return {"tools", "tool_choice", "response_format"}


def map_anthropic(implementation: str, config: Mapping[str, Any]) -> Found:
    """``anthropic:messages:<model>`` and the ``anthropic:<model>`` shorthand."""
    found = Found()
    parts = implementation.split(":")
    kind = parts[1] if len(parts) > 1 else ""
    if kind.startswith(("claude-agent-sdk", "claude-code")):
        found.problem = "promptfoo's Claude Agent SDK provider runs an agent loop: not supported"
        return found
    if kind == "completion" or kind in ("claude-2.0", "claude-2.1"):
        found.problem = "the Anthropic Text Completions API is not supported (use messages)"
        return found
    model = (parts[2] if len(parts) > 2 else "") if kind == "messages" else kind
    if not model:
        found.problem = "no model: write anthropic:messages:<model>"
        return found
    agent: dict[str, Any] = {"provider": "anthropic", "model": literal(model)}
    used = {"apiKey", "apiKeyRequired", "apiBaseUrl", "max_tokens", "temperature", "top_p"}
    used |= {"stop_sequences", "tools", "tool_choice"}
    url = config.get("apiBaseUrl")
    agent["base_url"] = literal(url) if isinstance(url, str) and url else ANTHROPIC_URL
    agent["api_key_env"] = _api_key_env(config, "ANTHROPIC_API_KEY", found)
    if config.get("apiKeyRequired") is False:
        found.notes.append("apiKeyRequired: false (Claude Code credentials) is not supported")
    _sampling(agent, config, "max_tokens", DEFAULT_MAX_TOKENS, found)
    top_p = config.get("top_p")
    if top_p is not None:
        _copy_if(agent, config, "top_p", _number(top_p) and 0 < top_p <= 1, found)
    if "top_p" in agent:
        if config.get("temperature") is not None:
            found.notes.append("config.temperature: promptfoo leaves it out beside top_p")
    else:
        temperature = config.get("temperature", 0)
        valid = _number(temperature) and 0 <= temperature <= 1
        if valid:
            agent["temperature"] = temperature
        else:
            found.notes.append(f"config.temperature = {temperature!r} is not valid: not sent")
    stops = config.get("stop_sequences")
    if stops:
        listed = isinstance(stops, list) and all(isinstance(s, str) for s in stops)
        _copy_if(agent, config, "stop_sequences", listed, found)
    _anthropic_tools(agent, config, found)
    _unused(config, used, "anthropic", found)
    found.agent = agent
    return found


def _anthropic_tools(agent: dict[str, Any], config: Mapping[str, Any], found: Found) -> None:
    """Tools in OpenAI's form become Anthropic's, as promptfoo converts them."""
    tools, choice = config.get("tools"), config.get("tool_choice")
    if tools is not None:
        if isinstance(tools, list) and tools and all(isinstance(t, dict) for t in tools):
            agent["tools"] = literal(
                [_anthropic_tool(t) for t in tools] if _openai_form(tools) else tools
            )
        else:
            found.notes.append(f"config.tools = {tools!r} is not a list of tools: not sent")
    if choice is not None:
        converted = _anthropic_choice(choice)
        if converted is not None and "tools" in agent:
            agent["tool_choice"] = literal(converted)
        else:
            found.notes.append(f"config.tool_choice = {choice!r} cannot be sent: not sent")


def _openai_form(tools: list[dict[str, Any]]) -> bool:
    """Tell promptfoo's way: the first tool is ``{type: function, function: {name: …}}``."""
    function = tools[0].get("function")
    return (
        tools[0].get("type") == "function"
        and isinstance(function, dict)
        and (isinstance(function.get("name"), str))
    )


def _anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    converted: dict[str, Any] = {"name": function.get("name")}
    if function.get("description"):
        converted["description"] = function["description"]
    converted["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return converted


def _anthropic_choice(choice: Any) -> dict[str, Any] | None:
    if isinstance(choice, str):
        return {
            "auto": {"type": "auto"},
            "none": {"type": "none"},
            "required": {"type": "any"},
        }.get(choice)
    if not isinstance(choice, dict):
        return None
    function = choice.get("function")
    if choice.get("type") == "function" and isinstance(function, dict):
        name = function.get("name")
        return {"type": "tool", "name": name} if isinstance(name, str) else None
    return choice


def map_ollama(implementation: str, config: Mapping[str, Any]) -> Found:
    """``ollama:chat:<model>``, ``ollama:completion:<model>`` and ``ollama:<model>``."""
    found = Found()
    parts = implementation.split(":")
    kind = parts[1] if len(parts) > 1 else ""
    if kind in ("embedding", "embeddings"):
        found.problem = "promptfoo's Ollama embedding provider is not a chat model"
        return found
    model = ":".join(parts[2:]) if kind in ("chat", "completion") else ":".join(parts[1:])
    if not model:
        found.problem = "no model: write ollama:chat:<model>"
        return found
    api = "/api/chat" if kind == "chat" else "/api/generate (a completion)"
    found.notes.append(
        f"promptfoo calls Ollama's {api}; coalmine sends the prompt as one chat message to "
        "its OpenAI-compatible /v1/chat/completions (OLLAMA_API_KEY is not sent)"
    )
    agent: dict[str, Any] = {"provider": "openai", "model": literal(model), "base_url": OLLAMA_URL}
    for source, target in (("temperature", "temperature"), ("num_predict", "max_tokens")):
        value = config.get(source)
        if value is not None:
            valid = (
                _positive_int(value) if target == "max_tokens" else _number(value) and value >= 0
            )
            if valid:
                agent[target] = value
            else:
                found.notes.append(f"config.{source} = {value!r} is not valid: not sent")
    if "seed" in config:
        _copy_if(agent, config, "seed", _integer(config["seed"]), found)
    _unused(config, {"temperature", "num_predict", "seed"}, "openai", found)
    found.agent = agent
    return found
