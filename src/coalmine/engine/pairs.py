"""The two runs a comparison reads: ``latest`` and ``previous`` of one kind, with shared cases.

A comparison names each run by store reference (an id, an id prefix, a label), by result file,
or relatively. ``latest`` is the finished run that started last and ``previous`` the finished
run that started last before the other run (before ``latest`` when the other is relative too),
both of the other run's kind: ``compare canary-run-2026-04-13 latest`` after an eval run is the
latest canary run. The kind can be asked for; when neither run is named it is the kind of the
finished run that started last. Runs are ordered by their start, so an old run imported today
is neither. Two runs of different kinds, or with no case in common, do not compare: a
comparison over no shared case would say "identical" about nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC
from pathlib import Path
from typing import NamedTuple

from coalmine.engine.history import (
    eval_run_record,
    is_result_file,
    open_store,
    read_result_file,
)
from coalmine.errors import UsageError
from coalmine.results import CanaryRun
from coalmine.store.imports import run_started
from coalmine.store.runs import RunInfo, Store

RELATIVE = ("latest", "previous")
KINDS = ("canary", "eval")
"""The kinds of run whose cases compare."""
CASES_SHOWN = 3


class RunPair(NamedTuple):
    """Two runs to compare, read whole."""

    base: CanaryRun
    new: CanaryRun


class InfoPair(NamedTuple):
    """Two stored runs to compare."""

    base: RunInfo
    new: RunInfo


_Named = RunInfo | CanaryRun
"""A run named by store reference, or read from a result file."""


def load_pair(store: Store, base: str, new: str, *, kind: str | None = None) -> RunPair:
    """The runs ``base`` and ``new`` name (store references, result files, relative), read.

    Raises:
        UsageError: a reference matches no run, the runs are of two kinds (or not of ``kind``),
            no run fits ``latest`` or ``previous``, or the runs have no case in common.
    """
    first, second = (_record(store, n) for n in _resolve(store, (base, new), kind, files=True))
    require_shared_cases(first, second)
    return RunPair(first, second)


def load_pair_at(
    root: Path, base: str, new: str, *, path: Path | None = None, kind: str | None = None
) -> RunPair:
    """:func:`load_pair` of the project's store, opened only when a run is no result file.

    Raises:
        StoreError: a run is named from the store and there is none (it is never made here).
        UsageError: as :func:`load_pair`.
    """
    if is_result_file(base) and is_result_file(new):
        named = [(ref, read_result_file(Path(ref))) for ref in (base, new)]
        _require_kind(named, kind)
        pair = RunPair(named[0][1], named[1][1])
        require_shared_cases(*pair)
        return pair
    store = open_store(root, path=path, create="never")
    try:
        return load_pair(store, base, new, kind=kind)
    finally:
        store.close()


def find_pair(store: Store, base: str, new: str, *, kind: str | None = None) -> InfoPair:
    """The stored runs ``base`` and ``new`` name, as :func:`load_pair` resolves them.

    Raises:
        UsageError: as :func:`load_pair`, but for the cases, which it does not read.
    """
    first, second = _resolve(store, (base, new), kind, files=False)
    assert isinstance(first, RunInfo) and isinstance(second, RunInfo)  # no file was read
    return InfoPair(first, second)


def load_baseline(store: Store, ref: str, *, kind: str, cases: Collection[str]) -> CanaryRun:
    """The run a run about to start compares with afterwards; ``cases`` are the ones planned.

    ``latest`` and ``previous`` are both the finished run of ``kind`` that started last.

    Raises:
        UsageError: as :func:`load_pair`, checked before the run calls any agent.
    """
    if ref in RELATIVE:
        named: _Named = _latest(store, kind)
    else:
        named = _named(store, ref, files=True)
        _require_kind([(ref, named)], kind)
    record = _record(store, named)
    ids = {r.id for r in record.results}
    if not ids & set(cases):
        raise _no_case_in_common(record.run_id, sorted(ids), "this run", sorted(cases))
    return record


def require_shared_cases(base: CanaryRun, new: CanaryRun) -> None:
    """Raise ``UsageError`` when the two runs have no case in common."""
    before, after = [r.id for r in base.results], [r.id for r in new.results]
    if not set(before) & set(after):
        raise _no_case_in_common(base.run_id, before, new.run_id, after)


def no_case_in_common(base: str, new: str) -> UsageError:
    """The error of two runs, named ``base`` and ``new``, that have no case in common."""
    return _no_case_in_common(base, [], new, [])


def _no_case_in_common(
    base: str, base_cases: Sequence[str], new: str, new_cases: Sequence[str]
) -> UsageError:
    def cases(name: str, ids: Sequence[str]) -> str:
        if not ids:
            return name
        shown = ", ".join(ids[:CASES_SHOWN]) + (", …" if len(ids) > CASES_SHOWN else "")
        return f"{name} ({len(ids)} case{'' if len(ids) == 1 else 's'}: {shown})"

    return UsageError(
        f"{cases(base, base_cases)} and {cases(new, new_cases)} have no case in common, so "
        "there is nothing to compare: compare runs of the same canaries or suites"
    )


def _resolve(
    store: Store, refs: tuple[str, str], kind: str | None, *, files: bool
) -> tuple[_Named, _Named]:
    named = [(ref, _named(store, ref, files=files)) for ref in refs if ref not in RELATIVE]
    wanted = _require_kind(named, kind)
    by_ref = dict(named)
    latest: RunInfo | None = None
    out: list[_Named] = []
    for ref, other in (refs, refs[::-1]):
        if ref not in RELATIVE:
            out.append(by_ref[ref])
            continue
        wanted = wanted or _latest_kind(store)
        latest = latest or _latest(store, wanted)
        if ref == "latest":
            out.append(latest)
            continue
        anchor = by_ref.get(other) or latest
        out.append(_previous(store, wanted, anchor))
    return out[0], out[1]


def _named(store: Store, ref: str, *, files: bool) -> _Named:
    if files and is_result_file(ref):
        return read_result_file(Path(ref))
    return store.get_run(ref)


def _kind(named: _Named) -> str:
    return named.kind if isinstance(named, RunInfo) else named.kind or "canary"


def _name(named: _Named) -> str:
    return named.id if isinstance(named, RunInfo) else named.run_id


def _require_kind(named: Sequence[tuple[str, _Named]], kind: str | None) -> str | None:
    """The kind the named runs share (or ``kind``); ``None`` when nothing says."""
    kinds = list(dict.fromkeys(_kind(n) for _, n in named))
    if len(kinds) > 1:
        (a, first), (b, second) = named
        raise UsageError(
            f"{a} is {_a(_kind(first))} run and {b} {_a(_kind(second))} run: "
            "compare two runs of one kind"
        )
    if kinds and kind is not None and kinds[0] != kind:
        raise UsageError(f"{named[0][0]} is {_a(kinds[0])} run, not {_a(kind)} run")
    wanted = kind or (kinds[0] if kinds else None)
    if wanted is not None and wanted not in KINDS:
        raise UsageError(
            f"{_a(wanted).capitalize()} run's cases do not compare; compare reads "
            f"{' and '.join(KINDS)} runs"
        )
    return wanted


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def _latest_kind(store: Store) -> str:
    """The kind of the finished run that started last, of the kinds that compare."""
    found = [info for k in KINDS if (info := store.find_latest(kind=k)) is not None]
    if not found:
        raise UsageError(f"there is no finished {' or '.join(KINDS)} run in {store.path}")
    return max(found, key=lambda info: (info.started_at, info.id)).kind


def _latest(store: Store, kind: str) -> RunInfo:
    found = store.find_latest(kind=kind)
    if found is None:
        raise UsageError(f"there is no finished {kind} run in {store.path} to be 'latest'")
    return found


def _previous(store: Store, kind: str, anchor: _Named) -> RunInfo:
    if isinstance(anchor, RunInfo):
        started, anchor_id = anchor.started_at, anchor.id
    else:
        source = f"the result file of {anchor.run_id}"
        started = run_started(anchor, source=source).astimezone(UTC).isoformat()
        anchor_id = anchor.store_run_id or ""
    found = store.find_latest(kind=kind, before=(started, anchor_id))
    if found is None:
        raise UsageError(
            f"there is no finished {kind} run started before {_name(anchor)} to be 'previous'"
        )
    return found


def _record(store: Store, named: _Named) -> CanaryRun:
    if isinstance(named, CanaryRun):
        return named
    return eval_run_record(store, named) if named.kind == "eval" else store.load_run(named.id)
