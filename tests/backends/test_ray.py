"""``coalmine eval run --backend ray`` on a real two-node Ray cluster (see conftest.py).

Every run is the CLI in its own process, joined to the cluster by ``--address``: the driver
plans, ships the project as the actors' working directory and alone writes the store, while
one actor a shard (spread over the two nodes) runs the cases. The agents are a python module
and a command script in the project, or an openai agent at the loopback server, whose key is
the secret every node holds in its environment. The test that removes the worker node runs
last, and starts one again.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.backends.conftest import SECRET_VAR, RayCluster
from tests.helpers.openai_server import FakeOpenAI, Received, Reply
from tests.helpers.project import Project

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]  # one cluster for all

AGENT = """\
import os


async def run(prompt, context):
    if prompt == "where":
        return os.path.abspath(__file__)
    if prompt == "raise":
        raise RuntimeError("agent crashed on " + context.case_id)
    return prompt
"""

HI = {"type": "contains", "config": {"value": "hi"}}

WHERE = """\
import os
import sys

sys.stdin.read()
print(os.path.abspath(__file__))
"""


def ray_run(
    project: Project, cluster: RayCluster, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``coalmine eval run --backend ray --address CLUSTER ARGS --format json``."""
    return project.run_cli(
        "eval", "run", "--backend", "ray", "--address", cluster.address, "--format", "json",
        "--display", "plain", *args, timeout=timeout,
    )  # fmt: skip


def results(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The suites' result JSON a ``--format json`` run printed (it must have finished)."""
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def attempts(project: Project, run_id: str) -> dict[tuple[str, str, int], sqlite3.Row]:
    """The run's stored attempts by (suite, case, repeat)."""
    conn = sqlite3.connect(project.root / ".coalmine" / "coalmine.db")
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute("SELECT * FROM eval_attempts WHERE run_id = ?", (run_id,)).fetchall()
    finally:
        conn.close()
    return {(r["suite"], r["case_id"], r["rep"]): r for r in rows}


def suite(project: Project, name: str, cases: Iterable[dict[str, Any]]) -> None:
    project.write(f"harness/evals/{name}.jsonl", "".join(json.dumps(c) + "\n" for c in cases))


def openai_agent(server: FakeOpenAI, **more: Any) -> dict[str, Any]:
    """An openai agent at ``server`` whose key is the secret the nodes hold."""
    return {
        "provider": "openai",
        "model": "ray-model",
        "base_url": server.base_url,
        "api_key_env": SECRET_VAR,
        "retries": 0,
        **more,
    }


def prompt_of(received: Received) -> str:
    content: str = received.body["messages"][-1]["content"]
    return content


def files_under(*roots: Path) -> Iterator[Path]:
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                yield path


def holding(needle: str, paths: Iterable[Path]) -> list[Path]:
    """The files whose bytes hold ``needle``."""
    data = needle.encode()
    return [p for p in paths if data in p.read_bytes()]


# -- the same verdicts as a local run -------------------------------------------------------


def test_two_actors_give_the_verdicts_and_scores_of_a_local_run(
    ray_cluster: RayCluster, project: Project
) -> None:
    project.write("ray_agent.py", AGENT)
    project.config({"agents": {"Bot": {"provider": "python", "target": "ray_agent:run"}}})
    graders = [
        {"type": "equals"},
        {"type": "contains", "config": {"value": "answer"}},
        {"type": "regex", "config": {"value": r"^answer \d+$"}},
    ]
    cases: list[dict[str, Any]] = []
    for i in range(200):
        prompt, expected = f"answer {i}", f"answer {i}"
        if i % 17 == 5:
            expected = f"answer {i + 1}"  # equals fails: a score of 2/3
        elif i % 29 == 3:
            prompt = f"ANSWER {i}"  # every grader fails
        elif i % 53 == 7:
            prompt = "raise"  # the agent crashes
        cases.append({"id": f"c{i:03d}", "prompt": prompt, "expected": expected,
                      "agent": "Bot", "graders": graders})  # fmt: skip
    cases.append({"id": "where", "prompt": "where", "agent": "Bot",
                  "graders": [{"type": "regex", "config": {"value": "^/"}}]})  # fmt: skip
    suite(project, "mixed", cases)

    local = project.run_cli("eval", "run", "--workers", "1", "--format", "json")
    t0 = time.monotonic()
    on_ray = ray_run(project, ray_cluster, "--workers", "2")
    print(f"ray run {time.monotonic() - t0:.1f} s")

    [mine], [theirs] = results(local), results(on_ray)
    assert "on 2 Ray actors" in on_ray.stderr
    assert (theirs["cases"], theirs["passed"], theirs["failed"], theirs["errored"]) == (
        201, 179, 22, 0,
    )  # fmt: skip
    for key in ("cases", "passed", "failed", "errored", "score", "graders", "verdict", "gate"):
        assert theirs[key] == mine[key], key
    # a crash's reason ends with its traceback, whose paths name the copy the agent ran from
    assert [(f["id"], f["status"], f["reason"].splitlines()[0]) for f in theirs["failures"]] == [
        (f["id"], f["status"], f["reason"].splitlines()[0]) for f in mine["failures"]
    ]

    def verdicts(run_id: str) -> dict[Any, tuple[Any, ...]]:
        return {
            k: (r["status"], r["blocks"], r["score"], json.loads(r["scores"]), r["error_kind"])
            for k, r in attempts(project, run_id).items()
        }

    expected_verdicts = verdicts(mine["runId"])
    assert len(expected_verdicts) == 201
    assert verdicts(theirs["runId"]) == expected_verdicts
    assert {round(v[2], 4) for v in expected_verdicts.values()} == {0.0, 0.6667, 1.0}

    # the cases really ran on the actors: the agent was the copy shipped to a node
    ran = json.loads(attempts(project, theirs["runId"])["mixed", "where", 0]["record"])["output"]
    shipped = ray_cluster.temp_dir.glob("session_*/runtime_resources/working_dir_files/*")
    assert Path(ran).parent in set(shipped), ran
    here = json.loads(attempts(project, mine["runId"])["mixed", "where", 0]["record"])["output"]
    assert here == str(project.root.resolve() / "ray_agent.py")


def test_one_worker_still_runs_on_an_actor(ray_cluster: RayCluster, project: Project) -> None:
    project.write("ray_agent.py", AGENT)
    project.config({"agents": {"Bot": {"provider": "python", "target": "ray_agent:run"}}})
    regex = {"type": "regex", "config": {"value": "^/"}}
    suite(project, "where", [{"id": "w", "prompt": "where", "agent": "Bot", "graders": [regex]}])

    done = ray_run(project, ray_cluster, "--workers", "1")

    [result] = results(done)
    assert "on 1 Ray actor" in done.stderr  # what the run says …
    ran = json.loads(attempts(project, result["runId"])["where", "w", 0]["record"])["output"]
    assert ran.startswith(str(ray_cluster.temp_dir)), ran  # … and where it ran


# -- limits across the actors ----------------------------------------------------------------


def test_max_concurrency_holds_across_the_actors(
    ray_cluster: RayCluster, project: Project, openai_server: FakeOpenAI
) -> None:
    openai_server.default = lambda r: Reply(text=f"ok {prompt_of(r)}", delay=0.05)
    project.config({"agents": {"Bot": openai_agent(openai_server, max_concurrency=5)}})
    suite(project, "limited", [
        {"id": f"c{i:03d}", "prompt": f"p{i}", "agent": "Bot",
         "graders": [{"type": "contains", "config": {"value": f"ok p{i}"}}]}
        for i in range(120)
    ])  # fmt: skip

    done = ray_run(project, ray_cluster, "--concurrency", "40", "--workers", "2")

    [result] = results(done)
    assert "on 2 Ray actors" in done.stderr
    assert "note:" not in done.stderr  # both actors ran: no fewer than asked
    assert (result["cases"], result["passed"]) == (120, 120)
    assert len(openai_server.requests) == 120
    # each actor holds a part (3 and 2): more than 3 at once means both were calling together
    assert 4 <= openai_server.max_in_flight <= 5


# -- secrets ---------------------------------------------------------------------------------


def test_the_key_reaches_the_server_and_nothing_else(
    ray_cluster: RayCluster, project: Project, openai_server: FakeOpenAI
) -> None:
    secret = ray_cluster.secret

    def answer(received: Received) -> Reply:
        # the server quotes the key it was sent: in an answer, or in an error's body
        said = f"{prompt_of(received)} {received.headers.get('Authorization', '')}"
        if "refuse" in said:
            return Reply(status=400, body=f"bad request from {said}")
        return Reply(text=f"ok, you said {said}" if "echo" in said else "ok")

    openai_server.default = answer
    project.config({"agents": {"Bot": openai_agent(openai_server)}})
    marker = "shipped-suite-marker-4e1f"
    suite(project, "leaky", [
        {"id": f"c{i:02d}", "prompt": f"{['plain', 'echo', 'refuse'][i % 3]} {marker}",
         "agent": "Bot", "graders": [{"type": "contains", "config": {"value": "ok"}}]}
        for i in range(30)
    ])  # fmt: skip

    done = ray_run(project, ray_cluster, "--workers", "2")

    [result] = results(done)
    assert (result["cases"], result["passed"], result["failed"]) == (30, 20, 10)
    # not vacuous: every call carried the key, and the server sent it back
    assert len(openai_server.requests) == 30
    assert {r.headers["Authorization"] for r in openai_server.requests} == {f"Bearer {secret}"}
    rows = attempts(project, result["runId"])
    echoed = [json.loads(r["record"]) for k, r in rows.items() if int(k[1][1:]) % 3 != 0]
    assert all("***" in json.dumps(record) for record in echoed)
    # … and its bytes are nowhere: the CLI's output, the project's files (store, WAL, result
    # files, artifacts), and every file Ray wrote (logs, sessions, shipped dirs, spilled objects)
    assert secret not in done.stdout + done.stderr
    assert holding(secret, files_under(project.root)) == []
    ray_files = list(ray_cluster.files())
    assert holding(secret, ray_files) == []
    # the scan saw what Ray wrote for this run: the shipped suite, and the actors' logs
    assert holding(marker, ray_files), "the shipped project is not under Ray's temp dir"
    assert any(p.parent.name == "logs" and p.name.startswith("worker-") for p in ray_files)


def test_project_files_run_on_the_actors_and_env_files_stay_home(
    ray_cluster: RayCluster, project: Project
) -> None:
    dotenv = "dotenv-planted-secret-7a0c55"
    project.write(".env", f"DOTENV_SECRET={dotenv}\n")
    project.write("ray_agent.py", AGENT)
    script = project.agent_script("where", WHERE)
    project.config({"agents": {
        "Py": {"provider": "python", "target": "ray_agent:run"},
        "Cmd": {"provider": "command", "argv": script},
    }})  # fmt: skip
    regex = {"type": "regex", "config": {"value": "^/"}}
    suite(project, "where", [
        {"id": f"{agent}-{i}", "prompt": "where", "agent": agent, "graders": [regex]}
        for agent in ("Py", "Cmd") for i in range(4)
    ])  # fmt: skip

    done = ray_run(project, ray_cluster, "--workers", "2")

    [result] = results(done)
    assert (result["cases"], result["passed"]) == (8, 8)
    ran = {
        case: Path(json.loads(row["record"])["output"].strip())
        for (_, case, _), row in attempts(project, result["runId"]).items()
    }
    shipped = {p for p in ray_cluster.shipped() if p.is_dir()}
    homes = {path.parent for case, path in ran.items() if case.startswith("Py")}
    homes |= {path.parent.parent for case, path in ran.items() if case.startswith("Cmd")}
    assert homes and homes <= shipped, ran  # both agents ran from a copy on a node
    for home in homes:
        assert (home / "ray_agent.py").is_file() and (home / "agents" / "where.py").is_file()
        assert not (home / ".env").exists()
        assert not (home / ".coalmine").exists()  # nor the store
    assert holding(dotenv, ray_cluster.files()) == []


# -- refused before anything runs -------------------------------------------------------------

BLOCK_RAY = (
    "import sys; sys.modules['ray'] = None; sys.argv[0] = 'coalmine'; "
    "from coalmine.cli.main import run; run()"
)


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["cluster-cpus", "workers-2"])
def test_without_ray_the_backend_names_the_extra(project: Project, workers: list[str]) -> None:
    project.write("ray_agent.py", AGENT)
    project.config({"agents": {"Bot": {"provider": "python", "target": "ray_agent:run"}}})
    suite(project, "s", [{"id": "a", "prompt": "hi", "agent": "Bot", "graders": [HI]}])

    done = subprocess.run(
        [sys.executable, "-c", BLOCK_RAY, "eval", "run", "--backend", "ray", *workers,
         "--root", str(project.root)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert done.returncode == 2, done.stderr
    assert "pip install 'coalmine[ray]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_cache_stays_in_one_process(project: Project) -> None:
    project.write("ray_agent.py", AGENT)
    project.config({"agents": {"Bot": {"provider": "python", "target": "ray_agent:run"}}})
    suite(project, "s", [{"id": "a", "prompt": "hi", "agent": "Bot", "graders": [HI]}])

    done = project.run_cli("eval", "run", "--backend", "ray", "--cache", "--workers", "2")

    assert done.returncode == 2, done.stderr
    assert "error: --backend ray: --cache runs in one process" in done.stderr
    assert "drop one of them" in done.stderr
    assert "Traceback" not in done.stderr


def test_more_workers_than_cpus_does_not_wait_forever(
    ray_cluster: RayCluster, project: Project
) -> None:
    project.write("ray_agent.py", AGENT)
    project.config({"agents": {"Bot": {"provider": "python", "target": "ray_agent:run"}}})
    suite(project, "s", [
        {"id": f"c{i}", "prompt": "hi", "agent": "Bot", "graders": [HI]} for i in range(20)
    ])  # fmt: skip
    cpus = int(ray_cluster.cluster.global_state.cluster_resources()["CPU"])
    try:
        # a run of 20 cases takes ~5 s with 4 actors; the fifth never gets a CPU
        done = ray_run(project, ray_cluster, "--workers", str(cpus + 1), timeout=20)
    finally:
        ray_cluster.wait_idle()  # the killed driver's actors go with it

    [result] = results(done)
    assert (result["cases"], result["passed"]) == (20, 20)
    assert f"--workers {cpus + 1}" in done.stderr  # a note says it got fewer


# -- a node goes away (last: it starts a new worker node) -----------------------------------


def test_a_removed_node_loses_its_actor_and_the_others_finish(
    ray_cluster: RayCluster, project: Project, openai_server: FakeOpenAI
) -> None:
    openai_server.default = lambda r: Reply(text=f"ok {prompt_of(r)}", delay=0.1)
    project.config({"agents": {"Bot": openai_agent(openai_server)}})
    total = 400
    suite(project, "long", [
        {"id": f"c{i:03d}", "prompt": f"p{i}", "agent": "Bot",
         "graders": [{"type": "contains", "config": {"value": f"ok p{i}"}}]}
        for i in range(total)
    ])  # fmt: skip
    store = project.root / ".coalmine" / "coalmine.db"
    removed: list[int] = []
    failed: list[BaseException] = []

    def remove_once_some_are_stored() -> None:
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if store.exists():
                    conn = sqlite3.connect(store)
                    try:
                        stored = conn.execute("SELECT count(*) FROM eval_attempts").fetchone()[0]
                    except sqlite3.Error:
                        stored = 0
                    finally:
                        conn.close()
                    if stored >= 40:
                        ray_cluster.remove_worker()
                        removed.append(stored)
                        return
                time.sleep(0.05)
        except BaseException as exc:  # noqa: BLE001 - raised again in the test
            failed.append(exc)

    remover = threading.Thread(target=remove_once_some_are_stored)
    remover.start()
    try:
        done = project.run_cli(
            "eval", "run", "--backend", "ray", "--address", ray_cluster.address,
            "--workers", "2", "--display", "jsonl", "--format", "json", timeout=90,
        )  # fmt: skip
    finally:
        remover.join()
        if removed:
            ray_cluster.add_worker()
    assert not failed, failed
    assert removed and removed[0] < total, "the worker node was not removed mid-run"

    [result] = results(done)
    assert done.returncode == 0
    assert "note: lost actor" in done.stderr
    assert "its unfinished cases ran on the others" in done.stderr
    # every case stored once: one row each, and the run counted each once
    rows = attempts(project, result["runId"])
    assert len(rows) == total and all(r["status"] == "pass" for r in rows.values())
    assert (result["cases"], result["passed"], result["interrupted"]) == (total, total, False)
    events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    progress = [e for e in events if e["event"] == "eval_progress"]
    assert (progress[-1]["done"], progress[-1]["total"]) == (total, total)
    assert max(e["done"] for e in progress) == total
    assert len(openai_server.requests) >= total
