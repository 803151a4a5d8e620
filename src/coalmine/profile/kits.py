"""Which of seed 001's six template kits a profile makes applicable (their ``appliesWhen``).

Only the kits' ids and the signal kinds that make each apply live here, as data; the kits
themselves (files, commands, evolution rules) come later. A kit applies when the profile has
any one of its kinds. The seed spells ``rag-system``'s as ``["embeddings", "retrieval",
"vector-db"]``: here they are the profile's ``retrieval:*`` kinds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from coalmine.profile.signals import Signal

__all__ = ["KITS", "KitSignals", "applicable"]


@dataclass(frozen=True)
class KitSignals:
    """A kit's id and the signal kinds of which any one makes it apply."""

    id: str
    applies_when: tuple[str, ...]


KITS: tuple[KitSignals, ...] = (
    KitSignals(
        "agent-runtime",
        (
            "agent-runtime:llm-sdk",
            "agent-runtime:mcp",
            "agent-runtime:agent-definitions",
            "agent-runtime:prompt-router",
        ),
    ),
    KitSignals(
        "rag-system", ("retrieval:embeddings", "retrieval:retriever", "retrieval:vector-db")
    ),
    KitSignals("web-app", ("web-ui:framework", "web-ui:routes", "web-ui:playwright")),
    KitSignals("go-service", ("go-service",)),
    KitSignals("nix-project", ("nix",)),
    KitSignals("charm-service", ("charm",)),
)
"""The seed's six kits, in the seed's order."""


def applicable(signals: Iterable[Signal | str]) -> list[str]:
    """The ids of the kits whose ``appliesWhen`` holds for ``signals`` (signals or kinds)."""
    kinds = {s if isinstance(s, str) else s.kind for s in signals}
    return [kit.id for kit in KITS if kinds.intersection(kit.applies_when)]
