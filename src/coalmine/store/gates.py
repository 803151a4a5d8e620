"""Gate runs: how each ``coalmine gates run`` command ended (never what it printed)."""

from __future__ import annotations

from dataclasses import dataclass

from coalmine.store.db import transaction
from coalmine.store.runs import Store

__all__ = ["GateRun", "last_gate_run", "record_gate_run"]


@dataclass(frozen=True)
class GateRun:
    """One stored run of a gate."""

    gate: str
    kit: str
    blocks: bool
    started_ms: int
    seconds: float
    status: str
    exit_code: int | None


def record_gate_run(store: Store, run: GateRun) -> None:
    """Store how one gate run ended."""
    with transaction(store.conn) as c:
        c.execute(
            "INSERT INTO gate_runs (gate, kit, blocks, started_ms, seconds, status, exit_code)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                run.gate,
                run.kit,
                int(run.blocks),
                run.started_ms,
                run.seconds,
                run.status,
                run.exit_code,
            ),
        )


def last_gate_run(store: Store, gate: str) -> GateRun | None:
    """The newest stored run of ``gate``, or ``None``."""
    row = store.conn.execute(
        "SELECT gate, kit, blocks, started_ms, seconds, status, exit_code FROM gate_runs"
        " WHERE gate = ? ORDER BY started_ms DESC, id DESC LIMIT 1",
        (gate,),
    ).fetchone()
    return None if row is None else GateRun(row[0], row[1], bool(row[2]), *row[3:])
