"""Fixtures the runner tests share."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest


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
