"""``coalmine canary run|list`` end to end, as real subprocesses."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers.cli import run_main
from tests.helpers.processes import wait_gone
from tests.helpers.project import Project

ECHO_INJECTION = "import sys\nsys.stdin.read()\nprint('SQL injection in login()')\n"


def qa_project(project: Project, body: str = ECHO_INJECTION) -> None:
    argv = project.agent_script("qa", body)
    project.config({"agents": {"QA Coordinator": {"provider": "command", "argv": argv}}})


@pytest.mark.slow
def test_second_run_same_day_writes_dash_2_and_never_overwrites(project: Project) -> None:
    qa_project(project)
    project.canary("qa-001-login")
    first = project.run_cli("canary", "run", "--display", "none")
    second = project.run_cli("canary", "run", "--display", "none")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    names = [p.name for p in project.results()]
    assert len(names) == 2
    stem = min(names, key=len).removesuffix(".json")
    assert stem.startswith("canary-run-20")
    assert sorted(names) == sorted([f"{stem}.json", f"{stem}-2.json"])
    for path in project.results():
        assert json.loads(path.read_text())["run_id"] == path.stem
    assert f"{stem}.json" in first.stdout
    assert f"{stem}-2.json" in second.stdout


def test_one_canary_is_counted_in_the_singular(project: Project) -> None:
    qa_project(project)
    project.canary("qa-001-login")
    run = project.run_cli("canary", "run", "--display", "plain")
    assert run.returncode == 0, run.stderr
    assert "coalmine: running 1 canary (judge: none)" in run.stderr
    listed = project.run_cli("canary", "list")
    assert "\n1 canary, 0 invalid; judge: unset" in listed.stdout


def test_resume_given_a_selector_says_how_to_run_it(project: Project) -> None:
    qa_project(project)
    project.canary("qa-001-login")
    proc = project.run_cli("canary", "run", "--resume", "qa-001")
    assert proc.returncode == 2
    assert "error: no run matches 'qa-001'" in proc.stderr
    assert "hint: 'qa-001' selects canaries, not a run: `coalmine canary run qa-001`" in proc.stderr
    other = project.run_cli("canary", "run", "--resume", "01NOSUCHRUN")
    assert other.returncode == 2
    assert "hint:" not in other.stderr  # not a selector either: no hint to give


def test_a_cost_limit_over_unpriced_agents_says_it_may_limit_nothing(project: Project) -> None:
    qa_project(project)
    project.canary("qa-001-login")
    proc = project.run_cli("canary", "run", "--max-cost", "5", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    assert (
        "warning: --max-cost counts a call at the cost its provider reports, else at its model's "
        "price under 'pricing:'; there is no price for QA Coordinator (no model), so it may limit "
        "nothing"
    ) in proc.stderr
    quiet = project.run_cli("canary", "run", "--display", "none")
    assert "warning" not in quiet.stderr  # no limit asked, nothing to say


def test_each_report_says_where_it_was_written(project: Project) -> None:
    qa_project(project)
    project.canary("qa-001-login")
    out = project.root / "out"
    proc = project.run_cli(
        "canary", "run", "--display", "none",
        "--report", f"junit:{out / 'junit.xml'}", "--report", f"markdown:{out / 'run.md'}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"wrote the junit report to {out / 'junit.xml'}" in proc.stderr
    assert f"wrote the markdown report to {out / 'run.md'}" in proc.stderr
    assert (out / "junit.xml").is_file() and (out / "run.md").is_file()


def test_format_json_prints_exactly_the_result_file(project: Project) -> None:
    qa_project(project)
    project.canary("qa-001-login")
    proc = project.run_cli("canary", "run", "--format", "json", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    assert printed == project.last_result()
    assert set(printed) >= {"run_id", "timestamp", "summary", "results"}
    result = printed["results"][0]
    assert set(result) >= {
        "id", "phase", "title", "agent", "verdict", "composite_score", "grader_scores",
        "duration_seconds",
    }  # fmt: skip
    assert result["grader_scores"]["keyword"] == {
        "score": 1.0,
        "passed": True,
        "weight": 1.0,
        "matched": 1,
        "required": 1,
        "forbidden_found": [],
        "missing": [],
    }


@pytest.mark.slow
def test_selectors_pick_one_and_reject_unknown_or_ambiguous(project: Project) -> None:
    qa_project(project)
    project.canary("qa-001-login")
    project.canary("qa-002-logout")
    project.canary("qa-002-session")
    one = project.run_cli("canary", "run", "qa-001", "--format", "json", "--display", "none")
    assert one.returncode == 0, one.stderr
    assert [r["id"] for r in json.loads(one.stdout)["results"]] == ["qa-001-login"]

    unknown = project.run_cli("canary", "run", "qa-009")
    assert unknown.returncode == 2
    assert "no canary matches 'qa-009'" in unknown.stderr
    assert "qa-001-login, qa-002-logout, qa-002-session" in unknown.stderr

    ambiguous = project.run_cli("canary", "run", "qa-002")
    assert ambiguous.returncode == 2
    assert "ambiguous" in ambiguous.stderr and "qa-002-logout, qa-002-session" in ambiguous.stderr


def test_failures_are_explained_and_exit_1(project: Project) -> None:
    qa_project(project, "import sys\nsys.stdin.read()\nprint('All good, TODO later')\n")
    project.canary(
        "qa-001-login",
        graders=[
            {"type": "keyword", "config": {"required": ["injection", "xss"], "forbidden": ["todo"]}}
        ],
    )
    proc = project.run_cli("canary", "run", "--display", "none")
    assert proc.returncode == 1
    assert "| qa-001 | qa | Qa 001 Login | QA Coordinator | 0.00 | ❌ FAIL |" in proc.stdout
    assert "missing keywords 'injection', 'xss'" in proc.stdout
    assert "forbidden found 'todo'" in proc.stdout


def test_timeout_is_agent_error_fail(project: Project) -> None:
    qa_project(project, "import sys, time\nsys.stdin.read()\ntime.sleep(60)\n")
    project.canary("qa-001-login", timeout=0.5)
    proc = project.run_cli("canary", "run", "--display", "none")
    assert proc.returncode == 1
    result = project.last_result()["results"][0]
    assert result["verdict"] == "FAIL"
    assert result["reason"] == "agent_error"
    assert result["composite_score"] == 0.0
    assert "timed out after 0.5s" in result["error"]


@pytest.mark.parametrize("command", [("canary", "run"), ("eval", "run")])
def test_without_a_config_a_run_says_that_coalmine_init_proposes_one(
    project: Project, command: tuple[str, str]
) -> None:
    missing = project.run_cli(*command)
    assert missing.returncode == 2
    assert "error: no coalmine.yaml" in missing.stderr
    assert f"hint: `coalmine init --root {project.root.resolve()}` proposes one" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_missing_config_and_typos_are_exit_2_with_file_and_line(project: Project) -> None:
    project.canary("qa-001-login")
    missing = project.run_cli("canary", "run")
    assert missing.returncode == 2
    assert "no coalmine.yaml" in missing.stderr

    project.config(
        "agents:\n  QA Coordinator:\n    provider: command\n    argvs: [python3, qa.py]\n"
    )
    typo = project.run_cli("canary", "run")
    assert typo.returncode == 2
    assert "coalmine.yaml:4: agent 'QA Coordinator': unknown key 'argvs'" in typo.stderr
    assert "did you mean 'argv'?" in typo.stderr


def test_unknown_agent_in_routing_names_the_choices(project: Project) -> None:
    project.config(
        "agents:\n"
        "  QA Coordinator: {provider: command, argv: [python3, qa.py]}\n"
        "routing:\n"
        "  qa: QA Coordinater\n"
    )
    project.canary("qa-001-login")
    proc = project.run_cli("canary", "list")
    assert proc.returncode == 2
    assert "coalmine.yaml:4: routing.qa: unknown agent 'QA Coordinater'" in proc.stderr
    assert "(did you mean 'QA Coordinator'?)" in proc.stderr


def test_list_shows_agents_and_invalid_specs(project: Project) -> None:
    qa_project(project)
    project.canary("qa-001-login")
    project.canary(
        "rel-001-notes",
        raw="id: rel-001-notes\nphase: relase\ntitle: t\nprompt: p\n"
        "expected: {graders: [{type: keyword}]}\n",
    )
    proc = project.run_cli("canary", "list")
    assert proc.returncode == 2
    assert "qa-001-login  qa     QA Coordinator  command   keyword" in proc.stdout
    assert "rel-001-notes.yaml:2: unknown phase 'relase' (did you mean 'release'?)" in proc.stderr


def test_jobs_run_canaries_concurrently(project: Project) -> None:
    body = (
        "import sys, time, pathlib\n"
        "prompt = sys.stdin.read()\n"
        "log = pathlib.Path('times.log')\n"
        "start = time.time(); time.sleep(0.6)\n"
        "with log.open('a') as f: f.write(f'{start} {time.time()}\\n')\n"
        "print('injection')\n"
    )
    qa_project(project, body)
    for n in range(3):
        project.canary(f"qa-00{n}-c")
    proc = project.run_cli("canary", "run", "--jobs", "3", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    spans = [
        tuple(map(float, ln.split()))
        for ln in (project.root / "times.log").read_text().split("\n")
        if ln
    ]
    assert len(spans) == 3
    # With three jobs every run starts before any run ends: the spans overlap.
    assert max(s for s, _ in spans) < min(e for _, e in spans)


@pytest.mark.slow
def test_ctrl_c_keeps_finished_canaries_and_exits_3(project: Project) -> None:
    body = (
        "import os, sys, time\n"
        "prompt = sys.stdin.read()\n"
        "if 'slow' in prompt:\n"
        "    open('slow.pid', 'w').write(str(os.getpid()))\n"
        "    time.sleep(120)\n"
        "print('injection')\n"
    )
    qa_project(project, body)
    project.canary("qa-001-fast", prompt="fast one")
    project.canary("qa-002-slow", prompt="slow one")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "coalmine", "canary", "run", "--root", str(project.root),
         "--display", "plain"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    pid_file = project.root / "slow.pid"
    deadline = time.monotonic() + 20
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_file.exists(), "the slow agent never started"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 3, stderr
    assert "interrupted: 1 of 2 canaries finished" in stderr
    data = project.last_result()
    assert data["interrupted"] is True
    assert [r["id"] for r in data["results"]] == ["qa-001-fast"]
    assert "qa-001" in stdout and "qa-002" not in stdout.split("### ")[0].split("**Summary")[0]
    slow_pid = int(pid_file.read_text())
    assert wait_gone(slow_pid), "the interrupted agent's process was left running"


def test_python_dash_m_and_version() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "coalmine", "--version"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith("coalmine, version ")


def test_a_hung_python_agent_does_not_keep_coalmine_alive(project: Project) -> None:
    project.write("agents_hang/__init__.py", "")
    project.write("agents_hang/slow.py", "import time\ndef run(prompt):\n    time.sleep(120)\n")
    project.config(
        {"agents": {"QA Coordinator": {"provider": "python", "target": "agents_hang.slow:run"}}}
    )
    project.canary("qa-001-login", timeout=0.5)
    # The agent sleeps 120 s; coalmine must give up at 0.5 s and exit, not wait for it.
    proc = project.run_cli("canary", "run", "--display", "none", timeout=30)
    assert proc.returncode == 1
    assert project.last_result()["results"][0]["error"].endswith("timed out after 0.5s")


def _on_a_terminal(args: list[str]) -> str:
    """What ``python -m coalmine ARGS`` prints with its stdout on a pseudo-terminal."""
    main, child = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "coalmine", *args],
            stdin=subprocess.DEVNULL, stdout=child, stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "120", "TERM": "xterm"}, timeout=60, check=False,
        )  # fmt: skip
        os.close(child)
        child = -1
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main)
        if child != -1:
            os.close(child)
    assert proc.returncode in (0, 1), proc.stderr
    return b"".join(chunks).decode("utf-8", "replace")


def test_the_results_are_drawn_on_a_terminal_and_markdown_in_a_pipe(project: Project) -> None:
    qa_project(project)
    project.canary("qa-001-login")
    args = ["canary", "run", "--display", "none", "--root", str(project.root)]
    drawn = re.sub(r"\x1b\[[0-9;]*m", "", _on_a_terminal(args))  # colours off, to read it
    assert "Canary Run Results" in drawn and "Summary: 1/1 passed" in drawn
    assert "───" in drawn  # the table is drawn …
    assert "**Summary:**" not in drawn and "|---" not in drawn and "###" not in drawn  # … not raw
    piped = project.run_cli("canary", "run", "--display", "none")
    assert "**Summary:**" in piped.stdout  # a pipe gets the markdown itself
    raw = _on_a_terminal([*args, "--format", "markdown"])
    assert "**Summary:**" in raw


def test_a_blocking_gate_makes_an_advisory_canary_block(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.config({"agents": {"QA Coordinator": {"provider": "echo"}}})
    raw = (
        "id: qa-001-soft\nphase: qa\ntitle: Soft\nprompt: nothing here\nblocking: false\n"
        "expected:\n  graders:\n    - {type: keyword, config: {required: [injection]}}\n"
    )
    project.canary("qa-001-soft", raw=raw)
    args = ("canary", "run", "--root", str(project.root), "--display", "none")
    assert run_main(*args)[0] == 0  # advisory on its own
    monkeypatch.setenv("COALMINE_BLOCKING_GATE", "canaries")  # as `gates run` sets it
    code, out = run_main(*args)
    assert code == 1
    assert "canary qa-001-soft says blocking: false, but the blocking gate canaries runs it" in out
