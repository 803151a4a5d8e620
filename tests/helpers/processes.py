"""Process checks for tests that kill agents."""

from __future__ import annotations

import os
import time
from pathlib import Path


def is_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (it does not exist, or it is a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    try:
        text = status.read_text()
    except OSError:
        return True
    state = next((line for line in text.splitlines() if line.startswith("State:")), "")
    return "Z" in state.split(":", 1)[1] if state else False


def wait_gone(pid: int, seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if is_gone(pid):
            return True
        time.sleep(0.02)
    return is_gone(pid)
