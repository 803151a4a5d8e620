"""How much time does coalmine add around the agents it runs? Prints ratios against the ideal.

Run: .venv/bin/python bench/perf/canary_overhead.py [--canaries 300]

1. Runner overhead: N canaries whose python agent answers at once. The ideal is 0 s of harness
   time, so the number to watch is milliseconds of overhead per canary (planning, grading,
   result file included).
2. Command agents: coalmine's command provider against a bare ``subprocess.run`` of the same
   program with the same stdin (the ideal). Ratio = coalmine / bare.
3. Graders: keyword + structural on a 1 MB response, against one pass of ``casefold`` and
   ``splitlines`` over it (the least any grader must do). Ratio = grader / ideal.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from benchproject import ANSWER, make_project

from coalmine.canary.plan import plan_canaries
from coalmine.canary.run import run_canaries
from coalmine.graders.keyword import KeywordConfig, score_keywords
from coalmine.graders.structural import StructuralConfig, score_structure
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.providers.command import CommandProvider, CommandSettings


def bench_runner(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root, n)
        for jobs in (1, 8):
            t0 = time.perf_counter()
            plan = plan_canaries(root)
            t1 = time.perf_counter()
            outcome = anyio.run(lambda: run_canaries(plan, jobs=jobs))  # noqa: B023
            t2 = time.perf_counter()
            assert outcome.run.summary.passed == n
            print(
                f"runner  jobs={jobs}: {n} canaries, plan {1000 * (t1 - t0) / n:.2f} ms/canary, "
                f"run {1000 * (t2 - t1) / n:.2f} ms/canary (ideal 0; agent time ~0)"
            )


def bench_command(calls: int) -> None:
    argv = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"]
    prompt = "x" * 10_000
    bare = []
    for _ in range(calls):
        t0 = time.perf_counter()
        subprocess.run(argv, input=prompt.encode(), capture_output=True, check=True)
        bare.append(time.perf_counter() - t0)
    provider = CommandProvider(
        agent="bench", settings=CommandSettings(argv=argv), base_dir=Path.cwd()
    )
    ours = []

    async def one() -> None:
        t0 = time.perf_counter()
        out = await provider.call(AgentRequest(prompt, CallContext("c", "bench")))
        ours.append(time.perf_counter() - t0)
        assert out.text == prompt

    for _ in range(calls):
        anyio.run(one)
    b, o = statistics.median(bare), statistics.median(ours)
    print(
        f"command provider: median {1000 * o:.1f} ms vs bare subprocess {1000 * b:.1f} ms "
        f"-> ratio {o / b:.2f} (ideal 1.00)"
    )


def bench_graders() -> None:
    text = (ANSWER + "Body text with a label: value and more prose. " * 20 + "\n") * 1000
    print(f"graders on a {len(text) / 1e6:.1f} MB response:")
    t0 = time.perf_counter()
    lines = text.casefold().splitlines()
    ideal = time.perf_counter() - t0
    assert lines
    t0 = time.perf_counter()
    score_keywords(text, KeywordConfig(required=["injection", "xss", "csrf"], forbidden=["todo"]))
    kw = time.perf_counter() - t0
    t0 = time.perf_counter()
    score_structure(text, StructuralConfig(required_sections=["findings", "rollback"]))
    st = time.perf_counter() - t0
    print(f"  keyword    {1000 * kw:.1f} ms -> ratio {kw / ideal:.1f} vs one casefold+split pass")
    print(f"  structural {1000 * st:.1f} ms -> ratio {st / ideal:.1f} vs one casefold+split pass")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--canaries", type=int, default=300)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    bench_runner(args.canaries)
    bench_command(args.calls)
    bench_graders()


if __name__ == "__main__":
    main()
