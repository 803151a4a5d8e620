"""The ``keyword`` grader: required and forbidden keywords, case-insensitive substrings.

``score = max(0, (matched_required - forbidden_found) / total_required)``: each forbidden
keyword found costs as much as one required keyword. With no required keywords the score is 1.0
when no forbidden keyword is found and 0.0 otherwise. Passes at ``>= 0.8``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from coalmine.graders.base import GradeContext, grader
from coalmine.results import Grade

THRESHOLD = 0.8

# A blank keyword would match almost any text.
Keyword = Annotated[str, Field(pattern=r"\S")]


class KeywordConfig(BaseModel):
    """Config of a ``keyword`` grader."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    required: list[Keyword] = []
    """Each one found in the response (case-insensitive) earns a point."""
    forbidden: list[Keyword] = []
    """Each one found costs a point."""


class KeywordGrade(Grade):
    """Result of the keyword grader (the seed's fields, plus ``missing``)."""

    matched: int
    required: int
    forbidden_found: list[str]
    missing: list[str]

    def explain(self) -> str:
        """Name the missing and the forbidden keywords."""
        parts = []
        if self.missing:
            parts.append("missing keywords " + ", ".join(repr(k) for k in self.missing))
        if self.forbidden_found:
            parts.append("forbidden found " + ", ".join(repr(k) for k in self.forbidden_found))
        return "; ".join(parts)


def score_keywords(text: str, config: KeywordConfig) -> KeywordGrade:
    """Grade ``text`` against the keywords of ``config``."""
    haystack = text.casefold()
    found = [k for k in config.required if k.casefold() in haystack]
    missing = [k for k in config.required if k.casefold() not in haystack]
    forbidden = [k for k in config.forbidden if k.casefold() in haystack]
    total = len(config.required)
    if total:
        score = max(0.0, (len(found) - len(forbidden)) / total)
    else:
        score = 0.0 if forbidden else 1.0
    return KeywordGrade(
        score=score,
        passed=score >= THRESHOLD,
        matched=len(found),
        required=total,
        forbidden_found=forbidden,
        missing=missing,
    )


@grader("keyword", config=KeywordConfig, threshold=THRESHOLD)
async def keyword(config: KeywordConfig, output: str, ctx: GradeContext) -> Grade:
    """Grade required and forbidden keywords."""
    return score_keywords(output, config)
