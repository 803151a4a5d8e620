"""The HTML report: one self-contained page, safe to open whatever the agents wrote.

The page loads nothing: its CSS and its one small script are inline (``templates/run.html``).
Every piece of run data goes through Jinja's autoescape and none goes inside the script, which
reads the DOM. A Content-Security-Policy allows that script alone, by its sha256, so even an
escaping mistake could not run markup an agent wrote. The table sorts and filters in the
browser, and the view lives in the URL fragment (``run.html#verdict=FAIL&q=login&sort=-score``)
so a filtered view can be shared.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jinja2

from coalmine.compare import CaseChange, Comparison
from coalmine.reports.base import reporter
from coalmine.results import OUTPUT_LIMIT, CanaryRun, Grade, format_score

_BASE_FIELDS = frozenset(Grade.model_fields)
_LABELS = {
    "forbidden_found": "forbidden found",
    "judge_model": "judge model",
    "prompt_sha256": "judge prompt sha256",
}


@dataclass(frozen=True)
class GraderDetail:
    """A grader's own fields, ready to show: label/value facts and judge criteria."""

    facts: list[tuple[str, str]] = field(default_factory=list)
    criteria: list[tuple[str, str, str]] = field(default_factory=list)
    """(criterion, score, the judge's reason)."""


@reporter("html", suffix=".html")
def render_html(run: CanaryRun, *, comparison: Comparison | None = None) -> str:
    """Render the run (and, when given, its comparison with a baseline) as one HTML page."""
    skipped = {
        key: grade.reason or ""
        for r in run.results
        for key, grade in r.grader_scores.items()
        if grade.skipped
    }
    moved = [c for c in comparison.shared if _deltas(c)] if comparison is not None else []
    template = template_environment().get_template("run.html")
    return template.render(
        run=run,
        comparison=comparison,
        moved=moved,
        skipped=skipped,
        output_limit=OUTPUT_LIMIT,
    )


def describe_grade(grade: Grade) -> GraderDetail:
    """Return the fields a grader added to its grade (typed, or extras read back from JSON)."""
    fields = {k: v for k, v in grade.model_dump(mode="json").items() if k not in _BASE_FIELDS}
    criteria = fields.pop("criteria", None)
    reasons = fields.pop("reasons", None) if isinstance(criteria, dict) else None
    rows = []
    if isinstance(criteria, dict):
        reasons = reasons if isinstance(reasons, dict) else {}
        rows = [(k, _text(v), str(reasons.get(k, ""))) for k, v in criteria.items()]
    elif criteria is not None:
        fields["criteria"] = criteria
    if "missing" in fields:
        what = "sections" if "sections_required" in fields else "keywords"
        fields[f"missing {what}"] = fields.pop("missing")
    facts = [
        (_LABELS.get(k, k.replace("_", " ")), _text(v))
        for k, v in fields.items()
        if v not in (None, "", [], {})
    ]
    return GraderDetail(facts=facts, criteria=rows)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_text(v)}" for k, v in value.items())
    return str(value)


def _deltas(change: CaseChange) -> str:
    return ", ".join(f"{k} {d:+.2f}" for k, d in change.grader_deltas.items() if abs(d) > 1e-9)


def _score(score: float | None) -> str:
    return "—" if score is None else format_score(score)


def _csp_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode()).digest()
    return "sha256-" + base64.b64encode(digest).decode()


@cache
def template_environment() -> jinja2.Environment:
    """The Jinja environment of the package's HTML templates (autoescape on, strict)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("coalmine.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        score=_score, deltas=_deltas, csp_hash=_csp_hash, grader_detail=describe_grade
    )
    return env
