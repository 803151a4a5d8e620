"""The kit registry: the bundled kits, and any a plugin registers.

A plugin package registers a kit folder from a module of the ``coalmine`` entry-point group::

    from pathlib import Path
    from coalmine.harness.kits import register_kit_folder

    register_kit_folder(Path(__file__).parent / "my-kit")

Nothing is read until the first lookup (the bundled kits are loaded then, plugins on the first
miss or listing), as for providers and graders.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from coalmine._util.registry import Registry
from coalmine.harness.kits.model import Kit, load_kit

__all__ = [
    "BUILTIN_ORDER",
    "KIT_REGISTRY",
    "all_kits",
    "applicable",
    "get_kit",
    "register_kit_folder",
]

KIT_REGISTRY: Registry[Kit] = Registry("kit", builtins=("coalmine.harness.kits.builtin",))

BUILTIN_ORDER = (
    "agent-runtime",
    "rag-system",
    "web-app",
    "go-service",
    "nix-project",
    "charm-service",
    "coding-agent-skill",
    "red-team",
)
"""The seed's six kits in the seed's order, the later bundled ones after them; listings put
them first, then plugins by id. The red-team kit applies by name only (``redteam generate``)."""


def register_kit_folder(folder: Path) -> Kit:
    """Load the kit in ``folder`` and register it under its id."""
    kit = load_kit(folder)
    return KIT_REGISTRY.register(kit.id, kit)


def get_kit(kit_id: str) -> Kit:
    """The kit called ``kit_id`` (``PluginError`` listing the known ids if there is none)."""
    return KIT_REGISTRY.get(kit_id)


def all_kits() -> list[Kit]:
    """Every registered kit: the bundled ones in the seed's order, then the others by id."""
    rank = {kit_id: i for i, kit_id in enumerate(BUILTIN_ORDER)}
    kits = [kit for _, kit in KIT_REGISTRY]
    return sorted(kits, key=lambda k: (rank.get(k.id, len(rank)), k.id))


def applicable(kinds: Iterable[str]) -> list[str]:
    """The ids of the kits of which one ``appliesWhen`` kind is in ``kinds``, in listing order."""
    have = set(kinds)
    return [kit.id for kit in all_kits() if have.intersection(kit.spec.applies_when)]
