"""Displays: run events as progress on stderr (rich, plain lines, or JSON lines).

The final report goes to stdout separately, from the CLI. The rich bar is in
:mod:`coalmine.cli.live`, imported only for a terminal: rich's console, progress and table
modules cost a run 60 ms of start-up that CI (plain lines) and ``--display none`` do without.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from coalmine.cli.lines import Display, JsonlDisplay, PlainDisplay

__all__ = [
    "Display",
    "DisplayType",
    "JsonlDisplay",
    "PlainDisplay",
    "echo_markdown",
    "make_display",
    "stdout_aside",
]

DisplayType = Literal["auto", "rich", "plain", "jsonl", "none"]


def echo_markdown(text: str, *, raw: bool = False) -> None:
    """Print a markdown report: rendered by rich on a terminal, as it is for pipes or ``raw``.

    A pipe, a file or ``--format markdown`` gets the markdown itself (a job summary reads it);
    a person at a terminal gets the tables and headings drawn.
    """
    if raw or not sys.stdout.isatty():
        print(text, flush=True)
        return
    from rich.console import Console
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


def make_display(kind: DisplayType) -> Display:
    """Return the display for ``kind``; ``auto`` is rich on a terminal, plain otherwise."""
    if kind == "auto":
        kind = "rich" if sys.stderr.isatty() else "plain"
    if kind == "rich":
        from coalmine.cli.live import RichDisplay

        return RichDisplay()
    if kind == "plain":
        return PlainDisplay()
    if kind == "jsonl":
        return JsonlDisplay()
    return Display()
