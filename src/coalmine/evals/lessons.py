"""The lessons of eval runs: a blocking suite's caught regression, and recall before a run."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from coalmine._util.estimate import reduce_repeats
from coalmine.engine.verdict import EPSILON
from coalmine.evals.plan import PlannedSuite
from coalmine.lessons.recall import infrastructure, recall_lessons, relative, short
from coalmine.results import RecalledLesson
from coalmine.store.evals import Attempt, find_suite_baseline, iter_attempts
from coalmine.store.memory import LessonKey, mark_stale, record_lesson
from coalmine.store.runs import Store


@dataclass(frozen=True)
class _CaseVerdict:
    case_id: str
    status: str
    """``pass``, ``fail`` or ``error``: the case's value reduced over its repeats."""
    blocks: bool
    """A fail that still fails on the graders that may block."""
    reason: str
    cause: str = ""
    """The graders the first failing repeat failed (``score`` when only its score was low)."""


def _verdicts(attempts: Iterator[Attempt], *, reducer: str, repeats: int) -> Iterator[_CaseVerdict]:
    """Each case's verdict by the suite's rule (as the summary counts it), streamed.

    A repeat whose agent call failed around the agent (a cassette miss, a missing key, a
    refused connection) counts as an error, as one whose graders could not run does.
    """
    for case_id, group in itertools.groupby(attempts, key=lambda a: a.case_id):
        runs = list(group)
        scored = [a for a in runs if a.status != "error" and not infrastructure(a.error_kind)]
        if not scored:
            yield _CaseVerdict(case_id, "error", any(a.blocks for a in runs), "")
            continue
        n = len(scored)
        passes = sum(a.status == "pass" for a in scored)
        if reduce_repeats(reducer, n, passes, repeats) >= 0.5 - EPSILON:
            yield _CaseVerdict(case_id, "pass", False, "")
            continue
        # the same rule over the graders that may block: a fail that does not block passes
        passes_b = sum(a.status == "pass" or not a.blocks for a in scored)
        blocks = reduce_repeats(reducer, n, passes_b, repeats) < 0.5 - EPSILON
        first = next(a for a in scored if a.status == "fail")
        reason = str(first.record.get("why") or first.record.get("error") or "failed")
        grades = first.record.get("grades") or {}
        failed = sorted(
            k for k, g in grades.items() if isinstance(g, dict) and g.get("passed") is False
        )
        cause = ", ".join(failed) or ("agent: " + first.error_kind if first.error_kind else "score")
        yield _CaseVerdict(case_id, "fail", blocks, reason, cause)


def suite_paths(suite: PlannedSuite, root: Path) -> list[str]:
    """The suite's ``.jsonl`` (and ``.yaml``, when there is one), relative to ``root``."""
    path = suite.index.path
    found = [path, *([path.with_suffix(".yaml")] if path.with_suffix(".yaml").is_file() else [])]
    return [rel for p in found if (rel := relative(p, root)) is not None]


def retain_eval_regression(
    store: Store, run_id: str, suite: PlannedSuite, *, root: Path
) -> list[int]:
    """Retain what a blocking suite caught in run ``run_id``; the ids of the lessons.

    A caught regression is a case that passed in the suite's baseline and fails now on what
    may block: one lesson per case and cause (see :func:`record_lesson`), so a flaky case
    keeps one lesson, counted each time it is caught. Nothing is retained for an advisory
    suite, a suite without a baseline, or one whose failures are all new, advisory or errors
    (an infrastructure failure is an error).
    """
    if not suite.index.meta.blocking:
        return []
    base = find_suite_baseline(store, suite.name, before=run_id)
    if base is None:
        return []
    now = iter_attempts(store, run_id, suite.name)
    failing = {
        v.case_id: v
        for v in _verdicts(now, reducer=suite.reducer, repeats=suite.repeats)
        if v.status == "fail" and v.blocks
    }
    if not failing:
        return []
    before = iter_attempts(store, base.run_id, suite.name)
    regressed = [
        failing[v.case_id]
        for v in _verdicts(before, reducer=base.reducer, repeats=base.repeats)
        if v.status == "pass" and v.case_id in failing
    ]
    paths = suite_paths(suite, root)
    return [
        record_lesson(
            store,
            LessonKey("caught-regression", suite.name, v.case_id, v.cause),
            f"Suite '{suite.name}' caught a regression: case {v.case_id} passed in run "
            f"{base.run_id} and fails in run {run_id} ({short(v.reason)})",
            run=run_id,
            tags=[suite.name, "eval"],
            paths=paths,
            evidence=[run_id, base.run_id, f"{suite.name}/{v.case_id}"],
        )
        for v in regressed
    ]


def recall_for_suites(
    store: Store, suites: Sequence[PlannedSuite], *, root: Path
) -> dict[str, list[RecalledLesson]]:
    """Suite name → the lessons relevant to it (after stale marks are brought up to date)."""
    if not suites:
        return {}
    mark_stale(store, root)
    return {
        s.name: recall_lessons(
            store, f"{s.name} {s.index.meta.description or ''}", suite_paths(s, root)
        )
        for s in suites
    }
