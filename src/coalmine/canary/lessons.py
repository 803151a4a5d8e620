"""The lessons of canary runs: a caught regression, and recall before a run."""

from __future__ import annotations

from pathlib import Path

from coalmine.canary.plan import CanaryPlan
from coalmine.compare import compare_runs
from coalmine.lessons.recall import EVIDENCE_CASES, listed, plural, recall_lessons, relative, short
from coalmine.results import CanaryRun, CaseResult, RecalledLesson
from coalmine.store.evals import prior_runs
from coalmine.store.memory import ensure_lesson, mark_stale
from coalmine.store.runs import Store


def _why(result: CaseResult) -> str:
    return "; ".join(result.failures) or result.error or result.reason or "failed"


def retain_canary_regression(store: Store, run: CanaryRun, *, root: Path) -> int | None:
    """Retain what a finished canary run caught against the previous one; the lesson's id.

    The baseline is the newest earlier finished canary run; a caught regression is a spec that
    passed there and fails now, blocking (an ERROR or an advisory FAIL is not one).
    """
    run_id = run.store_run_id
    if run_id is None or run.interrupted:
        return None
    base_id = next(iter(prior_runs(store, "canary", run_id)), None)
    if base_id is None:
        return None
    results = {r.id: r for r in run.results}
    changes = compare_runs(store.load_run(base_id), run).regressions
    regressed = [
        c.case_id for c in changes if c.new_verdict == "FAIL" and not results[c.case_id].advisory
    ]
    if not regressed:
        return None
    first = results[regressed[0]]
    why = short(_why(first))
    text = (
        f"Canaries caught a regression: {plural(regressed, 'spec', 'specs')} "
        f"{listed(regressed)} passed in run {base_id} and "
        f"{plural(regressed, 'fails', 'fail')} in run {run_id} "
        f"({why if len(regressed) == 1 else f'{first.id}: {why}'})"
    )
    spec_paths = [results[c].spec_path for c in regressed]
    paths = dict.fromkeys(rel for p in spec_paths if p and (rel := relative(Path(p), root)))
    phases = sorted({results[c].phase for c in regressed})
    return ensure_lesson(
        store,
        "caught-regression",
        text,
        tags=["canary", *phases],
        paths=list(paths),
        evidence=[run_id, base_id, *regressed[:EVIDENCE_CASES]],
    )


def recall_for_canaries(store: Store, plan: CanaryPlan, *, root: Path) -> list[RecalledLesson]:
    """The lessons relevant to the planned canaries: their phases, ids and spec files."""
    if not plan.canaries:
        return []
    mark_stale(store, root)
    phases = dict.fromkeys(c.loaded.spec.phase for c in plan.canaries)
    query = " ".join([*phases, *(c.loaded.id for c in plan.canaries)])
    paths = [rel for c in plan.canaries if (rel := relative(c.loaded.path, root)) is not None]
    return recall_lessons(store, query, paths)
