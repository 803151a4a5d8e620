"""How long does the ``coalmine`` command take to start? Medians against the bare interpreter.

Run: .venv/bin/python bench/perf/startup.py [--runs 5]

Times, wall clock, the median of ``--runs`` runs of: ``python -c pass`` (the floor: what any
Python command costs), ``coalmine --version``, ``coalmine --help`` and ``python -c "import
coalmine"``. ``coalmine`` is the console script next to this interpreter (else ``python -m
coalmine``). The ratio is against the floor; --version and --help have a target each. A
benchmark, not a test: it always exits 0 (``python -X importtime`` says where time goes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGETS = {"coalmine --version": 0.2, "coalmine --help": 0.3}


def coalmine_command() -> list[str]:
    """The console script installed next to ``sys.executable``, else ``python -m coalmine``."""
    name = "coalmine.exe" if os.name == "nt" else "coalmine"
    script = Path(sys.executable).parent / name
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "coalmine"]


def median_wall(argv: list[str], runs: int) -> float:
    """The median wall-clock time of ``runs`` runs of ``argv`` (each must exit 0)."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (default 5)")
    args = parser.parse_args()
    coalmine = coalmine_command()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "coalmine --version": [*coalmine, "--version"],
        "coalmine --help": [*coalmine, "--help"],
        'python -c "import coalmine"': [sys.executable, "-c", "import coalmine"],
    }
    print(f"coalmine: {' '.join(coalmine)}; median of {args.runs} runs, wall clock")
    print(f"{'command':<30} {'median s':>9} {'x floor':>8}  target")
    floor = None
    for label, argv in commands.items():
        try:
            seconds = median_wall(argv, args.runs)
        except subprocess.CalledProcessError as exc:
            print(f"{label:<30} failed (exit {exc.returncode}): {exc.stderr.decode().strip()}")
            continue
        floor = seconds if floor is None else floor
        target = TARGETS.get(label)
        verdict = (
            "" if target is None else f"{target:.1f} s {'PASS' if seconds <= target else 'over'}"
        )
        print(f"{label:<30} {seconds:9.3f} {seconds / floor:8.1f}  {verdict}")


if __name__ == "__main__":
    main()
