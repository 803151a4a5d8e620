"""Fixtures of the provider tests: loopback servers that speak each provider's protocol."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.json_service import JsonService


@pytest.fixture
def json_service() -> Iterator[JsonService]:
    """A real generic JSON agent service on 127.0.0.1 for this test."""
    with JsonService() as service:
        yield service
