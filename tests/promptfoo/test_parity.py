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

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def _harness() -> Any:
    """The harness as a module (it is a script in ``bench/``, not a package)."""
    found = sys.modules.get("parity_harness")
    if found is not None:
        return found
    spec = importlib.util.spec_from_file_location("parity_harness", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["parity_harness"] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def _install(folder: Path, version: str) -> str:
    """A promptfoo install's layout: ``.bin/promptfoo`` links into the package's ``dist``."""
    package = folder / "node_modules" / "promptfoo"
    (package / "dist" / "src").mkdir(parents=True)
    (package / "dist" / "src" / "entrypoint.js").write_text("")
    (package / "dist" / "package.json").write_text('{"type": "module"}')  # (no name: not it)
    (package / "package.json").write_text(json.dumps({"name": "promptfoo", "version": version}))
    (folder / "node_modules" / ".bin").mkdir()
    link = folder / "node_modules" / ".bin" / "promptfoo"
    link.symlink_to("../promptfoo/dist/src/entrypoint.js")
    return str(link)


def test_a_run_key_holds_promptfoo_s_version_not_where_it_is_installed(tmp_path: Path) -> None:
    harness = _harness()
    scope = tmp_path / "config"
    shutil.copytree(HERE / "fixtures" / "parity" / "everyday", scope)
    one = harness.run_key(_install(tmp_path / "ci-1", "0.121.20"), scope)
    assert harness.run_key(_install(tmp_path / "ci-2", "0.121.20"), scope) == one
    assert harness.run_key(_install(tmp_path / "next", "0.121.21"), scope) != one
    (scope / "__pycache__").mkdir()
    (scope / "__pycache__" / "check.cpython-311.pyc").write_bytes(b"\x00")
    assert harness.run_key(_install(tmp_path / "ci-3", "0.121.20"), scope) == one
    (scope / "context.txt").write_text("another context")
    assert harness.run_key(_install(tmp_path / "ci-4", "0.121.20"), scope) != one


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_promptfoo_s_rows_are_stored_for_every_parity_config(folder: Path, tmp_path: Path) -> None:
    """A config changed without its rows stored again would run promptfoo live in every CI run.

    (Store them with ``bench/parity/promptfoo.py --promptfoo PATH FOLDER``: it runs promptfoo
    only for the keys it does not hold.)
    """
    harness = _harness()
    key = harness.run_key(_install(tmp_path, "0.121.20"), folder)
    assert (HERE / "fixtures" / "parity-runs" / f"{key}.json").is_file(), folder.name
