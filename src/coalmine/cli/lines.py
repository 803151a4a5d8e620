"""The displays that need no terminal: plain lines (logs, CI) and JSON lines, and their base.

:mod:`coalmine.cli.display` picks one; the rich bar (:mod:`coalmine.cli.live`) shares the
lines these helpers make.
"""

from __future__ import annotations

import json
import sys
import time
from types import TracebackType
from typing import TextIO

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

_MARK = {"PASS": "✅ PASS", "FAIL": "❌ FAIL", "ERROR": "⚠️ ERROR"}
LESSONS_SHOWN = 10
LESSON_CHARS = 200


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
