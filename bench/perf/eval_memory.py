"""Does ``coalmine eval run`` keep constant memory at a million cases? Prints peaks vs targets.

Run: .venv/bin/python bench/perf/eval_memory.py [--cases 1000000] [--concurrency 400]
     [--latency 0.005] [--args "--workers 2"]

One suite of N cases (two suite-wide graders, so a line is ~70 bytes) runs through the CLI
against the loopback latency server (``latency_server.py``), as a user runs it. Every 0.2 s
the bench reads the high-water mark of resident memory (``VmHWM`` in ``/proc``) of the
``coalmine`` process and of each of its children (the worker processes), so each process's own
peak is known (``wait4`` would give only the largest). It prints the driver's peak against
200 MB, each worker's against 150 MB, the wall time and the rate. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from eval_throughput import server_stats, start_server, write_config  # noqa: E402

DRIVER_TARGET_MB = 200
WORKER_TARGET_MB = 150


def make_suite(root: Path, n: int) -> None:
    """N cases of one suite; the graders are the suite's, so each line is small."""
    suites = root / "harness" / "evals"
    suites.mkdir(parents=True)
    meta = {
        "prompt_template": "Say {{ word }}",
        "graders": [{"type": "equals"}, {"type": "regex", "config": {"value": r"^w\d+$"}}],
    }
    (suites / "big.yaml").write_text(yaml.safe_dump(meta))
    with (suites / "big.jsonl").open("w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"c{i:07d}", "vars": {"word": f"w{i}"}, "expected": f"w{i}"}))
            f.write("\n")


def high_water_mb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as found:
            return [int(p) for p in found.read().split()]
    except OSError:
        return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--concurrency", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.005)
    parser.add_argument("--args", default="--workers 2", help="more flags for `coalmine eval run`")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        t0 = time.perf_counter()
        make_suite(project, args.cases)
        print(f"suite of {args.cases} cases written in {time.perf_counter() - t0:.1f} s")
        server, port = start_server(args.latency)
        try:
            write_config(project, port, args.concurrency)
            command = [
                *(sys.executable, "-m", "coalmine", "eval", "run", "-c", str(args.concurrency)),
                *("--display", "none", *shlex.split(args.args)),
            ]
            t0 = time.perf_counter()
            process = subprocess.Popen(command, cwd=project, stdout=subprocess.DEVNULL)
            peaks: dict[int, int] = {}
            while process.poll() is None:
                for pid in [process.pid, *children(process.pid)]:
                    mb = high_water_mb(pid)
                    if mb is not None:
                        peaks[pid] = max(peaks.get(pid, 0), mb)
                time.sleep(0.2)
            wall = time.perf_counter() - t0
            requests = int(server_stats(port)["requests"])
        finally:
            server.terminate()
            server.wait()
    driver = peaks.pop(process.pid, 0)
    workers = sorted(peaks.values(), reverse=True)
    print(
        f"exit {process.returncode}, {requests} requests in {wall:.1f} s "
        f"({requests / wall:.0f} cases/s)"
    )
    print(f"driver peak RSS {driver} MB (target < {DRIVER_TARGET_MB} MB): "
          f"{driver / DRIVER_TARGET_MB:.2f} of the target")  # fmt: skip
    for number, mb in enumerate(workers, 2):
        print(f"worker {number} peak RSS {mb} MB (target < {WORKER_TARGET_MB} MB): "
              f"{mb / WORKER_TARGET_MB:.2f} of the target")  # fmt: skip
    ok = driver < DRIVER_TARGET_MB and all(mb < WORKER_TARGET_MB for mb in workers)
    return 0 if ok and process.returncode == 0 and requests == args.cases else 1


if __name__ == "__main__":
    sys.exit(main())
