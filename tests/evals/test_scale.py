"""A 100,000-case suite, interrupted half way, resumes and completes without re-calling a case.

The acceptance test of the engine's bookkeeping at scale: a real suite file, a real python
agent that counts its calls per case, the real SQLite store. The stop comes from a progress
hook once half the cases are done, as Ctrl-C would (the CLI sets the same event).
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import anyio
import pytest
import yaml

from coalmine.engine.events import EvalProgress, Hooks
from coalmine.evals.plan import plan_evals
from coalmine.evals.run import run_evals
from coalmine.store.runs import Store

N = 100_000

AGENT = """\
CALLS = {}


async def answer(prompt, context):
    CALLS[context.case_id] = CALLS.get(context.case_id, 0) + 1
    return prompt.rsplit(" ", 1)[-1]
"""


class StopAtHalf(Hooks):
    def __init__(self, stop: anyio.Event):
        self.stop = stop
        self.seen = 0

    async def on_eval_progress(self, event: EvalProgress) -> None:
        self.seen = event.done
        if event.done >= N // 2:
            self.stop.set()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_100k_suite_interrupted_half_way_resumes_without_calling_a_case_twice(
    tmp_path: Path,
) -> None:
    module = f"scale_agent_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(AGENT, encoding="utf-8")
    config = {"agents": {"fast": {"provider": "python", "target": f"{module}:answer"}}}
    (tmp_path / "coalmine.yaml").write_text(yaml.safe_dump({**config, "judge": "none"}))
    suites = tmp_path / "harness" / "evals"
    suites.mkdir(parents=True)
    (suites / "big.yaml").write_text("graders: [{type: equals}]\n", encoding="utf-8")
    with (suites / "big.jsonl").open("w", encoding="utf-8") as f:
        for i in range(N):
            f.write(json.dumps({"id": f"c{i:06d}", "prompt": f"say w{i}", "expected": f"w{i}"}))
            f.write("\n")
    store = Store.open(tmp_path / ".coalmine" / "coalmine.db")
    try:
        stop = anyio.Event()
        hook = StopAtHalf(stop)
        first = anyio.run(
            lambda: run_evals(plan_evals(tmp_path), store=store, hooks=[hook], stop=stop)
        )
        assert first.interrupted and first.exit_code == 3
        stored = store.conn.execute("SELECT COUNT(*) FROM eval_attempts").fetchone()[0]
        # stopped at half way (a progress event comes every 0.1 s, so a little after it)
        assert N // 2 <= stored < N
        calls: dict[str, int] = sys.modules[module].CALLS
        assert len(calls) == stored  # the cases in flight at the stop finished and were stored

        second = anyio.run(
            lambda: run_evals(plan_evals(tmp_path), store=store, resume=first.run_id)
        )
    finally:
        store.close()
    assert (second.run_id, second.interrupted, second.exit_code) == (first.run_id, False, 0)
    [result] = second.suites
    assert (result.cases, result.passed, result.failed, result.errored) == (N, N, 0, 0)
    assert len(calls) == N
    assert [case for case, count in calls.items() if count > 1] == []
