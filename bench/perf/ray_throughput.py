"""How close does ``coalmine eval run --backend ray`` come to the ideal time, by actor count?

Run: .venv/bin/python bench/perf/ray_throughput.py [--cases 5000] [--concurrency 200]
     [--latency 0.1] [--workers 1,2,4] [--cpus-per-node 2] [--args "..."]

A two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``: a head node and one
worker node, each with ``--cpus-per-node`` CPUs, a small object store, no dashboard) is started
once. For each K of ``--workers``, against a fresh loopback server (``latency_server.py``, its
own process), the project of ``eval_throughput.py`` (N cases, three deterministic graders each,
the agent's ``max_concurrency`` = C) runs as a user runs it:
``coalmine eval run -c C --backend ray --address ADDR --workers K --display jsonl`` in a
process of its own, with a fresh store.

For each K: wall time, ideal (``ceil(N / C) × latency``), efficiency = ideal / wall, the calls
phase alone (the server's first request in to its last answer out) and the server's most
requests in flight. The wall is split in three: *start* (process start to the run's
``eval_start`` line: Python, imports, the plan), *connect* (that line to the server's first
request: joining the cluster, shipping the project, starting the actors and opening their
engines) and *after* (the last answer out to the exit: the result files, closing the actors).
``actors`` is how many actors the run made (from the cluster's actor table) and on how many
nodes they ran: a K whose run made none ran in the driver.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_throughput import make_suite, server_stats, start_server, write_config

NODE_MEMORY = 80 * 1024 * 1024
"""Each node's object store: the batches and their results are small."""


@contextmanager
def two_nodes(cpus: int) -> Iterator[Any]:
    """A head node and a worker node of ``cpus`` CPUs each; shut down on leaving."""
    from ray.cluster_utils import Cluster

    # a unix socket path holds ~107 characters: Ray's session dir must stay short
    temp = tempfile.mkdtemp(prefix="rayb-", dir="/tmp")
    # where Ray writes the address of "the current cluster" (by default /tmp/ray, which a fresh
    # machine may not have, and which other Ray users share); the runs started below inherit it
    saved = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = temp
    Path(temp, "ray").mkdir()
    node: dict[str, Any] = {"num_cpus": cpus, "object_store_memory": NODE_MEMORY}
    cluster: Any = None
    try:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={**node, "include_dashboard": False, "temp_dir": temp},
        )
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        if cluster is not None:
            cluster.shutdown()
        if saved is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = saved
        shutil.rmtree(temp, ignore_errors=True)


def engine_actors(cluster: Any) -> dict[str, dict[str, Any]]:
    """Every coalmine engine actor the cluster has made, by id."""
    table: dict[str, dict[str, Any]] = cluster.global_state.actor_table(None)
    return {k: v for k, v in table.items() if v["ActorClassName"] == "EngineActor"}


@dataclass
class Measured:
    wall: float
    start: float
    connect: float
    active: float
    after: float
    requests: int
    max_in_flight: int
    actors: int
    nodes: int
    code: int

    def line(self, k: int, ideal: float) -> str:
        return (
            f"  K={k:<2} wall {self.wall:5.2f} s  efficiency {ideal / self.wall:4.2f}  "
            f"calls {self.active:5.2f} s (efficiency {ideal / self.active:4.2f})  "
            f"start {self.start:4.2f} s  connect {self.connect:4.2f} s  "
            f"after {self.after:4.2f} s  in flight {self.max_in_flight:>4}  "
            f"actors {self.actors} on {self.nodes} node(s)"
        )


def measure(command: list[str], latency: float, project: Path, c: int, cluster: Any) -> Measured:
    """Run ``command`` against a fresh server and a fresh store; its phases and the server's."""
    server, port = start_server(latency)
    shutil.rmtree(project / ".coalmine", ignore_errors=True)
    write_config(project, port, c)
    before = set(engine_actors(cluster))
    started: list[float] = []
    try:
        t0 = time.time()
        process = subprocess.Popen(
            command, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        assert process.stderr is not None
        stream = process.stderr

        def read_events() -> None:
            for line in stream:  # the jsonl display: one event a line, as it happens
                if not started and line.startswith('{"event": "eval_start"'):
                    started.append(time.time())

        reader = threading.Thread(target=read_events)
        reader.start()
        code = process.wait()
        ended = time.time()
        reader.join()
        stats = server_stats(port)
    finally:
        server.terminate()
        server.wait()
    made = [a for k, a in engine_actors(cluster).items() if k not in before]
    first_in, last_out = stats["first_in"] or ended, stats["last_out"] or ended
    start = (started[0] if started else first_in) - t0
    return Measured(
        wall=ended - t0,
        start=start,
        connect=first_in - t0 - start,
        active=max(last_out - first_in, 1e-9),
        after=ended - last_out,
        requests=int(stats["requests"]),
        max_in_flight=int(stats["max_in_flight"]),
        actors=len(made),
        nodes=len({a["Address"]["NodeID"] for a in made}),
        code=code,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--workers", default="1,2,4", help="the actor counts K, comma-separated")
    parser.add_argument("--cpus-per-node", type=int, default=2)
    parser.add_argument("--args", default="", help="more flags for `coalmine eval run`")
    args = parser.parse_args()
    n, c, latency = args.cases, args.concurrency, args.latency
    counts = [int(k) for k in args.workers.split(",")]
    ideal = math.ceil(n / c) * latency
    print(
        f"eval --backend ray N={n} C={c} latency={latency * 1000:.0f} ms  ideal {ideal:.2f} s  "
        f"(2 nodes x {args.cpus_per_node} CPUs)"
    )
    with tempfile.TemporaryDirectory() as tmp, two_nodes(args.cpus_per_node) as cluster:
        project = Path(tmp)
        make_suite(project, n)
        for k in counts:
            command = [sys.executable, "-m", "coalmine", "eval", "run", "-c", str(c),
                       "--backend", "ray", "--address", cluster.address, "--workers", str(k),
                       "--display", "jsonl", *shlex.split(args.args)]  # fmt: skip
            m = measure(command, latency, project, c, cluster)
            print(m.line(k, ideal), flush=True)
            if m.code != 0 or m.requests != n:
                print(f"  coalmine exited {m.code} after {m.requests} requests", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
