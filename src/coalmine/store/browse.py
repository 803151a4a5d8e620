"""The store as a viewer reads it: pages of runs and of cases, filtered and sorted in SQL.

Nothing here loads a whole run: a page of a 100,000-case eval run picks its keys on an index
that holds every column but the record, and reads only its own rows' records; two finished
runs compare from the per-case verdicts their suites kept. Every value a request brings (a
filter, a sort key) goes in as a bound parameter or is looked up in a fixed table of columns;
none is formatted into the SQL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any, Literal, NamedTuple

from coalmine.store.evals import KeptVerdicts, case_verdicts
from coalmine.store.runs import NEWEST_FIRST, RunInfo, Store, _run_info

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
    sql = (  # the filters are bound parameters; only the fixed order is formatted in
        "SELECT *, 0 AS cases FROM runs WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR"
        " id IN (SELECT run_id FROM eval_suites WHERE suite = ?2)) AND (?3 IS NULL OR"
        " instr(lower(COALESCE(label, '')), lower(?3)) > 0 OR id = upper(?3))"
        " AND (?4 IS NULL OR started_at >= ?4)"
        " AND (?5 IS NULL OR substr(started_at, 1, length(?5)) <= ?5)"
        f" ORDER BY {NEWEST_FIRST} LIMIT ?6"
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


def suite_trends(store: Store) -> dict[str, list[float]]:
    """Each suite's score over its finished runs, by start, oldest first (the last 30)."""
    rows = store.conn.execute(
        "SELECT s.suite, json_extract(s.summary, '$.score') FROM eval_suites AS s"
        " JOIN runs ON runs.id = s.run_id WHERE runs.status = 'finished'"
        " ORDER BY runs.started_at, runs.id"
    )
    trends: dict[str, list[float]] = {}
    for suite, score in rows:
        if score is not None:
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
    select = f"SELECT rowid FROM eval_attempts{index} WHERE {sql_where} ORDER BY {order}"
    if total is None:
        total = store.conn.execute(
            "SELECT COUNT(*) FROM eval_attempts INDEXED BY eval_attempts_slim WHERE run_id = ?",
            (run_id,),
        ).fetchone()[0]
    if len(clauses) == 1:  # the whole run: a page of keys, straight off the index
        cursor = store.conn.execute(select + " LIMIT ? OFFSET ?", (*params, limit, offset))
        keys, matching = [r[0] for r in cursor], total
    else:  # one pass finds every match (a text filter reads each record once, not twice)
        every = [r[0] for r in store.conn.execute(select, params)]
        keys, matching = every[offset : offset + limit], len(every)
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
    rows = []
    for key in keys:
        suite, case_id, rep, status, score, agent, latency, cost, why, blocks = found[key]
        advisory = status != "pass" and not blocks
        rows.append(CaseRow(suite, case_id, rep, status.upper(), score, str(agent or ""),
                            latency, cost, why, advisory))  # fmt: skip
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
    tags: list[str] = []
    while True:  # one index seek per distinct tag, not a scan of every tagged attempt
        row = store.conn.execute(
            "SELECT MIN(value) FROM eval_attempt_facts WHERE run_id = ? AND kind = 'tag'"
            " AND value > ?",
            (info.id, tags[-1] if tags else ""),
        ).fetchone()
        if row[0] is None or len(tags) >= 500:
            break
        tags.append(row[0])
    # the graders of a sample of the run's attempts: a list to pick from, not a census
    keys: set[str] = set()
    for (record,) in store.conn.execute(
        "SELECT record FROM eval_attempts WHERE run_id = ? LIMIT 200", (info.id,)
    ):
        keys.update(json.loads(record).get("grades") or {})
    return suites, sorted(keys), tags


# -- two runs side by side ----------------------------------------------------------------------


class ChangedCase(NamedTuple):
    """A case of both runs whose verdict or score moved (a tuple: a comparison may hold many)."""

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


_PAIRED = (
    "SELECT x.suite, x.case_id,"
    " CASE WHEN SUM(x.status = 'fail') > 0 THEN 'FAIL' WHEN SUM(x.status = 'error') > 0"
    " THEN 'ERROR' ELSE 'PASS' END AS va,"
    " CASE WHEN SUM(y.status = 'fail') > 0 THEN 'FAIL' WHEN SUM(y.status = 'error') > 0"
    " THEN 'ERROR' ELSE 'PASS' END AS vb,"
    " AVG(x.score) AS sa, AVG(y.score) AS sb, COUNT(*) AS n"
    " FROM eval_attempts AS x INDEXED BY eval_attempts_slim"
    " JOIN eval_attempts AS y INDEXED BY eval_attempts_slim ON y.run_id = ?2"
    " AND y.suite = x.suite AND y.case_id = x.case_id AND y.rep = x.rep"
    " WHERE x.run_id = ?1 GROUP BY x.suite, x.case_id"
)
"""Both runs' attempts paired repeat by repeat (an index seek each), reduced per case."""
_GROUPED = (
    f"WITH a AS ({_PER_CASE.replace('?', '?1')}), b AS ({_PER_CASE.replace('?', '?2')})"
    " SELECT a.suite, a.case_id, a.v AS va, b.v AS vb, a.s AS sa, b.s AS sb, 1 AS n"
    " FROM a JOIN b ON a.suite = b.suite AND a.case_id = b.case_id"
)
"""Each run reduced per case, then joined: right whatever repeats each run made, but slower."""


_SINGLE = (
    "SELECT x.suite, x.case_id, upper(x.status), upper(y.status), x.score, y.score"
    " FROM eval_attempts AS x INDEXED BY eval_attempts_slim"
    " LEFT JOIN eval_attempts AS y INDEXED BY eval_attempts_slim ON y.run_id = ?2"
    " AND y.suite = x.suite AND y.case_id = x.case_id AND y.rep = x.rep WHERE x.run_id = ?1"
    " AND (y.status IS NULL OR x.status != y.status OR x.score IS NULL OR y.score IS NULL"
    " OR abs(y.score - x.score) > 1e-9)"
)
"""Runs of one attempt per case, paired by index seeks: only the attempts that differ (or lack a
twin, or a score) come back, so a comparison of two 100,000-case runs is one pass."""


def compare_eval_runs(
    store: Store, base: str, new: str, *, limit: int, offset: int
) -> EvalComparison:
    """Compare eval run ``new`` with ``base``: counts and deltas of all, a page of changes.

    Two finished runs are compared from the per-case verdicts their suites kept. Otherwise,
    when both runs made one attempt per case and have the same cases (the usual case), one
    pass pairs their attempts by index seeks and returns only what differs; else each case's
    repeats are reduced first (paired repeat by repeat when they match one to one, else each
    run on its own, then joined).
    """
    kept = [case_verdicts(store, run) for run in (base, new)]
    if kept[0] is not None and kept[1] is not None:  # both summarised: no attempt is read
        return _compare_kept(kept[0], kept[1], limit=limit, offset=offset)
    return compare_attempts(store, base, new, limit=limit, offset=offset)


def compare_attempts(
    store: Store, base: str, new: str, *, limit: int, offset: int
) -> EvalComparison:
    """:func:`compare_eval_runs` from the runs' attempts (a run still going, or an old one)."""
    sizes = [
        store.conn.execute(
            "SELECT COUNT(*), MAX(rep) FROM eval_attempts INDEXED BY eval_attempts_slim"
            " WHERE run_id = ?",
            (run,),
        ).fetchone()
        for run in (base, new)
    ]
    if sizes[0][0] == sizes[1][0] and sizes[0][1] == sizes[1][1] == 0:
        differ = store.conn.execute(_SINGLE, (base, new)).fetchall()
        if all(r[3] is not None for r in differ):  # every case has its twin: the same cases
            return _comparison(
                shared=sizes[0][0],
                comparable=sizes[0][0] - sum(1 for r in differ if r[4] is None or r[5] is None),
                in_runs=(sizes[0][0], sizes[1][0]),
                changed_rows=[(*r, _rank(r[2], r[3], r[4], r[5])) for r in differ],
                limit=limit,
                offset=offset,
            )
    found = _compare(store, _PAIRED, base, new)
    if found[0][3] == sizes[0][0] == sizes[1][0]:  # repeats paired one to one
        in_runs = (found[0][2], found[0][2])
    else:
        found = _compare(store, _GROUPED, base, new)
        count = f"SELECT COUNT(*) FROM ({_PER_CASE})"
        in_runs = (
            store.conn.execute(count, (base,)).fetchone()[0],
            store.conn.execute(count, (new,)).fetchone()[0],
        )
    head = found[0]
    return _comparison(
        shared=head[2], comparable=head[5] or 0, in_runs=in_runs,
        changed_rows=found[1:], limit=limit, offset=offset,
    )  # fmt: skip


_VERDICT_WORD = {"P": "PASS", "F": "FAIL", "E": "ERROR"}


def _compare_kept(
    base: dict[str, KeptVerdicts], new: dict[str, KeptVerdicts], *, limit: int, offset: int
) -> EvalComparison:
    """Compare two runs from their suites' kept per-case verdicts (as the SQL paths do).

    A suite with the same cases in both runs (the usual case) is walked in step; one whose
    cases differ is matched by id.
    """
    shared = comparable = in_new = 0
    changed: list[Any] = []
    for suite, b in new.items():
        in_new += len(b.ids)
        a = base.get(suite)
        if a is None:
            continue
        if a.ids == b.ids:  # in step: only the positions that differ are looked at
            n = len(b.ids)
            shared += n
            rows = zip(a.verdicts, b.verdicts, a.scores, b.scores, strict=True)
            pairs: Any = [(i, i) for i, (va, vb, sa, sb) in enumerate(rows)
                          if va != vb or sa != sb]  # fmt: skip
            # a NaN (no score) never equals itself, so every case without both scores is here
            comparable += n - sum(1 for i, _ in pairs if a.scores[i] != a.scores[i]
                                  or b.scores[i] != b.scores[i])  # fmt: skip
        else:
            where = {case_id: i for i, case_id in enumerate(a.ids)}
            pairs = [(where[c], j) for j, c in enumerate(b.ids) if c in where]
            shared += len(pairs)
            comparable += sum(1 for i, j in pairs if a.scores[i] == a.scores[i]
                              and b.scores[j] == b.scores[j])  # fmt: skip
        for i, j in pairs:
            va, vb, sa, sb = a.verdicts[i], b.verdicts[j], a.scores[i], b.scores[j]
            if va == vb and (sa == sb or (sa != sa and sb != sb)):
                continue
            wa, wb = _VERDICT_WORD[va], _VERDICT_WORD[vb]
            ra = sa if sa == sa else None
            rb = sb if sb == sb else None
            rank = _rank(wa, wb, ra, rb)
            if rank < 4:
                changed.append((suite, b.ids[j], wa, wb, ra, rb, rank))
    in_base = sum(len(a.ids) for a in base.values())
    return _comparison(
        shared=shared, comparable=comparable, in_runs=(in_base, in_new),
        changed_rows=changed, limit=limit, offset=offset,
    )  # fmt: skip


def _rank(va: str, vb: str, sa: float | None, sb: float | None) -> int:
    """As ``_RANK``: 0 regression, 1 fix, 2 score moved, 3 verdict changed, 4 nothing."""
    if va == "PASS" and vb != "PASS":
        return 0
    if va != "PASS" and vb == "PASS":
        return 1
    if sa is not None and sb is not None and abs(sb - sa) > 1e-9:
        return 2
    return 3 if va != vb else 4


def _comparison(
    *, shared: int, comparable: int, in_runs: tuple[int, int], changed_rows: list[Any],
    limit: int, offset: int,
) -> EvalComparison:  # fmt: skip
    """The comparison from the changed cases (suite, case, va, vb, sa, sb, rank) and counts."""
    changed_rows = sorted((r for r in changed_rows if r[6] < 4), key=itemgetter(6, 0, 1))
    moved = [r[5] - r[4] for r in changed_rows if r[4] is not None and r[5] is not None]
    deltas = [d for d in moved if abs(d) > 1e-9]
    deltas += [0.0] * (comparable - len(deltas))  # the comparable cases that did not move
    return EvalComparison(
        shared=shared,
        regressions=sum(1 for r in changed_rows if r[6] == 0),
        fixes=sum(1 for r in changed_rows if r[6] == 1),
        deltas=deltas,
        changed=[ChangedCase._make(r[:6]) for r in changed_rows[offset : offset + limit]],
        changed_total=len(changed_rows),
        only_base=in_runs[0] - shared,
        only_new=in_runs[1] - shared,
    )


def _compare(store: Store, joined: str, base: str, new: str) -> list[Any]:
    """``[totals, *changed]``; totals: (-, -, shared cases, paired attempts, -, comparable, -)."""
    sql = (
        f"WITH j AS MATERIALIZED ({joined})"
        " SELECT NULL, NULL, COUNT(*), SUM(n), NULL, SUM(sa IS NOT NULL AND sb IS NOT NULL), NULL"
        f" FROM j UNION ALL SELECT suite, case_id, va, vb, sa, sb, {_RANK} FROM j"
        f" WHERE {_RANK} < 4"
    )
    return store.conn.execute(sql, (base, new)).fetchall()
