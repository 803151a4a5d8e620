"""What each page of the viewer shows, read from the store: plain data for the templates.

Each function takes a read-only store and the request's parameters and returns the template's
context. Nothing here knows HTTP; :mod:`coalmine.view.app` does.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coalmine._util.stats import mcnemar_exact, wilcoxon_signed_rank
from coalmine.compare import compare_runs, detectable, score_sentence, verdict_sentence
from coalmine.engine.history import attempt_result, case_of_attempts, eval_run_record
from coalmine.engine.pairs import no_case_in_common, require_shared_cases
from coalmine.errors import UsageError
from coalmine.redteam.owasp import CATEGORIES, OWASP_2025
from coalmine.redteam.report import Findings, load_findings
from coalmine.results import CanaryRun, RunTotals
from coalmine.store.browse import (
    RUN_KINDS,
    SORT_KEYS,
    CaseFilter,
    EvalComparison,
    RunFilter,
    canary_cases,
    compare_eval_runs,
    eval_cases,
    list_runs,
    run_facets,
    suite_trends,
)
from coalmine.store.evals import (
    attempt_records,
    case_attempts,
    run_has_tag,
    suite_results,
    suite_summaries,
    tally_attempts,
)
from coalmine.store.runs import RunInfo, Store

PAGE_SIZE = 50
"""Cases on a page of a run."""
CHANGES_PAGE = 20
"""Changed cases on a page of a comparison (each is drawn with both outputs and their diff)."""


class NotFound(Exception):
    """The page names something the store does not hold."""


def find_run(store: Store, ref: str) -> RunInfo:
    """A run by id, prefix or label.

    Raises:
        NotFound: no run (or several) match.
    """
    try:
        return store.get_run(ref)
    except UsageError as exc:
        raise NotFound(str(exc)) from None


def runs_page(store: Store, where: RunFilter) -> dict[str, Any]:
    """The runs page: every run of every kind, newest first, and each suite's trend."""
    rows = list_runs(store, where)
    suites = sorted({s for r in rows for s in r.suites})
    return {
        "rows": rows,
        "where": where,
        "kinds": RUN_KINDS,
        "trends": suite_trends(store),
        "suites": suites,
        "running": any(r.status == "running" and _recent(r.started_at) for r in rows),
    }


def _recent(started_at: str, *, hours: float = 6.0) -> bool:
    """Whether a run started in the last few hours.

    A killed run stays "running" for good: it must not keep the runs page reloading.
    """
    started = datetime.fromisoformat(started_at)
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    return (datetime.now(UTC) - started).total_seconds() < hours * 3600


def run_header(store: Store, info: RunInfo) -> CanaryRun:
    """The run's head (summary, suites, judge) without its cases: what the run page draws."""
    if info.kind == "canary":
        record = store.load_run(info.id)
        return record.model_copy(update={"results": []})
    suites = suite_results(store, info.id)
    t = tally_attempts(store, info.id)
    totals = RunTotals(
        total=t.total, passed=t.passed, failed=t.total - t.passed - t.errored, errored=t.errored,
        composite_score=t.mean_score, invalid=0, cost=t.cost,
    )  # fmt: skip
    return CanaryRun(
        run_id=info.label or info.id,
        timestamp=info.started_at[:19] + "Z",
        summary=totals,
        results=[],
        interrupted=info.status != "finished",
        judge=info.judge,
        duration_seconds=_seconds(info),
        coalmine_version=info.coalmine_version,
        store_run_id=info.id,
        kind="eval",
        suites=suites,
    )


def _seconds(info: RunInfo) -> float:
    start = datetime.fromisoformat(info.started_at)
    end = datetime.fromisoformat(info.ended_at) if info.ended_at else datetime.now(UTC)
    return round((end - start).total_seconds(), 3)


def run_page(store: Store, info: RunInfo, where: CaseFilter, page: int) -> dict[str, Any]:
    """A run: its head, and one page of its cases as filtered and sorted."""
    offset = max(page - 1, 0) * PAGE_SIZE
    header = run_header(store, info)
    if info.kind == "canary":
        cases = canary_cases(store, info.id, where, limit=PAGE_SIZE, offset=offset)
    else:
        cases = eval_cases(store, info.id, where, limit=PAGE_SIZE, offset=offset,
                           total=header.summary.total)  # fmt: skip
    suites, graders, tags = run_facets(store, info)
    return {
        "info": info,
        "run": header,
        "redteam": load_findings(store, info.id) if has_redteam_cases(store, info) else None,
        "cases": cases,
        "where": where,
        "page": max(page, 1),
        "pages": max(1, -(-cases.matching // PAGE_SIZE)),
        "suites": suites,
        "graders": graders,
        "tags": tags,
        "sort_keys": SORT_KEYS,
        "skipped": {},
    }


REDTEAM_GROUPS = (
    ("severity", "By severity"),
    ("owasp", "By OWASP LLM Top 10 (2025)"),
    ("surface", "By surface"),
    ("category", "By category"),
    ("strategy", "By strategy"),
)
"""The red-team page's groups, in the order ``coalmine redteam report`` prints them."""


def has_redteam_cases(store: Store, info: RunInfo) -> bool:
    """Whether an eval run holds a red-team case (an attempt tagged ``redteam``): one seek."""
    return info.kind == "eval" and run_has_tag(store, info.id, "redteam")


@dataclass(frozen=True)
class GroupRow:
    """One row of a red-team group: a value, what it means, its findings of its attack cases."""

    value: str
    title: str
    findings: int
    attacks: int


def redteam_page(store: Store, info: RunInfo) -> dict[str, Any]:
    """A run's red-team report, as ``coalmine redteam report`` groups it.

    Only what :func:`coalmine.redteam.report.load_findings` gives is shown: each red-team
    case's tags, whether it got through, and its failed graders (with their explanations when
    the stored grade holds one), all of which the run's case pages show already.
    """
    found = load_findings(store, info.id) if info.kind == "eval" else Findings(info.id)
    groups = []
    for key, heading in REDTEAM_GROUPS:
        rows = [GroupRow(value, _group_title(key, value), n, total)
                for value, n, total in found.by.get(key, [])]  # fmt: skip
        groups.append((key, heading, rows))
    return {
        "info": info,
        "found": found,
        "controls": sum(1 for c in found.cases if c.control),
        "errored": sum(1 for c in found.cases if c.errored),
        "groups": groups,
        "owasp_titles": OWASP_2025,
    }


def _group_title(key: str, value: str) -> str:
    if key == "owasp":
        return OWASP_2025.get(value, "")
    if key == "category" and value in CATEGORIES:
        return CATEGORIES[value].title
    return ""


def case_page(store: Store, info: RunInfo, suite: str, case_id: str) -> dict[str, Any]:
    """One case in full: every repeat, each with its prompt, output, expected value, grades."""
    if info.kind == "canary":
        record = store.load_run(info.id)
        found = [r for r in record.results if r.id == case_id]
        if not found:
            raise NotFound(f"run {info.id} has no case {case_id!r}")
        return {"info": info, "case": found[0], "repeats": [found[0]], "suite": suite}
    attempts = case_attempts(store, info.id, suite, case_id)
    if not attempts:
        raise NotFound(f"run {info.id} has no case {suite}/{case_id}")
    summary = case_of_attempts(suite, attempts)
    return {
        "info": info,
        "case": summary,
        "repeats": [attempt_result(a) for a in attempts],
        "suite": suite,
    }


@dataclass(frozen=True)
class ChangeView:
    """A changed case as the compare page shows it, with both outputs."""

    suite: str
    case_id: str
    base_verdict: str
    new_verdict: str
    base_score: float | None
    new_score: float | None
    base_output: str | None
    new_output: str | None


def compare_page(store: Store, base: RunInfo, new: RunInfo, page: int) -> dict[str, Any]:
    """Two runs side by side: regressions, fixes, score moves, the tests in words.

    Raises:
        UsageError: the runs have no case in common.
    """
    offset = max(page - 1, 0) * CHANGES_PAGE
    if base.kind == "eval" and new.kind == "eval":
        c, sentences = _eval_comparison(store, base, new)
        if not c.shared:
            raise no_case_in_common(base.label or base.id, new.label or new.id)
        changes = [
            ChangeView(
                ch.suite,
                ch.case_id,
                ch.base_verdict,
                ch.new_verdict,
                ch.base_score,
                ch.new_score,
                _output(store, base.id, ch.suite, ch.case_id),
                _output(store, new.id, ch.suite, ch.case_id),
            )  # fmt: skip
            for ch in c.changed[offset : offset + CHANGES_PAGE]
        ]
        counts = (c.shared, c.regressions, c.fixes, c.only_new, c.only_base, c.changed_total)
    else:
        a, b = _record(store, base), _record(store, new)
        require_shared_cases(a, b)
        comparison = compare_runs(a, b)
        by_id_a = {r.id: r for r in a.results}
        by_id_b = {r.id: r for r in b.results}
        ranked = sorted(
            (ch for ch in comparison.shared
             if ch.base_verdict != ch.new_verdict or (ch.composite_delta or 0) != 0),
            key=lambda ch: (0 if ch in comparison.regressions else
                            1 if ch in comparison.fixes else 2),
        )  # fmt: skip
        changes = [
            ChangeView(
                by_id_b[ch.case_id].phase,
                ch.case_id,
                ch.base_verdict,
                ch.new_verdict,
                ch.base_composite,
                ch.new_composite,
                by_id_a[ch.case_id].output,
                by_id_b[ch.case_id].output,
            )  # fmt: skip
            for ch in ranked[offset : offset + CHANGES_PAGE]
        ]
        counts = (
            len(comparison.shared), len(comparison.regressions), len(comparison.fixes),
            len(comparison.new_cases), len(comparison.removed_cases), len(ranked),
        )  # fmt: skip
        found_mde = comparison.detectable
        sentences = (
            comparison.verdict_sentence(),
            comparison.score_sentence(),
            found_mde.sentence() if found_mde is not None else "",
        )
    shared, regressions, fixes, only_new, only_base, changed_total = counts
    return {
        "base": base,
        "new": new,
        "changes": changes,
        "shared": shared,
        "regressions": regressions,
        "fixes": fixes,
        "only_new": only_new,
        "only_base": only_base,
        "changed_total": changed_total,
        "sentences": sentences,
        "page": max(page, 1),
        "pages": max(1, -(-changed_total // CHANGES_PAGE)),
    }


_COMPARISONS: dict[tuple[str, str], tuple[EvalComparison, tuple[str, str, str]]] = {}
_COMPARISONS_KEPT = 4
_COMPARISONS_LOCK = threading.Lock()


def _eval_comparison(
    store: Store, base: RunInfo, new: RunInfo
) -> tuple[EvalComparison, tuple[str, str, str]]:
    """Two eval runs compared (every changed case), and the paired tests in words.

    Kept while both runs are finished: a finished run never changes, so turning the pages of
    a comparison of two 100,000-case runs compares them once. A few are kept, the oldest
    dropped first.
    """
    key = (base.id, new.id)
    frozen = base.status == new.status == "finished"
    with _COMPARISONS_LOCK:
        found = _COMPARISONS.get(key) if frozen else None
    if found is not None:
        return found
    c = compare_eval_runs(store, base.id, new.id, limit=sys.maxsize, offset=0)
    flips, scores = mcnemar_exact(c.regressions, c.fixes), wilcoxon_signed_rank(c.deltas)
    found = (
        c,
        (
            verdict_sentence(c.regressions, c.fixes, c.shared, flips),
            score_sentence(c.deltas, scores, noun="Case"),
            mde.sentence() if (mde := detectable(c.shared, c.regressions + c.fixes)) else "",
        ),
    )
    if frozen:
        with _COMPARISONS_LOCK:
            _COMPARISONS[key] = found
            while len(_COMPARISONS) > _COMPARISONS_KEPT:
                del _COMPARISONS[next(iter(_COMPARISONS))]
    return found


def _record(store: Store, info: RunInfo) -> CanaryRun:
    return eval_run_record(store, info) if info.kind == "eval" else store.load_run(info.id)


def _output(store: Store, run_id: str, suite: str, case_id: str) -> str | None:
    """The output a case's run shows: its first repeat that did not pass, else its first."""
    row = store.conn.execute(
        "SELECT json_extract(record, '$.output') FROM eval_attempts WHERE run_id = ?"
        " AND suite = ? AND case_id = ? ORDER BY status = 'pass', rep LIMIT 1",
        (run_id, suite, case_id),
    ).fetchone()
    return row[0] if row is not None and isinstance(row[0], str) else None


def diff_page(
    store: Store, base: RunInfo, new: RunInfo, suite: str, case_id: str
) -> dict[str, Any]:
    """One changed case's two outputs, for the compare page to diff when it is opened."""
    if base.kind == "eval" and new.kind == "eval":
        return {"base_output": _output(store, base.id, suite, case_id) or "",
                "new_output": _output(store, new.id, suite, case_id) or ""}  # fmt: skip
    outputs = []
    for info in (base, new):
        found = [r for r in store.load_run(info.id).results if r.id == case_id]
        outputs.append((found[0].output if found else None) or "")
    return {"base_output": outputs[0], "new_output": outputs[1]}


def review_page(store: Store, info: RunInfo, root: Path) -> dict[str, Any]:
    """A review run: each eval's role calls (what each role got and said), the aggregate."""
    records = attempt_records(store, info.id, "review")
    table: dict[tuple[str, str], list[int]] = {}
    for _, rec in records:
        key = (str(rec.get("eval", "?")), str(rec.get("variant") or "—"))
        cell = table.setdefault(key, [0, 0])
        for grade in (rec.get("grades") or {}).values():
            cell[1] += 1
            cell[0] += grade.get("verdict") == "pass"
    summaries = suite_summaries(store, info.id)
    return {
        "info": info,
        "records": records,
        "aggregate": sorted(table.items()),
        "table": str(summaries[0].get("table") or "") if summaries else "",
        "note": _note(info, root),
        "note_path": info.results_file,
    }


def _note(info: RunInfo, root: Path) -> str | None:
    """The review's session note, when the store names one inside the project."""
    if not info.results_file:
        return None
    path = (root / info.results_file).resolve()
    if not path.is_relative_to(root.resolve()) or not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return None


def judges_page(store: Store) -> dict[str, Any]:
    """Every calibration record, newest first, and the runs that can be labelled."""
    rows = store.conn.execute(
        "SELECT id, record FROM judge_calibrations ORDER BY id DESC LIMIT 200"
    ).fetchall()
    records = [{**json.loads(r[1]), "id": r[0]} for r in rows]
    labellable = [
        r for r in list_runs(store, RunFilter(), limit=50) if r.kind in ("canary", "eval")
    ]
    return {"records": records, "labellable": labellable}
