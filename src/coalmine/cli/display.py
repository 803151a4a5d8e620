"""Displays: run events as progress on stderr (rich, plain lines, or JSON lines).

The final report goes to stdout separately, from the CLI.
"""

from __future__ import annotations

import json
import sys
from types import TracebackType
from typing import Literal, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

from coalmine.results import format_score
from coalmine.runner.events import CaseEnd, CaseStart, Hooks, RunEnd, RunStart

DisplayType = Literal["auto", "rich", "plain", "jsonl", "none"]

_MARK = {"PASS": "✅ PASS", "FAIL": "❌ FAIL", "ERROR": "⚠️ ERROR"}


class Display(Hooks):
    """A display is a set of hooks that may hold a terminal resource while the run lasts."""

    def __enter__(self) -> Display:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


def _line(event: CaseEnd) -> str:
    r = event.result
    score = format_score(r.composite_score) if r.composite_score is not None else "  — "
    why = f" [{r.reason}]" if r.reason else ""
    return (
        f"[{event.index + 1}/{event.total}] {_MARK[r.verdict]} {score}  {r.id} "
        f"({r.agent}, {r.duration_seconds:.1f}s){why}"
    )


class PlainDisplay(Display):
    """One line per finished canary, for logs and CI."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr

    async def on_run_start(self, event: RunStart) -> None:
        """Say what will run."""
        judge = event.judge or "none"
        print(f"coalmine: running {event.total} canaries (judge: {judge})", file=self.stream)

    async def on_case_end(self, event: CaseEnd) -> None:
        """Print the canary's verdict."""
        print(_line(event), file=self.stream, flush=True)


class RichDisplay(Display):
    """A live progress bar on a terminal, with a line per finished canary above it."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=self.console,
            transient=True,
        )
        self.task = self.progress.add_task("canaries", total=None)

    def __enter__(self) -> Display:
        self.progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.progress.stop()

    async def on_run_start(self, event: RunStart) -> None:
        """Size the bar."""
        self.progress.update(self.task, total=event.total)

    async def on_case_start(self, event: CaseStart) -> None:
        """Show which canary is running."""
        self.progress.update(self.task, description=f"{event.case_id} → {event.agent}")

    async def on_case_end(self, event: CaseEnd) -> None:
        """Print the verdict above the bar and advance it."""
        self.progress.console.print(_line(event), markup=False, highlight=False)
        self.progress.advance(self.task)


class JsonlDisplay(Display):
    """One JSON object per event on stderr."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr

    def _emit(self, payload: dict[str, object]) -> None:
        print(json.dumps(payload, ensure_ascii=False), file=self.stream, flush=True)

    async def on_run_start(self, event: RunStart) -> None:
        """Emit ``run_start``."""
        self._emit({"event": "run_start", "total": event.total, "judge": event.judge})

    async def on_case_start(self, event: CaseStart) -> None:
        """Emit ``case_start``."""
        self._emit({"event": "case_start", "id": event.case_id, "agent": event.agent})

    async def on_case_end(self, event: CaseEnd) -> None:
        """Emit ``case_end`` with the verdict."""
        r = event.result
        self._emit(
            {
                "event": "case_end",
                "id": r.id,
                "verdict": r.verdict,
                "composite_score": r.composite_score,
                "reason": r.reason,
            }
        )

    async def on_run_end(self, event: RunEnd) -> None:
        """Emit ``run_end`` with the result file."""
        path = str(event.results_path) if event.results_path else None
        self._emit(
            {
                "event": "run_end",
                "run_id": event.run.run_id,
                "results": path,
                "interrupted": event.run.interrupted,
            }
        )


def make_display(kind: DisplayType) -> Display:
    """Return the display for ``kind``; ``auto`` is rich on a terminal, plain otherwise."""
    if kind == "auto":
        kind = "rich" if sys.stderr.isatty() else "plain"
    if kind == "rich":
        return RichDisplay()
    if kind == "plain":
        return PlainDisplay()
    if kind == "jsonl":
        return JsonlDisplay()
    return Display()
