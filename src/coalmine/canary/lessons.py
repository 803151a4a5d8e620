"""The lessons of canary runs: a caught regression, and recall before a run."""

from __future__ import annotations

from pathlib import Path

from coalmine.canary.plan import CanaryPlan
from coalmine.compare import compare_runs
from coalmine.lessons.recall import infrastructure, recall_lessons, relative, short
from coalmine.results import CanaryRun, CaseResult, RecalledLesson
from coalmine.store.evals import prior_runs
from coalmine.store.memory import LessonKey, mark_stale, record_lesson
from coalmine.store.runs import Store


def _why(result: CaseResult) -> str:
    return "; ".join(result.failures) or result.error or result.reason or "failed"


def _cause(result: CaseResult) -> str:
    """The graders that failed, ``agent: KIND`` for an agent error, else ``composite``."""
    if result.error_kind:
        return f"agent: {result.error_kind}"
    failed = sorted(k for k, g in result.grader_scores.items() if g.passed is False)
    return ", ".join(failed) or "composite"


def retain_canary_regression(store: Store, run: CanaryRun, *, root: Path) -> list[int]:
    """Retain what a finished canary run caught against the previous one; the lessons' ids.

    The baseline is the finished canary run that started last before this one; a caught
    regression is a spec that passed there and fails now, blocking (an ERROR, an advisory FAIL
    or an agent call that failed around the agent is not one). One lesson per spec and cause
    (see :func:`record_lesson`): a flaky spec keeps one, counted each time it is caught.
    """
    run_id = run.store_run_id
    if run_id is None or run.interrupted:
        return []
    base_id = next(iter(prior_runs(store, "canary", run_id)), None)
    if base_id is None:
        return []
    results = {r.id: r for r in run.results}
    changes = compare_runs(store.load_run(base_id), run).regressions
    regressed = [
        results[c.case_id]
        for c in changes
        if c.new_verdict == "FAIL"
        and not results[c.case_id].advisory
        and not infrastructure(results[c.case_id].error_kind)
    ]
    return [
        record_lesson(
            store,
            LessonKey("caught-regression", "canary", r.id, _cause(r)),
            f"Canaries caught a regression: spec {r.id} passed in run {base_id} and fails in "
            f"run {run_id} ({short(_why(r))})",
            run=run_id,
            tags=["canary", r.phase],
            paths=[rel for p in [r.spec_path] if p and (rel := relative(Path(p), root))],
            evidence=[run_id, base_id, r.id],
        )
        for r in regressed
    ]


def recall_for_canaries(store: Store, plan: CanaryPlan, *, root: Path) -> list[RecalledLesson]:
    """The lessons relevant to the planned canaries: their phases, ids and spec files."""
    if not plan.canaries:
        return []
    mark_stale(store, root)
    phases = dict.fromkeys(c.loaded.spec.phase for c in plan.canaries)
    query = " ".join([*phases, *(c.loaded.id for c in plan.canaries)])
    paths = [rel for c in plan.canaries if (rel := relative(c.loaded.path, root)) is not None]
    return recall_lessons(store, query, paths)
