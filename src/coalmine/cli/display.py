"""Displays: run events as progress on stderr (rich, plain lines, or JSON lines).

The final report goes to stdout separately, from the CLI.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Literal, TextIO

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

from coalmine._util.words import counted
from coalmine.engine.events import (
    CaseEnd,
    CaseStart,
    EvalEnd,
    EvalProgress,
    EvalStart,
    Hooks,
    LessonsRecalled,
    RunEnd,
    RunStart,
)
from coalmine.results import format_score

DisplayType = Literal["auto", "rich", "plain", "jsonl", "none"]

_MARK = {"PASS": "✅ PASS", "FAIL": "❌ FAIL", "ERROR": "⚠️ ERROR"}
LESSONS_SHOWN = 10
LESSON_CHARS = 200


def echo_markdown(text: str, *, raw: bool = False) -> None:
    """Print a markdown report: rendered by rich on a terminal, as it is for pipes or ``raw``.

    A pipe, a file or ``--format markdown`` gets the markdown itself (a job summary reads it);
    a person at a terminal gets the tables and headings drawn.
    """
    if raw or not sys.stdout.isatty():
        print(text, flush=True)
        return
    from rich.markdown import Markdown  # here: it loads a markdown parser (~30 ms a start)

    Console().print(Markdown(text))


@contextmanager
def stdout_aside() -> Iterator[None]:
    """While a run works, whatever prints on stdout goes to stderr instead.

    A python grader's ``print``, a hook's, or a child process that inherits the descriptor would
    otherwise land in the middle of the report the command prints on stdout afterwards
    (``--format json`` read by a program). The descriptor itself is moved, so what is printed
    below Python (a C extension, a subprocess) is moved too; worker processes do the same.
    """
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to protect
        yield
        return
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()  # what Python buffered during the run goes to stderr too
        os.dup2(saved, 1)
        os.close(saved)


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


def _lesson_lines(event: LessonsRecalled) -> list[str]:
    """``Lessons recalled:`` and a line ``#id kind text`` per lesson (the first ten)."""
    lines = ["Lessons recalled:"]
    for lesson in event.lessons[:LESSONS_SHOWN]:
        text = " ".join(lesson.text.split())
        if len(text) > LESSON_CHARS:
            text = text[: LESSON_CHARS - 1] + "…"
        lines.append(f"  #{lesson.id} {lesson.kind} {text}")
    more = len(event.lessons) - LESSONS_SHOWN
    if more > 0:
        lines.append(f"  … and {more} more (coalmine memory list)")
    return lines


def _eval_line(event: EvalProgress, elapsed: float) -> str:
    rate = event.done / elapsed if elapsed > 0 else 0.0
    left = (event.total - event.done) / rate if rate > 0 else 0.0
    where = f" · {event.suite}" if event.suite and event.done < event.total else ""
    latest = f"\n  latest failure: {_short(event.latest_failure)}" if event.latest_failure else ""
    return (
        f"[{event.done}/{event.total}] {event.passed} passed, {event.failed} failed, "
        f"{event.errored} errored · {rate:.1f}/s · {elapsed:.0f}s elapsed · ETA {left:.0f}s"
        f"{where}{latest}"
    )


def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PlainDisplay(Display):
    """One line per finished canary (for evals: one every 10%), for logs and CI."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self._eval_t0 = time.monotonic()
        self._eval_next = 0.0
        self._eval_printed_last = False

    async def on_lessons_recalled(self, event: LessonsRecalled) -> None:
        """List the lessons recalled for the run."""
        print("\n".join(_lesson_lines(event)), file=self.stream, flush=True)

    async def on_run_start(self, event: RunStart) -> None:
        """Say what will run."""
        judge = event.judge or "none"
        what = counted(event.total, "canary", "canaries")
        print(f"coalmine: running {what} (judge: {judge})", file=self.stream)

    async def on_case_end(self, event: CaseEnd) -> None:
        """Print the canary's verdict."""
        print(_line(event), file=self.stream, flush=True)

    async def on_eval_start(self, event: EvalStart) -> None:
        """Say what will run."""
        self._eval_t0 = time.monotonic()
        self._eval_next = 0.0
        self._eval_printed_last = False
        resumed = f", {event.resumed} done before" if event.resumed else ""
        where = f" on {event.workers}" if event.workers else ""
        print(
            f"coalmine: running {counted(event.total, 'case run', 'case runs')} of "
            f"{counted(len(event.suites), 'suite', 'suites')} "
            f"at concurrency {event.concurrency}{where}{resumed} "
            f"(judge: {event.judge or 'none'})",
            file=self.stream,
            flush=True,
        )

    async def on_eval_progress(self, event: EvalProgress) -> None:
        """A line every 10% (and at the end): counts, rate and ETA."""
        share = event.done / event.total if event.total else 1.0
        last = event.done >= event.total
        if (share < self._eval_next and not last) or (last and self._eval_printed_last):
            return
        self._eval_next = (int(share * 10) + 1) / 10
        self._eval_printed_last = last
        print(_eval_line(event, time.monotonic() - self._eval_t0), file=self.stream, flush=True)


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


class JsonlDisplay(Display):
    """One JSON object per event on stderr."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr

    def _emit(self, payload: dict[str, object]) -> None:
        print(json.dumps(payload, ensure_ascii=False), file=self.stream, flush=True)

    async def on_lessons_recalled(self, event: LessonsRecalled) -> None:
        """Emit ``lessons_recalled`` with every lesson (id, kind, text, score)."""
        lessons = [lesson.model_dump() for lesson in event.lessons]
        self._emit({"event": "lessons_recalled", "lessons": lessons})

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

    async def on_eval_start(self, event: EvalStart) -> None:
        """Emit ``eval_start``."""
        self._emit(
            {"event": "eval_start", "total": event.total, "resumed": event.resumed,
             "suites": list(event.suites), "bad_lines": event.bad_lines,
             "workers": event.workers}
        )  # fmt: skip

    async def on_eval_progress(self, event: EvalProgress) -> None:
        """Emit ``eval_progress`` with the counts."""
        self._emit(
            {"event": "eval_progress", "done": event.done, "total": event.total,
             "passed": event.passed, "failed": event.failed, "errored": event.errored,
             "suite": event.suite, "latest_failure": event.latest_failure}
        )  # fmt: skip

    async def on_eval_end(self, event: EvalEnd) -> None:
        """Emit ``eval_end`` with each suite's verdict and result file."""
        suites = [
            {"suite": r.suite_id, "verdict": r.verdict, "score": r.score, "path": str(p)}
            for r, p in zip(event.suites, event.paths, strict=True)
        ]
        self._emit(
            {"event": "eval_end", "run_id": event.run_id, "suites": suites,
             "interrupted": event.interrupted}
        )  # fmt: skip


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
