"""``coalmine gates run``: the gate commands of the adopted kits, blocking or advisory.

The commands come from ``harness/manifest.json`` (each adopted kit's ``commands``), so a clone
runs the same gates without the kits installed. Each runs as a shell line (``bash -c``) in the
repository root, one after another, in its own process group (killed whole on timeout), with
the running coalmine first on ``PATH`` so a gate script's ``coalmine`` is this one. A gate
passes when it exits 0. A failing blocking gate fails the whole run; an advisory one is
reported and does not. The manifest's setting decides: while a blocking gate runs,
``COALMINE_BLOCKING_GATE`` names it, and the eval and canary runs it starts block on every
suite and spec, ``blocking: false`` or not (and say so).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from coalmine.engine.policy import BLOCKING_GATE_ENV
from coalmine.errors import UsageError
from coalmine.harness.kits import load_manifest
from coalmine.harness.lessons import command_words, retain_gate_regression
from coalmine.store.gates import GateRun, last_gate_run, record_gate_run
from coalmine.store.runs import Store

__all__ = ["GateOutcome", "GateToRun", "gates_exit_code", "plan_gates", "run_gates"]

OUTPUT_TAIL = 1_000_000
"""Characters of a gate's output kept (the end): all of it but for a runaway gate."""


@dataclass(frozen=True)
class GateToRun:
    """A gate command of an adopted kit."""

    kit: str
    id: str
    command: str
    blocks: bool
    timeout_seconds: float
    owned: tuple[str, ...] = ()
    """The files of the harness (owned by a kit) its command names, such as its script."""


@dataclass(frozen=True)
class GateOutcome:
    """How one gate ended."""

    gate: GateToRun
    status: Literal["pass", "fail", "timeout"]
    exit_code: int | None
    seconds: float
    output: str
    """The end of its combined stdout and stderr."""
    missing: tuple[str, ...] = ()
    """Owned files its command names that were missing when it ran (a kit update restores)."""


def plan_gates(root: Path, *, ids: Iterable[str] = (), kits: Iterable[str] = ()) -> list[GateToRun]:
    """The gates to run: every adopted kit's, or those with the given ids or of the given kits.

    Raises:
        UsageError: no manifest, or an id or kit that the manifest does not have.
    """
    manifest = load_manifest(root)
    if manifest is None:
        raise UsageError("no harness/manifest.json here: run `coalmine init` first")
    owned = manifest.owned_paths()
    gates = [
        GateToRun(
            kit.id,
            c.id,
            c.command,
            c.blocks,
            c.timeout_seconds,
            tuple(w for w in command_words(c.command) if w in owned),
        )  # fmt: skip
        for kit in manifest.kits
        for c in kit.commands
    ]
    wanted_ids, wanted_kits = set(ids), set(kits)
    unknown = sorted(wanted_ids - {g.id for g in gates}) + sorted(
        wanted_kits - {k.id for k in manifest.kits}
    )
    if unknown:
        known = ", ".join(g.id for g in gates) or "none"
        raise UsageError(f"unknown gate or kit: {', '.join(unknown)}; gates: {known}")
    return [
        g
        for g in gates
        if (not wanted_ids or g.id in wanted_ids) and (not wanted_kits or g.kit in wanted_kits)
    ]


def run_gates(
    root: Path,
    gates: Iterable[GateToRun],
    *,
    store: Store | None = None,
    on_start: Callable[[GateToRun], None] = lambda gate: None,
    on_end: Callable[[GateOutcome], None] = lambda outcome: None,
) -> list[GateOutcome]:
    """Run ``gates`` in order in ``root``; ``on_start``/``on_end`` report progress.

    With a ``store``, each run is recorded (how it ended, never its output), and a blocking
    gate that passed on its previous run and fails now is retained as a ``caught-regression``
    lesson.
    """
    base = dict(os.environ)
    base["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")])
    base.pop(BLOCKING_GATE_ENV, None)
    outcomes = []
    for gate in gates:
        on_start(gate)
        previous = last_gate_run(store, gate.id) if store is not None else None
        started_ms = int(time.time() * 1000)
        env = {**base, BLOCKING_GATE_ENV: gate.id} if gate.blocks else base
        outcome = _run(root, gate, env)
        if store is not None:
            _record(store, root, outcome, started_ms, previous)
        on_end(outcome)
        outcomes.append(outcome)
    return outcomes


def _record(
    store: Store, root: Path, outcome: GateOutcome, started_ms: int, previous: GateRun | None
) -> None:
    gate = outcome.gate
    now = GateRun(
        gate.id, gate.kit, gate.blocks, started_ms, outcome.seconds, outcome.status,
        outcome.exit_code,
    )  # fmt: skip
    record_gate_run(store, now)
    retain_gate_regression(store, now, previous, command=gate.command, root=root)


def _run(root: Path, gate: GateToRun, env: dict[str, str]) -> GateOutcome:
    started = time.monotonic()
    process = subprocess.Popen(
        ["bash", "-c", gate.command],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = process.communicate(timeout=gate.timeout_seconds)
        status: Literal["pass", "fail", "timeout"] = "pass" if process.returncode == 0 else "fail"
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        status, code = "timeout", None
    text = out.decode("utf-8", errors="replace")
    missing = tuple(p for p in gate.owned if not (root / p).is_file())
    seconds = time.monotonic() - started
    return GateOutcome(gate, status, code, seconds, text[-OUTPUT_TAIL:], missing)


def gates_exit_code(outcomes: Iterable[GateOutcome]) -> int:
    """1 when a blocking gate did not pass, else 0."""
    return int(any(o.gate.blocks and o.status != "pass" for o in outcomes))
