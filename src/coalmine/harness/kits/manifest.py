"""``harness/manifest.json`` (``coalmine.manifest.v1``): which kits are adopted, what they own.

Each adopted kit records its version, the signal kinds that made it apply, its gate commands
and evolution rules (so ``gates run`` and ``kits status`` need only the repository), and each
file it owns with the template version it came from and the SHA-256 of what was written.

What was written is also kept, byte for byte, under ``harness/.base/<path>``: the common
ancestor of the three-way merge that ``kits update`` proposes when both the kit and your copy
moved on. Commit both; neither holds a secret.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coalmine._source import Document, read_json, validation_problems
from coalmine.errors import ConfigError
from coalmine.harness.kits.model import MANIFEST_PATH, EvolutionRule, KitCommand

__all__ = [
    "BASE_DIR",
    "AdoptedKit",
    "Manifest",
    "OwnedFile",
    "base_copy",
    "dump_manifest",
    "load_manifest",
    "manifest_json_schema",
]

SCHEMA = "coalmine.manifest.v1"
BASE_DIR = "harness/.base"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)


class OwnedFile(_Model):
    """A file a kit wrote and owns."""

    path: str
    """Relative to the repository root, ``/``-separated."""
    sha256: str
    """``sha256:<hex>`` of the content written (``kits status``: edited when it differs)."""
    template_version: int = Field(alias="templateVersion")


class AdoptedKit(_Model):
    """One kit adopted into the repository."""

    id: str
    version: int
    adopted_at: str = Field(alias="adoptedAt")
    updated_at: str = Field(alias="updatedAt")
    applies_because: list[str] = Field(alias="appliesBecause")
    """The signal kinds that made it apply when adopted (empty when chosen by hand)."""
    commands: list[KitCommand]
    evolution_rules: list[EvolutionRule] = Field(alias="evolutionRules")
    files: list[OwnedFile]


class Manifest(_Model):
    """``coalmine.manifest.v1``."""

    schema_: Literal["coalmine.manifest.v1"] = Field("coalmine.manifest.v1", alias="schema")
    parameters: dict[str, str] = {}
    """What the templates were rendered with: ``project`` and ``agent``."""
    kits: list[AdoptedKit] = []

    def kit(self, kit_id: str) -> AdoptedKit | None:
        """The adopted kit ``kit_id``, or ``None``."""
        return next((k for k in self.kits if k.id == kit_id), None)

    def owner(self, path: str) -> tuple[AdoptedKit, OwnedFile] | None:
        """The kit owning ``path`` and its record, or ``None``."""
        for kit in self.kits:
            for owned in kit.files:
                if owned.path == path:
                    return kit, owned
        return None

    def owned_paths(self) -> set[str]:
        """Every path a kit owns."""
        return {f.path for k in self.kits for f in k.files}


def load_manifest(root: Path) -> Manifest | None:
    """The manifest of the repository at ``root``, or ``None`` when it has none.

    Raises:
        ConfigError: the file is not a valid ``coalmine.manifest.v1`` (naming it).
    """
    path = root / MANIFEST_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 ({exc.reason})", path=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=path) from None
    try:
        data = read_json(text)
    except json.JSONDecodeError as exc:
        message = f"not valid JSON ({exc.msg}, column {exc.colno})"
        raise ConfigError(message, path=path, line=exc.lineno) from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        first = validation_problems(exc, Document(path, data), Manifest)[0]
        message = f"not a valid {SCHEMA} manifest: {first.message}"
        raise ConfigError(message, path=path, line=first.line) from None


def dump_manifest(manifest: Manifest) -> str:
    """The manifest as written: JSON, two-space indented, ending with a newline."""
    return json.dumps(manifest.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def base_copy(root: Path, path: str) -> Path:
    """Where the text written for ``path`` is kept as the merge base."""
    return root / BASE_DIR / path


def manifest_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``coalmine.manifest.v1`` (shipped as schemas/manifest.v1.json)."""
    return Manifest.model_json_schema(by_alias=True)
