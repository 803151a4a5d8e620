"""``eval run --workers N``: cases spread over the driver's engine and worker processes.

Two levels, both with real processes:

- a worker process on its own (:mod:`coalmine.backends.processes`, started as a fresh
  interpreter as it is off Linux or once the run's loop is up), serving a small engine factory
  of this module (``tests.backends.test_workers:toy_engine``) through the real frames;
- the real CLI in a subprocess, with whatever workers it starts (forked or fresh), against
  real projects: a python agent that logs which process called it, or the ``openai`` agent
  against the loopback server. A grader tells a worker from the driver by its parent's pid.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from coalmine.backends.dispatch import ShardLost
from coalmine.backends.engine import EngineSpec
from coalmine.backends.processes import ProcessShard, open_process_shards
from coalmine.backends.shards import Backend, run_sharded
from coalmine.errors import ConfigError, WorkerError
from coalmine.evals.plan import Selection, plan_evals
from coalmine.evals.shard import choose_workers
from tests.helpers.json_service import JsonService
from tests.helpers.json_service import Received as ServiceRequest
from tests.helpers.json_service import Reply as ServiceReply
from tests.helpers.openai_server import FakeOpenAI, Received, Reply
from tests.helpers.processes import children_running, wait_gone
from tests.helpers.project import Project

REPO = Path(__file__).resolve().parents[2]
TOY = "tests.backends.test_workers:toy_engine"
"""The factory a worker opens: importable from the repository's root, where workers start."""
TOKEN = "tok-planted-4c9e7d21"


# -- a worker process on its own -----------------------------------------------------------------


@asynccontextmanager
async def toy_engine(
    spec: dict[str, Any], index: int, count: int
) -> AsyncIterator[Callable[[int], Awaitable[Any]]]:
    """A small engine: an item ``n`` answers ``{"twice": 2n, "pid", "index", "count"}``.

    ``spec`` says how it misbehaves: ``refuse`` (an exception it raises instead of opening),
    ``raise_on`` (with ``raise_what``, else a ValueError), ``die_on`` (it writes to stderr
    and exits 3), ``unpicklable_on``; ``delay`` is each item's sleep; ``meet`` (a path): the
    engine of index 0 answers only once another has touched that file (so both surely run
    items, however slowly a worker starts). Every item also prints to stdout, where the frames
    must not be.
    """
    if "refuse" in spec:
        raise spec["refuse"]

    async def handle(item: int) -> Any:
        print(f"item {item} on stdout", flush=True)
        if "meet" in spec:
            met = Path(spec["meet"])
            if index != 0:
                met.touch()
            with anyio.fail_after(120):  # a worker that never starts fails the test, not hangs it
                while not met.exists():
                    await anyio.sleep(0.01)
        await anyio.sleep(spec.get("delay", 0.0))
        if item == spec.get("raise_on"):
            raise spec.get("raise_what") or ValueError(f"cannot take {item} with {TOKEN}")
        if item == spec.get("die_on"):
            print(f"dying with {TOKEN}", file=sys.stderr, flush=True)
            os._exit(3)
        if item == spec.get("unpicklable_on"):
            return lambda: item  # no pickle crosses the pipe with this
        return {"twice": item * 2, "pid": os.getpid(), "index": index, "count": count}

    yield handle


def scrub(text: str) -> str:
    return text.replace(TOKEN, "***")


@pytest.fixture
def at_repo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Work from the repository's root, where a worker imports ``tests.backends``."""
    monkeypatch.chdir(REPO)
    yield


def worker(spec: dict[str, Any], *, index: int = 1, count: int = 2) -> EngineSpec:
    return EngineSpec(TOY, spec, index, count, capacity=4)


async def one_worker(spec: dict[str, Any], body: Callable[[ProcessShard], Awaitable[Any]]) -> Any:
    async with open_process_shards([worker(spec)], scrub=scrub) as [shard]:
        return await body(shard)


@pytest.mark.usefixtures("at_repo")
def test_a_worker_runs_batches_in_order_and_what_it_prints_misses_the_frames() -> None:
    async def body(shard: ProcessShard) -> tuple[list[Any], list[Any]]:
        await shard.started()
        assert (shard.name, shard.capacity) == ("worker 2", 4)
        async with anyio.create_task_group() as tg:  # two batches in hand at once
            found: dict[str, list[Any]] = {}

            async def run(name: str, batch: list[int]) -> None:
                found[name] = await shard.run(batch)

            tg.start_soon(run, "first", [3, 1, 2])
            tg.start_soon(run, "second", list(range(10, 30)))
        return found["first"], found["second"]

    first, second = anyio.run(one_worker, {"delay": 0.01}, body)
    assert [r["twice"] for r in first] == [6, 2, 4]
    assert [r["twice"] for r in second] == [n * 2 for n in range(10, 30)]
    pids = {r["pid"] for r in first + second}
    assert len(pids) == 1 and os.getpid() not in pids  # another process ran them
    assert {(r["index"], r["count"]) for r in first} == {(1, 2)}  # it opened the spec it got


async def start_error(shard: ProcessShard) -> BaseException | None:
    try:
        await shard.started()
    except Exception as exc:  # noqa: BLE001 - what it raised is the result
        return exc
    return None


@pytest.mark.usefixtures("at_repo")
def test_a_worker_whose_engine_cannot_open_says_why_scrubbed() -> None:
    error = anyio.run(one_worker, {"refuse": RuntimeError(f"no engine ({TOKEN})")}, start_error)
    assert isinstance(error, WorkerError)
    assert str(error) == "worker 2 could not start: no engine (***)"


@pytest.mark.usefixtures("at_repo")
def test_a_coalmine_error_that_stops_a_worker_opening_crosses_as_itself() -> None:
    refused = ConfigError("the config here has no agent 'Bot'")
    error = anyio.run(one_worker, {"refuse": refused}, start_error)
    assert isinstance(error, ConfigError)  # told as the driver tells its own (exit 2)
    assert str(error) == "the config here has no agent 'Bot'"


async def batch_error(shard: ProcessShard) -> tuple[BaseException | None, list[Any]]:
    """What running ``[1, 5, 2]`` raised, and the answer to ``[7]`` after it."""
    error = None
    try:
        await shard.run([1, 5, 2])
    except Exception as exc:  # noqa: BLE001 - what it raised is the result
        error = exc
    return error, await shard.run([7])


@pytest.mark.usefixtures("at_repo")
def test_an_error_in_a_batch_fails_that_batch_alone() -> None:
    error, after = anyio.run(one_worker, {"raise_on": 5}, batch_error)
    assert isinstance(error, WorkerError) and str(error).startswith("worker 2: ")
    assert TOKEN not in str(error)
    assert [r["twice"] for r in after] == [14]  # the worker lives on


@pytest.mark.usefixtures("at_repo")
def test_an_error_in_a_batch_is_told_by_its_own_message() -> None:
    error, _ = anyio.run(one_worker, {"raise_on": 5}, batch_error)
    assert str(error) == "worker 2: cannot take 5 with ***"
    refused = ConfigError("qa.jsonl:2: damaged cassette entry")
    error, _ = anyio.run(one_worker, {"raise_on": 5, "raise_what": refused}, batch_error)
    assert isinstance(error, ConfigError)
    assert str(error) == "qa.jsonl:2: damaged cassette entry"


@pytest.mark.usefixtures("at_repo")
@pytest.mark.timeout(30)
def test_a_worker_killed_mid_batch_loses_every_batch_it_holds() -> None:
    async def body(shard: ProcessShard) -> list[str]:
        await shard.started()
        why: list[str] = []

        async def run(batch: list[int]) -> None:
            try:
                await shard.run(batch)
            except ShardLost as exc:
                why.append(str(exc))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, [1, 2])
            tg.start_soon(run, [3])
            await anyio.sleep(0.2)  # both batches are in the worker, sleeping
            os.kill(shard.process.pid, signal.SIGKILL)
        with pytest.raises(ShardLost):
            await shard.run([4])  # a dead worker takes nothing more
        with pytest.raises(ShardLost):
            await shard.started()
        return why

    why = anyio.run(one_worker, {"delay": 30.0}, body)
    assert len(why) == 2
    # what it printed (its stdout goes to its stderr) says the rest
    assert all(w.startswith("the worker process ended (exit -9): item ") for w in why), why


@pytest.mark.usefixtures("at_repo")
def test_a_worker_that_dies_is_told_by_its_stderr_scrubbed() -> None:
    async def body(shard: ProcessShard) -> str:
        with pytest.raises(ShardLost) as caught:
            await shard.run([1, 2])
        return str(caught.value)

    why = anyio.run(one_worker, {"die_on": 2}, body)
    assert why.startswith("the worker process ended (exit 3): ")
    assert "dying with ***" in why and TOKEN not in why


@pytest.mark.usefixtures("at_repo")
@pytest.mark.timeout(30)
def test_an_answer_that_cannot_cross_the_pipe_fails_its_batch() -> None:
    async def body(shard: ProcessShard) -> str:
        try:
            await shard.run([1, 2])
        except (WorkerError, ShardLost) as exc:
            return str(exc)
        return "no error"

    why = anyio.run(one_worker, {"unpicklable_on": 2}, body)
    assert "pickle" in why


@pytest.mark.usefixtures("at_repo")
def test_run_sharded_spreads_items_over_the_driver_and_a_worker(tmp_path: Path) -> None:
    got: dict[int, Any] = {}

    async def on_result(item: int, result: Any) -> None:
        assert item not in got
        got[item] = result

    async def scenario() -> bool:
        spec = {"delay": 0.01, "meet": str(tmp_path / "met")}
        engines = [EngineSpec(TOY, spec, i, 2, capacity=4) for i in range(2)]
        return await run_sharded(
            Backend(), engines, range(300), on_result, stop=anyio.Event(), cancel=None,
            scrub=scrub,
        )  # fmt: skip

    assert anyio.run(scenario) is False
    assert sorted(got) == list(range(300))
    assert all(r["twice"] == n * 2 for n, r in got.items())
    by_index = Counter(r["index"] for r in got.values())
    assert set(by_index) == {0, 1}  # the driver's engine (0) and the worker's (1) both ran
    assert {r["pid"] for r in got.values() if r["index"] == 0} == {os.getpid()}


@pytest.mark.usefixtures("at_repo")
def test_a_cancel_ends_the_workers_at_once() -> None:
    pids: list[int] = []
    got: list[int] = []

    async def on_result(item: int, result: Any) -> None:
        got.append(item)

    async def scenario() -> bool:
        cancel = anyio.Event()
        engines = [EngineSpec(TOY, {"delay": 30.0}, i, 2, capacity=2) for i in range(2)]

        async def press() -> None:
            with anyio.fail_after(15):
                while not pids:
                    await anyio.sleep(0.05)
                    pids.extend(children_running(os.getpid(), "coalmine.backends.worker"))
            await anyio.sleep(0.3)  # its items are in hand
            cancel.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(press)
            cancelled = await run_sharded(
                Backend(), engines, range(10), on_result, stop=anyio.Event(), cancel=cancel,
                scrub=scrub,
            )  # fmt: skip
        return cancelled

    started = time.monotonic()
    assert anyio.run(scenario) is True
    assert time.monotonic() - started < 10  # not the items' 30 s
    assert got == []  # every item sleeps 30 s: none came back
    assert len(pids) == 1  # the one worker
    assert wait_gone(pids[0])


@pytest.mark.usefixtures("at_repo")
def test_a_closed_worker_leaves_no_pipe_open() -> None:
    async def body(shard: ProcessShard) -> ProcessShard:
        await shard.run([1])
        return shard

    shard = anyio.run(one_worker, {}, body)
    process = shard.process
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    deadline = time.monotonic() + 1
    while not process.stderr.closed and time.monotonic() < deadline:
        time.sleep(0.02)  # the worker has ended; its stderr reaches its end
    closed = (process.stdin.closed, process.stdout.closed, process.stderr.closed)
    assert closed == (True, True, True)


# -- how many engines a run gets -----------------------------------------------------------------


def small_project(root: Path, cases: int, **bot: Any) -> Path:
    """A project whose agent ``Bot`` (openai, never called here) has ``bot``'s limits."""
    agent = {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", **bot}
    (root / "harness" / "evals").mkdir(parents=True)
    data = {"agents": {"Bot": agent}, "judge": "none"}
    (root / "coalmine.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    lines = [json.dumps({"id": f"c{i:04d}", "prompt": "hi", "graders": [CONTAINS_OK]})
             for i in range(cases)]  # fmt: skip
    (root / "harness" / "evals" / "many.jsonl").write_text("\n".join(lines) + "\n")
    (root / "harness" / "evals" / "many.yaml").write_text("agent: Bot\n")
    return root


def test_choose_workers_shards_a_big_run_per_core_and_says_when_it_gives_fewer(
    tmp_path: Path,
) -> None:
    root = small_project(tmp_path / "proj", 2000)
    plan = plan_evals(root)
    assert plan.attempts == 2000

    def choose(
        requested: int | None, concurrency: int, one_process: str | None = None, **more: Any
    ) -> tuple[int, str | None]:
        chosen = more.pop("plan", plan)
        return choose_workers(chosen, requested, concurrency=concurrency,
                              one_process=one_process, cores=4)  # fmt: skip

    # unasked: one a core from 2000 case runs at concurrency 64, else one
    assert choose(None, 64) == (4, None)
    assert choose(None, 63) == (1, None)
    assert choose(None, 64, plan=plan_evals(root, selection=Selection(limit=1999))) == (1, None)
    assert choose(None, 64, "--cache runs in one process") == (1, None)  # silently
    # asked: as many as asked, but never more than --concurrency, and a note says so
    assert choose(3, 16) == (3, None)
    assert choose(1, 64) == (1, None)
    assert choose(2, 16, "--cache runs in one process") == (
        1, "--workers 2: --cache runs in one process",
    )  # fmt: skip
    count, note = choose(5, 3)
    assert count == 3 and note is not None and note.startswith("--workers 5: 3 worker(s)")


def test_choose_workers_never_gives_more_than_the_smallest_max_concurrency(
    tmp_path: Path,
) -> None:
    plan = plan_evals(small_project(tmp_path / "proj", 10, max_concurrency=2))
    count, note = choose_workers(plan, 4, concurrency=16, one_process=None, cores=8)
    assert count == 2
    assert note == (
        "--workers 4: 2 worker(s), as many as the smallest max_concurrency and --concurrency "
        "allow (each worker holds a part of every limit)"
    )


# -- the CLI end to end --------------------------------------------------------------------------

CONTAINS_OK = {"type": "contains", "config": {"value": "ok"}}

AGENT = """\
import os
import pathlib

import anyio

LOG = pathlib.Path(__file__).with_name("calls.log")


async def run(prompt, context):
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {context.case_id}\\n")
    verb, _, rest = prompt.partition(":")
    await anyio.sleep(float(os.environ.get("WK_AGENT_SLEEP", "0.02")))
    if verb == "raise":
        raise RuntimeError(f"agent gave up on {context.case_id}")
    return rest
"""

CHECKS = """\
import os
import pathlib
import sys

GRADED = []
LOG = pathlib.Path(__file__).with_name("graded.log")


def share(output, context):
    wanted = context["args"]["words"]
    found = [w for w in wanted if w in output.split()]
    return {"score": len(found) / len(wanted), "reason": f"found {len(found)} of {len(wanted)}"}


def noisy(output, context):
    print("a grader's chatter on stdout")
    return True


def in_a_worker():
    return os.getppid() != int(os.environ["WK_TEST_PID"])


def tattle(output, context):
    # a worker's 20th grade: it says the key on stderr and dies
    GRADED.append(context)
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"{os.getpid()}\\n")
    if in_a_worker() and len(GRADED) == 20:
        print("dying with " + os.environ["WK_KEY"], file=sys.stderr, flush=True)
        os._exit(7)
    return True
"""

WORDS = ["red", "green", "blue"]


class Runs:
    """A project with the python agent ``Bot``, the checks, and the CLI to run on it."""

    def __init__(self, project: Project):
        self.project = project
        self.root = project.root
        project.write("wk_agent.py", AGENT)
        project.write("wk_checks.py", CHECKS)

    def config(self, agents: dict[str, Any] | None = None, **extra: Any) -> None:
        bot = {"provider": "python", "target": "wk_agent:run"}
        graders = {n: f"wk_checks:{n}" for n in ("share", "noisy", "tattle")}
        self.project.config(
            {"agents": agents or {"Bot": bot}, "judge": "none", "python_graders": graders,
             **extra}
        )  # fmt: skip

    def suite(self, name: str, cases: list[dict[str, Any]], agent: str | None = "Bot") -> None:
        self.project.write(
            f"harness/evals/{name}.jsonl", "".join(json.dumps(c) + "\n" for c in cases)
        )
        if agent is not None:
            self.project.write(f"harness/evals/{name}.yaml", f"agent: {agent}\n")

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return self.project.run_cli("eval", "run", *args, timeout=timeout)

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "coalmine", "eval", "run", *args, "--root", str(self.root)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def calls(self) -> list[tuple[int, str]]:
        """(pid, case id) of every call to the python agent, in order."""
        path = self.root / "calls.log"
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        return [(int(pid), case) for pid, case in (line.split() for line in text.splitlines())]

    def rows(self, run_id: str | None = None) -> dict[tuple[str, str, int], tuple[Any, ...]]:
        """Each stored case run: (status, score, scores, error_kind, blocks)."""
        conn = sqlite3.connect(self.root / ".coalmine" / "coalmine.db")
        try:
            query = "SELECT suite, case_id, rep, status, score, scores, error_kind, blocks, run_id"
            found = conn.execute(query + " FROM eval_attempts").fetchall()
        finally:
            conn.close()
        return {(r[0], r[1], r[2]): r[3:8] for r in found if run_id in (None, r[8])}

    def result(self, run_id: str, suite: str) -> dict[str, Any]:
        path = self.root / ".coalmine" / "reports" / "evals" / suite / f"{run_id}.json"
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data


@pytest.fixture
def runs(project: Project, monkeypatch: pytest.MonkeyPatch) -> Runs:
    monkeypatch.setenv("WK_TEST_PID", str(os.getpid()))  # a grader tells a worker by its parent
    return Runs(project)


def events(stderr: str) -> list[dict[str, Any]]:
    """The events ``--display jsonl`` wrote among the lines of stderr."""
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def last(found: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return [e for e in found if e["event"] == name][-1]


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


VOLATILE = {"runId", "startedAt", "endedAt", "reportPath", "latencySeconds", "detectable"}
"""What differs between two runs of the same cases (the second is paired with the first)."""


@pytest.mark.slow
def test_two_workers_give_the_verdicts_and_scores_of_one(runs: Runs) -> None:
    runs.config()
    cases = []
    for i in range(300):
        words = " ".join(WORDS[: i % 4])  # 0 to 3 of the words: scores 0, 1/3, 2/3, 1
        prompt = f"raise:{i}" if i % 37 == 5 else f"say:ok {words} {i}"
        graders = [CONTAINS_OK, {"type": "python", "weight": 2,
                                 "config": {"function": "share", "threshold": 0.5,
                                            "args": {"words": WORDS}}}]  # fmt: skip
        cases.append({"id": f"c{i:03d}", "prompt": prompt, "graders": graders})
    runs.suite("mixed", cases)
    one = runs.run("--workers", "1", "-c", "8", "--format", "json", "--display", "plain")
    calls_before = len(runs.calls())
    two = runs.run("--workers", "2", "-c", "8", "--format", "json", "--display", "plain")
    assert one.returncode == two.returncode == 1, two.stderr  # some cases fail
    assert "at concurrency 8 on 2 workers" in two.stderr
    assert " on " not in one.stderr.splitlines()[0]
    # both engines of the second run called the agent
    assert len({pid for pid, _ in runs.calls()[calls_before:]}) == 2
    [first], [second] = json.loads(one.stdout), json.loads(two.stdout)
    # a case passes when its words are 2 or 3 (i % 4 >= 2): 150, less the 4 of those whose
    # agent raised (42, 79, 190, 227); the 8 that raised fail as crashes
    counts = (second["cases"], second["passed"], second["failed"], second["errored"])
    assert counts == (300, 146, 154, 0)
    # paired with the first run, no case flipped
    assert (second["detectable"]["against"], second["detectable"]["flips"]) == (first["runId"], 0)
    assert {k: v for k, v in first.items() if k not in VOLATILE} == {
        k: v for k, v in second.items() if k not in VOLATILE
    }
    rows_one, rows_two = runs.rows(first["runId"]), runs.rows(second["runId"])
    assert len(rows_one) == 300 and rows_one == rows_two
    assert sorted(k[1] for k, row in rows_two.items() if row[3] == "crash") == [
        f"c{i:03d}" for i in range(5, 300, 37)
    ]


def openai_bot(server: FakeOpenAI, **policy: Any) -> dict[str, Any]:
    return {"provider": "openai", "model": "m", "base_url": server.base_url, "retries": 0,
            **policy}  # fmt: skip


def ok_cases(count: int, **more: Any) -> list[dict[str, Any]]:
    return [{"id": f"c{i:03d}", "prompt": f"case c{i:03d}", "graders": [CONTAINS_OK], **more}
            for i in range(count)]  # fmt: skip


def case_of(received: Received) -> str:
    content: str = received.body["messages"][-1]["content"]
    return content.split()[-1]


@pytest.mark.slow
def test_max_concurrency_holds_across_both_engines(runs: Runs, openai_server: FakeOpenAI) -> None:
    openai_server.default = lambda r: Reply(text=f"ok {case_of(r)}", delay=0.05)
    runs.config({"Bot": openai_bot(openai_server, max_concurrency=6)})
    runs.suite("limited", ok_cases(120))
    done = runs.run("--concurrency", "50", "--workers", "2", "--display", "plain")
    assert done.returncode == 0, done.stderr
    assert "on 2 workers" in done.stderr
    assert len(openai_server.requests) == 120
    assert openai_server.max_in_flight <= 6  # the server's own count, over both engines
    assert openai_server.max_in_flight > 3  # more than one engine's part: both worked


def test_max_concurrency_1_runs_in_one_process_and_says_so(
    runs: Runs, openai_server: FakeOpenAI
) -> None:
    openai_server.default = lambda r: Reply(text=f"ok {case_of(r)}")
    runs.config({"Bot": openai_bot(openai_server, max_concurrency=1)})
    runs.suite("narrow", ok_cases(5))
    done = runs.run("--workers", "2", "--display", "plain")
    assert done.returncode == 0, done.stderr
    assert "note: --workers 2: 1 worker(s), as many as the smallest max_concurrency" in (
        done.stderr
    )
    assert "coalmine: running 5 case runs of 1 suite at concurrency 16 (judge: none)" in (
        done.stderr
    )
    assert len(openai_server.requests) == 5 and openai_server.max_in_flight == 1


def test_a_python_grader_that_prints_leaves_the_json_on_stdout_whole(runs: Runs) -> None:
    runs.config()
    noisy = {"type": "python", "config": {"function": "noisy"}}
    runs.suite("chatty", [{"id": f"c{i:03d}", "prompt": "say:ok", "graders": [noisy]}
                          for i in range(60)])  # fmt: skip
    done = runs.run("--workers", "2", "--format", "json", "--display", "none")
    assert done.returncode == 0, done.stderr
    [result] = json.loads(done.stdout)
    assert result["cases"] == 60


def test_what_a_grader_prints_in_a_worker_stays_off_stdout(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs.project.write(
        "wk_quiet.py",
        "import os\n\n\ndef worker_noise(output, context):\n"
        "    if os.getppid() != int(os.environ['WK_TEST_PID']):\n"
        "        print('a worker chatters on stdout')\n    return True\n",
    )
    runs.config()
    data = yaml.safe_load((runs.root / "coalmine.yaml").read_text())
    data["python_graders"]["worker_noise"] = "wk_quiet:worker_noise"
    runs.project.config(data)
    noisy = {"type": "python", "config": {"function": "worker_noise"}}
    runs.suite("chatty", [{"id": f"c{i:03d}", "prompt": "say:ok", "graders": [noisy]}
                          for i in range(200)])  # fmt: skip
    done = runs.run("--workers", "2", "-c", "8", "--format", "json", "--display", "none")
    assert done.returncode == 0, done.stderr
    assert len({pid for pid, _ in runs.calls()}) == 2  # the worker graded some
    [result] = json.loads(done.stdout)
    assert result["cases"] == 200


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_no_case_and_counts_none_twice(runs: Runs) -> None:
    runs.config()
    runs.suite("long", [{"id": f"c{i:03d}", "prompt": "say:ok", "graders": [CONTAINS_OK]}
                        for i in range(400)])  # fmt: skip
    proc = runs.start("--workers", "2", "-c", "8", "--display", "jsonl", "--format", "json")
    try:

        def worker_busy() -> bool:
            by_pid = Counter(pid for pid, _ in runs.calls())
            return any(n >= 10 for pid, n in by_pid.items() if pid != proc.pid)

        wait_for(worker_busy, 30, "the worker to run cases")
        [victim] = {pid for pid, _ in runs.calls()} - {proc.pid}
        assert victim in children_running(proc.pid, "coalmine")  # a child of the driver
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "note: lost worker 2: the worker process ended (exit -9); its unfinished cases " \
           "ran on the others" in err  # fmt: skip
    found = events(err)
    end = last(found, "eval_progress")
    assert (end["done"], end["total"], end["passed"]) == (400, 400, 400)  # none counted twice
    [result] = json.loads(out)
    assert (result["cases"], result["passed"]) == (400, 400)
    assert len(runs.rows(result["runId"])) == 400
    calls = runs.calls()
    assert {case for _, case in calls} == {f"c{i:03d}" for i in range(400)}
    # a case called twice is one the dead worker held
    twice = {case for case, n in Counter(case for _, case in calls).items() if n > 1}
    assert twice <= {case for pid, case in calls if pid == victim}


@pytest.mark.slow
def test_ctrl_c_then_resume_stores_every_case_once_and_calls_none_twice(
    runs: Runs, openai_server: FakeOpenAI
) -> None:
    openai_server.default = lambda r: Reply(text=f"ok {case_of(r)}", delay=0.05)
    runs.config({"Bot": openai_bot(openai_server)})
    runs.suite("paced", ok_cases(300))
    proc = runs.start("--workers", "2", "-c", "16", "--display", "jsonl")
    try:
        wait_for(lambda: len(openai_server.requests) >= 60, 30, "60 requests")
        proc.send_signal(signal.SIGINT)  # as Ctrl-C: finish the cases in flight
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, err
    assert "stopping: finishing the cases in flight" in err
    run_id = last(events(err), "eval_end")["run_id"]
    first = {case for _, case, _ in runs.rows(run_id)}
    assert 60 <= len(first) < 300
    asked_first = Counter(case_of(r) for r in openai_server.requests)
    assert set(asked_first) == first  # every case in flight at the stop finished and is stored
    before = len(openai_server.requests)

    resumed = runs.run("--resume", run_id, "--workers", "2", "--display", "jsonl")
    assert resumed.returncode == 0, resumed.stderr
    found = events(resumed.stderr)
    start = last(found, "eval_start")
    assert (start["total"], start["resumed"], start["workers"]) == (300, len(first), "2 workers")
    assert last(found, "eval_progress")["done"] == 300
    asked_again = Counter(case_of(r) for r in openai_server.requests[before:])
    assert not set(asked_again) & first  # no stored case was called again
    assert sorted(asked_first + asked_again) == sorted(f"c{i:03d}" for i in range(300))
    assert max((asked_first + asked_again).values()) == 1
    assert {case for _, case, _ in runs.rows(run_id)} == {f"c{i:03d}" for i in range(300)}
    assert runs.result(run_id, "paced")["cases"] == 300


KEY = "sk-planted-key-7f3e9a2b61"
ORG = "org-planted-5d1c08e4aa"


@pytest.mark.slow
def test_no_planted_secret_reaches_the_result_the_store_or_stderr(
    runs: Runs, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WK_KEY", KEY)
    monkeypatch.setenv("WK_ORG", ORG)

    def desk_answer(received: ServiceRequest) -> ServiceReply:
        return ServiceReply({"output": f"ok, you sent {received.header('X-Org')}"})

    def openai_answer(received: Received) -> Reply:
        seen = f"{received.headers.get('Authorization')}"
        if case_of(received).endswith("7"):  # an error that quotes the key
            return Reply(status=400, body=f"bad request from {seen}")
        return Reply(text=f"ok, you sent {seen}", delay=0.01)

    with JsonService() as service:
        service.default = desk_answer
        openai_server.default = openai_answer
        tattle = {"type": "python", "config": {"function": "tattle"}}
        runs.config(
            {
                "Bot": openai_bot(openai_server, api_key_env="WK_KEY"),
                "Desk": {"provider": "http", "url": f"{service.url}/agent",
                         "headers": {"X-Org": "${WK_ORG}"}, "body": {"input": "{{prompt}}"},
                         "retries": 0},
            }
        )  # fmt: skip
        runs.suite("keyed", ok_cases(150, graders=[CONTAINS_OK, tattle]))
        runs.suite("headed", ok_cases(50, graders=[CONTAINS_OK]), agent="Desk")
        done = runs.run("--workers", "2", "-c", "8", "--format", "json", "--display", "jsonl")
        # the servers saw the secrets: they were sent where they belong
        assert any(r.headers.get("Authorization") == f"Bearer {KEY}"
                   for r in openai_server.requests)  # fmt: skip
        assert any(r.header("X-Org") == ORG for r in service.requests)
    assert done.returncode == 1, done.stderr  # the 400s fail their cases
    assert last(events(done.stderr), "eval_start")["workers"] == "2 workers"
    # the worker graded 20 cases, said the key on stderr and died: the note quotes it scrubbed
    graded = Counter((runs.root / "graded.log").read_text().split())
    assert any(n >= 20 for n in graded.values()) and len(graded) == 2
    [note] = [line for line in done.stderr.splitlines() if line.startswith("note: lost")]
    assert note.startswith("note: lost worker 2: the worker process ended (exit 7): ")
    assert "dying with ***" in note
    results = json.loads(done.stdout)
    assert [(r["suiteId"], r["cases"]) for r in results] == [("headed", 50), ("keyed", 150)]
    assert "***" in done.stdout  # the echoes were stored, scrubbed
    leaks = [f"{where}: {secret}" for where, text in [("stdout", done.stdout),
             ("stderr", done.stderr)] for secret in (KEY, ORG) if secret in text]  # fmt: skip
    files = [p for p in runs.root.rglob("*") if p.is_file()]
    assert any(p.name == "coalmine.db" for p in files)
    leaks += [f"{p.relative_to(runs.root)}: {secret}" for p in files for secret in (KEY, ORG)
              if secret.encode() in p.read_bytes()]  # fmt: skip
    assert not leaks, leaks


def test_cache_keeps_the_run_in_one_process_and_says_so(runs: Runs) -> None:
    runs.config()
    runs.suite("cached", [{"id": f"c{i}", "prompt": "say:ok", "graders": [CONTAINS_OK]}
                          for i in range(6)])  # fmt: skip
    done = runs.run("--cache", "--workers", "2", "--display", "plain")
    assert done.returncode == 0, done.stderr
    assert "note: --workers 2: --cache runs in one process (the cache is the store's)" in (
        done.stderr
    )
    assert "on 2 workers" not in done.stderr
    assert len({pid for pid, _ in runs.calls()}) == 1


def test_a_cache_the_config_turns_on_is_named_as_the_config_key(runs: Runs) -> None:
    runs.config(cache=True)
    runs.suite("cached", [{"id": f"c{i}", "prompt": "say:ok", "graders": [CONTAINS_OK]}
                          for i in range(6)])  # fmt: skip
    done = runs.run("--workers", "2", "--display", "plain")
    assert done.returncode == 0, done.stderr
    assert "note: --workers 2: cache: true (coalmine.yaml) runs in one process" in done.stderr
    assert "--cache" not in done.stderr  # the user never typed it


def test_address_without_the_ray_backend_is_a_usage_error(runs: Runs) -> None:
    runs.config()
    runs.suite("any", [{"id": "c", "prompt": "say:ok", "graders": [CONTAINS_OK]}])
    done = runs.run("--address", "ray://10.0.0.1:10001", "--display", "none")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: --address names a Ray cluster: it goes with --backend ray"
    )
    assert runs.calls() == []


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: a run never shards itself")
def test_a_big_run_at_concurrency_64_shards_itself_one_engine_a_core(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WK_AGENT_SLEEP", "0")
    runs.config()
    runs.suite("big", [{"id": f"c{i:04d}", "prompt": "say:ok", "graders": [CONTAINS_OK]}
                       for i in range(2000)])  # fmt: skip
    cores = os.cpu_count() or 1
    wide = runs.run("-c", "64", "--display", "plain")
    assert wide.returncode == 0, wide.stderr
    assert wide.stderr.splitlines()[0] == (
        f"coalmine: running 2000 case runs of 1 suite at concurrency 64 on {cores} workers "
        "(judge: none)"
    )
    assert "note:" not in wide.stderr  # nothing was asked, so nothing is fewer than asked
    narrow = runs.run("--display", "plain")
    assert narrow.returncode == 0, narrow.stderr
    assert narrow.stderr.splitlines()[0] == (
        "coalmine: running 2000 case runs of 1 suite at concurrency 16 (judge: none)"
    )
