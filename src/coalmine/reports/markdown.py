"""The seed's summary table in markdown, and for each FAIL the grader and cause."""

from __future__ import annotations

import re
from pathlib import Path

from coalmine.results import CanaryRun, CaseResult, format_score

_MARK = {"PASS": "✅ PASS", "FAIL": "❌ FAIL", "ERROR": "⚠️ ERROR"}
_SHORT_ID = re.compile(r"^([A-Za-z]+-\d+)-")


def short_id(case_id: str) -> str:
    """Return ``req-001`` for ``req-001-ecommerce-api`` (the selector users type)."""
    match = _SHORT_ID.match(case_id)
    return match.group(1) if match else case_id


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def render_markdown(run: CanaryRun, *, results_path: Path | None, date: str) -> str:
    """Render the run as the seed's markdown report."""
    lines = [f"## Canary Run Results — {date}", ""]
    if run.results:
        lines += [
            "| ID | Phase | Title | Agent | Score | Verdict |",
            "|----|-------|-------|-------|-------|---------|",
        ]
        for r in run.results:
            score = format_score(r.composite_score) if r.composite_score is not None else "—"
            lines.append(
                f"| {_cell(short_id(r.id))} | {_cell(r.phase)} | {_cell(r.title)} | "
                f"{_cell(r.agent)} | {score} | {_MARK[r.verdict]} |"
            )
        lines.append("")
    s = run.summary
    composite = format_score(s.composite_score) if s.composite_score is not None else "—"
    parts = [f"{s.passed}/{s.total} passed", f"Composite: {composite}"]
    if s.errored:
        parts.append(f"{s.errored} errored")
    if s.invalid:
        parts.append(f"{s.invalid} invalid spec{'s' if s.invalid != 1 else ''}")
    if results_path is not None:
        parts.append(f"Results saved to {results_path}")
    lines.append("**Summary:** " + " | ".join(parts))
    if run.judge is not None and run.judge.describe():
        about = f" — {run.judge.description.strip()}" if run.judge.description else ""
        lines += ["", f"**Judge:** {run.judge.describe()}{about}"]
    if run.interrupted:
        lines += ["", "**Interrupted:** only the canaries above finished; the others did not run."]
    problems = [r for r in run.results if r.verdict != "PASS"]
    if problems:
        lines += ["", "### Failures", ""]
        for r in problems:
            lines += _explain(r)
    skipped = sorted({k for r in run.results for k, g in r.grader_scores.items() if g.skipped})
    if skipped:
        reason = next(
            g.reason
            for r in run.results
            for g in r.grader_scores.values()
            if g.skipped and g.reason
        )
        lines += [
            "",
            f"_Skipped graders: {', '.join(skipped)} ({reason}); weights renormalised "
            "over the other graders._",
        ]
    if run.invalid_specs:
        lines += ["", "### Invalid specs", ""]
        for spec in run.invalid_specs:
            where = f"{spec.path}:{spec.line}" if spec.line else spec.path
            label = f"**{spec.id}** " if spec.id else ""
            first, *rest = spec.reason.splitlines() or [""]
            lines.append(f"- {label}`{where}`: {_strip_location(first, where)}")
            lines += [f"  - {line}" for line in rest]
    return "\n".join(lines) + "\n"


def _explain(r: CaseResult) -> list[str]:
    head = f"- **{r.id}** ({r.agent}): {r.verdict}"
    if r.reason:
        head += f", {r.reason}"
    out = [head]
    if r.error:
        out += [f"  - {line}" for line in r.error.splitlines()[:12]]
    out += [f"  - {failure}" for failure in r.failures]
    return out


def _strip_location(message: str, where: str) -> str:
    return message[len(where) + 2 :] if message.startswith(where + ": ") else message
