"""Lessons coalmine keeps by itself, and the lessons it recalls before a run.

Retained through ``ensure_lesson``, whose key is the lesson's evidence, so retaining the same
thing twice (a resumed run, the same calibration again) keeps one lesson:

* ``caught-regression``: a blocking eval suite whose cases passed in its baseline (the newest
  earlier finished, uninterrupted eval run that ran the suite) and fail now on what blocks (a
  fail, not an error); one lesson per suite and run. The same for a canary run against the
  newest earlier finished canary run: the specs that passed there and fail now, blocking.
* ``caught-regression`` too for a blocking gate of ``coalmine gates run`` that passed on its
  previous run and fails now;
* ``judge-false-positive`` and ``judge-false-negative``: a calibration whose judge passed
  held-out items the humans failed, or failed items they passed (the items its false-pass and
  false-block rates count).

Recalled before a run calls any agent: the ``RECALL_LIMIT`` lessons most relevant to each suite
(its name and description, its files) or to the canaries (their phases and ids, their spec
files), stale ones left out.
"""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from coalmine._util.estimate import reduce_repeats
from coalmine.compare import compare_runs
from coalmine.judge.calibration import Disagreements
from coalmine.judge.labels import LabelSet
from coalmine.results import CanaryRun, CaseResult, RecalledLesson
from coalmine.runner.evalplan import PlannedSuite
from coalmine.runner.gates import EPSILON
from coalmine.runner.plan import CanaryPlan
from coalmine.store.evals import Attempt, find_suite_baseline, iter_attempts, prior_runs
from coalmine.store.gates import GateRun
from coalmine.store.memory import ensure_lesson, fts_query, mark_stale, recall
from coalmine.store.runs import Store

RECALL_LIMIT = 5
CASES_NAMED = 10
"""Case ids a lesson's text names; the rest are counted ("and 3 more")."""
EVIDENCE_CASES = 100
"""Case ids a lesson's evidence keeps."""
REASON_CHARS = 120


def _relative(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root``, or ``None`` when it lies outside (it could never match)."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:CASES_NAMED])
    more = len(ids) - CASES_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def _short(reason: str) -> str:
    flat = " ".join(reason.split())
    return flat if len(flat) <= REASON_CHARS else flat[: REASON_CHARS - 1] + "…"


def _plural(ids: Sequence[str], one: str, many: str) -> str:
    return one if len(ids) == 1 else many


# -- caught regressions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _CaseVerdict:
    case_id: str
    status: str
    """``pass``, ``fail`` or ``error``: the case's value reduced over its repeats."""
    blocks: bool
    """A fail that still fails on the graders that may block."""
    reason: str


def _verdicts(attempts: Iterator[Attempt], *, reducer: str, repeats: int) -> Iterator[_CaseVerdict]:
    """Each case's verdict by the suite's rule (as the summary counts it), streamed."""
    for case_id, group in itertools.groupby(attempts, key=lambda a: a.case_id):
        runs = list(group)
        scored = [a for a in runs if a.status != "error"]
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
        yield _CaseVerdict(case_id, "fail", blocks, reason)


def suite_paths(suite: PlannedSuite, root: Path) -> list[str]:
    """The suite's ``.jsonl`` (and ``.yaml``, when there is one), relative to ``root``."""
    path = suite.index.path
    found = [path, *([path.with_suffix(".yaml")] if path.with_suffix(".yaml").is_file() else [])]
    return [rel for p in found if (rel := _relative(p, root)) is not None]


def retain_eval_regression(
    store: Store, run_id: str, suite: PlannedSuite, *, root: Path
) -> int | None:
    """Retain what a blocking suite caught in run ``run_id``; the lesson's id, or ``None``.

    A caught regression is a case that passed in the suite's baseline and fails now on what
    may block. Nothing is retained for an advisory suite, a suite without a baseline, or one
    whose failures are all new, advisory or errors.
    """
    if not suite.index.meta.blocking:
        return None
    base = find_suite_baseline(store, suite.name, before=run_id)
    if base is None:
        return None
    now = iter_attempts(store, run_id, suite.name)
    failing = {
        v.case_id: v.reason
        for v in _verdicts(now, reducer=suite.reducer, repeats=suite.repeats)
        if v.status == "fail" and v.blocks
    }
    if not failing:
        return None
    before = iter_attempts(store, base.run_id, suite.name)
    regressed = [
        v.case_id
        for v in _verdicts(before, reducer=base.reducer, repeats=base.repeats)
        if v.status == "pass" and v.case_id in failing
    ]
    if not regressed:
        return None
    first = regressed[0]
    why = _short(failing[first])
    text = (
        f"Suite '{suite.name}' caught a regression: {_plural(regressed, 'case', 'cases')} "
        f"{_listed(regressed)} passed in run {base.run_id} and "
        f"{_plural(regressed, 'fails', 'fail')} in run {run_id} "
        f"({why if len(regressed) == 1 else f'{first}: {why}'})"
    )
    evidence = [run_id, base.run_id, *(f"{suite.name}/{c}" for c in regressed[:EVIDENCE_CASES])]
    return ensure_lesson(
        store,
        "caught-regression",
        text,
        tags=[suite.name, "eval"],
        paths=suite_paths(suite, root),
        evidence=evidence,
    )


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
    why = _short(_why(first))
    text = (
        f"Canaries caught a regression: {_plural(regressed, 'spec', 'specs')} "
        f"{_listed(regressed)} passed in run {base_id} and "
        f"{_plural(regressed, 'fails', 'fail')} in run {run_id} "
        f"({why if len(regressed) == 1 else f'{first.id}: {why}'})"
    )
    spec_paths = [results[c].spec_path for c in regressed]
    paths = dict.fromkeys(rel for p in spec_paths if p and (rel := _relative(Path(p), root)))
    phases = sorted({results[c].phase for c in regressed})
    return ensure_lesson(
        store,
        "caught-regression",
        text,
        tags=["canary", *phases],
        paths=list(paths),
        evidence=[run_id, base_id, *regressed[:EVIDENCE_CASES]],
    )


# -- calibration disagreements --------------------------------------------------------------------


def retain_calibration_lessons(
    store: Store,
    found: Disagreements,
    *,
    judge: str,
    judge_key: str,
    labels: LabelSet,
    root: Path,
) -> list[int]:
    """Retain a calibration's disagreements with the humans; the ids of the lessons.

    One ``judge-false-positive`` lesson for the items the judge passed and the humans failed,
    one ``judge-false-negative`` for the converse; the evidence is the labels file's sha256 and
    the item ids, so the same judge on the same labels disagreeing the same way keeps one.
    """
    where = _relative(labels.path, root)
    shown = where or labels.path.name
    kinds = (
        ("judge-false-positive", found.false_pass, "passed", "failed"),
        ("judge-false-negative", found.false_block, "failed", "passed"),
    )
    ids = []
    for kind, items, judged, human in kinds:
        if not items:
            continue
        text = (
            f"Judge '{judge}' {judged} {len(items)} {_plural(items, 'case', 'cases')} the humans "
            f"{human} in {shown}: {_listed(items)}"
        )
        ids.append(
            ensure_lesson(
                store,
                kind,
                text,
                tags=[judge, judge_key, "judge"],
                paths=[where] if where else [],
                evidence=[f"labels {labels.sha256}", *items[:EVIDENCE_CASES]],
            )
        )
    return ids


# -- recall before a run --------------------------------------------------------------------------


def retain_gate_regression(
    store: Store, now: GateRun, previous: GateRun | None, *, command: str, root: Path
) -> int | None:
    """A ``caught-regression`` lesson when a blocking gate passed last time and fails now.

    Its paths are the command's words that are files of the repository (``gates/x.sh``); its
    evidence is the gate and the run's start, so the same run is never kept twice. The gate's
    output is never kept: it may hold anything.
    """
    if not (now.blocks and now.status != "pass" and previous and previous.status == "pass"):
        return None
    when = datetime.fromtimestamp(previous.started_ms / 1000, UTC).isoformat(timespec="seconds")
    how = "timed out" if now.exit_code is None else f"exits {now.exit_code}"
    return ensure_lesson(
        store,
        "caught-regression",
        f"Gate {now.gate} ({now.kit}) caught a regression: it passed at {when} and now"
        f" {how} ({command}).",
        tags=[now.gate, now.kit, "gate"],
        paths=[w for w in shlex.split(command) if (root / w).is_file()],
        evidence=[f"gate:{now.gate}@{now.started_ms}"],
    )


def _recall(store: Store, query: str, paths: Sequence[str]) -> list[RecalledLesson]:
    if fts_query(query) is None and not paths:
        return []  # recall would return every lesson
    return [
        RecalledLesson(id=lesson.id, kind=lesson.kind, text=lesson.text, score=round(score, 3))
        for lesson, score in recall(store, query, paths=paths, limit=RECALL_LIMIT)
        if lesson.stale is None
    ]


def recall_for_suites(
    store: Store, suites: Sequence[PlannedSuite], *, root: Path
) -> dict[str, list[RecalledLesson]]:
    """Suite name → the lessons relevant to it (after stale marks are brought up to date)."""
    if not suites:
        return {}
    mark_stale(store, root)
    return {
        s.name: _recall(store, f"{s.name} {s.index.meta.description or ''}", suite_paths(s, root))
        for s in suites
    }


def recall_for_canaries(store: Store, plan: CanaryPlan, *, root: Path) -> list[RecalledLesson]:
    """The lessons relevant to the planned canaries: their phases, ids and spec files."""
    if not plan.canaries:
        return []
    mark_stale(store, root)
    phases = dict.fromkeys(c.loaded.spec.phase for c in plan.canaries)
    query = " ".join([*phases, *(c.loaded.id for c in plan.canaries)])
    paths = [rel for c in plan.canaries if (rel := _relative(c.loaded.path, root)) is not None]
    return _recall(store, query, paths)


def merge_recalled(groups: Iterable[Sequence[RecalledLesson]]) -> tuple[RecalledLesson, ...]:
    """Each lesson once (with its best score), best first."""
    best: dict[int, RecalledLesson] = {}
    for group in groups:
        for lesson in group:
            if lesson.id not in best or lesson.score > best[lesson.id].score:
                best[lesson.id] = lesson
    return tuple(sorted(best.values(), key=lambda lesson: (-lesson.score, lesson.id)))
