"""Shared fixtures: isolated state for every test, a loopback OpenAI server, project builders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coalmine._util import registry
from tests.helpers.openai_server import FakeOpenAI
from tests.helpers.project import Project


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No third-party plugins, no user state: every test starts from a clean slate."""
    registry.set_entry_points_enabled(False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield
    registry.set_entry_points_enabled(True)


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 for this test."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty coalmine project in a temporary folder."""
    return Project(tmp_path / "proj")
