"""Private scratch folders that a killed process does not leave behind for good.

A folder is ``<tmp>/coalmine-<kind>-<pid>-<random>``, mode 0700, removed by its user when done.
A process killed outright (SIGKILL, the OOM killer, a lost machine) cannot remove its own, so
the first folder a process makes of a kind sweeps the orphans of that kind: folders of this user
whose process is gone and that nothing has touched for :data:`ORPHAN_AGE` seconds. The age is a
guard for a temporary folder shared between PID namespaces (containers), where a live process
of another namespace has a pid that looks dead here. A folder made to be kept (``keep=True``: a
user asked to inspect it) has no pid in its name, ``coalmine-<kind>-kept-<random>``, and is
never swept.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ORPHAN_AGE = 3600.0
"""Seconds a folder of a dead process is left untouched before it is swept."""

_swept: set[tuple[str, str]] = set()
"""(temporary folder, kind) already swept by this process."""


def make_scratch(kind: str, *, keep: bool = False) -> Path:
    """A new private folder for ``kind`` (``trajectory``, ``review`` …); the caller removes it.

    ``keep``: the folder outlives the process on purpose, so no later sweep may take it.
    """
    root = tempfile.gettempdir()
    if (root, kind) not in _swept:
        _swept.add((root, kind))
        sweep_orphans(kind, Path(root))
    owner = "kept" if keep else str(os.getpid())
    return Path(tempfile.mkdtemp(prefix=f"coalmine-{kind}-{owner}-", dir=root))


@contextmanager
def scratch(kind: str) -> Iterator[Path]:
    """A new private folder for ``kind``, removed when the block ends, whatever its end."""
    folder = make_scratch(kind)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep_orphans(kind: str, root: Path, *, now: float | None = None) -> list[Path]:
    """Remove the ``kind`` folders under ``root`` that a dead process of this user left.

    Returns:
        The folders removed.
    """
    now = time.time() if now is None else now
    prefix = f"coalmine-{kind}-"
    removed = []
    try:
        with os.scandir(root) as listing:
            entries = list(listing)
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        pid_text = entry.name[len(prefix) :].partition("-")[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != os.getuid():
                continue
            if now - _last_touched(Path(entry.path)) < ORPHAN_AGE:
                continue
        except OSError:
            continue  # gone meanwhile, or not ours to read
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":
        return True  # (on Windows os.kill(pid, 0) would end the process: nothing is swept)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process (or a pid no proof of anything either way)
    return True


def _last_touched(folder: Path) -> float:
    """The newest modification time of ``folder`` and the files right in it."""
    newest = folder.stat().st_mtime
    with os.scandir(folder) as listing:
        for entry in listing:
            newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
    return newest
