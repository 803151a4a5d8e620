"""``canary-run-DATE[-N].json``: whole or absent whatever kills the writer, never overwritten."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

from coalmine.reports.json import find_result_file, write_result_file
from coalmine.results import CanaryRun, RunTotals

AT = datetime(2026, 4, 13, 7, 30, tzinfo=UTC)


def builder(store_run_id: str | None = None, *, interrupted: bool = False):  # type: ignore[no-untyped-def]
    def build(label: str) -> CanaryRun:
        return CanaryRun(
            run_id=label,
            timestamp="2026-04-13T07:30:00Z",
            summary=RunTotals.of([], invalid=0),
            results=[],
            interrupted=interrupted,
            store_run_id=store_run_id,
        )

    return build


def test_each_run_takes_the_next_name_whole_and_no_temporary_file_stays(tmp_path: Path) -> None:
    first, run = write_result_file(tmp_path, AT, builder("A"))
    second, _ = write_result_file(tmp_path, AT, builder("B"))
    assert (first.name, second.name) == (
        "canary-run-2026-04-13.json",
        "canary-run-2026-04-13-2.json",
    )
    assert run.run_id == "canary-run-2026-04-13"
    assert json.loads(second.read_text())["run_id"] == "canary-run-2026-04-13-2"
    assert json.loads(first.read_text())["store_run_id"] == "A"  # not overwritten
    assert {p.name for p in tmp_path.iterdir()} == {first.name, second.name}


def test_a_resumed_run_replaces_its_own_file_and_finds_it_by_its_store_id(tmp_path: Path) -> None:
    write_result_file(tmp_path, AT, builder("A"))
    path, _ = write_result_file(tmp_path, AT, builder("B", interrupted=True))
    assert find_result_file(tmp_path, AT, "B") == path
    assert find_result_file(tmp_path, AT, "C") is None
    again, run = write_result_file(tmp_path, AT, builder("B"), reuse=path)
    assert again == path and run.run_id == "canary-run-2026-04-13-2"
    assert json.loads(path.read_text())["interrupted"] is False
    assert len(list(tmp_path.iterdir())) == 2


def test_a_writer_killed_while_it_builds_the_run_leaves_no_stub(tmp_path: Path) -> None:
    results, building = tmp_path / "results", tmp_path / "building"
    script = textwrap.dedent(
        f"""
        import time
        from datetime import UTC, datetime
        from pathlib import Path
        from coalmine.reports.json import write_result_file

        def build(label):
            Path({str(building)!r}).write_text(label)
            time.sleep(30)

        write_result_file(Path({str(results)!r}), datetime(2026, 4, 13, tzinfo=UTC), build)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ})
    try:
        deadline = time.monotonic() + 20
        while not building.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert building.exists(), "the writer never built the run"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert list(results.glob("canary-run-*.json")) == []  # no 0-byte name for a resume to skip
    # the next run takes the first name, whole
    path, _ = write_result_file(results, AT, builder("A"))
    assert path.name == "canary-run-2026-04-13.json"
