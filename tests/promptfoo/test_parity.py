"""promptfoo 0.121.20 and coalmine agree on every row of the parity configs, three ways.

Each folder of ``tests/promptfoo/fixtures/parity/`` is a promptfoo config written to exercise
one behaviour broadly (object outputs, transforms, generated tests, assertion types …). The
harness ``bench/parity/promptfoo.py`` runs it in real promptfoo and in coalmine through the
CLIs: directly (``eval run --promptfoo``), imported (``import promptfoo`` + ``eval run``) and
exported back (``export promptfoo`` of the first imported suite, run by promptfoo: each export
is a promptfoo run of ~5 s, so the harness run by hand exports every suite). Every row must
agree in every way: success, failureReason, score, named scores, each component's pass.

promptfoo's rows come from ``fixtures/parity-runs/`` when nothing the run reads has changed (the
harness's docstring says how they are keyed); one test runs promptfoo live and checks that it
gives today the rows stored for its runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
HARNESS = HERE.parents[1] / "bench" / "parity" / "promptfoo.py"
FOLDERS = sorted(p for p in (HERE / "fixtures" / "parity").iterdir() if p.is_dir())
REFUSED = {"max_score": "'max-score'"}
"""Folders whose suites coalmine refuses to export, and what the refusal names: promptfoo
cannot run one column of a ``max-score`` test (its eval dies on a comparison of one output)."""


@pytest.mark.slow
@pytest.mark.timeout(900)  # promptfoo runs the config and each exported suite: ~5 s a run
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_promptfoo_and_coalmine_agree_on_every_row(folder: Path, promptfoo: str) -> None:
    done = subprocess.run(
        [sys.executable, str(HARNESS), "--json", "--exported-suites", "1", "--promptfoo", promptfoo]
        + [str(folder)],
        capture_output=True,
        text=True,
    )
    assert done.stdout, done.stderr
    (outcome,) = json.loads(done.stdout)
    assert outcome["rows"] > 0, outcome["notes"]
    assert outcome["notes"] == []
    assert outcome["agree"] == {
        "direct": outcome["rows"],
        "imported": outcome["rows"],
        "exported": outcome["rows_exported"],
    }
    if folder.name in REFUSED:
        assert outcome["refused"], "the export was not refused"
        assert all(REFUSED[folder.name] in reason for reason in outcome["refused"])
    else:
        assert outcome["refused"] == []
        assert outcome["rows_exported"] > 0
    assert done.returncode == 0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_promptfoo_live_gives_the_rows_stored_for_its_runs(promptfoo: str) -> None:
    folder = HERE / "fixtures" / "parity" / "everyday"
    runs = HERE / "fixtures" / "parity-runs"
    before = {p.name: p.read_text() for p in runs.glob("*.json")}
    done = subprocess.run(
        [sys.executable, str(HARNESS), "--json", "--live", "--exported-suites", "1"]
        + ["--promptfoo", promptfoo, str(folder)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    after = {p.name: p.read_text() for p in runs.glob("*.json")}
    rewritten = [name for name in after if name in before and after[name] == before[name]]
    assert len(rewritten) >= 2, "the live runs' keys are not among the stored ones"
    assert set(after) == set(before), "a live run stored rows under a key of its own"
