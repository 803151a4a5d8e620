"""Where a config's code failed: the file and line of its own frame, read from the trace.

promptfoo shows the whole stack of a failing JavaScript or Python call; coalmine's row error
keeps the message and adds the one frame a config author needs, the deepest (Python) or first
(JavaScript) frame in a file of theirs, not in coalmine's wrapper, Node.js, the standard
library or an installed package, written relative to the working folder when it is inside it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["js_frame", "python_frame"]

_JS_FRAME = re.compile(
    r"^\s*at (?:.*? \()?(?:file://)?(?P<path>/[^():]+|[A-Za-z]:[^():]+)"
    r":(?P<line>\d+):(?P<col>\d+)\)?\s*$"
)
_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
_FOREIGN = ("/node_modules/", "/site-packages/", "/dist-packages/", "/lib/python",
            "/coalmine-python-code-")  # fmt: skip
"""Frames in these are not the author's (the last: where inline Python code is written)."""


def js_frame(stack: str, *, skip: Path) -> str | None:
    """``file:line:column`` of the first frame of ``stack`` outside ``skip`` (the worker's)."""
    for line in stack.splitlines():
        found = _JS_FRAME.match(line)
        if found and _theirs(found["path"], skip):
            return f"{_shown(found['path'])}:{found['line']}:{found['col']}"
    return None


def python_frame(traceback: str) -> str | None:
    """``file:line`` of the deepest frame of a traceback in a file of the config's author."""
    where = None
    for line in traceback.splitlines():
        found = _PY_FRAME.match(line)
        if found and not found["path"].startswith("<") and _theirs(found["path"], None):
            where = f"{_shown(found['path'])}:{found['line']}"
    return where


def _theirs(path: str, skip: Path | None) -> bool:
    if any(part in path.replace("\\", "/") for part in _FOREIGN):
        return False
    return skip is None or not Path(path).resolve().is_relative_to(skip.resolve())


def _shown(path: str) -> str:
    resolved, here = Path(path).resolve(), Path.cwd().resolve()
    return os.path.relpath(resolved, here) if resolved.is_relative_to(here) else str(resolved)
