"""How close does ``coalmine eval run`` come to the ideal time? Prints ratios against it.

Run: .venv/bin/python bench/perf/eval_throughput.py [--cases 5000] [--concurrency 200]
     [--latency 0.1] [--profile out.html]

A loopback OpenAI-compatible server (``latency_server.py``, its own process, so its CPU is not
counted) answers every call after a fixed latency. N cases of one suite run at concurrency C
through the real engine: openai provider (httpx), an ``equals`` grader, the run store. The ideal
wall time is ``ceil(N / C) × latency``: efficiency = ideal / wall (1.0 is perfect). CPU is this
process's (harness + HTTP client, planning excluded) per case; memory is the peak RSS of the
process. With ``--latency 0`` the wall time is all harness.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import yaml

from coalmine.evals.plan import plan_evals
from coalmine.evals.run import run_evals
from coalmine.store.runs import Store

HERE = Path(__file__).parent


def make_project(root: Path, n: int, port: int) -> None:
    """coalmine.yaml with one openai agent at the loopback server, and an N-case suite."""
    config = {
        "agents": {
            "bench": {
                "provider": "openai",
                "base_url": f"http://127.0.0.1:{port}/v1",
                "model": "bench-model",
                "retries": 0,
            }
        },
        "judge": "none",
    }
    (root / "coalmine.yaml").write_text(yaml.safe_dump(config))
    suites = root / "harness" / "evals"
    suites.mkdir(parents=True)
    (suites / "bench.yaml").write_text(
        yaml.safe_dump({"graders": [{"type": "equals"}], "prompt_template": "Say {{ word }}"})
    )
    with (suites / "bench.jsonl").open("w") as f:
        for i in range(n):
            word = f"w{i}"
            f.write(json.dumps({"id": f"case-{i:06d}", "vars": {"word": word}, "expected": word}))
            f.write("\n")


def start_server(latency: float) -> tuple[subprocess.Popen[str], int]:
    server = subprocess.Popen(
        [sys.executable, str(HERE / "latency_server.py"), "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    return server, int(line.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--profile", help="write a pyinstrument HTML profile here")
    args = parser.parse_args()
    n, c, latency = args.cases, args.concurrency, args.latency
    server, port = start_server(latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            make_project(root, n, port)
            t0 = time.perf_counter()
            plan = plan_evals(root)
            plan_s = time.perf_counter() - t0
            store = Store.open(root / ".coalmine" / "coalmine.db")
            profiler = None
            if args.profile:
                from pyinstrument import Profiler

                profiler = Profiler()
                profiler.start()
            cpu0, t1 = time.process_time(), time.perf_counter()
            outcome = anyio.run(lambda: run_evals(plan, store=store, concurrency=c))
            wall, cpu = time.perf_counter() - t1, time.process_time() - cpu0
            if profiler is not None:
                profiler.stop()
                Path(args.profile).write_text(profiler.output_html())
            store.close()
    finally:
        server.terminate()
        server.wait()
    result = outcome.suites[0]
    assert result.passed == n, (result.passed, result.failed, result.errored, result.failures[:3])
    ideal = math.ceil(n / c) * latency
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"eval N={n} C={c} latency={latency * 1000:.0f} ms")
    print(f"  plan       {plan_s:.2f} s ({1000 * plan_s / n:.3f} ms/case)")
    print(f"  wall       {wall:.2f} s")
    if ideal:
        print(f"  ideal      {ideal:.2f} s  (ceil(N/C) x latency)")
        print(f"  efficiency {ideal / wall:.2f}  (ideal / wall; target >= 0.5, goal 0.9)")
    print(f"  cpu        {1000 * cpu / n:.3f} ms/case  (target <= 1 ms, goal 0.5 ms)")
    print(f"  peak RSS   {peak_mb:.0f} MB  (target < 200 MB)")


if __name__ == "__main__":
    main()
