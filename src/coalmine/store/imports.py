"""Canary result files imported into the run store: each run once.

A result file records one run. Its identity is that run's: the ``store_run_id`` of the store
that recorded it, else its ``run_id`` and the second it started. Its content is the SHA-256 of
its canonical JSON, so a copy, or the same JSON laid out another way, is the same content.
Importing a run the store holds already stores nothing and names the stored run. The same run
with other content is refused: two versions of one run would make its label ambiguous and every
comparison depend on which copy it read, and nothing says which copy is right. A run recorded
in this store has no content hash of its file; the file is that run when its cases' verdicts
and scores are the stored ones.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from coalmine._util.hashing import hash_text
from coalmine.errors import UsageError
from coalmine.results import CanaryRun
from coalmine.store.db import transaction
from coalmine.store.runs import (
    NEWEST_FIRST,
    CaseExtras,
    NewRun,
    RunInfo,
    RunStatus,
    Store,
    _run_info,
    insert_run,
    write_finish,
)

DIFFERENCES_NAMED = 3


@dataclass(frozen=True)
class ImportedRun:
    """The stored run a result file is."""

    run_id: str
    new: bool
    """``False``: the store held the run already, and nothing was stored."""
    source: str | None
    """Where the stored run was imported from; ``None`` for a run recorded in this store."""


def import_run(store: Store, run: CanaryRun, *, root: str, source: str) -> ImportedRun:
    """Store the run of a result file (``source`` names it), unless the store holds it already.

    The lookup and every write are one transaction: a crash stores the whole run or none of it.

    Raises:
        UsageError: the file is an eval run's record, its timestamp is not a time, or the store
            holds the same run with other content (both are named).
    """
    if run.kind is not None:
        raise UsageError(
            f"{source} is the record of an {run.kind} run ({run.run_id}); an eval run is in the "
            "store already, and only canary result files import"
        )
    started = run_started(run, source=source)
    origin = run.store_run_id or f"{run.run_id}@{started:%Y-%m-%dT%H:%M:%SZ}"
    digest = hash_text(run.model_dump_json())
    with transaction(store.conn) as c:
        candidates = _same_run(c, run, origin, started)
        for info in candidates:
            if _holds(c, info, run, digest):
                return ImportedRun(info.id, False, info.options.get("source"))
        if candidates:
            raise UsageError(_conflict(c, candidates[0], run, source, digest))
        options = {"imported": True, "origin": origin, "sha256": digest, "source": source}
        new = NewRun(kind="canary", root=root, started_at=started, options=options,
                     coalmine_version=run.coalmine_version, judge=run.judge)  # fmt: skip
        run_id = insert_run(c, new)
        for position, result in enumerate(run.results):
            extras = CaseExtras(position=position, prompt=result.prompt, output=result.output)
            store.write_case(c, run_id, result, extras)
        status: RunStatus = "interrupted" if run.interrupted else "finished"
        ended = started + timedelta(seconds=run.duration_seconds)
        write_finish(c, run_id, status, ended, run.summary, run.invalid_specs, run.run_id, None)
    return ImportedRun(run_id, True, source)


def run_started(run: CanaryRun, *, source: str) -> datetime:
    """When the run of a result file (``source`` names it) started, in UTC.

    Raises:
        UsageError: its timestamp is not an ISO time.
    """
    try:
        started = datetime.fromisoformat(run.timestamp.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{source}: timestamp {run.timestamp!r} is not an ISO time") from None
    return started.replace(tzinfo=UTC) if started.tzinfo is None else started.astimezone(UTC)


def _same_run(
    c: sqlite3.Connection, run: CanaryRun, origin: str, started: datetime
) -> list[RunInfo]:
    """The stored canary runs that are the file's run: by id, by origin, or by label and start."""
    rows = c.execute(
        "SELECT *, 0 AS cases FROM runs WHERE kind = 'canary' AND (id = ?1"
        " OR json_extract(options, '$.origin') = ?2 OR (json_extract(options, '$.origin') IS NULL"
        f" AND label = ?3 AND substr(started_at, 1, 19) = ?4)) ORDER BY {NEWEST_FIRST}",
        (
            (run.store_run_id or "").upper(),
            origin,
            run.run_id,
            started.strftime("%Y-%m-%dT%H:%M:%S"),
        ),
    ).fetchall()
    return [_run_info(r) for r in rows]


def _holds(c: sqlite3.Connection, info: RunInfo, run: CanaryRun, digest: str) -> bool:
    """Whether the stored run ``info`` has the file's content."""
    known = info.options.get("sha256")
    return bool(known == digest) if known is not None else not _differences(c, info.id, run)


def _differences(c: sqlite3.Connection, run_id: str, run: CanaryRun) -> list[str]:
    """How the file's cases differ from the stored run's (verdict and composite score)."""
    stored = {
        r[0]: (r[1], r[2])
        for r in c.execute(
            "SELECT case_id, verdict, composite_score FROM case_results WHERE run_id = ?",
            (run_id,),
        )
    }
    given = {r.id: (r.verdict, r.composite_score) for r in run.results}
    out = []
    for case_id in sorted(stored.keys() | given.keys()):
        mine, theirs = given.get(case_id), stored.get(case_id)
        if mine != theirs:
            out.append(f"{case_id}: {_shown(mine)} in the file, {_shown(theirs)} in the store")
    return out


def _shown(case: tuple[str, float | None] | None) -> str:
    if case is None:
        return "absent"
    verdict, score = case
    return verdict if score is None else f"{verdict} {score:.2f}"


def _conflict(
    c: sqlite3.Connection, info: RunInfo, run: CanaryRun, source: str, digest: str
) -> str:
    where = info.options.get("source")
    held = f"imported from {where}" if where else "recorded in this store"
    differences = _differences(c, info.id, run)
    if differences:
        what = "; ".join(differences[:DIFFERENCES_NAMED])
        more = len(differences) - DIFFERENCES_NAMED
        what += f" and {more} more" if more > 0 else ""
    else:
        stored = str(info.options.get("sha256"))
        what = f"the same verdicts, other content ({digest[:19]}…, stored {stored[:19]}…)"
    return (
        f"{source} is run {run.run_id}, which the store holds as {info.id} ({held}) with other "
        f"content: {what}. A run is stored once, so the file was not imported; if it is "
        "another run, give it a run_id of its own and no store_run_id"
    )
