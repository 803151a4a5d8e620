"""The ``providers:`` (or ``targets:``) of a promptfoo config, kept as data.

Forms, as promptfoo 0.121.20 reads them: an id string (``echo``, ``openai:gpt-4o-mini``,
``exec:python agent.py``, ``file://provider.py`` …); ``file://providers.yaml`` (a file of
provider objects, each with an ``id``); an object ``{id, label, config, prompts, transform,
delay, env, inputs}``; and the map ``{"openai:gpt-4o": {config: …}}`` (its key chooses the
implementation, an ``id`` inside overrides the id). Which coalmine agent runs a provider is
decided elsewhere; here each keeps its file and line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalmine.promptfoo.matrix.config import RawConfig
from coalmine.promptfoo.matrix.filerefs import load_file_refs
from coalmine.promptfoo.matrix.sources import Doc, Problems, ReadError, load_yaml_text, read_text

__all__ = ["ProviderRef", "provider_matches", "read_providers"]

_OPTION_KEYS = {"id", "label", "config", "prompts", "transform", "delay", "env", "inputs"}
_FILE_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, kw_only=True)
class ProviderRef:
    """One provider of the config."""

    id: str
    label: str | None
    config: Mapping[str, Any] | None
    transform: Any
    """JavaScript applied to the output (``output``, ``context``), as written."""
    index: int
    path: Path
    """The file that declares it (the config, or a ``file://`` providers file)."""
    line: int | None
    delay: float | None = None
    prompts: tuple[str, ...] | None = None
    """The prompts it runs (labels or ids, wildcards allowed); ``None`` for all of them."""
    implementation: str = ""
    """What selects promptfoo's implementation: the id, or the key of the map form."""
    options: Mapping[str, Any] | None = None
    """Everything written for it (``env``, ``inputs`` …), for the caller to map."""

    @property
    def key(self) -> str:
        """How promptfoo names it in results (``provider`` of a prompt): the label, else the id."""
        return self.label or self.id


def read_providers(config: RawConfig, problems: Problems) -> tuple[ProviderRef, ...]:
    """Read the providers, in promptfoo's order (a providers file expands in place)."""
    raw = config.data.get("providers")
    entries: list[tuple[Any, Doc, tuple[str | int, ...]]] = []
    if isinstance(raw, str):
        raw, one = [raw], True
    else:
        one = False
    if not isinstance(raw, list) or not raw:
        problems.error(
            "You must specify at least 1 provider (for example, openai:gpt-4.1)",
            path=config.path,
            line=config.line_of("providers"),
        )
        return ()
    written = config.doc.data if isinstance(config.doc.data, dict) else {}
    root = "targets" if "targets" in written else "providers"
    for i, item in enumerate(raw):
        loc: tuple[str | int, ...] = (root,) if one else (root, i)
        if isinstance(item, str) and item.startswith("file://") and item.endswith(_FILE_SUFFIXES):
            entries.extend(_from_file(item, config, problems, config.doc.line_of(loc)))
        else:
            entries.append((item, config.doc, loc))
    refs: list[dict[str, Any]] = []
    for item, doc, loc in entries:
        ref = _normalise(item, doc, loc, len(refs), problems)
        if ref is not None:
            refs.append(ref)
    prompt_map = _prompt_map(refs)
    return tuple(
        ProviderRef(**ref, prompts=prompt_map.get(ref["label"] or ref["id"])) for ref in refs
    )


def _from_file(
    ref: str, config: RawConfig, problems: Problems, line: int | None
) -> list[tuple[Any, Doc, tuple[str | int, ...]]]:
    path = config.base_dir / ref.removeprefix("file://")
    try:
        doc = load_yaml_text(read_text(path), path=path)
        content = load_file_refs(doc.data, base_dir=config.base_dir)
    except ReadError as exc:
        problems.error(
            f"Failed to load provider config {path}: {exc.message}", path=config.path, line=line
        )
        return []
    if not content:
        problems.error(f"Provider config {path} is empty", path=config.path, line=line)
        return []
    if isinstance(content, list):
        return [(item, doc, (i,)) for i, item in enumerate(content)]
    return [(content, doc, ())]


def _normalise(
    item: Any, doc: Doc, loc: tuple[str | int, ...], index: int, problems: Problems
) -> dict[str, Any] | None:
    """Classify as ``normalizeProviderRef``: a string, options with an id, or the map form."""
    line = doc.line_of(loc)
    base = {"index": index, "path": doc.path, "line": line}
    if isinstance(item, str) and item:
        return {**base, "id": item, "label": None, "config": None, "transform": None,
                "implementation": item, "options": None, "_kind": "named"}  # fmt: skip
    if isinstance(item, dict):
        if isinstance(item.get("id"), str) and item["id"]:
            return _options(item, item["id"], item["id"], base, doc, loc, problems, kind="options")
        if len(item) == 1:
            ((key, value),) = item.items()
            if key not in _OPTION_KEYS and isinstance(value, dict) and key:
                inner = value.get("id")
                own_id = inner if isinstance(inner, str) and inner else str(key)
                return _options(value, own_id, key, base, doc, (*loc, key), problems, kind="map")
    problems.error(
        f"Invalid provider at index {index}: expected a provider id string, an object with an "
        "'id', or a map such as {\"openai:gpt-4o\": {config: ...}}",
        path=doc.path,
        line=line,
    )
    return None


def _options(
    item: dict[str, Any],
    provider_id: str,
    implementation: str,
    base: dict[str, Any],
    doc: Doc,
    loc: tuple[str | int, ...],
    problems: Problems,
    *,
    kind: str,
) -> dict[str, Any]:
    for key in item:
        if key not in _OPTION_KEYS:
            problems.warn(
                f"key {key!r} of provider {provider_id!r} is not supported: ignored",
                path=doc.path,
                line=doc.line_of((*loc, key)),
            )
    label = item.get("label")
    delay = item.get("delay")
    return {
        **base,
        "id": provider_id,
        "label": label if isinstance(label, str) and label else None,
        "config": item.get("config"),
        "transform": item.get("transform"),
        "delay": delay if isinstance(delay, int | float) else None,
        "implementation": implementation,
        "options": item,
        "_kind": kind,
        "_prompts": item.get("prompts"),
    }


def _prompt_map(refs: list[dict[str, Any]]) -> dict[str, tuple[str, ...] | None]:
    """The ``readProviderPromptMap`` of promptfoo, looked up by label or id as its evaluator does.

    A map-form provider's prompts are stored under its id only, so with a ``label`` they are
    not found and it runs every prompt (a promptfoo quirk kept here).
    """
    found: dict[str, tuple[str, ...] | None] = {}
    for ref in refs:
        kind = ref.pop("_kind")
        declared = ref.pop("_prompts", None)
        if kind == "named":
            continue
        prompts = tuple(str(p) for p in declared) if isinstance(declared, list) else None
        found[ref["id"]] = prompts
        if kind == "options" and ref["label"]:
            found[ref["label"]] = prompts
    return found


def canonical_provider_id(provider_id: str, *, base_dir: Path) -> str:
    """The id with relative file paths made absolute, as ``canonicalizeProviderId`` does."""
    if provider_id.startswith("file://"):
        rest = provider_id[7:]
        return provider_id if os.path.isabs(rest) else f"file://{_absolute(rest, base_dir)}"
    for prefix in ("exec:", "python:", "golang:"):
        if provider_id.startswith(prefix):
            rest = provider_id[len(prefix) :]
            return (
                f"{prefix}{_absolute(rest, base_dir)}"
                if "/" in rest or "\\" in rest
                else provider_id
            )
    if provider_id.endswith((".js", ".ts", ".mjs")) and ("/" in provider_id or "\\" in provider_id):
        return f"file://{_absolute(provider_id, base_dir)}"
    return provider_id


def _absolute(path: str, base_dir: Path) -> str:
    return os.path.normpath(os.path.join(os.path.abspath(base_dir), path))


def provider_matches(ref: str, provider: ProviderRef, *, base_dir: Path) -> bool:
    """Whether a test's ``providers:`` entry selects ``provider`` (label, id, ``x*``, ``x:``)."""
    label, pid = provider.label, provider.id
    canonical_ref = canonical_provider_id(ref, base_dir=base_dir)
    canonical_id = canonical_provider_id(pid, base_dir=base_dir)
    if label and label == ref or pid == ref or canonical_id == canonical_ref:
        return True
    if ref.endswith("*"):
        prefix = ref[:-1]
        if (label or "").startswith(prefix) or pid.startswith(prefix):
            return True
        if canonical_id.startswith(prefix):
            return True
    return any(name.startswith(f"{ref}:") for name in (label or "", pid, canonical_id) if name)
