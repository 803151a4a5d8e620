"""The clock, injectable so tests and golden files can pin time.

Every timestamp is timezone-aware UTC; durations use a monotonic counter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Where the runner reads the time."""

    def now(self) -> datetime:
        """Return the current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Return a monotonic counter in seconds, for durations."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """Return the current time in UTC."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """Return ``time.monotonic()``."""
        return time.monotonic()


@dataclass
class FixedClock:
    """A clock for tests: ``now`` is fixed, ``monotonic`` advances by ``step`` per read."""

    at: datetime
    step: float = 0.0
    _ticks: float = field(default=0.0, repr=False)

    def now(self) -> datetime:
        """Return the pinned time."""
        return self.at

    def monotonic(self) -> float:
        """Return a counter that advances by ``step`` on every call."""
        self._ticks += self.step
        return self._ticks


def format_utc(moment: datetime) -> str:
    """Format an aware datetime as ``2026-04-13T07:30:00Z`` (second precision, UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
