"""The seed's summary table in markdown, and for each FAIL the grader and cause.

A job summary renders it, so every text a run holds (ids, titles, outputs, reasons, errors)
goes in escaped (:mod:`coalmine._util.markdown`): it reads as written and cannot add markup.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from coalmine._util.excerpt import excerpt, first_difference
from coalmine._util.markdown import md_code, md_text
from coalmine.compare import CaseChange, Comparison, groups_sentence
from coalmine.reports.base import reporter
from coalmine.results import CanaryRun, CaseResult, format_score

_MARK = {"PASS": "✅ PASS", "FAIL": "❌ FAIL", "ERROR": "⚠️ ERROR"}
_ADVISORY = " (advisory)"
OUTPUT_SHOWN = 120
"""Characters of an output a failure shows when nothing was expected to compare it with."""
_SHORT_ID = re.compile(r"^([A-Za-z]+-\d+)-")


def short_id(case_id: str) -> str:
    """Return ``req-001`` for ``req-001-ecommerce-api`` (the selector users type)."""
    match = _SHORT_ID.match(case_id)
    return match.group(1) if match else case_id


@reporter("markdown", suffix=".md")
def markdown_report(run: CanaryRun, *, comparison: Comparison | None = None) -> str:
    """The run's table, failures and (with a baseline) regressions: fit for a job summary."""
    text = render_markdown(run, results_path=None, date=run.timestamp[:10])
    if comparison is not None:
        text += "\n" + render_comparison(comparison)
    return text


def render_comparison(comparison: Comparison) -> str:
    """The regression section: what flipped, score deltas, new and removed cases, the tests."""
    lines = [f"### Compared with {md_text(comparison.base_id)}", ""]
    regressions, fixes = comparison.regressions, comparison.fixes
    if regressions:
        lines.append(f"**Regressions ({len(regressions)}):**")
        lines += [_flip(c) for c in regressions]
    else:
        lines.append("**No regressions.**")
    if fixes:
        lines += ["", f"**Fixed ({len(fixes)}):**"] + [_flip(c) for c in fixes]
    moved = [
        c
        for c in comparison.shared
        if c.grader_deltas and any(abs(d) > 1e-9 for d in c.grader_deltas.values())
    ]
    if moved:
        lines += ["", "| Case | Composite | " + "Grader deltas |", "|----|----|----|"]
        for c in moved:
            deltas = ", ".join(
                f"{md_text(k)} {d:+.2f}" for k, d in c.grader_deltas.items() if abs(d) > 1e-9
            )
            lines.append(f"| {md_text(c.case_id)} | {_delta(c.composite_delta)} | {deltas} |")
    if comparison.new_cases:
        lines += ["", "New cases: " + ", ".join(map(md_text, comparison.new_cases))]
    if comparison.removed_cases:
        lines += ["", "Removed cases: " + ", ".join(map(md_text, comparison.removed_cases))]
    lines += ["", comparison.verdict_sentence(), "", comparison.score_sentence()]
    if comparison.detectable is not None:
        lines += ["", comparison.detectable.sentence()]
    if comparison.groups:
        lines += ["", "| Group | Shared | Regressions | Fixed | p | Holm-adjusted p |"]
        lines.append("|----|----|----|----|----|----|")
        lines += [
            f"| {md_text(g.name)} | {g.shared} | {g.regressions} | {g.fixes} | "
            f"{g.flips.p_value:.4g} | {g.adjusted_p:.4g} |"
            for g in comparison.groups
        ]
        sentence = groups_sentence(comparison.groups)
        lines += ["", sentence] if sentence else []
    return "\n".join(lines) + "\n"


def _flip(change: CaseChange) -> str:
    base = format_score(change.base_composite) if change.base_composite is not None else "—"
    new = format_score(change.new_composite) if change.new_composite is not None else "—"
    return (
        f"- {md_text(change.case_id)}: {change.base_verdict} → {change.new_verdict} "
        f"(composite {base} → {new})"
    )


def _delta(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


def render_markdown(
    run: CanaryRun, *, results_path: Path | None, date: str, cache_explain: bool = False
) -> str:
    """Render the run as the seed's markdown report (``cache_explain``: a line per case)."""
    title = "Eval Run Results" if run.kind == "eval" else "Canary Run Results"
    lines = [f"## {title} — {date}", ""]
    if run.suites:
        lines += _suites(run)
    if run.results and run.kind == "eval":
        lines += ["| Suite | Case | Agent | Score | Verdict |", "|----|----|----|----|----|"]
        for r in run.results:
            lines.append(
                f"| {md_text(r.phase)} | {md_text(r.title)} | {md_text(r.agent)} | "
                f"{_score_cell(r.composite_score)} | {_MARK[r.verdict]}"
                f"{_ADVISORY if r.advisory else ''} |"
            )
        lines.append("")
    elif run.results:
        lines += [
            "| ID | Phase | Title | Agent | Score | Verdict |",
            "|----|-------|-------|-------|-------|---------|",
        ]
        for r in run.results:
            lines.append(
                f"| {md_text(short_id(r.id))} | {md_text(r.phase)} | {md_text(r.title)} | "
                f"{md_text(r.agent)} | {_score_cell(r.composite_score)} | {_MARK[r.verdict]}"
                f"{_ADVISORY if r.advisory else ''} |"
            )
        lines.append("")
    s = run.summary
    composite = format_score(s.composite_score) if s.composite_score is not None else "—"
    mean = "Mean case score" if run.kind == "eval" else "Composite"
    parts = [f"{s.passed}/{s.total} passed", f"{mean}: {composite}"]
    if s.errored:
        parts.append(f"{s.errored} errored")
    advisory = sum(1 for r in run.results if r.advisory)
    if advisory:
        parts.append(f"{advisory} advisory (not failing the run)")
    if s.invalid:
        parts.append(f"{s.invalid} invalid spec{'s' if s.invalid != 1 else ''}")
    if s.cost is not None:
        parts.append(f"Cost: {s.cost:.4f}")
    if results_path is not None:
        parts.append(f"Results saved to {md_text(str(results_path))}")
    lines.append("**Summary:** " + " | ".join(parts))
    if run.judge is not None and run.judge.describe():
        about = f" — {md_text(run.judge.description)}" if run.judge.description else ""
        if run.judge.uncalibrated:
            power = "blocks without a calibration record (judge.blocking: true)"
        elif run.judge.blocking:
            power = "calibrated: may block"
        else:
            power = "advisory until calibrated"
        lines += ["", f"**Judge:** {md_text(run.judge.describe() or '')} ({power}){about}"]
        if run.judge.calibration:
            lines.append(f"_Calibration: {md_text(run.judge.calibration)}._")
    if s.unpriced_models:
        unpriced = ", ".join(map(md_text, s.unpriced_models))
        lines += ["", f"_No price for {unpriced}: add them under `pricing:` "
                      "in coalmine.yaml to see the whole cost._"]  # fmt: skip
    if run.interrupted:
        why = " (the cost limit was reached)" if run.stopped == "max_cost" else ""
        lines += ["", f"**Interrupted{why}:** only the canaries above finished; the others did "
                      "not run."]  # fmt: skip
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
            f"_Skipped graders: {', '.join(map(md_text, skipped))} ({md_text(reason)}); "
            "weights renormalised over the other graders._",
        ]
    if cache_explain:
        lines += ["", "### Cache", ""]
        lines += [f"- {md_text(r.id)}: {md_text(r.cache or 'not cached')}" for r in run.results]
    if run.invalid_specs:
        lines += ["", "### Invalid specs", ""]
        for spec in run.invalid_specs:
            where = f"{spec.path}:{spec.line}" if spec.line else spec.path
            label = f"**{md_text(spec.id)}** " if spec.id else ""
            first, *rest = spec.reason.splitlines() or [""]
            lines.append(f"- {label}{md_code(where)}: {md_text(_strip_location(first, where))}")
            lines += [f"  - {md_text(line)}" for line in rest]
    if run.lessons:
        lines += ["", "### Lessons recalled", ""]
        lines += [
            f"- #{lesson.id} {md_text(lesson.kind)}: {md_text(lesson.text)}"
            for lesson in run.lessons
        ]
    return "\n".join(lines) + "\n"


def _explain(r: CaseResult) -> list[str]:
    head = f"- **{md_text(r.id)}** ({md_text(r.agent)}): {r.verdict}"
    if r.reason:
        head += f", {md_text(r.reason)}"
    out = [head]
    if r.error:
        out += [f"  - {md_text(line)}" for line in r.error.splitlines()[:12] if line.strip()]
    out += [f"  - {md_text(failure)}" for failure in r.failures if failure != r.error]
    out += _said(r)
    return out


def _said(r: CaseResult) -> list[str]:
    """What the agent answered and what was expected, shortened where they first differ."""
    if r.output is None or any(
        getattr(g, "expected_excerpt", None) for g in r.grader_scores.values()
    ):  # a grader's failure quotes both already
        return []
    output = r.output
    if r.expected is None:
        cut = output[:OUTPUT_SHOWN] + ("…" if len(output) > OUTPUT_SHOWN else "")
        return [f"  - output: {_quote(cut)}"]
    expected = (
        r.expected if isinstance(r.expected, str) else json.dumps(r.expected, ensure_ascii=False)
    )
    at = first_difference(expected, output)
    where = "" if at is None else f" (they differ at character {at})"
    return [
        f"  - expected: {_quote(excerpt(expected, at or 0))}",
        f"  - output: {_quote(excerpt(output, at or 0))}{where}",
    ]


def _quote(text: str) -> str:
    """A text in one line of markdown: in double quotes, newlines and controls escaped."""
    return md_text(json.dumps(text, ensure_ascii=False))


def _suites(run: CanaryRun) -> list[str]:
    lines = ["| Suite | Verdict | Passed | Score | Gate |", "|----|----|----|----|----|"]
    for u in run.suites:
        verdict = ("PASS" if u.verdict == "pass" else "FAIL") + (
            " (incomplete)" if u.interrupted else ""
        )
        lines.append(
            f"| {md_text(u.suite_id)} | {verdict} | {u.passed}/{u.cases} | "
            f"{format_score(u.score)} | {md_text(u.gate.in_words(u.suite_id))} |"
        )
    return [*lines, ""]


def _score_cell(score: float | None) -> str:
    return format_score(score) if score is not None else "—"


def _strip_location(message: str, where: str) -> str:
    return message[len(where) + 2 :] if message.startswith(where + ": ") else message
