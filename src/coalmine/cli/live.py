"""The live progress bar on a terminal (rich), for ``--display rich`` and ``auto`` on a tty.

Its own module so that a run without a terminal never imports rich's progress machinery.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from coalmine.cli.lines import Display, _lesson_lines, _line, _short
from coalmine.engine.events import (
    CaseEnd,
    CaseStart,
    EvalProgress,
    EvalStart,
    LessonsRecalled,
    RunStart,
)


class _RateColumn(ProgressColumn):
    """Cases a second since the start: it keeps falling while a slow case holds the run up.

    (rich's own speed is a moving window that freezes between advances, and speaks of bytes.)
    """

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        return Text(f"{task.completed / elapsed:,.1f}/s" if elapsed > 0 and task.completed else "")


class _EtaColumn(ProgressColumn):
    """Time left at the rate since the start, so it grows while nothing finishes."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        if not task.completed or task.total is None or elapsed <= 0:
            return Text("ETA –")
        left = (task.total - task.completed) * elapsed / task.completed
        return Text(f"ETA {left:,.0f}s")


class RichDisplay(Display):
    """A live progress bar on a terminal, with a line per finished canary above it."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            _RateColumn(),
            TimeElapsedColumn(),
            _EtaColumn(),
            TextColumn("{task.fields[latest]}", markup=False),
            console=self.console,
            transient=True,
        )
        self.task = self.progress.add_task("canaries", total=None, latest="")

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

    async def on_lessons_recalled(self, event: LessonsRecalled) -> None:
        """List the lessons recalled for the run above the bar."""
        for line in _lesson_lines(event):
            self.progress.console.print(line, markup=False, highlight=False)

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

    async def on_eval_start(self, event: EvalStart) -> None:
        """Size the bar for the case runs."""
        self.progress.update(
            self.task, total=event.total, completed=event.resumed, description="evals"
        )

    async def on_eval_progress(self, event: EvalProgress) -> None:
        """Move the bar; show the suite, pass/fail so far and the latest failure.

        Rate, elapsed time and ETA are columns that rich redraws on its own, so they move while
        a slow case holds the run up.
        """
        suite = f"{event.suite} " if event.suite else ""
        latest = f"latest ✗ {_short(event.latest_failure, 60)}" if event.latest_failure else ""
        self.progress.update(
            self.task,
            completed=event.done,
            description=f"{suite}✓ {event.passed} ✗ {event.failed} ⚠ {event.errored}",
            latest=latest,
        )
