"""One case's failure in words, and markdown tables of untrusted cells.

What ``explain_failure`` (the MCP server) returns and what a failing pytest item reports
(``pytest --coalmine``): the verdict, each cause, every grader's score and what cost points,
what was expected and what the agent said. Every text the case holds is untrusted (an agent's
output, a judge's reason): cells go through :func:`~coalmine._util.markdown.md_text`, and a
block is fenced by more backticks than the text holds in a row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from coalmine._util.clustered import case_pass_interval, is_flaky
from coalmine._util.markdown import md_text
from coalmine.results import CaseResult, format_score

OUTPUT_SHOWN = 4000
"""Characters of the output (and of the expected value) an explanation shows."""


def markdown_table(rows: Sequence[Sequence[object]]) -> str:
    """A markdown table of ``rows`` (the first is the header), each cell escaped."""
    if not rows:
        return ""
    head, *body = rows
    lines = ["| " + " | ".join(md_text(str(c)) for c in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(md_text(str(c)) for c in row) + " |" for row in body]
    return "\n".join(lines)


def fenced(text: str) -> str:
    """``text`` as a fenced block that nothing in it can close."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def explain_case(result: CaseResult) -> str:
    """Why ``result`` has its verdict: its causes, its graders, what was expected, the output."""
    score = (
        f" (score {format_score(result.composite_score)})"
        if result.composite_score is not None
        else ""
    )
    lines = [f"**{md_text(result.id)}**: {result.verdict}{score}"]
    graded = [r for r in result.repeats if r.verdict != "ERROR"]
    if len(graded) > 1:
        passes = sum(r.verdict == "PASS" for r in graded)
        low, high = case_pass_interval(passes, len(graded))
        flaky = " — flaky: its runs disagree" if is_flaky(passes, len(graded)) else ""
        lines.append(
            f"passed {passes} of {len(graded)} runs (95% interval {low:.2f}–{high:.2f}){flaky}"
        )
    if result.advisory:
        lines.append("advisory: it does not fail the run")
    if result.error:
        lines.append(f"error: {md_text(result.error.splitlines()[0])}")
    lines += [f"- {md_text(why)}" for why in result.failures if why != result.error]
    rows: list[list[object]] = [["grader", "score", "passed", "what cost points"]]
    for name, grade in result.grader_scores.items():
        shown = "skipped" if grade.score is None else f"{grade.score:.3f}"
        said = grade.explain() or grade.reason
        if not said and grade.passed is False:
            said = "it did not pass (the grader kept no detail; the causes above say why)"
        rows.append([name, shown, grade.passed, said or ""])
    if len(rows) > 1:
        lines += ["", markdown_table(rows)]
    if result.expected is not None:
        expected = result.expected
        if isinstance(expected, str):
            text = expected
        else:
            text = json.dumps(expected, indent=2, ensure_ascii=False)
        lines += ["", "expected:", fenced(text[:OUTPUT_SHOWN])]
    if result.output is not None:
        cut = "…" if len(result.output) > OUTPUT_SHOWN else ""
        lines += ["", "output:", fenced(result.output[:OUTPUT_SHOWN] + cut)]
    return "\n".join(lines)
