"""The one coalmine run behind a pytest session's items, shared by every process of it.

pytest (and pytest-xdist's workers, each of which collects every item and runs some) asks
for one item's result at a time; coalmine runs cases many at a time, and a session should be
one stored run that ``compare`` and ``--resume`` know. So the first process that needs a
result takes a lock, runs every selected item of the session (the canaries in one canary run,
the eval cases in one eval run) and writes each item's result to a file the others read;
every other process waits for that file. A process that took the lock and died is noticed
(its pid is gone) and its waiters fail with that, not forever.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from coalmine._util.files import write_file
from coalmine.canary.plan import plan_canaries, require_judge
from coalmine.canary.run import run_canaries
from coalmine.engine.history import load_run, require_project_config
from coalmine.errors import CoalmineError
from coalmine.evals.plan import Selection, plan_evals, require_eval_judge
from coalmine.evals.run import run_evals
from coalmine.reports.explain import explain_case
from coalmine.results import CaseResult
from coalmine.store.runs import Store

WAIT_POLL = 0.2
"""Seconds between a waiting process's looks at the results file."""
ERROR = "__error__"
"""The results file's key for a run that could not be made (no case id has underscores first)."""


@dataclass(frozen=True)
class Wanted:
    """An item's case: a canary (``suite`` None) or an eval suite's case."""

    case: str
    suite: str | None = None

    @property
    def key(self) -> str:
        """How its result is filed: the canary id, or ``suite/case``."""
        return self.case if self.suite is None else f"{self.suite}/{self.case}"


def item_result(result: CaseResult, run_id: str | None, *, blocks: bool = True) -> dict[str, Any]:
    """What a pytest item reports of its case's result (``blocks``: its suite may fail a run)."""
    return {
        "verdict": result.verdict,
        "advisory": bool(result.advisory) or not blocks,
        "explain": explain_case(result),
        "run_id": run_id,
    }


def run_wanted(
    root: Path, wanted: Iterable[Wanted], *, no_judge: bool, command_line: list[str]
) -> dict[str, dict[str, Any]]:
    """Run ``wanted`` (canaries in one run, eval cases in another); each key's result.

    Raises:
        CoalmineError: the project does not load, a judge is needed and none is configured …
    """
    wanted = list(wanted)
    config = require_project_config(root)
    found: dict[str, dict[str, Any]] = {}
    store = Store.open(config.store_path)
    try:
        canaries = {w.case for w in wanted if w.suite is None}
        if canaries:
            plan = plan_canaries(root, config=config)
            plan = dataclasses.replace(
                plan,
                canaries=[c for c in plan.canaries if c.loaded.id in canaries],
                invalid=[],
                selectors=tuple(sorted(canaries)),
            )
            require_judge(plan, disabled=no_judge)
            outcome = anyio.run(
                lambda: run_canaries(
                    plan, store=store, no_judge=no_judge, command_line=command_line
                )  # fmt: skip
            )
            for result in outcome.run.results:
                found[result.id] = item_result(result, outcome.run.store_run_id)
        cases = {w.key for w in wanted if w.suite is not None}
        if cases:
            suites = sorted({w.suite for w in wanted if w.suite is not None})
            ids = sorted({w.case for w in wanted if w.suite is not None})
            evals = plan_evals(root, suites, selection=Selection(tuple(ids)), config=config)
            require_eval_judge(evals, disabled=no_judge)
            ran = anyio.run(
                lambda: run_evals(
                    evals, store=store, no_judge=no_judge, command_line=command_line
                )  # fmt: skip
            )
            record = load_run(store, ran.run_id)
            blocking = {s.name: s.index.meta.blocking for s in evals.suites}
            for result in record.results:
                if result.id in cases:
                    blocks = blocking.get(result.id.partition("/")[0], True)
                    found[result.id] = item_result(result, ran.run_id, blocks=blocks)
    finally:
        store.close()
    return found


class SharedRun:
    """The session's run, made once by whichever process asks first; read by all."""

    def __init__(self, folder: Path, root: Path, *, no_judge: bool):
        self.folder = folder
        self.root = root
        self.no_judge = no_judge
        self._results: dict[str, dict[str, Any]] | None = None

    @property
    def _done(self) -> Path:
        return self.folder / "results.json"

    @property
    def _lock(self) -> Path:
        return self.folder / "lock"

    def result(self, wanted: Wanted, every: Iterable[Wanted]) -> dict[str, Any] | None:
        """``wanted``'s result; the first call of the session runs ``every`` item's case.

        A run that could not be made is ``{"error": why}`` for every item; a case the run did
        not report (it was interrupted first) is None.
        """
        if self._results is None:
            self._results = self._obtain(every)
        error = self._results.get(ERROR)
        if error is not None:
            return {"error": error["message"]}
        return self._results.get(wanted.key)

    def _obtain(self, every: Iterable[Wanted]) -> dict[str, dict[str, Any]]:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self._lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return self._wait()
        with os.fdopen(fd, "w") as lock:
            lock.write(str(os.getpid()))
        try:
            found: dict[str, Any] = run_wanted(
                self.root, every, no_judge=self.no_judge,
                command_line=["pytest", "--coalmine", *sys.argv[1:]],
            )  # fmt: skip
        except CoalmineError as exc:
            hint = getattr(exc, "hint", None)
            found = {ERROR: {"message": str(exc) + (f" ({hint})" if hint else "")}}
        write_file(self._done, json.dumps(found))
        return found

    def _wait(self) -> dict[str, dict[str, Any]]:
        while not self._done.exists():
            owner = _pid(self._lock)
            if owner is not None and not _alive(owner):
                message = f"the process that ran the session's cases (pid {owner}) died"
                return {ERROR: {"message": message}}
            time.sleep(WAIT_POLL)
        found: dict[str, dict[str, Any]] = json.loads(self._done.read_text(encoding="utf-8"))
        return found


def _pid(lock: Path) -> int | None:
    try:
        text = lock.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _alive(pid: int) -> bool:
    if sys.platform == "win32":  # os.kill(pid, 0) would end it there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
