"""The result file: ``bench/results/canary-run-YYYY-MM-DD.json``, never overwritten.

The first run of a UTC day takes ``canary-run-DATE.json``, the next ``canary-run-DATE-2.json``
and so on. The name is claimed with an exclusive create, so two runs finishing at once never
take the same name, and the content is written to a temporary file and renamed into place, so a
crash never leaves half a file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from coalmine.compare import Comparison
from coalmine.errors import StoreError
from coalmine.reports.base import reporter
from coalmine.results import CanaryRun

PREFIX = "canary-run-"


@reporter("json", suffix=".json")
def render_json(run: CanaryRun, *, comparison: Comparison | None = None) -> str:
    """Return the run as indented JSON with a trailing newline (the result file's content)."""
    return run.model_dump_json(indent=2) + "\n"  # pydantic's encoder: 5x json.dumps here


def claim_result_path(directory: Path, started: datetime) -> Path:
    """Create and return the first free ``canary-run-DATE[-N].json`` in ``directory``."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create {directory}: {exc.strerror}") from None
    stem = PREFIX + started.strftime("%Y-%m-%d")
    n = 1
    while True:
        path = directory / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            n += 1
            continue
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror}") from None
        return path


def write_result_file(
    directory: Path,
    started: datetime,
    build: Callable[[str], CanaryRun],
    *,
    reuse: Path | None = None,
) -> tuple[Path, CanaryRun]:
    """Claim a file name, build the run with ``run_id`` = the file's stem, and write it.

    ``reuse`` is the file this same run wrote before (a resumed run rewrites its own file).
    """
    path = reuse if reuse is not None else claim_result_path(directory, started)
    run = build(path.stem)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(render_json(run), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror}") from None
    return path, run
