"""The lesson of a gate run: a blocking gate that passed last time and fails now."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from pathlib import Path

from coalmine.store.gates import GateRun
from coalmine.store.memory import ensure_lesson
from coalmine.store.runs import Store


def retain_gate_regression(
    store: Store, now: GateRun, previous: GateRun | None, *, command: str, root: Path
) -> int | None:
    """A ``caught-regression`` lesson when a blocking gate passed last time and fails now.

    Its paths are the command's words that are files of the repository (``gates/x.sh``); its
    evidence is the gate and the run's start, so the same run is never kept twice. The gate's
    output is never kept: it may hold anything.
    """
    if not (now.blocks and now.status != "pass" and previous and previous.status == "pass"):
        return None
    when = datetime.fromtimestamp(previous.started_ms / 1000, UTC).isoformat(timespec="seconds")
    how = "timed out" if now.exit_code is None else f"exits {now.exit_code}"
    return ensure_lesson(
        store,
        "caught-regression",
        f"Gate {now.gate} ({now.kit}) caught a regression: it passed at {when} and now"
        f" {how} ({command}).",
        tags=[now.gate, now.kit, "gate"],
        paths=[w for w in shlex.split(command) if (root / w).is_file()],
        evidence=[f"gate:{now.gate}@{now.started_ms}"],
    )
