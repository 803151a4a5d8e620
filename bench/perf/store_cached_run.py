"""A run of N cached canaries, end to end through the CLI: wall time and store size.

Run: .venv/bin/python bench/perf/store_cached_run.py [--canaries 10000] [--keep DIR]

The first run fills the response cache (every agent is called once); the second answers every
case from the cache and is the one that counts: the target is under 10 s for 10,000 cases,
table printed, with the store under 50 MB. The ideal for the cached run is the time to read
the specs and print a table; the script prints the per-case cost so regressions show.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchproject import make_project


def timed_run(root: Path, *extra: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "coalmine", "canary", "run", "--root", str(root), "--display",
         "none", *extra],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0 or "**Summary:**" not in proc.stdout:
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--canaries", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="build the project here and keep it")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="coalmine-bench-"))
    try:
        make_project(root, args.canaries, echo_prompt=True, jobs=8)
        n = args.canaries
        cold = timed_run(root, "--cache")
        warm = timed_run(root, "--cache")
        store = size_of(root / ".coalmine")
        per_cold, per_warm = 1000 * cold / n, 1000 * warm / n
        print(f"{n} canaries, first run (fills the cache): {cold:.2f} s ({per_cold:.2f} ms/case)")
        print(f"{n} canaries, cached run (table printed):  {warm:.2f} s ({per_warm:.2f} ms/case)")
        print(f"  -> {warm / 10:.2f} of the 10 s budget")
        print(
            f"store after both runs: {store / 1e6:.1f} MB -> {store / 50e6:.2f} of the 50 MB budget"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
