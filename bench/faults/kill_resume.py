"""SIGKILL `coalmine eval run` or `canary run` again and again; count repeats and orphans.

Run: .venv/bin/python bench/faults/kill_resume.py [--kind eval|canary] [--kills 20] [--cases 40]
     [--seed 7]

One suite of N cases answered by a command agent that sleeps a per-case time (most cases
0.2-1.5 s, a few 5-20 s), starts a grandchild that outlives it unless someone ends it, and logs
every start and answer to a file. The run is SIGKILLed at a random moment (only coalmine's own
process, as the kernel's OOM killer or a lost CI runner would), then resumed with
``--resume``, and killed again, until it finishes. It prints, over all kills:

- repeated calls: a case started again after a kill although its answer had come back more
  than 0.5 s (the store's documented write window) before that kill. Target 0.
- orphans: agent processes (leaders or their children) still alive 2 s after a kill. Target 0.
- totals: the finished run's pass/fail counts against an unkilled run of the same suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT = r"""
import json, os, subprocess, sys, time
prompt = sys.stdin.read()
case, delay, answer = prompt.split("|")
log = os.environ["KILL_BENCH_LOG"]
def note(what):
    with open(log, "a") as f:
        f.write(json.dumps({"case": case, "what": what, "t": time.time()}) + "\n")
note("start")
# A grandchild in the agent's process group, stdout closed: it would outlive a killed run.
subprocess.Popen(["sleep", "120", "kill-bench-orphan"], stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
time.sleep(float(delay))
note("done")
print(answer, end="", flush=True)
"""


def draw_cases(n: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """(case id, delay, answer): most answers come fast, a tenth take 5-20 s; every fifth fails."""
    cases = []
    for i in range(n):
        delay = rng.uniform(5, 20) if rng.random() < 0.1 else rng.uniform(0.2, 1.5)
        cases.append((f"c{i:03d}", f"{delay:.2f}", "yes" if i % 5 else "no"))
    return cases


def make_project(root: Path, n: int, rng: random.Random, *, kind: str) -> None:
    (root / "agent.py").write_text(AGENT)
    (root / "coalmine.yaml").write_text(
        "agents:\n"
        "  bench:\n"
        "    provider: command\n"
        '    argv: ["python3", "agent.py", "kill-bench-agent"]\n'
        "    max_concurrency: 8\n"
        "routing: {qa: bench}\n"
        "judge: none\n"
    )
    cases = draw_cases(n, rng)
    if kind == "canary":
        specs = root / "bench" / "canaries" / "qa"
        specs.mkdir(parents=True)
        for case, delay, answer in cases:
            (specs / f"{case}.yaml").write_text(
                f"id: {case}\nphase: qa\ntitle: {case}\nprompt: '{case}|{delay}|{answer}'\n"
                "expected:\n  graders:\n    - {type: keyword, config: {required: ['yes']}}\n"
            )
        return
    suites = root / "harness" / "evals"
    suites.mkdir(parents=True)
    (suites / "kill.yaml").write_text(
        "agent: bench\ngraders: [{type: equals}]\n"
        "prompt_template: '{{ case }}|{{ delay }}|{{ answer }}'\n"
    )
    with (suites / "kill.jsonl").open("w") as f:
        for case, delay, answer in cases:
            row = {"id": case, "vars": {"case": case, "delay": delay, "answer": answer}}
            f.write(json.dumps({**row, "expected": "yes"}) + "\n")


def coalmine(root: Path, kind: str, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "coalmine", kind, "run", "--root", str(root), "--display", "none"]
        + list(args),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def agent_processes() -> list[int]:
    """Pids of live processes whose argv carries this bench's markers (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (b"kill-bench-agent" in argv or b"kill-bench-orphan" in argv):
            found.append(int(entry.name))
    return found


def read_log(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def totals(root: Path, kind: str) -> dict[str, int]:
    """The stored verdicts of the newest run: {verdict: count} (read-only)."""
    table, column = ("case_results", "verdict") if kind == "canary" else ("eval_attempts", "status")
    db = sqlite3.connect(f"file:{root / '.coalmine' / 'coalmine.db'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            f"SELECT {column}, count(*) FROM {table}"  # noqa: S608 - two fixed names
            f" WHERE run_id = (SELECT max(id) FROM runs) GROUP BY {column}"
        ).fetchall()
    finally:
        db.close()
    return dict(rows)


def has_runs(root: Path) -> bool:
    db_file = root / ".coalmine" / "coalmine.db"
    if not db_file.exists():
        return False
    db = sqlite3.connect(db_file)  # not read-only: a killed writer's WAL may need recovery
    try:
        count: int = db.execute("SELECT count(*) FROM runs").fetchone()[0]
        return count > 0
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return False  # killed while the store was being made
        raise
    finally:
        db.close()


def result_files(root: Path) -> list[str]:
    """The canary result files and their sizes: one file, never a 0-byte stub."""
    folder = root / "bench" / "results"
    return sorted(f"{p.name} ({p.stat().st_size} B)" for p in folder.glob("*.json"))


def repeats(log: list[dict[str, object]], lives: list[tuple[float, float]]) -> int:
    """Starts of a case after a kill, where that killed process had the case's answer back
    more than 0.5 s before the kill. ``lives``: (start, kill) of each killed process."""
    events = [(str(e["case"]), str(e["what"]), float(str(e["t"]))) for e in log]
    count = 0
    for began, killed_at in lives:
        answered = {c: t for c, what, t in events if what == "done" and began < t < killed_at - 0.5}
        for case in [c for c, what, t in events if what == "start" and t > killed_at]:
            if case in answered:
                print(
                    f"  repeated {case}: answered {killed_at - answered[case]:.2f} s before a kill"
                )
                count += 1
                del answered[case]  # one repeat per lost answer, not one per later resume
    return count


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--kind", choices=("eval", "canary"), default="eval")
    ap.add_argument("--keep", action="store_true", help="keep the projects, and print where")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for pid in agent_processes():  # leftovers of an earlier bench run
        os.kill(pid, signal.SIGKILL)

    tmp = tempfile.mkdtemp()
    try:
        base = Path(tmp)
        if args.keep:
            print(f"projects in {base}")
        reference, killed = base / "reference", base / "killed"
        for root in (reference, killed):
            root.mkdir()
            make_project(root, args.cases, random.Random(args.seed), kind=args.kind)
        env = {**os.environ, "KILL_BENCH_LOG": str(reference / "calls.log")}
        coalmine(reference, args.kind, env=env).wait()
        env["KILL_BENCH_LOG"] = str(killed / "calls.log")

        lives: list[tuple[float, float]] = []
        orphans = 0
        resume: list[str] = []
        while True:
            began = time.time()
            proc = coalmine(killed, args.kind, *resume, env=env)
            if len(lives) >= args.kills:
                proc.wait()  # the last resume runs to the end
                break
            try:
                proc.wait(timeout=rng.uniform(0.5, 8.0))
            except subprocess.TimeoutExpired:
                pass
            else:  # it ended before the kill: finished (0, 1), or a fault to show
                if proc.returncode not in (0, 1):
                    assert proc.stderr is not None
                    print(f"exit {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
                break
            os.kill(proc.pid, signal.SIGKILL)
            lives.append((began, time.time()))
            proc.wait()
            time.sleep(2.0)
            left = agent_processes()
            orphans += len(left)
            for pid in left:  # so that one kill's orphans do not count again at the next
                os.kill(pid, signal.SIGKILL)
            resume = ["--resume"] if has_runs(killed) else []  # killed before the run began
        repeated = repeats(read_log(killed / "calls.log"), lives)
        kills = len(lives)
        want, got = totals(reference, args.kind), totals(killed, args.kind)
        print(f"{args.kind} run, kills: {kills}  cases: {args.cases}  seed: {args.seed}")
        print(f"repeated calls of cases answered > 0.5 s before a kill: {repeated}  (target 0)")
        print(f"orphaned agent processes 2 s after a kill: {orphans}  (target 0)")
        print(f"totals unkilled: {want}")
        print(f"totals killed:   {got}  ({'identical' if want == got else 'DIFFERENT'})")
        files_ok = True
        if args.kind == "canary":
            files = result_files(killed)
            files_ok = len(files) == 1 and not files[0].endswith("(0 B)")
            print(f"result files: {', '.join(files)}  ({'one' if files_ok else 'NOT ONE'})")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if repeated == 0 and orphans == 0 and want == got and files_ok else 1


if __name__ == "__main__":
    sys.exit(main())
