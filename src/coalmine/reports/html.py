"""The HTML report: one self-contained page, safe to open whatever the agents wrote.

The page loads nothing: its CSS and its one small script are inline (``templates/run.html``,
``templates/report.js``). Every piece of run data goes through Jinja's autoescape and none goes
inside the script, which reads the DOM. A Content-Security-Policy allows that script alone, by
its sha256, so even an escaping mistake could not run markup an agent wrote. The table sorts and
filters in the browser, and the view lives in the URL fragment
(``run.html#verdict=FAIL&q=login&sort=-score``) so a filtered view can be shared.

The templates under ``templates/parts`` draw the pieces of a run (its summary and suites, a
case in full, a comparison); ``coalmine view`` serves its pages with the same pieces, so a
report file is the viewer's run page frozen.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup, escape

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
    env = template_environment()
    script = _report_script()
    csp = (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src '{_csp_hash(script)}'; "
        "base-uri 'none'; form-action 'none'"
    )
    return env.get_template("run.html").render(
        run=run,
        comparison=comparison,
        moved=moved,
        skipped=skipped,
        output_limit=OUTPUT_LIMIT,
        script=Markup(script),  # the package's own code, not run data
        csp=Markup(csp),  # ours, and holds no run data
    )


@cache
def _report_script() -> str:
    loader = template_environment().loader
    assert loader is not None
    return loader.get_source(template_environment(), "report.js")[0]


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


def shown_value(value: Any) -> str:
    """A value as a page shows it: text as it is, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


DIFF_LIMIT = 20_000
"""Characters above which texts are diffed line by line instead of word by word."""
DIFF_WORK = 250_000
"""Word pairs above which texts are diffed line by line: a word diff of two unrelated texts
costs the product of their lengths, and a page diffs many."""
_WORDS = re.compile(r"\w+|\s+|[^\w\s]")
"""A text's words, runs of space and single other characters: what a word diff compares."""


def diff_html(expected: Any, actual: str | None) -> Markup:
    """``expected`` against ``actual``: ``<del>`` only in expected, ``<ins>`` only in actual.

    Each piece of text is escaped (the markup is ours, the text is not).
    """
    a, b = shown_value(expected), actual or ""
    left, right = _WORDS.findall(a), _WORDS.findall(b)
    if len(a) > DIFF_LIMIT or len(b) > DIFF_LIMIT or len(left) * len(right) > DIFF_WORK:
        left, right = a.splitlines(keepends=True), b.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    out: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = "".join(left[i1:i2]), "".join(right[j1:j2])
        if op == "equal":
            out.append(str(escape(old)))
            continue
        if old:
            out.append(f"<del>{escape(old)}</del>")
        if new:
            out.append(f"<ins>{escape(new)}</ins>")
    return Markup("".join(out))


def pair_calls(
    called: Sequence[Any], expected: Sequence[Mapping[str, Any]] | None
) -> list[tuple[Any, Any]]:
    """The agent's tool calls beside the expected ones, position by position."""
    wanted = [_Call(str(e.get("name", "?")), e.get("arguments", {})) for e in expected or ()]
    return list(itertools.zip_longest(called, wanted))


@dataclass(frozen=True)
class _Call:
    name: str
    arguments: Any


def case_columns(kind: str | None) -> tuple[tuple[str, str], ...]:
    """The columns of a cases table: (sort key, heading); an eval run's phase is its suite."""
    if kind == "eval":
        return (("id", "ID"), ("phase", "Suite"), ("title", "Case"), *_TAIL_COLUMNS)
    return (("id", "ID"), ("phase", "Phase"), ("title", "Title"), *_TAIL_COLUMNS)


_TAIL_COLUMNS = (("agent", "Agent"), ("score", "Score"), ("verdict", "Verdict"))


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
        score=_score,
        deltas=_deltas,
        csp_hash=_csp_hash,
        grader_detail=describe_grade,
        shown_value=shown_value,
        diff=diff_html,
        pair_calls=pair_calls,
    )
    env.globals["case_columns"] = case_columns
    return env
