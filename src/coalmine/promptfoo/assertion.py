"""A promptfoo assertion, as written in a config (``assert:`` items), normalised.

promptfoo accepts many keys on an assertion; the ones its scoring and graders read are typed
here, and any other key is kept (``extra="allow"``) so the importer can report it instead of
dropping it silently.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Assertion"]


class Assertion(BaseModel):
    """One item of a test's ``assert:`` list (or of an ``assert-set``'s)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    type: str
    """``contains``, ``not-icontains``, ``javascript``, ``assert-set`` …"""
    value: Any = None
    threshold: float | None = None
    weight: float = 1.0
    metric: str | None = None
    transform: str | None = None
    """Code applied to the output before this assertion (``output`` and ``context``): JavaScript,
    or ``file://`` JavaScript or Python."""
    config: dict[str, Any] = {}
    provider: Any = None
    """The grading provider of a model-graded assertion."""
    children: tuple[Assertion, ...] | None = Field(None, alias="assert")
    """An ``assert-set``'s assertions."""

    @property
    def negated(self) -> bool:
        """Whether the type is ``not-<type>``."""
        return self.type.startswith("not-")

    @property
    def base_type(self) -> str:
        """The type without its ``not-``."""
        return self.type.removeprefix("not-")
