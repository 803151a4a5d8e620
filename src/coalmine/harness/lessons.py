"""The lesson of a gate run: a blocking gate that passed last time and fails now."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from pathlib import Path

from coalmine.store.gates import GateRun
from coalmine.store.memory import LessonKey, record_lesson
from coalmine.store.runs import Store

REGRESSION_EXITS = frozenset({1})
"""How a gate says its checks failed. Other exits are about the gate, not the code: 2 a bad
usage or config (a cassette without an answer, a key not set), 3 interrupted, 126 and 127 a
command that cannot start, above 128 killed by a signal; they make no lesson. A timeout does."""


def command_words(command: str) -> list[str]:
    """The words of a shell command line (none when it does not split: bash will say why)."""
    try:
        return shlex.split(command)
    except ValueError:
        return []


def retain_gate_regression(
    store: Store, now: GateRun, previous: GateRun | None, *, command: str, root: Path
) -> int | None:
    """A ``caught-regression`` lesson when a blocking gate passed last time and fails now.

    One lesson per gate and way of failing (``exits 1``, ``timed out``): a flaky gate keeps
    one, counted each time it is caught (see :func:`record_lesson`). Its paths are the
    command's words that are files of the repository (``gates/x.sh``); its evidence is the gate
    and the run's start. The gate's output is never kept: it may hold anything.
    """
    if not (now.blocks and now.status != "pass" and previous and previous.status == "pass"):
        return None
    if now.exit_code is not None and now.exit_code not in REGRESSION_EXITS:
        return None
    when = datetime.fromtimestamp(previous.started_ms / 1000, UTC).isoformat(timespec="seconds")
    how = "timed out" if now.exit_code is None else f"exits {now.exit_code}"
    return record_lesson(
        store,
        LessonKey("caught-regression", "gate", now.gate, how),
        f"Gate {now.gate} ({now.kit}) caught a regression: it passed at {when} and now"
        f" {how} ({command}).",
        run=f"gate:{now.gate}@{now.started_ms}",
        tags=[now.gate, now.kit, "gate"],
        paths=[w for w in command_words(command) if (root / w).is_file()],
        evidence=[f"gate:{now.gate}@{now.started_ms}"],
    )
