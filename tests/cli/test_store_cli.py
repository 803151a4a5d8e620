"""The run store from the command line: kill -9 and resume, parallel writers, compare, cache."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.project import Project

# Each call appends "<case id>" to calls.log, then answers after a short pause.
COUNTING_AGENT = """\
import sys, time, pathlib
prompt = sys.stdin.read()
case = prompt.split()[0]
with open("calls.log", "a") as f:
    f.write(case + "\\n")
time.sleep(float(pathlib.Path("delay").read_text()) if pathlib.Path("delay").exists() else 0)
verdict = "injection" if "good" in prompt else "nothing"
print(f"{case}: {verdict}")
"""


def counting_project(project: Project, n: int = 6) -> list[str]:
    argv = project.agent_script("qa", COUNTING_AGENT)
    project.config({"agents": {"QA Coordinator": {"provider": "command", "argv": argv}}})
    ids = []
    for i in range(n):
        spec_id = f"qa-{i:03d}-case"
        quality = "good" if i % 3 else "bad"
        project.canary(spec_id, prompt=f"{spec_id} {quality} review")
        ids.append(spec_id)
    return ids


def calls(project: Project) -> list[str]:
    log = project.root / "calls.log"
    return log.read_text().split() if log.exists() else []


def db_rows(project: Project, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(project.root / ".coalmine" / "coalmine.db")
    try:
        return [tuple(r) for r in conn.execute(sql)]
    finally:
        conn.close()


def start_canary_run(project: Project) -> subprocess.Popen[bytes]:
    """``coalmine canary run`` in the background, in a process group of its own (to kill)."""
    return subprocess.Popen(
        [sys.executable, "-m", "coalmine", "canary", "run", "--root", str(project.root),
         "--display", "none"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


@pytest.mark.slow
def test_kill_9_then_resume_runs_no_finished_case_twice(project: Project, tmp_path: Path) -> None:
    ids = counting_project(project)
    (project.root / "delay").write_text("0.3")
    proc = start_canary_run(project)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            stored = db_rows(project, "SELECT case_id FROM case_results")
        except sqlite3.OperationalError:  # the store is still being created
            stored = []
        if len(stored) >= 3:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # coalmine and its agent die at once, mid-run
    proc.wait(timeout=10)
    finished_before = {r[0] for r in db_rows(project, "SELECT case_id FROM case_results")}
    assert 3 <= len(finished_before) < len(ids)
    assert db_rows(project, "SELECT status FROM runs") == [("running",)]

    (project.root / "delay").write_text("0")
    resumed = project.run_cli("canary", "run", "--resume", "--display", "none", "--format", "json")
    assert resumed.returncode == 1, resumed.stderr  # the "bad" cases fail
    counts = {i: calls(project).count(i) for i in ids}
    for case_id in finished_before:
        assert counts[case_id] == 1, f"{case_id} ran again after it had finished"
    assert all(1 <= c <= 2 for c in counts.values())  # the case in flight may run twice
    assert db_rows(project, "SELECT status FROM runs") == [("finished",)]

    # The same project, uninterrupted, ends with the same numbers.
    fresh = Project(tmp_path / "fresh")
    counting_project(fresh)
    whole = fresh.run_cli("canary", "run", "--display", "none", "--format", "json")
    got, want = json.loads(resumed.stdout), json.loads(whole.stdout)
    assert got["summary"] == want["summary"]
    assert [(r["id"], r["verdict"], r["composite_score"]) for r in got["results"]] == [
        (r["id"], r["verdict"], r["composite_score"]) for r in want["results"]
    ]


@pytest.mark.slow
def test_a_resume_rewrites_the_file_its_killed_run_wrote(project: Project) -> None:
    ids = counting_project(project, n=4)
    (project.root / "delay").write_text("0.3")
    proc = start_canary_run(project)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(calls(project)) < 2:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    [(run_id, started)] = db_rows(project, "SELECT id, started_at FROM runs")
    # What the run leaves when it is killed after writing its file, before the store knows it.
    shown = project.run_cli("runs", "show", str(run_id), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    stem = f"canary-run-{str(started)[:10]}"
    record = {**json.loads(shown.stdout), "run_id": stem}
    own = project.root / "bench" / "results" / f"{stem}.json"
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps(record), encoding="utf-8")

    (project.root / "delay").write_text("0")
    resumed = project.run_cli("canary", "run", "--resume", "--display", "none")
    assert resumed.returncode == 1, resumed.stderr
    assert project.results() == [own]  # its own file, rewritten; no -2 beside it
    data = json.loads(own.read_text(encoding="utf-8"))
    assert (data["run_id"], data["store_run_id"], data["interrupted"]) == (stem, run_id, False)
    assert [r["id"] for r in data["results"]] == ids
    assert db_rows(project, "SELECT results_file FROM runs") == [(str(own),)]


@pytest.mark.slow
def test_ctrl_c_prints_the_resume_command_and_resume_finishes(project: Project) -> None:
    counting_project(project, n=3)
    (project.root / "delay").write_text("0.5")
    proc = subprocess.Popen(
        [sys.executable, "-m", "coalmine", "canary", "run", "--root", str(project.root),
         "--display", "plain"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while len(calls(project)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 3
    (run_id,) = db_rows(project, "SELECT id FROM runs")[0]
    assert f"resume with: coalmine canary run --resume {run_id}" in stderr
    assert db_rows(project, "SELECT status FROM runs") == [("interrupted",)]

    (project.root / "delay").write_text("0")
    done = project.run_cli("canary", "run", "--resume", str(run_id), "--display", "none")
    assert done.returncode == 1, done.stderr
    assert db_rows(project, "SELECT status, COUNT(*) FROM runs") == [("finished", 1)]
    assert len(db_rows(project, "SELECT * FROM case_results")) == 3
    assert project.last_result()["interrupted"] is False  # the run's own file, rewritten whole


def test_two_processes_write_one_store_at_once(project: Project) -> None:
    counting_project(project, n=8)
    (project.root / "delay").write_text("0.05")
    cmd = [sys.executable, "-m", "coalmine", "canary", "run", "--root", str(project.root),
           "--display", "none", "--jobs", "4"]  # fmt: skip
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]  # fmt: skip
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 1, err
    runs = db_rows(project, "SELECT id, status, label FROM runs")
    assert len(runs) == 2 and {r[1] for r in runs} == {"finished"}
    assert len({r[2] for r in runs}) == 2  # two result files, neither overwritten
    per_run = db_rows(project, "SELECT run_id, COUNT(*) FROM case_results GROUP BY run_id")
    assert sorted(c for _, c in per_run) == [8, 8]
    grades = db_rows(project, "SELECT COUNT(*) FROM grades")
    assert grades == [(16,)]


def _result_file(path: Path, verdicts: list[str], scores: list[float]) -> Path:
    results = [
        {"id": f"qa-{i:03d}-x", "phase": "qa", "title": "t", "agent": "QA", "verdict": v,
         "composite_score": s, "grader_scores": {"keyword": {"score": s, "passed": s >= 0.8}},
         "duration_seconds": 1.0}
        for i, (v, s) in enumerate(zip(verdicts, scores, strict=True))
    ]  # fmt: skip
    data = {"run_id": path.stem, "timestamp": "2026-04-13T07:30:00Z",
            "summary": {"total": len(results), "passed": verdicts.count("PASS"),
                        "failed": verdicts.count("FAIL"), "composite_score": 0.5},
            "results": results}  # fmt: skip
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow
def test_compare_prints_exact_regressions_and_mcnemar_p(project: Project) -> None:
    project.config({"agents": {}})
    base = _result_file(
        project.root / "canary-run-2026-04-13.json",
        ["PASS", "PASS", "PASS", "PASS", "FAIL"], [0.9, 0.9, 0.8, 0.9, 0.4],
    )  # fmt: skip
    new = _result_file(
        project.root / "canary-run-2026-04-14.json",
        ["FAIL", "FAIL", "PASS", "FAIL", "PASS"], [0.5, 0.6, 0.8, 0.3, 0.9],
    )  # fmt: skip
    imported = project.run_cli("runs", "import", str(base), str(new))
    assert imported.returncode == 0, imported.stderr
    out = project.run_cli("compare", "canary-run-2026-04-13", "canary-run-2026-04-14")
    assert out.returncode == 1  # there are regressions
    assert "**Regressions (3):**" in out.stdout
    for case in ("qa-000-x", "qa-001-x", "qa-003-x"):
        assert f"- {case}: PASS → FAIL" in out.stdout
    assert "- qa-004-x: FAIL → PASS (composite 0.40 → 0.90)" in out.stdout
    # McNemar: b = 3, c = 1, n = 4: p = 2·(C(4,0) + C(4,1))/2^4 = 2·5/16 = 0.625
    assert "p = 0.625" in out.stdout
    # Wilcoxon on deltas -0.4, -0.3, 0, -0.6, +0.5: zero dropped; |d| ranks 0.3→1, 0.4→2,
    # 0.5→3, 0.6→4; W+ = 3; P(|W+ − 5| ≥ 2) over 16 sign patterns = 10/16 = 0.625
    assert "Wilcoxon signed-rank test (exact) gives p = 0.625" in out.stdout
    # Files compare too, without importing them.
    direct = project.run_cli("compare", str(base), str(new))
    assert direct.stdout == out.stdout


@pytest.mark.slow
def test_cache_answers_repeat_runs_and_explains_misses(project: Project) -> None:
    counting_project(project, n=2)
    first = project.run_cli("canary", "run", "--cache", "--display", "none")
    assert first.returncode == 1
    second = project.run_cli("canary", "run", "--cache-explain", "--display", "none")
    assert len(calls(project)) == 2  # the second run called no agent
    assert "- qa-000-case: hit" in second.stdout
    project.canary("qa-001-case", prompt="qa-001-case good review, reworded")
    third = project.run_cli("canary", "run", "--cache-explain", "--display", "none")
    assert "- qa-001-case: miss: the prompt is new or changed" in third.stdout
    # A damaged entry is a miss, never a crash (short answers live in the blobs table).
    conn = sqlite3.connect(project.root / ".coalmine" / "coalmine.db")
    conn.execute("UPDATE blobs SET text = 'garbage'")
    conn.commit()
    conn.close()
    fourth = project.run_cli("canary", "run", "--cache-explain", "--display", "none")
    assert fourth.returncode == 1, fourth.stderr
    assert "miss: the cached answer's text is missing or damaged" in fourth.stdout


@pytest.mark.slow
def test_runs_list_show_and_report(project: Project) -> None:
    counting_project(project, n=2)
    run = project.run_cli("canary", "run", "--display", "none")
    listed = project.run_cli("runs", "list")
    assert listed.returncode == 0
    assert "finished" in listed.stdout and "1/2" in listed.stdout
    shown = project.run_cli("runs", "show", "latest")
    table = run.stdout.split("**Summary:**")[0]
    assert shown.stdout.split("**Summary:**")[0] == table  # the same table as the run printed
    report = project.run_cli("report", "latest", "--format", "json")
    assert json.loads(report.stdout)["summary"]["total"] == 2
    shutil.rmtree(project.root / "bench" / "results")  # reports render from the store alone
    again = project.run_cli("report", "latest", "--format", "markdown")
    assert again.stdout.split("**Summary:**")[0] == table
