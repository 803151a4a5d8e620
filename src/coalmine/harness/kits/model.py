"""A template kit: declared data (seed 001's contract) plus the template files it writes.

A kit is a folder::

    kit.yaml            id, version, title, risk, appliesWhen, writes, commands, evolutionRules
    templates/<path>    one file per entry of ``writes``, copied as is
    templates/<path>.j2 … or rendered with Jinja2 (the ``.j2`` is dropped)

``writes`` may list ``harness/manifest.json`` as the seed does: that file is the manifest, kept
by coalmine itself, so it needs no template. Every other entry needs exactly one template, and
every template must be listed: a kit cannot write a file it does not declare.

An evolution rule is the seed's sentence, and optionally what makes it fire: ``watch`` (signal
kinds, whose evidence files are watched, or globs) and ``suite`` or ``gate`` (the eval suite
or gate whose last run they are compared with). A rule without both is advice, shown but
never fired.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from coalmine._source import safe_load
from coalmine.errors import PluginError

__all__ = [
    "MANIFEST_PATH",
    "EvolutionRule",
    "Kit",
    "KitCommand",
    "KitSpec",
    "load_kit",
]

MANIFEST_PATH = "harness/manifest.json"
TEMPLATE_SUFFIX = ".j2"

_ID = r"^[a-z0-9][a-z0-9-]*$"


class KitCommand(BaseModel):
    """A gate a kit adds: ``coalmine gates run`` runs ``command`` (a shell line) in the root."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str = Field(pattern=_ID)
    command: str = Field(min_length=1)
    blocks: bool = True
    """A failing blocking gate fails ``gates run``; an advisory one is reported only."""
    timeout_seconds: float = Field(600.0, gt=0, alias="timeoutSeconds")


class EvolutionRule(BaseModel):
    """When to revisit the kit: the seed's sentence, and what makes it fire."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    watch: tuple[str, ...] = ()
    """Signal kinds (their evidence files) or globs (``src/retrieval/**``) to watch."""
    suite: str | None = None
    """The eval suite a watched change calls for; fires when it ran before the change, or never."""
    gate: str | None = None
    """Or the gate a watched change calls for (its last ``coalmine gates run``)."""

    @model_validator(mode="before")
    @classmethod
    def _from_sentence(cls, data: Any) -> Any:
        return {"text": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one_target(self) -> EvolutionRule:
        if self.suite is not None and self.gate is not None:
            raise ValueError("a rule names a suite or a gate to rerun, not both")
        return self

    @property
    def rerun(self) -> str | None:
        """The command a fired rule suggests, or ``None`` for a rule that never fires."""
        if not self.watch:
            return None
        if self.suite is not None:
            return f"coalmine eval run {self.suite}"
        return None if self.gate is None else f"coalmine gates run {self.gate}"


class KitSpec(BaseModel):
    """``kit.yaml``: the seed's kit contract, with a version and a title."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str = Field(pattern=_ID)
    version: int = Field(ge=1)
    """Bumped whenever a template changes; ``kits status`` reports adopted kits behind it."""
    title: str
    risk: str
    """What risk the kit covers."""
    applies_when: tuple[str, ...] = Field(alias="appliesWhen")
    """Signal kinds of which any one makes the kit apply; none: the kit is adopted only when
    asked for by name (``init --kit``, or the red-team kit by ``redteam generate``)."""
    writes: tuple[str, ...] = Field(min_length=1)
    commands: tuple[KitCommand, ...] = ()
    evolution_rules: tuple[EvolutionRule, ...] = Field((), alias="evolutionRules")
    metrics: tuple[str, ...] = ()
    """What the kit measures, in words (shown by ``coalmine init``)."""


@dataclass(frozen=True)
class Kit:
    """A loaded kit: its spec and the folder of its templates."""

    spec: KitSpec
    templates: Path

    @property
    def id(self) -> str:
        """The kit's id."""
        return self.spec.id

    @property
    def version(self) -> int:
        """The kit's version."""
        return self.spec.version

    def files(self) -> list[str]:
        """The paths the kit writes itself (``writes`` without the manifest), in order."""
        return [p for p in self.spec.writes if p != MANIFEST_PATH]

    def template(self, path: str) -> Path:
        """The template of ``path`` (``templates/<path>`` or ``templates/<path>.j2``)."""
        plain = self.templates / path
        return plain if plain.is_file() else self.templates / (path + TEMPLATE_SUFFIX)


def load_kit(folder: Path) -> Kit:
    """Read and check the kit in ``folder``.

    Raises:
        PluginError: ``kit.yaml`` is missing or invalid, a written file has no template, or a
            template is not listed in ``writes``.
    """
    source = folder / "kit.yaml"
    try:
        data = safe_load(source.read_text(encoding="utf-8"))
        spec = KitSpec.model_validate(data)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError) as exc:
        raise PluginError(f"{source}: not a valid kit: {exc}") from exc
    kit = Kit(spec, folder / "templates")
    declared = set(kit.files())
    problems = []
    for path in kit.files():
        if path.startswith("/") or ".." in Path(path).parts:
            problems.append(f"{path!r} is not a path inside the repository")
        elif not kit.template(path).is_file():
            problems.append(f"{path!r} has no template")
    found = {
        p.relative_to(kit.templates).as_posix().removesuffix(TEMPLATE_SUFFIX)
        for p in kit.templates.rglob("*")
        if p.is_file()
    }
    problems += [f"template {p!r} is not listed in writes" for p in sorted(found - declared)]
    if problems:
        raise PluginError(f"{source}: kit {spec.id!r}: " + "; ".join(problems))
    return kit
