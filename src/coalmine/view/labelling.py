"""Labelling in the browser: the same items, the same file, as ``coalmine judge label``.

The viewer asks :mod:`coalmine.judge.labelling` which items a labeller has still to label and
writes each answer through its ``LabelFile``, so the file is the one the terminal would write
(resumable, several labellers, each label added the moment it is given).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from coalmine._util.locations import OutsideProject, inside_root
from coalmine.errors import UsageError
from coalmine.judge.labelling import Asked, Draft, LabelFile, plan_labelling, run_candidates
from coalmine.judge.labels import Verdict
from coalmine.store.runs import RunInfo, Store

VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "unsure")

_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def labels_path(root: Path, given: str) -> Path:
    """The labels file ``given`` names, inside the project ``root``.

    Raises:
        UsageError: it is not a ``.jsonl`` path inside the project.
    """
    if not given.strip():
        raise UsageError("name the labels file (a .jsonl path inside the project)")
    base = root.resolve()
    try:
        path = inside_root(given, base=base, root=base, what="the labels file")
    except OutsideProject as exc:
        raise UsageError(f"the labels file must be a .jsonl path inside {base}: {exc}") from None
    if path.suffix != ".jsonl":
        raise UsageError(f"the labels file must be a .jsonl path inside {base}: {given!r}")
    return path


@dataclass(frozen=True)
class LabelState:
    """Where a labeller is in a run: the next item, and the counts."""

    draft: Draft | None
    done: int
    remaining: int
    missing: list[str]
    bad_lines: int


def _asked(rubric: str | None) -> Asked | None:
    return Asked(rubric=rubric) if rubric and rubric.strip() else None


def label_state(
    store: Store, info: RunInfo, path: Path, labeller: str, *, rubric: str | None = None,
    skip: frozenset[str] = frozenset(),
) -> LabelState:  # fmt: skip
    """The next item ``labeller`` has to label in run ``info`` (``skip``: ids put off)."""
    run_root = Path(info.root) if Path(info.root).is_dir() else None
    file = LabelFile(path, labeller)
    plan = plan_labelling(run_candidates(store, info, root=run_root), file, asked=_asked(rubric))
    waiting = [d for d in plan.drafts if d.id not in skip]
    return LabelState(
        waiting[0] if waiting else None, plan.done, len(plan.drafts), plan.missing, len(file.bad)
    )


def add_label(
    store: Store, info: RunInfo, path: Path, labeller: str, item_id: str, verdict: Verdict,
    note: str | None, *, rubric: str | None = None,
) -> bool:  # fmt: skip
    """Write ``labeller``'s verdict on ``item_id``; ``False`` when it is no longer to label.

    Writes to one file are serialised, so two labellers answering at once both land.
    """
    with _lock(path):
        run_root = Path(info.root) if Path(info.root).is_dir() else None
        file = LabelFile(path, labeller)
        plan = plan_labelling(run_candidates(store, info, root=run_root), file,
                              asked=_asked(rubric))  # fmt: skip
        draft = next((d for d in plan.drafts if d.id == item_id), None)
        if draft is None:
            return False
        file.add(draft, verdict, note)
        return True


def _lock(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(path, threading.Lock())
