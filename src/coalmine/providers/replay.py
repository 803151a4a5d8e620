"""Cassettes: record what agents answered, then replay it with no network at all.

A cassette is a JSON-lines file; each line is one answer, keyed by a stable hash of who was
asked and what was sent: the agent's name, the prompt and the repeat index. The provider's
identity (model, endpoint, sampling …, never a key or a header) is kept beside it, so a replay
under different settings says so in a warning instead of silently answering. Answers that quote
a secret are recorded scrubbed. This is how a fork's pull request runs evals without keys.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from coalmine._source import read_json
from coalmine._util.hashing import canonical_json, hash_text
from coalmine._util.locations import ProjectFile
from coalmine.errors import ConfigError, ProviderError
from coalmine.providers.base import AgentRequest, provider
from coalmine.results import AgentOutput


def cassette_key(agent: str, prompt: str, repeat: int = 0) -> str:
    """The key of one answer: a hash of the agent, the prompt and the repeat index."""
    return hash_text(
        canonical_json({"agent": agent, "prompt": hash_text(prompt), "repeat": repeat})
    )


@dataclass
class Cassette:
    """The answers of one cassette file."""

    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, *, must_exist: bool = True) -> Cassette:
        """Read a cassette; a damaged line is an error naming its line."""
        cassette = cls(path)
        if not path.exists():
            if must_exist:
                raise ConfigError(f"no cassette at {path}; record one first", path=path)
            return cassette
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = read_json(line)
                AgentOutput.model_validate(entry["output"])
                cassette.entries[entry["key"]] = entry
            except (ValueError, KeyError, TypeError, ValidationError) as exc:
                raise ConfigError(
                    f"damaged cassette entry ({type(exc).__name__})", path=path, line=number
                ) from None
        return cassette

    def find(self, key: str) -> dict[str, Any] | None:
        """The entry recorded under ``key``."""
        return self.entries.get(key)

    def record(
        self, *, agent: str, prompt: str, identity: dict[str, Any], output: AgentOutput
    ) -> None:
        """Append one answer (a later answer to the same request replaces the earlier one)."""
        key = cassette_key(agent, prompt)
        entry = {
            "key": key,
            "agent": agent,
            "prompt_sha256": hash_text(prompt),
            "identity": identity,
            "output": output.model_dump(mode="json"),
        }
        self.entries[key] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())


class ReplaySettings(BaseModel):
    """Settings of a ``replay`` agent: answers come from a cassette, nothing is called."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cassette: ProjectFile
    """The cassette file (relative to the config file); it must exist when the config loads."""
    agent: str | None = None
    """The agent name the answers were recorded under (default: this agent's name)."""


@provider("replay", settings=ReplaySettings)
class ReplayProvider:
    """Answers from a cassette; a request it lacks is a clear error, never a network call."""

    def __init__(
        self,
        *,
        agent: str,
        settings: BaseModel,
        base_dir: Path,
        identity: dict[str, Any] | None = None,
        cassette: Cassette | None = None,
    ):
        assert isinstance(settings, ReplaySettings)
        self.agent = agent
        self.recorded_as = settings.agent or agent
        self.cassette = cassette or Cassette.load(base_dir / settings.cassette)
        self.identity = identity

    @classmethod
    def standing_in(
        cls, agent: str, cassette: Cassette, identity: dict[str, Any] | None
    ) -> ReplayProvider:
        """Replay ``agent``'s answers in place of its real provider (``--replay``)."""
        settings = ReplaySettings(cassette=str(cassette.path), agent=agent)
        return cls(
            agent=agent, settings=settings, base_dir=Path(), identity=identity, cassette=cassette
        )

    async def call(self, request: AgentRequest) -> AgentOutput:
        """Return the recorded answer to this agent and prompt."""
        entry = self.cassette.find(cassette_key(self.recorded_as, request.prompt))
        if entry is None:
            raise ProviderError(
                f"the cassette {self.cassette.path} has no answer for case "
                f"{request.context.case_id!r} (prompt {hash_text(request.prompt)[:19]}…); "
                "record it again with --record",
                agent=self.agent,
                provider="replay",
                kind="config",
            )
        output = AgentOutput.model_validate(entry["output"])
        recorded = entry.get("identity")
        if self.identity is not None and recorded is not None and recorded != self.identity:
            changed = sorted(k for k in {*recorded, *self.identity}
                             if recorded.get(k) != self.identity.get(k))  # fmt: skip
            warning = f"replayed an answer recorded with other settings ({', '.join(changed)})"
            output = output.model_copy(update={"warnings": [*output.warnings, warning]})
        return output

    def cache_identity(self) -> dict[str, Any]:
        """Replayed answers are keyed like the agent they stand in for."""
        return self.identity or {"provider": "replay", "agent": self.recorded_as}

    async def aclose(self) -> None:
        """Nothing to release."""
