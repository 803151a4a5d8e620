"""Lifecycle events (frozen, so adding a field never breaks a subscriber) and ``Hooks``.

A display or a plugin subclasses ``Hooks`` and overrides what it needs. A hook that raises is
logged and never fails the run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from coalmine.results import CanaryRun, CaseResult, EvalSuiteResult, RecalledLesson

log = logging.getLogger("coalmine")


@dataclass(frozen=True)
class RunStart:
    """A run is about to call its first agent."""

    total: int
    """How many canaries will run."""
    invalid: int
    judge: str | None
    """Who judges (agent name), or ``None`` when llm-judge graders are skipped."""
    resumed: int = 0
    """Cases a resumed run already has (they are not run again)."""


@dataclass(frozen=True)
class CaseStart:
    """A canary's agent is being called."""

    index: int
    total: int
    case_id: str
    agent: str


@dataclass(frozen=True)
class CaseEnd:
    """A canary finished and was graded."""

    index: int
    total: int
    result: CaseResult


@dataclass(frozen=True)
class RunEnd:
    """The run finished (or was interrupted) and its result file was written."""

    run: CanaryRun
    results_path: Path | None


@dataclass(frozen=True)
class EvalStart:
    """An eval run is about to start its first case."""

    total: int
    """Case runs planned (repeats included), those a resumed run has included."""
    resumed: int
    suites: tuple[str, ...]
    bad_lines: int
    concurrency: int
    judge: str | None
    workers: str | None = None
    """Where the cases run when not in this process alone: "2 workers", "4 Ray actors"."""


@dataclass(frozen=True)
class EvalProgress:
    """How far an eval run is (sent at most every 0.1 s, and once at the end)."""

    done: int
    total: int
    passed: int
    failed: int
    errored: int
    suite: str | None = None
    """The suite of the latest finished case run."""
    latest_failure: str | None = None
    """``suite/case: why`` of the latest case run that failed or errored (first line)."""


@dataclass(frozen=True)
class EvalEnd:
    """An eval run ended; each suite's result file is written."""

    run_id: str
    suites: tuple[EvalSuiteResult, ...]
    paths: tuple[Path, ...]
    interrupted: bool


@dataclass(frozen=True)
class LessonsRecalled:
    """Lessons of the memory relevant to what is about to run (sent only when there are some).

    Sent before ``RunStart`` or ``EvalStart``; an eval run sends the lessons of all its suites
    (each suite's own are in its result).
    """

    lessons: tuple[RecalledLesson, ...]
    """Best first, each lesson once."""


class Hooks:
    """Subscriber to run events; every method is a no-op by default."""

    async def on_lessons_recalled(self, event: LessonsRecalled) -> None:
        """Called once before a run starts, when the memory has lessons relevant to it."""

    async def on_run_start(self, event: RunStart) -> None:
        """Called once before the first case."""

    async def on_case_start(self, event: CaseStart) -> None:
        """Called as each case starts."""

    async def on_case_end(self, event: CaseEnd) -> None:
        """Called as each case ends."""

    async def on_run_end(self, event: RunEnd) -> None:
        """Called once at the end."""

    async def on_eval_start(self, event: EvalStart) -> None:
        """Called once before an eval run's first case."""

    async def on_eval_progress(self, event: EvalProgress) -> None:
        """Called as an eval run progresses."""

    async def on_eval_end(self, event: EvalEnd) -> None:
        """Called once when an eval run ends."""


async def emit(
    hooks: Sequence[Hooks],
    name: str,
    event: RunStart
    | CaseStart
    | CaseEnd
    | RunEnd
    | EvalStart
    | EvalProgress
    | EvalEnd
    | LessonsRecalled,
) -> None:
    """Call ``name`` on every subscriber; a failing subscriber is logged, never raised."""
    for hook in hooks:
        try:
            await getattr(hook, name)(event)
        except Exception:  # noqa: BLE001 - a hook failure never fails the run
            log.warning("hook %s.%s failed", type(hook).__name__, name, exc_info=True)
