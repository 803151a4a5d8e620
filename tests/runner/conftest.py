"""Fixtures the runner tests share."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def promptfoo() -> Iterator[str]:
    """The promptfoo 0.121.20 executable ``COALMINE_PROMPTFOO`` names (else the test skips)."""
    executable = os.environ.get("COALMINE_PROMPTFOO")
    if not executable:
        pytest.skip("set COALMINE_PROMPTFOO to a promptfoo 0.121.20 executable to compare live")
    yield executable
