"""Pydantic models of the spec files users write (unknown keys are errors, rule 9)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class GraderSpec(BaseModel):
    """One grader of a canary: its type, weight and type-specific config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    """The registered grader name: ``keyword``, ``structural``, ``llm-judge`` …"""
    weight: float = Field(1.0, ge=0)
    """Relative weight in the composite; weights are normalised to sum to 1."""
    name: str | None = None
    """Key in ``grader_scores``; defaults to the type (a second grader of a type gets ``#2``)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The grader's own settings, checked against the grader's config model."""
    blocking: bool | None = None
    """Whether a low score may fail the run (default: deterministic graders do, judges advise)."""


class Expected(BaseModel):
    """What a good answer looks like."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    graders: list[GraderSpec] = Field(min_length=1)
    """The graders applied to the agent's response."""


class CanarySpec(BaseModel):
    """One canary (seed 000): a known prompt for a phase agent and the graders of its answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """Stable identifier, e.g. ``qa-001-security-review``."""
    phase: str = Field(min_length=1)
    """SDLC phase; routes the prompt to an agent (see ``routing`` in coalmine.yaml)."""
    title: str = Field(min_length=1)
    """One-line title shown in the results table."""
    prompt: str = Field(min_length=1)
    """Given to the agent byte for byte."""
    expected: Expected
    timeout_seconds: float | None = Field(None, gt=0)
    """Agent timeout, retries included; defaults to ``defaults.timeout_seconds`` of the config."""
    description: str | None = None
    """Free text for readers of the spec; never sent to the agent."""
    tags: list[str] = Field(default_factory=list)
    """Labels for selection and reports."""
    blocking: bool = True
    """False makes the whole canary advisory: its failures are shown but never fail the run."""
