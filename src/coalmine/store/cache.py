"""The response cache: agent and judge answers, keyed on everything that shapes the answer.

The key is the hash of the provider's identity (provider, model, base URL, system prompt,
sampling parameters, argv …), the prompt and the repeat index. An entry that cannot be read
back whole is a miss, never a crash. On a miss the cache can say why: which part of the key
differs from the nearest entry it holds.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from coalmine._util.hashing import canonical_json, hash_text
from coalmine.results import AgentOutput
from coalmine.store.db import transaction
from coalmine.store.runs import Store


@dataclass(frozen=True)
class CacheKey:
    """The parts of a cache key."""

    identity: dict[str, Any]
    prompt: str
    repeat: int = 0

    @property
    def components(self) -> dict[str, Any]:
        """What is hashed (the prompt by its hash)."""
        return {"identity": self.identity, "prompt": hash_text(self.prompt), "repeat": self.repeat}

    @property
    def key(self) -> str:
        """The entry's key."""
        return hash_text(canonical_json(self.components))

    @property
    def scope(self) -> str:
        """The hash of the identity alone (one agent, all prompts)."""
        return hash_text(canonical_json(self.identity))


@dataclass(frozen=True)
class Lookup:
    """A cache answer, or why there is none."""

    output: AgentOutput | None
    reason: str


class ResponseCache:
    """The cache table of a store."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, key: CacheKey) -> Lookup:
        """Return the cached output for ``key``, or why there is none."""
        try:
            row = self.store.conn.execute(
                "SELECT output, text_artifact, blobs.text AS inline FROM response_cache"
                " LEFT JOIN blobs ON blobs.name = text_artifact WHERE key = ?",
                (key.key,),
            ).fetchone()
        except sqlite3.Error as exc:
            return Lookup(None, f"the cache could not be read ({exc})")
        if row is None:
            return Lookup(None, self._explain(key))
        text = self.store.artifacts.get(row["text_artifact"], inline=row["inline"])
        if text is None:
            return Lookup(None, "the cached answer's text is missing or damaged")
        try:
            output = AgentOutput.model_validate_json(row["output"])
        except ValidationError:
            return Lookup(None, "the cached entry is unreadable")
        return Lookup(output.model_copy(update={"text": text}), "hit")

    def put(self, key: CacheKey, output: AgentOutput) -> None:
        """Store ``output`` under ``key`` (replacing a damaged entry)."""
        meta = output.model_copy(update={"text": ""}).model_dump_json()
        with transaction(self.store.conn) as c:
            artifact = self.store.artifacts.put(output.text, verify=True)
            c.execute(
                "INSERT OR REPLACE INTO response_cache (key, scope, prompt_hash, components,"
                " output, text_artifact, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key.key,
                    key.scope,
                    key.components["prompt"],
                    canonical_json(key.components),
                    meta,
                    artifact,
                    datetime.now(UTC).isoformat(),
                ),
            )

    def _explain(self, key: CacheKey) -> str:
        prompt_hash = key.components["prompt"]
        rows = self.store.conn.execute(
            "SELECT components FROM response_cache WHERE prompt_hash = ? LIMIT 50", (prompt_hash,)
        ).fetchall()
        best: list[str] | None = None
        for row in rows:
            try:
                cached = json.loads(row["components"])
            except ValueError:
                continue
            diff = _differences(cached, key.components)
            if best is None or len(diff) < len(best):
                best = diff
        if best:
            return "cached for the same prompt with " + "; ".join(best)
        count = self.store.conn.execute(
            "SELECT COUNT(*) FROM response_cache WHERE scope = ?", (key.scope,)
        ).fetchone()[0]
        if count:
            answers = "answer" if count == 1 else "answers"
            return f"the prompt is new or changed ({count} other {answers} of this agent cached)"
        return "nothing is cached for this agent and settings yet"


def _differences(cached: Any, now: Any, path: str = "") -> list[str]:
    """Name each leaf that differs: ``identity.temperature: 0.2 → 0.0``."""
    if isinstance(cached, dict) and isinstance(now, dict):
        out = []
        for k in sorted(set(cached) | set(now)):
            out += _differences(cached.get(k), now.get(k), f"{path}.{k}" if path else k)
        return out
    if cached == now:
        return []
    return [f"{path}: {_short(cached)} → {_short(now)}"]


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "…"
