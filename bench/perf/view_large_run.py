"""How fast does ``coalmine view`` serve two 100,000-case eval runs? Per-page times and memory.

Run: .venv/bin/python bench/perf/view_large_run.py [--cases 100000] [--out DIR] [--runs 5]

Builds a store (in a temp dir, or in ``--out``, which is kept and reused when it already holds
one) with two eval runs of N cases each over four suites, written through the store package as
the engine writes them: an ``AttemptWriter`` of records with prompt, expected value, tags, an
output of 300-600 characters and ``equals`` and ``contains`` grades; about 20% fail and a few
error. The second run flips about 2% of the cases (half regressions, half fixes), so the compare
page has something to show. Each suite gets its stored summary and both runs are finished.

Then it starts ``python -m coalmine view --port 0`` as a user would, and requests each page
over one keep-alive connection: a first (cold) request and ``--runs`` more, to the end of the
body. It prints the first, median and worst time of each page (the slower of the first and the
median is held against the 300 ms budget), and the server's peak RSS (VmHWM) against the 150 MB
budget. A benchmark, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from coalmine.evals.summary import FAILURES_LISTED, summarise_attempts
from coalmine.results import EvalSuiteResult, EvalTokens
from coalmine.store.evals import (
    Attempt,
    AttemptWriter,
    end_run,
    iter_attempts,
    save_case_verdicts,
    save_suite_summary,
)
from coalmine.store.runs import NewRun, Store

PAGE_BUDGET_MS = 300.0
MEMORY_BUDGET_MB = 150.0
SUITES = ("billing", "extraction", "summaries", "support-qa")
RARE_WORD = "zeppelin"
"""A word in about 0.3% of the outputs: what ``?q=`` searches (a rare word scans the most)."""
WORDS = (
    "account invoice refund order customer shipping address payment card balance plan upgrade"
    " cancel renewal discount coupon receipt tax region delivery package tracking warehouse"
    " return policy window days business support ticket agent escalation priority response"
    " summary document section clause contract party term date amount total currency field"
    " value extract parse table column row header footnote answer question reason because"
    " therefore however also the a an of to in for with on by from is are was were be been"
    " will would should could may might must can not no yes please thank you customer's our"
).split()
TAGS = ("smoke", "regression", "edge", "multilingual", "long", "pii", "math", "format",
        "tool-use", "refusal", "json", "policy")  # fmt: skip


# -- the store ----------------------------------------------------------------------------------


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars].rstrip()


def outcomes(n: int, rng: random.Random) -> list[str]:
    """Run A's outcome per case: ~79.5% pass, ~20% fail (a few of them timeouts), ~0.3% error."""
    out = []
    for _ in range(n):
        r = rng.random()
        out.append(
            "error" if r < 0.003 else "timeout" if r < 0.005 else "fail" if r < 0.205 else "pass"
        )
    return out


def flipped(base: list[str], rng: random.Random) -> tuple[list[str], int, int]:
    """Run B's outcomes: 1% of cases regress (A's passes fail), 1% are fixed (A's fails pass)."""
    new = list(base)
    passes = [i for i, o in enumerate(base) if o == "pass"]
    others = [i for i, o in enumerate(base) if o != "pass"]
    k = len(base) // 100
    regressions = rng.sample(passes, k=min(k, len(passes)))
    fixes = rng.sample(others, k=min(k, len(others)))
    for i in regressions:
        new[i] = "fail"
    for i in fixes:
        new[i] = "pass"
    return new, len(regressions), len(fixes)


def attempt(suite: str, index: int, outcome: str, rng: random.Random) -> Attempt:
    """One attempt as ``_run_attempt`` stores it (one repeat, two graders, weight 1 each)."""
    case_id = f"{suite}-{index:06d}"
    expected = f"{rng.choice(WORDS)} {rng.randrange(10_000)} {rng.choice(WORDS)}"
    keywords = rng.sample(WORDS[:40], k=3)
    tags = rng.sample(TAGS, k=rng.randint(1, 3))
    record: dict[str, Any] = {
        "agent": "a",
        "prompt": f"Case {case_id}. " + _text(rng, 190),
        "expected": expected,
        "tags": tags,
    }
    latency = round(rng.uniform(0.3, 4.0), 4)
    prompt_tokens, completion_tokens = rng.randint(60, 400), rng.randint(40, 300)
    cost = round(prompt_tokens * 2.5e-6 + completion_tokens * 1e-5, 6)
    if outcome == "timeout":  # the agent never answered: a fail with no grades
        record["error"] = f"timeout: the agent did not answer within 60 s (case {case_id})"
        record["call_failures"] = ["timeout: no answer within 60 s"]
        return Attempt(suite, case_id, 0, "fail", True, 0.0, {}, None, None, None, None,
                       "timeout", record)  # fmt: skip
    output = _text(rng, rng.randint(300, 600))
    if rng.random() < 0.003:
        output = f"{output[:150]} {RARE_WORD} {output[150:]}"
    equals_ok = contains_ok = True
    if outcome == "fail":  # equals alone fails half the time, contains alone or both a quarter
        r = rng.random()
        equals_ok, contains_ok = r >= 0.75, 0.5 <= r < 0.75
    if equals_ok:
        output = f"{output} Final answer: {expected}"
    found = keywords if contains_ok else [k for k in keywords if rng.random() < 0.4][:2]
    missing = [k for k in keywords if k not in found]
    at = rng.randrange(20, 200)
    equals: dict[str, Any] = {"score": 1.0 if equals_ok else 0.0, "passed": equals_ok,
                              "weight": 1.0, "equal": equals_ok, "as_json": False}  # fmt: skip
    if not equals_ok:
        equals |= {"first_difference": at, "expected_excerpt": expected[:40],
                   "actual_excerpt": "…" + output[at : at + 40] + "…"}  # fmt: skip
    contains = {"score": round(len(found) / len(keywords), 4), "passed": contains_ok,
                "weight": 1.0, "matched": found, "missing": missing, "mode": "all"}  # fmt: skip
    record["output"] = output
    record["model"] = "bench-model"
    scores = {"equals": equals["score"], "contains": contains["score"]}
    if outcome == "error":  # the second grader broke: an error, graded in part
        record["grades"] = {"equals": equals}
        record["error"] = f"case {case_id!r}: contains: config 'value' must be a string or a list"
        return Attempt(
            suite, case_id, 0, "error", True, None, {"equals": equals["score"]}, latency,
            prompt_tokens, completion_tokens, cost, "grader", record,
        )  # fmt: skip
    record["grades"] = {"equals": equals, "contains": contains}
    score = round((equals["score"] + contains["score"]) / 2, 6)
    if outcome == "fail":
        why = []
        if not equals_ok:
            why.append(f"equals failed: output differs from the value at character {at}")
        if not contains_ok:
            why.append("contains failed: missing " + ", ".join(map(repr, missing)))
        record["why"] = "; ".join(why)
    return Attempt(
        suite, case_id, 0, "pass" if outcome == "pass" else "fail", True, score, scores,
        latency, prompt_tokens, completion_tokens, cost, None, record,
    )  # fmt: skip


def write_run(store: Store, root: Path, started: datetime, plan: list[str], seed: int) -> str:
    """One finished eval run of the planned outcomes, split over SUITES, with suite summaries."""
    run_id = store.start_run(
        NewRun(
            kind="eval", root=str(root), started_at=started, git_commit=f"{seed:040x}",
            git_dirty=False, coalmine_version="bench", command_line=["coalmine", "eval", "run"],
            selectors=list(SUITES),
            options={"filters": [], "limit": None, "shuffle": False, "repeats": 1,
                     "reducer": "mean", "concurrency": 32},
        )
    )  # fmt: skip
    writer = AttemptWriter(store, run_id)
    per_suite = -(-len(plan) // len(SUITES))
    for i, outcome in enumerate(plan):
        suite = SUITES[i // per_suite]
        writer.add(attempt(suite, i % per_suite, outcome, random.Random(seed * 10_000_019 + i)))
    writer.flush()
    ended = started + timedelta(seconds=len(plan) * 0.05)
    for suite in SUITES:
        summary = summarise_attempts(
            iter_attempts(store, run_id, suite), reducer="mean", repeats=1, min_score=None
        )
        est = summary.estimate
        result = EvalSuiteResult(
            suite_id=suite, run_id=run_id, started_at=int(started.timestamp() * 1000),
            ended_at=int(ended.timestamp() * 1000), cases=summary.cases, passed=summary.passed,
            failed=summary.failed, errored=summary.errored,
            score=round(est.mean, 4) if est.n else 0.0,
            stderr=None if est.stderr is None else round(est.stderr, 4),
            ci95=None if est.ci95 is None else (round(est.ci95[0], 4), round(est.ci95[1], 4)),
            blocking=True, judge_prompt_hash=None,
            provider=", ".join(sorted(summary.providers)) or "none",
            report_path=f"reports/evals/{suite}/{run_id}.json",
            verdict="pass" if summary.gate.passed else "fail", gate=summary.gate, repeats=1,
            reducer="mean", graders=summary.grader_means(),
            tokens=EvalTokens(prompt=summary.prompt_tokens, completion=summary.completion_tokens),
            cost=round(summary.cost, 6) if summary.priced else None,
            latency_seconds=round(summary.latency_total / summary.latency_n, 4)
            if summary.latency_n else None,
            bad_lines=0, failures=summary.failures[:FAILURES_LISTED], coalmine_version="bench",
        )  # fmt: skip
        save_suite_summary(store, run_id, suite, result.model_dump(mode="json", by_alias=True))
        save_case_verdicts(store, run_id, suite, summary.case_verdicts)  # as write_suite_result
    end_run(store, run_id, status="finished", ended_at=ended, results_file=None)
    return run_id


def build_store(path: Path, root: Path, cases: int) -> None:
    """Two eval runs of ``cases`` cases each; prints what it built and how long it took."""
    t0 = time.perf_counter()
    base = outcomes(cases, random.Random(1))
    new, regressions, fixes = flipped(base, random.Random(2))
    now = datetime.now(UTC).replace(microsecond=0)
    store = Store.open(path)
    try:
        write_run(store, root, now - timedelta(days=2), base, seed=1)
        write_run(store, root, now - timedelta(days=1), new, seed=2)
    finally:
        store.close()
    seconds = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    print(
        f"built 2 eval runs x {cases:,} cases ({len(SUITES)} suites) in {seconds:.1f} s"
        f" ({1e6 * seconds / (2 * cases):.0f} us/attempt); store {size / 1e6:.0f} MB;"
        f" run 2 flips {regressions:,} passes to fails and {fixes:,} fails to passes"
    )


def store_facts(path: Path) -> tuple[str, str, str, str, int]:
    """(base run, new run, a suite, a failing case of it in the new run, attempts per run)."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        runs = [r[0] for r in conn.execute("SELECT id FROM runs WHERE kind = 'eval' ORDER BY id")]
        if len(runs) < 2:
            raise SystemExit(f"{path} holds {len(runs)} eval runs; the benchmark needs two")
        base, new = runs[-2:]
        fails = conn.execute(
            "SELECT suite, case_id FROM eval_attempts WHERE run_id = ? AND status = 'fail'"
            " AND error_kind IS NULL LIMIT 2000",
            (new,),
        ).fetchall()
        suite, case_id = fails[len(fails) // 2]  # a graded failure, from well into the run
        (n,) = conn.execute(
            "SELECT COUNT(*) FROM eval_attempts WHERE run_id = ?", (new,)
        ).fetchone()
    finally:
        conn.close()
    return base, new, suite, case_id, n


# -- the server and the pages -------------------------------------------------------------------


def start_viewer(store: Path, root: Path) -> tuple[subprocess.Popen[str], str]:
    """``coalmine view --port 0`` as a subprocess, and the URL its first line names."""
    argv = [sys.executable, "-m", "coalmine", "view", "--store", str(store), "--root", str(root),
            "--port", "0"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("coalmine view: http"):
        proc.kill()
        raise SystemExit(f"the viewer did not start (exit {proc.wait()}): {line!r}")
    return proc, line.split()[2]


def vm_kb(pid: int, field: str) -> int | None:
    """A ``VmHWM``/``VmRSS`` line of /proc/PID/status in kB (``None`` off Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def time_page(conn: http.client.HTTPConnection, path: str, runs: int) -> tuple[list[float], int]:
    """Seconds of each GET of ``path`` (the first one cold, then ``runs`` more), body size."""
    times, size = [], 0
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - t0
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
        times.append(elapsed)
        size = len(body)
    return times, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000, help="cases per run (100000)")
    parser.add_argument("--out", type=Path, help="build the store here and keep it (reused)")
    parser.add_argument("--runs", type=int, default=5, help="timed requests per page (5)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="coalmine-view-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    store = root / ".coalmine" / "coalmine.db"
    proc = None
    try:
        if store.is_file():
            print(f"reusing the store at {store}")
        else:
            build_store(store, root, args.cases)
        base, new, suite, case_id, n = store_facts(store)
        proc, url = start_viewer(store, root)
        print(f"viewer: {url} (pid {proc.pid}); {n:,} attempts per run;"
              f" a first request, then {args.runs} more per page, keep-alive")  # fmt: skip
        pages = {
            "runs": "/",
            "run": f"/run/{new}",
            "run ?verdict=FAIL": f"/run/{new}?verdict=FAIL",
            f"run ?q={RARE_WORD}": f"/run/{new}?q={RARE_WORD}",
            "run ?grader=equals": f"/run/{new}?grader=equals",
            "run ?tag=pii": f"/run/{new}?tag=pii",
            "run ?sort=-score": f"/run/{new}?sort=-score",
            "run ?page=500": f"/run/{new}?page=500",
            "case": f"/run/{new}/case?" + urlencode({"suite": suite, "id": case_id}),
            "compare": "/compare?" + urlencode({"base": base, "new": new}),
            "compare page 2": "/compare?" + urlencode({"base": base, "new": new, "page": 2}),
        }
        split = urlsplit(url)
        conn = http.client.HTTPConnection(split.hostname or "127.0.0.1", split.port, timeout=300)
        print(f"{'page':<22} {'first ms':>9} {'median ms':>10} {'max ms':>9} {'x 300 ms':>9}"
              f"  {'':<5} {'KB':>6}")  # fmt: skip
        over: list[tuple[str, float]] = []
        for label, path in pages.items():
            try:
                times, size = time_page(conn, path, args.runs)
            except (OSError, RuntimeError, http.client.HTTPException) as exc:
                print(f"{label:<22} failed: {exc}")
                conn.close()
                conn = http.client.HTTPConnection(split.hostname or "", split.port, timeout=300)
                over.append((label, float("inf")))
                continue
            first = 1000 * times[0]
            median, worst = 1000 * statistics.median(times[1:]), 1000 * max(times[1:])
            slowest = max(first, median)  # the first request pays for what the server keeps
            ratio = slowest / PAGE_BUDGET_MS
            verdict = "PASS" if slowest <= PAGE_BUDGET_MS else "OVER"
            if verdict == "OVER":
                over.append((label, slowest))
            print(f"{label:<22} {first:9.0f} {median:10.0f} {worst:9.0f} {ratio:9.2f}  {verdict:<5}"
                  f" {size / 1024:6.0f}")  # fmt: skip
        conn.close()
        peak, rss = vm_kb(proc.pid, "VmHWM"), vm_kb(proc.pid, "VmRSS")
        if peak is None:
            memory = "peak RSS unknown (no /proc)"
        else:
            mb = peak / 1024
            verdict = "PASS" if mb <= MEMORY_BUDGET_MB else "OVER"
            memory = f"peak RSS {mb:.0f} MB ({mb / MEMORY_BUDGET_MB:.2f} of 150 MB, {verdict})"
            print(f"server {memory}; RSS now {(rss or 0) / 1024:.0f} MB")
        worst_page = max(over, key=lambda o: o[1], default=None)
        pages_line = f"{len(over)} of {len(pages)} pages over the 300 ms budget" + (
            f" (worst: {worst_page[0]}, {worst_page[1]:.0f} ms)" if worst_page else ""
        )
        print(f"summary: {n:,} cases per run: {pages_line}; {memory}")
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
