"""The store as a viewer reads it: pages of runs and of cases, filtered and sorted in SQL.

Nothing here loads a whole run: a page of a 100,000-case eval run is one indexed query for its
rows and one for its count, and a comparison of two such runs is one join of their per-case
verdicts. Every value a request brings (a filter, a sort key) goes in as a bound parameter or
is looked up in a fixed table of columns; none is formatted into the SQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from coalmine.store.evals import Attempt
from coalmine.store.runs import RunInfo, Store, _run_info

RUN_KINDS = ("canary", "eval", "review", "calibration", "gate")
"""The kinds of run a viewer lists: the runs table's, then calibrations and gate runs."""


@dataclass(frozen=True)
class RunRow:
    """One line of the runs page."""

    kind: str
    id: str
    label: str | None
    started_at: str
    status: str
    commit: str | None = None
    dirty: bool | None = None
    passed: int | None = None
    total: int | None = None
    score: float | None = None
    cost: float | None = None
    seconds: float | None = None
    suites: list[str] = field(default_factory=list)
    link: bool = True
    """Whether the run has a page of its own (calibrations and gate runs are listed only)."""


@dataclass(frozen=True)
class RunFilter:
    """What the runs page is narrowed to; ``None`` lets everything through."""

    kind: str | None = None
    suite: str | None = None
    label: str | None = None
    since: str | None = None
    """An ISO date (``2026-04-13``) or time; runs that started on or after it."""
    until: str | None = None


def list_runs(store: Store, where: RunFilter, *, limit: int = 100) -> list[RunRow]:
    """The newest runs first, of every kind, with their tallies."""
    rows: list[RunRow] = []
    if where.kind in (None, "canary", "eval", "review"):
        rows += _store_runs(store, where, limit)
    if where.kind in (None, "calibration") and where.suite is None and where.label is None:
        rows += _calibrations(store, where, limit)
    if where.kind in (None, "gate") and where.suite is None and where.label is None:
        rows += _gate_runs(store, where, limit)
    rows.sort(key=lambda r: r.started_at, reverse=True)
    return rows[:limit]


def _store_runs(store: Store, where: RunFilter, limit: int) -> list[RunRow]:
    sql = (
        "SELECT *, 0 AS cases FROM runs WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR"
        " id IN (SELECT run_id FROM eval_suites WHERE suite = ?2)) AND (?3 IS NULL OR"
        " instr(lower(COALESCE(label, '')), lower(?3)) > 0 OR id = upper(?3))"
        " AND (?4 IS NULL OR started_at >= ?4)"
        " AND (?5 IS NULL OR substr(started_at, 1, length(?5)) <= ?5)"
        " ORDER BY id DESC LIMIT ?6"
    )
    infos = [
        _run_info(r)
        for r in store.conn.execute(
            sql, (where.kind, where.suite, where.label, where.since, where.until, limit)
        )
    ]
    tallies: dict[str, tuple[int, int, float | None, float | None]] = {}
    suites: dict[str, list[str]] = {}
    attempted = [i.id for i in infos if i.kind != "canary"]
    if attempted:
        marks = ",".join("?" * len(attempted))
        for r in store.conn.execute(
            f"SELECT run_id, suite FROM eval_suites WHERE run_id IN ({marks}) ORDER BY suite",
            attempted,
        ):
            suites.setdefault(r[0], []).append(r[1])
        # a finished eval run is tallied from its suites' summaries (a 100,000-case run is not
        # counted again on every page); the others from their attempts, on the slim index
        summed = [i.id for i in infos if i.kind == "eval" and i.status == "finished"
                  and i.id in suites]  # fmt: skip
        if summed:
            for r in store.conn.execute(
                "SELECT run_id, SUM(json_extract(summary, '$.passed')),"
                " SUM(json_extract(summary, '$.cases')),"
                " SUM(json_extract(summary, '$.score') * json_extract(summary, '$.cases'))"
                " / NULLIF(SUM(json_extract(summary, '$.cases')), 0),"
                " SUM(json_extract(summary, '$.cost'))"
                f" FROM eval_suites WHERE run_id IN ({','.join('?' * len(summed))})"
                " GROUP BY run_id",
                summed,
            ):
                tallies[r[0]] = (int(r[1] or 0), int(r[2] or 0), r[3], r[4])
        counted_ = [i for i in attempted if i not in tallies]
        if counted_:
            for r in store.conn.execute(
                "SELECT run_id, SUM(status = 'pass'), COUNT(*), AVG(score), SUM(cost)"
                " FROM eval_attempts INDEXED BY eval_attempts_slim"
                f" WHERE run_id IN ({','.join('?' * len(counted_))}) GROUP BY run_id",
                counted_,
            ):
                tallies[r[0]] = (int(r[1]), int(r[2]), r[3], r[4])
    return [_run_row(info, tallies.get(info.id), suites.get(info.id, [])) for info in infos]


def _run_row(
    info: RunInfo, tally: tuple[int, int, float | None, float | None] | None, suites: list[str]
) -> RunRow:
    seconds = None
    if info.ended_at:
        start, end = datetime.fromisoformat(info.started_at), datetime.fromisoformat(info.ended_at)
        seconds = (end - start).total_seconds()
    if info.kind == "canary":
        s = info.summary
        passed, total = (s.passed, s.total) if s is not None else (None, None)
        score, cost = (s.composite_score, s.cost) if s is not None else (None, None)
    else:
        passed, total, score, cost = tally if tally is not None else (0, 0, None, None)
    return RunRow(
        kind=info.kind, id=info.id, label=info.label, started_at=info.started_at,
        status=info.status, commit=info.git_commit, dirty=info.git_dirty, passed=passed,
        total=total, score=score, cost=cost, seconds=seconds, suites=suites,
    )  # fmt: skip


def _calibrations(store: Store, where: RunFilter, limit: int) -> list[RunRow]:
    rows = store.conn.execute(
        "SELECT id, may_block, record, created_at FROM judge_calibrations"
        " WHERE (?1 IS NULL OR created_at >= ?1) AND (?2 IS NULL OR"
        " substr(created_at, 1, length(?2)) <= ?2) ORDER BY id DESC LIMIT ?3",
        (where.since, where.until, limit),
    )
    out = []
    for r in rows:
        record = json.loads(r["record"])
        judge = record.get("judge") or {}
        out.append(
            RunRow(
                kind="calibration", id=f"#{r['id']}", label=str(judge.get("agent") or ""),
                started_at=r["created_at"], status="may block" if r["may_block"] else "advisory",
                score=record.get("agreement"), total=record.get("n_heldout"), link=False,
            )
        )  # fmt: skip
    return out


def _gate_runs(store: Store, where: RunFilter, limit: int) -> list[RunRow]:
    rows = store.conn.execute(
        "SELECT id, gate, kit, status, started_ms, seconds FROM gate_runs ORDER BY id DESC LIMIT ?",
        (limit,),
    )
    out = []
    for r in rows:
        started = datetime.fromtimestamp(r["started_ms"] / 1000, UTC).isoformat()
        if where.since and started < where.since:
            continue
        if where.until and started[: len(where.until)] > where.until:
            continue
        out.append(
            RunRow(
                kind="gate", id=f"gate-{r['id']}", label=f"{r['gate']} ({r['kit']})",
                started_at=started, status=r["status"], seconds=r["seconds"], link=False,
            )
        )  # fmt: skip
    return out


def suite_trends(store: Store, suites: Sequence[str] | None = None) -> dict[str, list[float]]:
    """Each suite's score over its finished runs, oldest first (the last 30)."""
    rows = store.conn.execute(
        "SELECT s.suite, json_extract(s.summary, '$.score') FROM eval_suites AS s"
        " JOIN runs ON runs.id = s.run_id WHERE runs.status = 'finished' ORDER BY s.run_id"
    )
    trends: dict[str, list[float]] = {}
    for suite, score in rows:
        if score is not None and (suites is None or suite in suites):
            trends.setdefault(suite, []).append(float(score))
    return {k: v[-30:] for k, v in sorted(trends.items())}


# -- the cases of a run -------------------------------------------------------------------------

SortKey = Literal["case", "score", "verdict", "latency", "cost"]
SORT_KEYS: tuple[SortKey, ...] = ("case", "score", "verdict", "latency", "cost")
_EVAL_ORDER: dict[str, tuple[str, ...]] = {
    "case": (),
    "score": ("score",),
    "verdict": ("status",),
    "latency": ("latency",),
    "cost": ("cost",),
}
"""The sort columns of an eval run's page (then suite, case, repeat, all the same way): every
one is in the slim index, so a sort never reads a record."""
_CANARY_ORDER = {
    "case": ("c.position",),
    "score": ("c.composite_score",),
    "verdict": ("c.verdict",),
    "latency": ("c.duration_seconds",),
    "cost": ("json_extract(c.result, '$.usage.agent.cost')",),
}


def _order(columns: tuple[str, ...], descending: bool) -> str:
    """ORDER BY terms: each column in the direction asked, rows without a value last."""
    way = " DESC" if descending else ""
    return ", ".join(f"{c} IS NULL, {c}{way}" for c in columns)


@dataclass(frozen=True)
class CaseFilter:
    """What the cases of a run are narrowed to."""

    verdict: str | None = None
    """``PASS``, ``FAIL`` or ``ERROR``."""
    suite: str | None = None
    grader: str | None = None
    """Only cases this grader failed."""
    tag: str | None = None
    text: str | None = None
    """Text in the prompt, the output or a reason (case-insensitive for ASCII)."""
    sort: SortKey = "case"
    descending: bool = False


@dataclass(frozen=True)
class CaseRow:
    """One line of a run's cases table."""

    suite: str
    case_id: str
    rep: int
    verdict: str
    score: float | None
    agent: str
    latency: float | None
    cost: float | None
    why: str | None
    advisory: bool


@dataclass(frozen=True)
class CasePage:
    """A page of a run's cases and how many match the filter in all."""

    rows: list[CaseRow]
    total: int
    matching: int


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _grader_path(key: str) -> str:
    return '$.grades."' + key.replace('"', "") + '".passed'


def eval_cases(
    store: Store,
    run_id: str,
    where: CaseFilter,
    *,
    limit: int,
    offset: int,
    total: int | None = None,
) -> CasePage:
    """A page of an eval (or review) run's attempts: one row per case and repeat.

    The page's keys are chosen on the slim index alone (filters on tags and failed graders go
    through ``eval_attempt_facts``); only the page's own rows read their record. ``total``
    (the run's attempts) spares a count the caller has already made.
    """
    clauses = ["run_id = ?"]
    params: list[Any] = [run_id]
    if where.verdict:
        clauses.append("status = ?")
        params.append(where.verdict.lower())
    if where.suite:
        clauses.append("suite = ?")
        params.append(where.suite)
    for kind, value in (("failed", where.grader), ("tag", where.tag)):
        if value:
            clauses.append(
                "(suite, case_id, rep) IN (SELECT suite, case_id, rep FROM eval_attempt_facts"
                " WHERE run_id = ? AND kind = ? AND value = ?)"
            )
            params += [run_id, kind, value]
    if where.text:
        clauses.append("(record LIKE ? ESCAPE '\\' OR case_id LIKE ? ESCAPE '\\')")
        params += [_like(where.text), _like(where.text)]
    sql_where = " AND ".join(clauses)
    way = " DESC" if where.descending else ""
    order = ", ".join(f"{c}{way}" for c in (*_EVAL_ORDER[where.sort], "suite", "case_id", "rep"))
    index = "" if where.text else " INDEXED BY eval_attempts_slim"
    keys = [
        r[0]
        for r in store.conn.execute(
            f"SELECT rowid FROM eval_attempts{index} WHERE {sql_where} ORDER BY {order}"
            " LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
    ]
    found = {
        r[0]: r[1:]
        for r in store.conn.execute(
            "SELECT rowid, suite, case_id, rep, status, score, json_extract(record, '$.agent'),"
            " latency, cost, COALESCE(json_extract(record, '$.why'),"
            " json_extract(record, '$.error')), blocks FROM eval_attempts"
            f" WHERE rowid IN ({','.join('?' * len(keys))})",
            keys,
        )
    } if keys else {}  # fmt: skip
    if total is None:
        total = store.conn.execute(
            "SELECT COUNT(*) FROM eval_attempts INDEXED BY eval_attempts_slim WHERE run_id = ?",
            (run_id,),
        ).fetchone()[0]
    if len(clauses) == 1:
        matching = total
    else:
        matching = store.conn.execute(
            f"SELECT COUNT(*) FROM eval_attempts{index} WHERE {sql_where}", params
        ).fetchone()[0]
    rows = []
    for key in keys:
        r = found[key]
        rows.append(
            CaseRow(
                r[0],
                r[1],
                r[2],
                r[3].upper(),
                r[4],
                str(r[5] or ""),
                r[6],
                r[7],
                r[8],
                r[3] != "pass" and not r[9],
            )  # fmt: skip
        )
    return CasePage(rows, total, matching)


def canary_cases(
    store: Store, run_id: str, where: CaseFilter, *, limit: int, offset: int
) -> CasePage:
    """A page of a canary run's cases."""
    clauses = ["c.run_id = ?"]
    params: list[Any] = [run_id]
    if where.verdict:
        clauses.append("c.verdict = ?")
        params.append(where.verdict.upper())
    if where.suite:
        clauses.append("json_extract(c.result, '$.phase') = ?")
        params.append(where.suite)
    if where.grader:
        clauses.append(
            "EXISTS (SELECT 1 FROM grades AS g WHERE g.run_id = c.run_id AND"
            " g.case_id = c.case_id AND g.key = ? AND g.passed = 0)"
        )
        params.append(where.grader)
    if where.text:
        clauses.append("(c.result LIKE ? ESCAPE '\\' OR c.case_id LIKE ? ESCAPE '\\')")
        params += [_like(where.text), _like(where.text)]
    sql_where = " AND ".join(clauses)
    order = _order(_CANARY_ORDER[where.sort], where.descending)
    rows = store.conn.execute(
        "SELECT json_extract(c.result, '$.phase'), c.case_id, c.verdict, c.composite_score,"
        " c.agent, c.duration_seconds, json_extract(c.result, '$.usage.agent.cost'), c.reason,"
        " json_extract(c.result, '$.failures[0]'), json_extract(c.result, '$.advisory')"
        f" FROM case_results AS c WHERE {sql_where} ORDER BY {order}, c.position LIMIT ? OFFSET ?",
        (*params, limit, offset),
    ).fetchall()
    matching = store.conn.execute(
        f"SELECT COUNT(*) FROM case_results AS c WHERE {sql_where}", params
    ).fetchone()[0]
    total = store.conn.execute(
        "SELECT COUNT(*) FROM case_results WHERE run_id = ?", (run_id,)
    ).fetchone()[0]
    return CasePage(
        [
            CaseRow(
                str(r[0] or ""), r[1], 0, r[2], r[3], r[4], r[5], r[6], r[8] or r[7], bool(r[9])
            )  # fmt: skip
            for r in rows
        ],
        total,
        matching,
    )


def run_facets(store: Store, info: RunInfo) -> tuple[list[str], list[str], list[str]]:
    """What a run's cases can be filtered by: its suites, its graders and its tags."""
    if info.kind == "canary":
        suites = [
            r[0]
            for r in store.conn.execute(
                "SELECT DISTINCT json_extract(result, '$.phase') FROM case_results"
                " WHERE run_id = ? ORDER BY 1",
                (info.id,),
            )
            if r[0]
        ]
        graders = [
            r[0]
            for r in store.conn.execute(
                "SELECT DISTINCT key FROM grades WHERE run_id = ? ORDER BY key", (info.id,)
            )
        ]
        return suites, graders, []
    suites = [
        r[0]
        for r in store.conn.execute(
            "SELECT suite FROM eval_suites WHERE run_id = ? ORDER BY suite", (info.id,)
        )
    ]
    if info.status == "running" or not suites:  # summaries come at the end of a suite
        suites = [
            r[0]
            for r in store.conn.execute(
                "SELECT DISTINCT suite FROM eval_attempts INDEXED BY eval_attempts_slim"
                " WHERE run_id = ? ORDER BY suite",
                (info.id,),
            )
        ]
    tags = [
        r[0]
        for r in store.conn.execute(
            "SELECT DISTINCT value FROM eval_attempt_facts"
            " WHERE run_id = ? AND kind = 'tag' ORDER BY value",
            (info.id,),
        )
    ]
    # the graders of a sample of the run's attempts: a list to pick from, not a census
    keys: set[str] = set()
    for (record,) in store.conn.execute(
        "SELECT record FROM eval_attempts WHERE run_id = ? LIMIT 200", (info.id,)
    ):
        keys.update(json.loads(record).get("grades") or {})
    return suites, sorted(keys), tags


def case_attempts(store: Store, run_id: str, suite: str, case_id: str) -> list[Attempt]:
    """Every repeat of one case of an eval run, in order."""
    rows = store.conn.execute(
        "SELECT suite, case_id, rep, status, blocks, score, scores, latency, prompt_tokens,"
        " completion_tokens, cost, error_kind, record FROM eval_attempts"
        " WHERE run_id = ? AND suite = ? AND case_id = ? ORDER BY rep",
        (run_id, suite, case_id),
    )
    return [
        Attempt(
            r[0],
            r[1],
            r[2],
            r[3],
            bool(r[4]),
            r[5],
            json.loads(r[6]),
            r[7],
            r[8],
            r[9],
            r[10],
            r[11],
            json.loads(r[12]),
        )  # fmt: skip
        for r in rows
    ]


# -- two runs side by side ----------------------------------------------------------------------


@dataclass(frozen=True)
class ChangedCase:
    """A case of both runs whose verdict or score moved."""

    suite: str
    case_id: str
    base_verdict: str
    new_verdict: str
    base_score: float | None
    new_score: float | None


@dataclass(frozen=True)
class EvalComparison:
    """Two eval runs compared case by case (repeats reduced as ``eval_run_record`` does)."""

    shared: int
    regressions: int
    fixes: int
    deltas: list[float]
    """Score deltas (new − base) of every shared case that has both scores."""
    changed: list[ChangedCase]
    """A page of the changed cases: regressions first, then fixes, then score moves."""
    changed_total: int
    only_base: int
    only_new: int


_PER_CASE = (
    "SELECT suite, case_id, CASE WHEN SUM(status = 'fail') > 0 THEN 'FAIL'"
    " WHEN SUM(status = 'error') > 0 THEN 'ERROR' ELSE 'PASS' END AS v, AVG(score) AS s"
    " FROM eval_attempts INDEXED BY eval_attempts_slim WHERE run_id = ? GROUP BY suite, case_id"
)
_RANK = (
    "CASE WHEN va = 'PASS' AND vb != 'PASS' THEN 0 WHEN va != 'PASS' AND vb = 'PASS' THEN 1"
    " WHEN sa IS NOT NULL AND sb IS NOT NULL AND abs(sb - sa) > 1e-9 THEN 2"
    " WHEN va != vb THEN 3 ELSE 4 END"
)


def compare_eval_runs(
    store: Store, base: str, new: str, *, limit: int, offset: int
) -> EvalComparison:
    """Compare eval run ``new`` with ``base``: counts and deltas of all, a page of changes.

    One statement: each run's per-case verdicts (from the slim index) joined once, returning a
    row of totals and the changed cases only; a case whose verdict and score did not move
    counts, but is not sent back.
    """
    rows = store.conn.execute(
        f"WITH a AS ({_PER_CASE}), b AS ({_PER_CASE}),"
        " j AS MATERIALIZED (SELECT a.suite, a.case_id, a.v AS va, b.v AS vb, a.s AS sa,"
        " b.s AS sb FROM a JOIN b ON a.suite = b.suite AND a.case_id = b.case_id)"
        " SELECT NULL, NULL, COUNT(*), (SELECT COUNT(*) FROM a), (SELECT COUNT(*) FROM b),"
        " SUM(sa IS NOT NULL AND sb IS NOT NULL), NULL FROM j"
        f" UNION ALL SELECT suite, case_id, va, vb, sa, sb, {_RANK} FROM j"
        f" WHERE {_RANK} < 4",
        (base, new),
    ).fetchall()
    head, changed_rows = rows[0], rows[1:]
    shared, in_base, in_new, comparable = head[2], head[3], head[4], head[5] or 0
    changed_rows.sort(key=lambda r: (r[6], r[0], r[1]))
    moved = [r[5] - r[4] for r in changed_rows if r[4] is not None and r[5] is not None]
    deltas = [d for d in moved if abs(d) > 1e-9]
    deltas += [0.0] * (comparable - len(deltas))  # the comparable cases that did not move
    return EvalComparison(
        shared=shared,
        regressions=sum(1 for r in changed_rows if r[6] == 0),
        fixes=sum(1 for r in changed_rows if r[6] == 1),
        deltas=deltas,
        changed=[
            ChangedCase(r[0], r[1], r[2], r[3], r[4], r[5])
            for r in changed_rows[offset : offset + limit]
        ],
        changed_total=len(changed_rows),
        only_base=in_base - shared,
        only_new=in_new - shared,
    )
