"""The eval progress displays: a rich bar, plain lines every 10%, JSON lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

import anyio
from rich.console import Console
from rich.progress import Progress

from coalmine.cli.display import JsonlDisplay, PlainDisplay
from coalmine.cli.live import RichDisplay, _EtaColumn, _RateColumn
from coalmine.engine.events import EvalEnd, EvalProgress, EvalStart
from coalmine.results import EvalGate, EvalSuiteResult, EvalTokens

START = EvalStart(total=10, resumed=0, suites=("smoke",), bad_lines=1, concurrency=4, judge=None)


def result() -> EvalSuiteResult:
    return EvalSuiteResult(
        suite_id="smoke", run_id="01RUN", started_at=0, ended_at=1, cases=10, passed=9,
        failed=1, score=0.9, blocking=True, judge_prompt_hash=None, provider="bot",
        report_path="r.json", errored=0, stderr=0.1, ci95=(0.6, 0.98), verdict="fail",
        gate=EvalGate(passed=False, rule="every case passes", blocking_failures=1), repeats=1,
        reducer="mean", graders={}, tokens=EvalTokens(), cost=None, latency_seconds=None,
        bad_lines=1,
    )  # fmt: skip


def progress(done: int) -> EvalProgress:
    return EvalProgress(done=done, total=10, passed=done, failed=0, errored=0)


def test_plain_prints_a_line_each_tenth_and_the_last_once() -> None:
    stream = io.StringIO()
    display = PlainDisplay(stream)

    async def main() -> None:
        await display.on_eval_start(START)
        for done in (1, 1, 2, 2, 5, 10, 10):
            await display.on_eval_progress(progress(done))

    anyio.run(main)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("coalmine: running 10 case runs of 1 suite at concurrency 4")
    # 1 (the first tenth), 2 (the second), 5, then 10 once; repeats of a tenth are not printed
    assert [line.split("]")[0] for line in lines[1:]] == ["[1/10", "[2/10", "[5/10", "[10/10"]


def test_rich_moves_the_bar_with_the_counts() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    display = RichDisplay(console)

    async def main() -> None:
        await display.on_eval_start(START)
        await display.on_eval_progress(EvalProgress(done=4, total=10, passed=3, failed=1,
                                                    errored=0))  # fmt: skip

    with display:
        anyio.run(main)
        task = display.progress.tasks[0]
        assert (task.total, task.completed) == (10, 4)
        assert task.description == "✓ 3 ✗ 1 ⚠ 0"


def test_jsonl_emits_one_object_per_event() -> None:
    stream = io.StringIO()
    display = JsonlDisplay(stream)

    async def main() -> None:
        await display.on_eval_start(START)
        await display.on_eval_progress(progress(10))
        await display.on_eval_end(EvalEnd("01RUN", (result(),), (Path("r.json"),), False))

    anyio.run(main)
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["eval_start", "eval_progress", "eval_end"]
    assert events[0]["bad_lines"] == 1 and events[1]["done"] == 10
    assert events[2]["suites"] == [
        {"suite": "smoke", "verdict": "fail", "score": 0.9, "path": "r.json"}
    ]


def test_rich_shows_the_suite_and_the_latest_failure() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    display = RichDisplay(console)
    event = EvalProgress(done=4, total=10, passed=3, failed=1, errored=0, suite="smoke",
                         latest_failure="smoke/capital-spain: equals failed")  # fmt: skip
    with display:
        anyio.run(display.on_eval_start, START)
        anyio.run(display.on_eval_progress, event)
        task = display.progress.tasks[0]
        assert task.description == "smoke ✓ 3 ✗ 1 ⚠ 0"
        assert task.fields["latest"] == "latest ✗ smoke/capital-spain: equals failed"


def test_rate_and_eta_come_from_the_whole_elapsed_time_so_they_move_while_stuck() -> None:
    clock = [0.0]
    progress = Progress(get_time=lambda: clock[0])
    task_id = progress.add_task("x", total=10)
    clock[0] = 2.0
    progress.update(task_id, completed=4)
    task = progress.tasks[0]
    assert str(_RateColumn().render(task)) == "2.0/s"  # 4 in 2 s
    assert str(_EtaColumn().render(task)) == "ETA 3s"  # 6 left at 2/s
    clock[0] = 8.0  # a slow case: nothing finished for 6 s
    assert str(_RateColumn().render(task)) == "0.5/s"  # 4 in 8 s
    assert str(_EtaColumn().render(task)) == "ETA 12s"  # 6 left at 0.5/s


def test_plain_lines_say_the_elapsed_time_the_suite_and_the_latest_failure() -> None:
    stream = io.StringIO()
    display = PlainDisplay(stream)
    event = EvalProgress(done=5, total=10, passed=4, failed=1, errored=0, suite="smoke",
                         latest_failure="smoke/c3: contains failed: missing 'yes'")  # fmt: skip

    async def main() -> None:
        await display.on_eval_start(START)
        await display.on_eval_progress(event)

    anyio.run(main)
    progress_line, latest = stream.getvalue().splitlines()[1:3]
    assert "s elapsed · ETA " in progress_line and progress_line.endswith(" · smoke")
    assert latest == "  latest failure: smoke/c3: contains failed: missing 'yes'"
