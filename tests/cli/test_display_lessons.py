"""The lessons recalled before a run, as each display shows them."""

from __future__ import annotations

import io
import json

import anyio
from rich.console import Console

from coalmine.cli.display import JsonlDisplay, PlainDisplay, make_display
from coalmine.cli.live import RichDisplay
from coalmine.engine.events import LessonsRecalled
from coalmine.results import RecalledLesson

LONG = "word " * 60
EVENT = LessonsRecalled(
    (
        RecalledLesson(id=7, kind="caught-regression", text="Suite 'triage' caught a regression",
                       score=2.5),
        RecalledLesson(id=3, kind="risk-note", text=LONG, score=1.0),
    )
)  # fmt: skip
MANY = LessonsRecalled(
    tuple(
        RecalledLesson(id=i, kind="observation", text=f"lesson {i}", score=1.0) for i in range(12)
    )
)


def test_plain_lists_id_kind_and_text_shortened() -> None:
    stream = io.StringIO()
    anyio.run(PlainDisplay(stream).on_lessons_recalled, EVENT)
    lines = stream.getvalue().splitlines()
    assert lines[:2] == [
        "Lessons recalled:",
        "  #7 caught-regression Suite 'triage' caught a regression",
    ]
    assert lines[2].startswith("  #3 risk-note word word") and lines[2].endswith("…")
    assert len(lines[2]) == len("  #3 risk-note ") + 200
    stream = io.StringIO()
    anyio.run(PlainDisplay(stream).on_lessons_recalled, MANY)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 12 and lines[-1] == "  … and 2 more (coalmine memory list)"


def test_rich_prints_the_block_above_the_bar() -> None:
    out = io.StringIO()
    display = RichDisplay(Console(file=out, force_terminal=False, width=200))
    with display:
        anyio.run(display.on_lessons_recalled, EVENT)
    assert "Lessons recalled:\n  #7 caught-regression Suite 'triage' caught a regression" in (
        out.getvalue()
    )


def test_jsonl_emits_one_event_and_none_nothing() -> None:
    stream = io.StringIO()
    anyio.run(JsonlDisplay(stream).on_lessons_recalled, EVENT)
    [event] = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert event["event"] == "lessons_recalled"
    assert event["lessons"][0] == {
        "id": 7,
        "kind": "caught-regression",
        "text": "Suite 'triage' caught a regression",
        "score": 2.5,
    }
    anyio.run(make_display("none").on_lessons_recalled, EVENT)  # a no-op, and it exists
