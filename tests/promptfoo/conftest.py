"""Fixtures the runner tests share."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from coalmine.promptfoo.node import typescript_loader_dirs


@pytest.fixture
def promptfoo() -> Iterator[str]:
    """The promptfoo 0.121.20 executable ``COALMINE_PROMPTFOO`` names (else the test skips)."""
    executable = os.environ.get("COALMINE_PROMPTFOO")
    if not executable:
        pytest.skip("set COALMINE_PROMPTFOO to a promptfoo 0.121.20 executable to compare live")
    yield executable


@pytest.fixture
def fast_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run promptfoo's Python assertions in this interpreter (a shim costs 0.2 s a call)."""
    monkeypatch.setenv("PROMPTFOO_PYTHON", sys.executable)


@pytest.fixture
def path_without_promptfoo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No promptfoo on ``PATH``: TypeScript has no tsx to load it (none beside the tests)."""
    folders = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    kept = [p for p in folders if not (Path(p) / "promptfoo").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(kept))
    typescript_loader_dirs.cache_clear()
    yield
    typescript_loader_dirs.cache_clear()


@pytest.fixture
def promptfoo_on_path(monkeypatch: pytest.MonkeyPatch, promptfoo: str) -> Iterator[None]:
    """The live promptfoo on ``PATH``, as its users have it: its tsx loads TypeScript."""
    found = shutil.which(promptfoo)
    assert found is not None, promptfoo
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(found).parent), os.environ["PATH"]]))
    typescript_loader_dirs.cache_clear()
    yield
    typescript_loader_dirs.cache_clear()
