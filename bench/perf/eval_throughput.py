"""How close does ``coalmine eval run`` come to the ideal time, through its CLI? Prints ratios.

Run: .venv/bin/python bench/perf/eval_throughput.py [--cases 5000] [--concurrency 200]
     [--latency 0.1] [--repeat 1] [--args "..."] [--profile out.prof]

A loopback OpenAI-compatible server (``latency_server.py``, its own process, so its CPU is not
counted) answers every call after a fixed latency. N cases of one suite, each graded by three
deterministic graders (``equals``, ``icontains``, ``regex``), run as a user runs them:
``coalmine eval run -c C --display none`` in a fresh project, a process of its own (its
start-up, the plan, the store and the result file all count). In the same run, against a fresh
server each time, a floor client makes the same N requests C at a time: plain asyncio streams
over keep-alive connections, nothing else (``--floor``, this file run as that client).

For each: wall time, efficiency = ideal / wall (ideal = ``ceil(N / C) × latency``; 1.0 is
perfect), CPU ms a case (user + system of the process and its children, from ``wait4``), the
time spent outside the requests (wall minus the span from the server's first request in to
its last answer out: start-up, planning, writing results, exit), the server's most requests
in flight, and the peak RSS. ``--args`` passes more flags to ``eval run`` (e.g. ``--workers 2``);
``--profile FILE`` writes a cProfile of the coalmine process (read it with
``python -m pstats FILE``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def write_config(root: Path, port: int, c: int) -> None:
    """coalmine.yaml: one openai agent at the loopback server on ``port``."""
    config = {
        "agents": {
            "bench": {
                "provider": "openai",
                "base_url": f"http://127.0.0.1:{port}/v1",
                "model": "bench-model",
                "retries": 0,
                "max_concurrency": c,
            }
        },
        "judge": "none",
    }
    (root / "coalmine.yaml").write_text(yaml.safe_dump(config))


def make_suite(root: Path, n: int) -> None:
    """An N-case suite, each case graded by three deterministic graders."""
    suites = root / "harness" / "evals"
    suites.mkdir(parents=True)
    (suites / "bench.yaml").write_text(yaml.safe_dump({"prompt_template": "Say {{ word }}"}))
    with (suites / "bench.jsonl").open("w") as f:
        for i in range(n):
            word = f"w{i}"
            graders = [
                {"type": "equals"},
                {"type": "icontains", "config": {"value": word.upper()}},
                {"type": "regex", "config": {"value": r"^w\d+$"}},
            ]
            case = {"id": f"case-{i:06d}", "vars": {"word": word}, "expected": word}
            f.write(json.dumps({**case, "graders": graders}) + "\n")


def start_server(latency: float) -> tuple[subprocess.Popen[str], int]:
    server = subprocess.Popen(
        [sys.executable, str(HERE / "latency_server.py"), "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    return server, int(line.split()[1])


def server_stats(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as answer:
        stats: dict[str, float] = json.loads(answer.read())
    return stats


@dataclass
class Measured:
    wall: float
    cpu: float
    peak_mb: float
    requests: int
    max_in_flight: int
    active: float
    code: int
    before: float = 0.0
    """Seconds from the start to the server's first request in (start-up, planning)."""

    def line(self, name: str, n: int, ideal: float) -> str:
        return (
            f"  {name:<9} wall {self.wall:5.2f} s  efficiency {ideal / self.wall:4.2f}  "
            f"cpu {1000 * self.cpu / n:5.3f} ms/case  outside {self.wall - self.active:4.2f} s "
            f"({self.before:4.2f} before, {self.wall - self.active - self.before:4.2f} after)  "
            f"in flight {self.max_in_flight:>4}  peak RSS {self.peak_mb:4.0f} MB"
        )


def measure(
    command: list[str], latency: float, cwd: Path, prepare: Callable[[int], None] | None = None
) -> Measured:
    """Run ``command`` (``{port}`` filled in) against a fresh server; its costs and the server's.

    ``prepare(port)`` runs first (it writes the project's config for that server).
    """
    server, port = start_server(latency)
    try:
        if prepare is not None:
            prepare(port)
        argv = [a.replace("{port}", str(port)) for a in command]
        t0, started = time.perf_counter(), time.time()
        process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - t0
        stats = server_stats(port)
    finally:
        server.terminate()
        server.wait()
    active = (stats["last_out"] or 0) - (stats["first_in"] or 0)
    return Measured(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        peak_mb=usage.ru_maxrss / 1024,
        requests=int(stats["requests"]),
        max_in_flight=int(stats["max_in_flight"]),
        active=active,
        code=os.waitstatus_to_exitcode(status),
        before=(stats["first_in"] or started) - started,
    )


# -- the floor client --------------------------------------------------------------------------


async def floor_client(n: int, c: int, port: int) -> None:
    """N chat requests, C connections each taking the next, asyncio streams and nothing else."""
    counter = iter(range(n))

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for i in counter:
            body = json.dumps(
                {"model": "bench-model", "messages": [{"role": "user", "content": f"Say w{i}"}]}
            ).encode()
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(h[15:]) for h in head.split(b"\r\n") if h[:15].lower() == b"content-length:"
            )
            answer = json.loads(await reader.readexactly(length))
            assert answer["choices"][0]["message"]["content"] == f"w{i}"
        writer.close()

    await asyncio.gather(*(connection() for _ in range(c)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=1, help="measure each this many times")
    parser.add_argument("--args", default="", help="more flags for `coalmine eval run`")
    parser.add_argument("--profile", help="write a cProfile of coalmine here")
    parser.add_argument("--floor", nargs=3, type=int, metavar=("N", "C", "PORT"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.floor:
        asyncio.run(floor_client(*args.floor))
        return 0
    n, c, latency = args.cases, args.concurrency, args.latency
    ideal = math.ceil(n / c) * latency
    env_python = [sys.executable]
    if args.profile:
        env_python += ["-m", "cProfile", "-o", str(Path(args.profile).resolve())]
    print(f"eval N={n} C={c} latency={latency * 1000:.0f} ms  ideal {ideal:.2f} s")
    coalmine_runs, floor_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        make_suite(project, n)
        for _ in range(args.repeat):
            floor = measure(
                [sys.executable, str(Path(__file__).resolve()), "--floor", str(n), str(c),
                 "{port}"],
                latency, project,
            )  # fmt: skip
            floor_runs.append(floor)
            print(floor.line("floor", n, ideal))
            shutil.rmtree(project / ".coalmine", ignore_errors=True)  # a fresh store each time
            command = [*env_python, "-m", "coalmine", "eval", "run", "-c", str(c),
                       "--display", "none", *shlex.split(args.args)]  # fmt: skip
            ours = measure(command, latency, project, lambda port: write_config(project, port, c))
            coalmine_runs.append(ours)
            print(ours.line("coalmine", n, ideal))
            if ours.code not in (0,) or ours.requests != n:
                print(
                    f"  coalmine exited {ours.code} after {ours.requests} requests", file=sys.stderr
                )
                return 1
    best = min(coalmine_runs, key=lambda m: m.wall)
    best_floor = min(floor_runs, key=lambda m: m.wall)
    ratio = best.wall / best_floor.wall
    print(
        f"best of {args.repeat}: coalmine efficiency {ideal / best.wall:.2f} "
        f"(floor {ideal / best_floor.wall:.2f}; coalmine/floor wall {ratio:.2f}x), "
        f"cpu {1000 * best.cpu / n:.3f} ms/case (target <= 0.5), "
        f"outside the requests {best.wall - best.active:.2f} s (target <= 0.5)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
