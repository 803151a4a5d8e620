"""The ``structural`` grader: required sections must appear as headings or labels.

A section is found when a heading or label of the response contains it, case-insensitively.
Headings and labels are: markdown ATX (``# …``) and setext headings, HTML ``<h1>``–``<h6>``, a
line that is wholly bold (``**…**`` or ``__…__``, with or without a trailing colon), and the text
before the first colon of a line when that text is at most 80 characters (a label's colon is
followed by a space or ends the line, so ``https://`` and ``10:30`` make no labels). Lines
inside fenced code blocks are code, not headings. ``score = found / required``; passes at
``>= 0.7``.
"""

from __future__ import annotations

import html
import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from coalmine.graders.base import GradeContext, grader
from coalmine.results import Grade

THRESHOLD = 0.7
LABEL_MAX_CHARS = 80

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
# A closing run of #s is markup only after a space (CommonMark): "## Using C#" keeps its "#".
_ATX = re.compile(r"^\s{0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_HTML_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_BOLD_LINE = re.compile(r"^(\*\*|__)(.+?)\1\s*:?\s*$")
# A label's colon ends the label: it is followed by a space or the end of the line, so the
# colons of "https://…" and "10:30" do not make labels.
_LABEL = re.compile(r"^([^:]*?\S[^:]*?):[*_`]*(?:\s|$)")


class StructuralConfig(BaseModel):
    """Config of a ``structural`` grader."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    required_sections: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    """Section names that must appear as a heading or label."""


class StructuralGrade(Grade):
    """Result of the structural grader (the seed's fields)."""

    sections_found: int
    sections_required: int
    missing: list[str]

    def explain(self) -> str:
        """Name the missing sections."""
        if not self.missing:
            return ""
        return "missing sections " + ", ".join(repr(s) for s in self.missing)


def extract_headings(text: str) -> list[str]:
    """Return the headings and labels of a markdown/HTML/plain-text response, in order."""
    headings: list[str] = []
    lines = text.splitlines()
    in_fence: str | None = None  # the opening fence; only a run as long or longer closes it
    for i, raw in enumerate(lines):
        fence = _FENCE.match(raw)
        if fence:
            run = fence.group(1)
            if in_fence is None:
                in_fence = run
                continue
            if run[0] == in_fence[0] and len(run) >= len(in_fence) and not raw.strip()[len(run) :]:
                in_fence = None
                continue
        if in_fence is not None:
            continue
        for match in _HTML_HEADING.finditer(raw):
            headings.append(html.unescape(_TAG.sub("", match.group(2))))
        atx = _ATX.match(raw)
        if atx:
            headings.append(atx.group(1) or "")
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if raw.strip() and _SETEXT_UNDERLINE.match(following) and not _LIST_MARKER.match(raw):
            headings.append(raw.strip())
            continue
        line = _LIST_MARKER.sub("", raw, count=1).strip()
        bold = _BOLD_LINE.match(line)
        if bold:
            headings.append(bold.group(2).rstrip(":"))
            continue
        label = _LABEL.match(line)
        if label and len(label.group(1).strip()) <= LABEL_MAX_CHARS:
            headings.append(label.group(1).strip().strip("*_` "))
    return [" ".join(h.split()) for h in headings if h.strip()]


def score_structure(text: str, config: StructuralConfig) -> StructuralGrade:
    """Grade ``text`` for the required sections of ``config``."""
    headings = [h.casefold() for h in extract_headings(text)]
    missing = [
        s
        for s in config.required_sections
        if not any(" ".join(s.split()).casefold() in h for h in headings)
    ]
    total = len(config.required_sections)
    found = total - len(missing)
    score = found / total
    return StructuralGrade(
        score=score,
        passed=score >= THRESHOLD,
        sections_found=found,
        sections_required=total,
        missing=missing,
    )


@grader("structural", config=StructuralConfig, threshold=THRESHOLD)
async def structural(config: StructuralConfig, output: str, ctx: GradeContext) -> Grade:
    """Grade required sections."""
    return score_structure(output, config)
