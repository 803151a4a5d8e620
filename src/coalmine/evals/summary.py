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
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from coalmine._util.clustered import case_pass_interval, is_flaky
from coalmine._util.estimate import Z95, MeanEstimate
from coalmine._util.files import write_file
from coalmine._util.hashing import hash_text
from coalmine.compare import detectable
from coalmine.engine.verdict import EPSILON
from coalmine.engine.wiring import coalmine_version
from coalmine.evals.judged import JudgeRates, Labels
from coalmine.evals.plan import PlannedSuite
from coalmine.evals.values import case_values
from coalmine.results import (
    EVERY_CASE,
    EvalClustered,
    EvalDetectable,
    EvalFailure,
    EvalFlaky,
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
    previous_suite_verdicts,
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
    labels: Labels | None = None,
) -> tuple[EvalSuiteResult, Path]:
    """Summarise a suite of run ``run_id`` from the store; write and store its result.

    ``sequence``: with ``--sequential``, the suite's gate as it was decided (and ``seed`` the
    order its cases were drawn in). ``labels``: people's verdicts on cases (by ``suite/case``),
    which correct a judge grader's pass rate (:mod:`coalmine.evals.judged`).
    """
    summary = summarise_attempts(
        iter_attempts(store, run_id, suite.name),
        reducer=suite.reducer,
        repeats=suite.repeats,
        min_score=suite.index.meta.min_score,
        min_pass_hat_k=suite.index.meta.min_pass_hat_k,
        judged=JudgeRates(suite.name, labels or {}) if judged and suite.needs_judge else None,
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
        pass_hat_k=round(summary.pass_hat_k[0] / summary.pass_hat_k[2], 4)
        if summary.pass_hat_k[2] and suite.repeats > 1
        else None,
        flaky=summary.flaky,
        flaky_cases=summary.flaky_cases,
        clustered=summary.clusters.result(),
        judge_rate=summary.judged.result() if summary.judged is not None else None,
        detectable=None if interrupted else _detectable(store, run_id, suite.name, summary),
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


def _detectable(
    store: Store, run_id: str, suite: str, summary: SuiteSummary
) -> EvalDetectable | None:
    """What a comparison of this suite with its previous finished run can detect."""
    found = previous_suite_verdicts(store, suite, run_id)
    if found is None:
        return None
    against, kept = found
    before = dict(zip(kept.ids, kept.verdicts, strict=True))
    ids = summary.case_verdicts.ids_json_list()
    pairs = [(before[i], v) for i, v in zip(ids, summary.case_verdicts.letters, strict=True)
             if i in before]  # fmt: skip
    flips = sum((a == "P") != (b == "P") for a, b in pairs)
    figure = detectable(len(pairs), flips)
    if figure is None:
        return None
    return EvalDetectable(
        against=against,
        cases=figure.cases,
        flips=figure.flips,
        discordance=round(figure.discordance, 6),
        assumed=figure.assumed,
        difference=None if figure.difference is None else round(figure.difference, 6),
    )


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
    pass_hat_k: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    """[Σ pass^k, Σ pass^k over what may block, cases] (k = the planned repeats)."""
    flaky: int = 0
    flaky_cases: list[EvalFlaky] = field(default_factory=list)
    clusters: ClusterSums = field(default_factory=lambda: ClusterSums())
    judged: JudgeRates | None = None
    """With a judge grader: its verdicts, labelled or not (the corrected rate)."""

    def grader_means(self) -> dict[str, GraderMean]:
        """Each grader's mean score."""
        return {
            key: GraderMean(mean=round(total / n, 4) if n else None, n=int(n), skipped=int(skipped))
            for key, (total, n, skipped) in sorted(self.grader_sums.items())
        }


def summarise_attempts(
    attempts: Iterator[Attempt],
    *,
    reducer: str,
    repeats: int,
    min_score: float | None,
    min_pass_hat_k: float | None = None,
    judged: JudgeRates | None = None,
) -> SuiteSummary:
    """Reduce a suite's attempts (grouped by case) to its summary, in constant memory.

    Per case, the runs that did not error reduce to one value (``reducer``); the case passes
    when the value is at least 0.5 (with one run: when that run passed). A case whose every
    run errored is errored. The gate applies the same rule to the graders that may block; with
    ``min_pass_hat_k`` the suite's pass^k over them must reach it too.
    """
    s = SuiteSummary(judged=judged)
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
    if min_pass_hat_k is not None:
        rule += f" and pass^{repeats} >= {min_pass_hat_k:g}"
        cases = s.pass_hat_k[2]
        ok = ok and (not cases or s.pass_hat_k[1] / cases >= min_pass_hat_k - EPSILON)
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
    if s.judged is not None:
        s.judged.add(case_id, runs[0].record)
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
    s.clusters.add(cluster_of(runs[0].record.get("tags")), value)
    k = min(repeats, values.runs)
    s.pass_hat_k[0] += math.comb(values.passes, k) / math.comb(values.runs, k)
    s.pass_hat_k[1] += math.comb(values.blocking_passes, k) / math.comb(values.runs, k)
    s.pass_hat_k[2] += 1
    if repeats > 1 and is_flaky(values.passes, values.runs):
        s.flaky += 1
        if len(s.flaky_cases) < FAILURES_LISTED:
            low, high = case_pass_interval(values.passes, values.runs)
            s.flaky_cases.append(
                EvalFlaky(
                    id=case_id,
                    passes=values.passes,
                    runs=values.runs,
                    ci95=(round(low, 4), round(high, 4)),
                )
            )
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


def cluster_of(tags: object) -> str | None:
    """The cluster a case belongs to: its ``group:NAME`` tag, else its first tag, else none."""
    if not isinstance(tags, list) or not tags:
        return None
    for tag in tags:
        if isinstance(tag, str) and tag.startswith("group:"):
            return tag
    return str(tags[0])


@dataclass
class ClusterSums:
    """The sums a cluster-robust standard error of the mean needs, kept case by case.

    :func:`coalmine._util.clustered.clustered_mean` from totals rather than from every value:
    each cluster's sum and count, and for the cases in no cluster (each its own) the sum and
    the sum of squares. With ``ȳ`` the mean of all ``n`` values, ``Σ_g (Σ_{i∈g} (y_i - ȳ))²``
    is ``Σ_g (S_g - n_g·ȳ)²`` over the clusters plus ``Σ y² - 2ȳ·Σ y + m·ȳ²`` over the ``m``
    unclustered cases.
    """

    sums: dict[str, list[float]] = field(default_factory=dict)
    """Cluster → [sum, count]."""
    alone: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    """[sum, sum of squares, count] of the cases in no cluster."""

    def add(self, cluster: str | None, value: float) -> None:
        """Count one case's value in its cluster (``None``: a cluster of its own)."""
        if cluster is None:
            self.alone[0] += value
            self.alone[1] += value * value
            self.alone[2] += 1
            return
        entry = self.sums.setdefault(cluster, [0.0, 0.0])
        entry[0] += value
        entry[1] += 1

    def result(self) -> EvalClustered | None:
        """The clustered standard error and interval (``None``: no cluster of two cases).

        Two clusters at least are needed: one cluster alone says nothing of its error.
        """
        if not any(count >= 2 for _, count in self.sums.values()):
            return None
        g = len(self.sums) + int(self.alone[2])
        if g < 2:
            return None
        n = sum(count for _, count in self.sums.values()) + self.alone[2]
        total = sum(total for total, _ in self.sums.values()) + self.alone[0]
        mean = total / n
        a_sum, a_squares, m = self.alone
        meat = math.fsum((t - c * mean) ** 2 for t, c in self.sums.values())
        meat += max(0.0, a_squares - 2 * mean * a_sum + m * mean * mean)
        stderr = math.sqrt(g / (g - 1) * meat) / n
        low, high = max(0.0, mean - Z95 * stderr), min(1.0, mean + Z95 * stderr)
        return EvalClustered(
            by="tag", clusters=g, stderr=round(stderr, 4), ci95=(round(low, 4), round(high, 4))
        )


def gate_in_words(suite: str, gate: EvalGate) -> str:
    """The gate's verdict as a sentence that states the rule and the count that broke it."""
    return gate.in_words(suite)
