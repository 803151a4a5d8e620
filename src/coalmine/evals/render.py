"""An eval run's suites as a person reads them: the table, each suite's failures, its file.

What ``coalmine eval run`` and ``runs show`` print, and what the MCP server returns beside the
structured result.
"""

from __future__ import annotations

from pathlib import Path

from coalmine._util.files import shown_path
from coalmine._util.words import counted
from coalmine.evals.summary import STDERR_MARK, gate_in_words
from coalmine.results import EvalSequential, EvalSuiteResult


def render_suites(results: list[EvalSuiteResult], *, root: Path | None = None) -> str:
    """A table of suites, then each suite's listed failures and where its result file is.

    A result file's path is stored relative to the project ``root``; it is shown relative to
    the working directory when ``root`` is given.
    """
    rows = [("SUITE", "CASES", "PASSED", "FAILED", "ERRORED", "SCORE", "95% CI", "VERDICT")]
    for r in results:
        ci = f"{r.ci95[0]:.3f}–{r.ci95[1]:.3f}" if r.ci95 else "—"
        # an interrupted suite's gate has seen only the cases that ran: no verdict yet
        verdict = ("INCOMPLETE" if r.interrupted else r.verdict.upper()) + (
            "" if r.blocking else " (advisory)"
        )
        rows.append(
            (r.suite_id, str(r.cases), str(r.passed), str(r.failed), str(r.errored),
             f"{r.score:.4f}", ci, verdict)
        )  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    for r in results:
        if r.interrupted:
            lines.append("")
            lines.append(
                f"{r.suite_id}: interrupted after {counted(r.cases, 'case', 'cases')}; "
                "its verdict waits for the rest (resume the run)"
            )
        lines += [f"{r.suite_id}: {line}" for line in numbers_in_words(r)]
        if r.sequential is not None:
            lines.append("")
            lines.append(f"{r.suite_id}: {sequential_in_words(r.sequential)}")
        if r.failures:
            lines.append("")
            lines.append(gate_in_words(r.suite_id, r.gate) + ":")
            for f in r.failures:
                mark = "advisory " if f.advisory else ""
                lines.append(f"  {mark}{f.status.upper()} {f.id}: {f.reason.splitlines()[0]}")
                lines += [f"    stderr: {line}" for line in _stderr_tail(f.reason)]
        where = r.report_path if root is None else shown_path(root / r.report_path)
        lines.append(f"{r.suite_id}: {where}")
    return "\n".join(lines)


def numbers_in_words(r: EvalSuiteResult) -> list[str]:
    """What the repeats and the clusters add to a suite's score, a line each (none: nothing)."""
    lines = []
    if r.pass_hat_k is not None:
        line = (
            f"pass^{r.repeats} = {r.pass_hat_k:.4f} (the chance that all {r.repeats} runs of a "
            f"case pass); {counted(r.flaky, 'flaky case', 'flaky cases')}"
        )
        shown = [f"{f.id} {f.passes}/{f.runs} ({f.ci95[0]:.2f}–{f.ci95[1]:.2f})"
                 for f in r.flaky_cases[:5]]  # fmt: skip
        lines.append(line + (": " + ", ".join(shown) if shown else ""))
    if r.judge_rate is not None:
        j = r.judge_rate
        if j.corrected is not None and j.ci95 is not None:
            lines.append(
                f"judge {j.grader} passed {j.raw:.3f}; corrected by {j.labelled} labelled cases "
                f"{j.corrected:.3f} (95% CI {j.ci95[0]:.3f}–{j.ci95[1]:.3f})"
            )
        else:
            lines.append(f"judge {j.grader} passed {j.raw:.3f}: {j.note}")
    d = r.detectable
    if d is not None and d.difference is not None:
        lines.append(
            f"against run {d.against} ({d.cases} shared cases, {d.flips} flipped), a comparison "
            f"detects a change of {d.difference * 100:.1f} points or more (80% power)"
        )
    if r.clustered is not None:
        c = r.clustered
        lines.append(
            f"clustered by tag ({c.clusters} clusters): standard error {c.stderr:.4f}, 95% CI "
            f"{c.ci95[0]:.3f}–{c.ci95[1]:.3f} (cases that share a tag are not independent)"
        )
    return lines


def sequential_in_words(s: EvalSequential) -> str:
    """How ``--sequential`` decided a suite, and what it saved, in a sentence."""
    question = f"{s.rule} (alpha {s.alpha:g}, order seed {s.seed})"
    if not s.stopped_early:
        if s.decision is None:
            return f"sequential: every case ran; undecided before the end whether {question}"
        return f"sequential: decided {s.decision.upper()} after {s.decided_after} of " + (
            f"{s.cases_total} cases, with none left to skip: {question}"
        )
    saved = f"{counted(s.calls_saved, 'call', 'calls')} saved"
    if s.cost_saved is not None:
        saved += f" (about ${s.cost_saved:.4f})"
    return (
        f"sequential: decided {(s.decision or '').upper()} after {s.decided_after} of "
        f"{s.cases_total} cases, so {s.cases_skipped} did not run and {saved}: {question}"
    )


def _stderr_tail(reason: str, lines: int = 5) -> list[str]:
    """The last lines of the agent's stderr that a failure reason carries (as canary runs show)."""
    _, mark, stderr = reason.partition(STDERR_MARK)
    return [line for line in stderr.splitlines() if line.strip()][-lines:] if mark else []
