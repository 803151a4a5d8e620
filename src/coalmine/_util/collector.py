"""Pausing Python's cyclic garbage collector around work that makes no cycles worth collecting."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; it resumes after if it ran before.

    Reference counting still frees what the block drops; only cycles wait until the block ends.
    Nested pauses resume only at the outermost end.
    """
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()
