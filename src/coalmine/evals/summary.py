"""An eval suite's summary: counts, estimates and the gate, streamed from its stored attempts.

:func:`summarise_attempts` folds a suite's attempts (ordered by case) into a
:class:`SuiteSummary` without holding them all: a case's repeats are reduced to one value
(``mean``, ``majority``, ``pass@k``, ``pass^k``), the suite's score is the mean of those values
with its standard error and 95% interval, and the gate holds when no case fails on what may
block (or, with ``min_score``, when that score is reached) and no case errored.
:func:`write_suite_result` turns it into ``coalmine.eval.result.v1``, written as JSON and
stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from coalmine._util.estimate import MeanEstimate
from coalmine._util.files import write_file
from coalmine._util.hashing import hash_text
from coalmine.engine.verdict import EPSILON
from coalmine.engine.wiring import coalmine_version
from coalmine.evals.plan import PlannedSuite
from coalmine.evals.values import case_values
from coalmine.results import (
    EVERY_CASE,
    EvalFailure,
    EvalGate,
    EvalSuiteResult,
    EvalTokens,
    GraderMean,
    RecalledLesson,
)
from coalmine.store.evals import (
    Attempt,
    PackedVerdicts,
    iter_attempts,
    save_case_verdicts,
    save_suite_summary,
)
from coalmine.store.runs import Store

if TYPE_CHECKING:
    from coalmine.evals.sequential import SuiteSequence

__all__ = ["FAILURES_LISTED", "SuiteSummary", "summarise_attempts", "write_suite_result"]

FAILURES_LISTED = 20
"""Failures (and bad lines) a suite's result lists."""


STDERR_MARK = "\nstderr (tail):\n"
"""How an agent error's message carries the end of what the agent wrote on stderr."""


def failure_reason(text: str, *, head: int = 300, tail: int = 400) -> str:
    """A failure's reason, kept short: its start, and the *end* of an agent's stderr tail.

    The end of stderr is where a traceback says what went wrong, so it is what is kept.
    """
    message, mark, stderr = text.partition(STDERR_MARK)
    if not mark:
        return text[: head + tail]
    cut = "…" if len(stderr) > tail else ""
    return message[:head] + mark + cut + stderr[-tail:]


def write_suite_result(
    store: Store,
    run_id: str,
    suite: PlannedSuite,
    *,
    started: datetime,
    ended: datetime,
    reports_dir: Path,
    root: Path,
    interrupted: bool,
    judged: bool,
    lessons: list[RecalledLesson],
    sequence: SuiteSequence | None = None,
    seed: int | None = None,
) -> tuple[EvalSuiteResult, Path]:
    """Summarise a suite of run ``run_id`` from the store; write and store its result.

    ``sequence``: with ``--sequential``, the suite's gate as it was decided (and ``seed`` the
    order its cases were drawn in).
    """
    summary = summarise_attempts(
        iter_attempts(store, run_id, suite.name),
        reducer=suite.reducer,
        repeats=suite.repeats,
        min_score=suite.index.meta.min_score,
    )
    sequential = None
    if sequence is not None:
        summary.gate = sequence.gate_for(summary.gate)
        sequential = sequence.outcome(
            seed=seed,
            cases_run=summary.cases,
            calls=summary.attempts,
            cost=summary.cost if summary.priced else None,
        )
    path = reports_dir / suite.name / f"{run_id}.json"
    try:
        shown = str(path.relative_to(root))
    except ValueError:
        shown = str(path)
    meta = suite.index.meta
    result = EvalSuiteResult(
        suite_id=suite.name,
        run_id=run_id,
        started_at=int(started.timestamp() * 1000),
        ended_at=int(ended.timestamp() * 1000),
        cases=summary.cases,
        passed=summary.passed,
        failed=summary.failed,
        errored=summary.errored,
        score=round(summary.estimate.mean, 4) if summary.estimate.n else 0.0,
        stderr=_round(summary.estimate.stderr),
        ci95=_round_pair(summary.estimate.ci95),
        blocking=meta.blocking,
        judge_prompt_hash=hash_text("\n".join(sorted(suite.judge_specs)))
        if suite.judge_specs and judged
        else None,
        provider=", ".join(sorted(summary.providers)) or "none",
        report_path=shown,
        verdict="pass" if summary.gate.passed else "fail",
        gate=summary.gate,
        repeats=suite.repeats,
        reducer=suite.reducer,
        graders=summary.grader_means(),
        tokens=EvalTokens(prompt=summary.prompt_tokens, completion=summary.completion_tokens),
        cost=round(summary.cost, 6) if summary.priced else None,
        latency_seconds=round(summary.latency_total / summary.latency_n, 4)
        if summary.latency_n
        else None,
        bad_lines=len(suite.index.bad),
        bad_line_examples=[str(b) for b in suite.index.bad[:FAILURES_LISTED]],
        failures=summary.failures,
        interrupted=interrupted,
        coalmine_version=coalmine_version(),
        unstable=summary.unstable,
        lessons=lessons,
        sequential=sequential,
    )
    text = result.model_dump_json(by_alias=True, indent=2) + "\n"
    write_file(path, text)
    save_suite_summary(store, run_id, suite.name, json.loads(text))
    save_case_verdicts(store, run_id, suite.name, summary.case_verdicts)
    return result, path


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _round_pair(pair: tuple[float, float] | None) -> tuple[float, float] | None:
    return None if pair is None else (round(pair[0], 4), round(pair[1], 4))


@dataclass
class SuiteSummary:
    """Counts and estimates of one suite, accumulated case by case."""

    cases: int = 0
    attempts: int = 0
    """Case runs (a case's repeats each count)."""
    passed: int = 0
    failed: int = 0
    errored: int = 0
    estimate: MeanEstimate = field(default_factory=MeanEstimate)
    blocking_estimate: MeanEstimate = field(default_factory=MeanEstimate)
    blocking_failures: int = 0
    """Cases that fail or error on what may block."""
    blocking_errors: int = 0
    """Of those, the cases that errored."""
    gate: EvalGate = field(
        default_factory=lambda: EvalGate(passed=True, rule="", blocking_failures=0)
    )
    grader_sums: dict[str, list[float]] = field(default_factory=dict)
    """key → [sum, n, skipped]."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    priced: bool = False
    latency_total: float = 0.0
    latency_n: int = 0
    providers: set[str] = field(default_factory=set)
    unstable: int = 0
    failures: list[EvalFailure] = field(default_factory=list)
    case_verdicts: PackedVerdicts = field(default_factory=PackedVerdicts)
    """Each case's verdict over its repeats and their mean score (what a comparison reads)."""

    def grader_means(self) -> dict[str, GraderMean]:
        """Each grader's mean score."""
        return {
            key: GraderMean(mean=round(total / n, 4) if n else None, n=int(n), skipped=int(skipped))
            for key, (total, n, skipped) in sorted(self.grader_sums.items())
        }


def summarise_attempts(
    attempts: Iterator[Attempt], *, reducer: str, repeats: int, min_score: float | None
) -> SuiteSummary:
    """Reduce a suite's attempts (grouped by case) to its summary, in constant memory.

    Per case, the runs that did not error reduce to one value (``reducer``); the case passes
    when the value is at least 0.5 (with one run: when that run passed). A case whose every
    run errored is errored. The gate applies the same rule to the graders that may block.
    """
    s = SuiteSummary()
    group: list[Attempt] = []
    for attempt in attempts:
        if group and attempt.case_id != group[0].case_id:
            _add_case(s, group, reducer, repeats)
            group = []
        group.append(attempt)
        _add_attempt(s, attempt)
    if group:
        _add_case(s, group, reducer, repeats)
    if min_score is None:
        rule = EVERY_CASE
        ok = s.blocking_failures == 0
    else:
        rule = f"score >= {min_score:g}"
        ok = s.blocking_errors == 0 and (
            s.blocking_estimate.n == 0 or s.blocking_estimate.mean >= min_score - EPSILON
        )
    s.gate = EvalGate(passed=ok, rule=rule, blocking_failures=s.blocking_failures)
    return s


def _add_attempt(s: SuiteSummary, a: Attempt) -> None:
    s.attempts += 1
    for key, score in a.scores.items():
        entry = s.grader_sums.setdefault(key, [0.0, 0.0, 0.0])
        if score is None:
            entry[2] += 1
        else:
            entry[0] += score
            entry[1] += 1
    s.unstable += bool(a.record.get("unstable"))
    s.prompt_tokens += a.prompt_tokens or 0
    s.completion_tokens += a.completion_tokens or 0
    if a.cost is not None:
        s.cost += a.cost
        s.priced = True
    if a.latency is not None:
        s.latency_total += a.latency
        s.latency_n += 1
    agent = a.record.get("agent")
    if agent and "output" in a.record:  # only agents that answered
        model = a.record.get("model")
        s.providers.add(f"{agent}:{model}" if model else str(agent))


def _add_case(s: SuiteSummary, runs: list[Attempt], reducer: str, repeats: int) -> None:
    s.cases += 1
    values = case_values(runs, reducer, repeats)
    scores = [a.score for a in runs if a.score is not None]
    mean = sum(scores) / len(scores) if scores else None
    s.case_verdicts.add(runs[0].case_id, values.verdict, mean)
    case_id = runs[0].case_id
    value, value_b = values.value, values.blocking_value
    if value is None or value_b is None:
        s.errored += 1
        if values.blocking_error:
            s.blocking_failures += 1
            s.blocking_errors += 1
        if len(s.failures) < FAILURES_LISTED:
            reason = str(runs[0].record.get("error") or runs[0].error_kind or "error")
            s.failures.append(
                EvalFailure(id=case_id, status="error", reason=failure_reason(reason))
            )
        return
    s.estimate.add(value)
    s.blocking_estimate.add(value_b)
    if value >= 0.5 - EPSILON:
        s.passed += 1
    else:
        s.failed += 1
    if value_b < 0.5 - EPSILON:
        s.blocking_failures += 1
    if value < 0.5 - EPSILON and len(s.failures) < FAILURES_LISTED:
        first = next(a for a in runs if a.status == "fail")
        reason = str(first.record.get("why") or first.record.get("error") or "failed")
        s.failures.append(
            EvalFailure(
                id=case_id,
                status="fail",
                reason=failure_reason(reason),
                advisory=value_b >= 0.5 - EPSILON,
            )
        )


def gate_in_words(suite: str, gate: EvalGate) -> str:
    """The gate's verdict as a sentence that states the rule and the count that broke it."""
    return gate.in_words(suite)
