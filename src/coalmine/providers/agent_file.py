"""Agent definitions in markdown with YAML front matter (the ``.claude/agents/*.md`` form).

::

    ---
    name: analyst
    description: Turns a request into requirements.
    model: gpt-4o-mini
    tools: Read, Grep        (or a YAML list)
    ---
    You are the analyst. ...      <- the body: the system prompt

The body after the closing ``---`` line is the system prompt, kept exactly (line endings read
as LF, as for ``system_prompt_file``). Keys other than ``name``, ``description``, ``model`` and
``tools`` are ignored, not rejected: these files are shared with other tools (Claude Code adds
``color``, ``permissionMode`` …) and are not coalmine specs. ``model: inherit`` (or no
``model``) leaves the caller's model as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from coalmine._source import safe_load
from coalmine._util.locations import ProjectFile
from coalmine.errors import ConfigError

_DELIMITER = re.compile(r"---[ \t]*\r?\n?")
_INHERIT = "inherit"


@dataclass(frozen=True)
class AgentDefinition:
    """An agent read from a markdown file: who it is, its model and tools, its system prompt."""

    name: str
    description: str | None
    model: str | None
    """``None`` when the file gives none (or ``inherit``): the caller's setting stays."""
    tools: list[str]
    """Tool names in the file's order; empty when the file lists none."""
    system_prompt: str
    """The body after the front matter, exactly (line endings read as LF)."""
    path: Path


def load_agent_file(path: Path) -> AgentDefinition:
    """Read an agent definition; every problem is a ``ConfigError`` with the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"agent file is not valid UTF-8 ({exc.reason})", path=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read agent file: {exc.strerror}", path=path) from None
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or not _DELIMITER.fullmatch(lines[0]):
        raise ConfigError(
            "no YAML front matter: the file must start with a '---' line, then name:, "
            "description:, model: and tools:, then a closing '---' line and the system prompt",
            path=path,
            line=1,
        )
    end = next((i for i in range(1, len(lines)) if _DELIMITER.fullmatch(lines[i])), None)
    if end is None:
        raise ConfigError(
            "the front matter opened at line 1 is never closed: add a '---' line after it",
            path=path,
            line=1,
        )
    front = "".join(lines[1:end])
    data = _parse_front(front, path)
    where = _KeyLines(lines[1:end], path)
    name = _text(data, "name", where)
    if name is None or not name.strip():
        raise where.error("name", "the front matter needs a 'name:' (the agent's name)")
    model = _text(data, "model", where)
    return AgentDefinition(
        name=name,
        description=_text(data, "description", where),
        model=None if model in (None, _INHERIT) else model,
        tools=_tools(data.get("tools"), where),
        system_prompt="".join(lines[end + 1 :]),
        path=path,
    )


def _parse_front(front: str, path: Path) -> dict[str, Any]:
    try:
        data = safe_load(front)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark is not None else None  # +1 for 1-based, +1 for the '---'
        problem = exc.problem or exc.context or "invalid YAML"
        message = f"invalid YAML in the front matter: {problem}"
        raise ConfigError(message, path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML in the front matter: {exc}", path=path, line=1) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"the front matter must be a mapping of keys (name:, model: …), "
            f"not {type(data).__name__}",
            path=path,
            line=2,
        )
    return data


@dataclass(frozen=True)
class _KeyLines:
    """Finds the line of a top-level key, for errors (``safe_load`` keeps no positions)."""

    lines: list[str]
    path: Path

    def error(self, key: str, message: str) -> ConfigError:
        pattern = re.compile(rf"""['"]?{re.escape(key)}['"]?\s*:""")
        line = next((i + 2 for i, t in enumerate(self.lines) if pattern.match(t)), 1)
        return ConfigError(message, path=self.path, line=line)


def _text(data: dict[str, Any], key: str, where: _KeyLines) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        kind = type(value).__name__
        raise where.error(key, f"'{key}' must be text, not {kind} (quote it if needed)")
    return value


def _tools(value: Any, where: _KeyLines) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [tool.strip() for tool in value.split(",") if tool.strip()]
    if isinstance(value, list) and all(isinstance(tool, str) for tool in value):
        return [tool.strip() for tool in value if tool.strip()]
    raise where.error("tools", "'tools' must be a comma-separated string or a list of tool names")


class PersonaSettings(BaseModel):
    """Who a model agent is: its model and its system prompt.

    The system prompt is inline, from a file, or from an agent-definition file
    (``agent_file: .claude/agents/analyst.md``). Shared by ``openai`` and ``anthropic``.
    """

    model: str | None = Field(None, min_length=1)
    """Model name sent with each request (optional when ``agent_file`` names one)."""
    system_prompt: str | None = None
    """The agent's system prompt."""
    system_prompt_file: ProjectFile | None = None
    """Path of a file whose text is the system prompt (relative to the config file)."""
    agent_file: ProjectFile | None = None
    """A markdown agent definition with YAML front matter: its body is the system prompt and
    its ``model`` is used unless ``model`` is set here."""

    @field_validator("agent_file")
    @classmethod
    def _readable(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Read the agent file when the config loads, so a broken one is found then."""
        base = (info.context or {}).get("base_dir")
        if value is not None and base is not None:
            try:
                load_agent_file(base / value)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _one_system_prompt(self) -> PersonaSettings:
        given = [
            k for k in ("system_prompt", "system_prompt_file", "agent_file") if getattr(self, k)
        ]
        if len(given) > 1:
            raise ValueError(
                "give only one of system_prompt, system_prompt_file and agent_file "
                f"({' and '.join(given)} are set)"
            )
        if self.model is None and self.agent_file is None:
            raise ValueError("model is required (or an agent_file that names one)")
        return self


@dataclass(frozen=True)
class Persona:
    """The resolved model and system prompt of an agent."""

    model: str
    system_prompt: str | None


def resolve_persona(agent: str, settings: PersonaSettings, base_dir: Path) -> Persona:
    """Read the system prompt file or agent file (relative to ``base_dir``).

    Raises:
        ConfigError: a file cannot be read, or no model is named anywhere.
    """
    if settings.agent_file is not None:
        definition = load_agent_file(base_dir / settings.agent_file)
        model = settings.model or definition.model
        if model is None:
            raise ConfigError(
                f"agent {agent!r}: no model: set 'model:' or name one in {definition.path}",
                path=definition.path,
            )
        return Persona(model, definition.system_prompt)
    assert settings.model is not None  # the validator guarantees it without agent_file
    system = settings.system_prompt
    if settings.system_prompt_file is not None:
        path = base_dir / settings.system_prompt_file
        try:
            system = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"agent {agent!r}: cannot read system_prompt_file {str(path)!r}: {exc.strerror}"
            ) from None
    return Persona(settings.model, system)
