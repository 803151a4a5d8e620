"""The result file: ``bench/results/canary-run-YYYY-MM-DD.json``, never overwritten.

The first run of a UTC day takes ``canary-run-DATE.json``, the next ``canary-run-DATE-2.json``
and so on. The file is written whole under a temporary name and then takes its name in one step
(:func:`coalmine._util.files.write_new_file`), so two runs finishing at once never take the same
name and a crash never leaves a stub or half a file; a resumed run replaces its own file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from coalmine._util.files import write_file, write_new_file
from coalmine.compare import Comparison
from coalmine.reports.base import reporter
from coalmine.results import CanaryRun

PREFIX = "canary-run-"


@reporter("json", suffix=".json")
def render_json(run: CanaryRun, *, comparison: Comparison | None = None) -> str:
    """Return the run as indented JSON with a trailing newline (the result file's content)."""
    return run.model_dump_json(indent=2) + "\n"  # pydantic's encoder: 5x json.dumps here


def write_result_file(
    directory: Path,
    started: datetime,
    build: Callable[[str], CanaryRun],
    *,
    reuse: Path | None = None,
) -> tuple[Path, CanaryRun]:
    """Take a file name, build the run with ``run_id`` = the file's stem, and write it whole.

    ``reuse`` is the file this same run wrote before (a resumed run rewrites its own file).
    """
    runs: dict[Path, CanaryRun] = {}

    def render(path: Path) -> str:
        runs[path] = build(path.stem)
        return render_json(runs[path])

    if reuse is not None:
        path = write_file(reuse, render(reuse))
    else:
        stem = PREFIX + started.strftime("%Y-%m-%d")
        path = write_new_file(
            directory, lambda n: f"{stem}.json" if n == 1 else f"{stem}-{n}.json", render
        )
    return path, runs[path]


def find_result_file(directory: Path, started: datetime, store_run_id: str) -> Path | None:
    """The result file of store run ``store_run_id`` (started at ``started``), if one was written.

    A run killed after it wrote its file but before the store recorded it finds it this way,
    so its resume rewrites that file instead of taking the next name.
    """
    stem = PREFIX + started.strftime("%Y-%m-%d")
    for path in sorted(directory.glob(f"{stem}*.json")):
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("store_run_id") == store_run_id:
            return path
    return None
