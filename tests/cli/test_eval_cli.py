"""``coalmine eval run|list`` end to end, as real subprocesses on real projects."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.helpers.cli import run_main
from tests.helpers.openai_server import FakeOpenAI, Reply
from tests.helpers.project import Project

AGENT = """\
import pathlib
import time

COUNTS = {}
LOG = pathlib.Path(__file__).with_name("calls.log")


def run(prompt, context):
    with LOG.open("a", encoding="utf-8") as log:
        log.write(context.case_id + "\\n")
    count = COUNTS[context.case_id] = COUNTS.get(context.case_id, 0) + 1
    verb, _, arg = prompt.partition(":")
    if verb == "sleep":
        time.sleep(float(arg))
        return "slept"
    if verb == "flaky":  # passes the first N calls of its case
        return "PASS" if count <= int(arg) else "FAIL"
    return prompt
"""

SCHEMA = json.loads((files("coalmine") / "schemas" / "eval-result.v1.json").read_text("utf-8"))


def contains(value: str) -> dict[str, Any]:
    return {"type": "contains", "config": {"value": value}}


def case(case_id: str, prompt: str, *graders: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"id": case_id, "prompt": prompt, "graders": list(graders), **more}


def setup(project: Project, config: dict[str, Any] | None = None) -> None:
    project.write("evalbot_agent.py", AGENT)
    project.config(
        config or {"agents": {"Bot": {"provider": "python", "target": "evalbot_agent:run"}}}
    )


def suite(project: Project, name: str, lines: list[dict[str, Any] | str], **meta: Any) -> Path:
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    path = project.write(f"harness/evals/{name}.jsonl", text + "\n")
    if meta:
        project.write(f"harness/evals/{name}.yaml", yaml.safe_dump(meta))
    return path


def table(stdout: str) -> dict[str, list[str]]:
    """The suite table's rows by suite name (cells split on runs of spaces)."""
    lines = stdout.splitlines()
    assert lines[0].split() == [
        "SUITE", "CASES", "PASSED", "FAILED", "ERRORED", "SCORE", "95%", "CI", "VERDICT",
    ]  # fmt: skip
    rows = {}
    for line in lines[1:]:
        if not line.strip() or line.split()[0].endswith(":"):
            break  # the failures, or the report paths
        cells = line.split()
        rows[cells[0]] = cells[1:]
    return rows


def calls(project: Project) -> list[str]:
    log = project.root / "calls.log"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def test_all_passing_exits_0_with_a_table_and_plain_progress(project: Project) -> None:
    setup(project)
    suite(project, "ok", [case("a", "yes", contains("yes")), case("b", "yes!", contains("yes"))])
    proc = project.run_cli("eval", "run", "--display", "plain")
    assert proc.returncode == 0, proc.stderr
    # 2 of 2: Wilson's interval (2/(2 + z²), 1) = (0.342, 1.000)
    assert table(proc.stdout) == {"ok": ["2", "2", "0", "0", "1.0000", "0.342–1.000", "PASS"]}
    [report] = (project.root / ".coalmine/reports/evals/ok").glob("*.json")
    # shown from the working directory, which the project root is not below here
    assert f"ok: {report.resolve()}" in proc.stdout
    # progress goes to stderr as plain lines: the start, then the counts (at least the end)
    assert "coalmine: running 2 case runs of 1 suite at concurrency 16 (judge: none)" in (
        proc.stderr
    )
    assert "[2/2] 2 passed, 0 failed, 0 errored" in proc.stderr
    assert "coalmine" not in proc.stdout.split("\n")[0]


def test_a_blocking_failure_exits_1_and_lists_why(project: Project) -> None:
    setup(project)
    suite(project, "ok", [case("a", "yes", contains("yes"))])
    suite(project, "bad", [case("a", "yes", contains("yes")), case("no", "no", contains("yes"))])
    suite(project, "soft", [case("no", "no", contains("yes"))], blocking=False)
    proc = project.run_cli("eval", "run", "ok", "bad", "soft", "--display", "none")
    assert proc.returncode == 1, proc.stderr
    rows = table(proc.stdout)
    assert rows["ok"][-1] == "PASS"
    # 1 of 2 passed: 0.5; Wilson (0.095, 0.905)
    assert rows["bad"] == ["2", "1", "1", "0", "0.5000", "0.095–0.905", "FAIL"]
    assert rows["soft"][:2] == ["1", "0"] and rows["soft"][-2:] == ["FAIL", "(advisory)"]
    assert (
        "bad fails its gate (no case may fail on a grader that may block): 1 case failed or "
        "errored on graders that may block:"
    ) in proc.stdout
    assert (
        "soft fails its gate (no case may fail on a grader that may block): 1 case" in proc.stdout
    )
    assert proc.stdout.count("  FAIL no: contains failed: missing 'yes'") == 2
    assert proc.stderr == ""


def test_a_non_blocking_suite_alone_failing_exits_0(project: Project) -> None:
    setup(project)
    suite(project, "soft", [case("no", "no", contains("yes"))], blocking=False)
    proc = project.run_cli("eval", "run", "--display", "none", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    [result] = json.loads(proc.stdout)
    assert (result["blocking"], result["failed"]) == (False, 1)


@pytest.mark.slow
def test_bad_lines_exit_2_and_eval_list_reports_them(project: Project) -> None:
    setup(project)
    path = suite(
        project,
        "messy",
        [case("a", "yes", contains("yes")), "{oops", case("b", "yes", {"type": "nope"})],
    )
    suite(project, "clean", [case("a", "yes", contains("yes"))], repeats=3, blocking=False)
    proc = project.run_cli("eval", "run", "--display", "none")
    assert proc.returncode == 2, proc.stderr
    rows = table(proc.stdout)
    assert rows["messy"][:2] == ["1", "1"] and rows["messy"][-1] == "PASS"
    assert f"error: {path}:2: not valid JSON" in proc.stderr
    assert f"error: {path}:3: " in proc.stderr and "nope" in proc.stderr

    listed = project.run_cli("eval", "list")
    assert listed.returncode == 2
    lines = [line.split() for line in listed.stdout.splitlines()]
    assert lines == [
        ["SUITE", "CASES", "BAD", "REPEATS", "AGENT", "BLOCKING"],
        ["clean", "1", "0", "3", "Bot", "no"],
        ["messy", "1", "2", "1", "Bot", "yes"],
    ]
    assert f"error: {path}:2: not valid JSON" in listed.stderr


def test_json_format_filter_repeats_and_reducer(project: Project) -> None:
    setup(project)
    suite(
        project,
        "flaky",
        [
            case("f0", "flaky:0", contains("PASS"), tags=["x"]),
            case("f1", "flaky:1", contains("PASS"), tags=["x", "y"]),
            case("f3", "flaky:3", contains("PASS"), tags=["x"]),
            case("other", "flaky:0", contains("PASS")),
        ],
    )
    proc = project.run_cli(
        "eval", "run", "--format", "json", "--display", "none", "--filter", "tag:x",
        "--repeats", "3", "--reducer", "pass@k", "-c", "1",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # f0 never passes
    [result] = json.loads(proc.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(result)
    report = project.root / result["reportPath"]
    assert json.loads(report.read_text(encoding="utf-8")) == result
    assert (result["repeats"], result["reducer"]) == (3, "pass@k")
    # pass@3 is "any of 3 passed": f0 0 of 3 → 0, f1 1 of 3 → 1, f3 3 of 3 → 1; mean 2/3
    assert (result["cases"], result["passed"], result["failed"]) == (3, 2, 1)
    assert result["score"] == 0.6667
    # [0, 1, 1]: s² = 1/3, SE = sqrt(1/9) = 0.3333; Wilson for 2 of 3
    assert result["stderr"] == 0.3333
    assert result["ci95"] == [0.2077, 0.9385]
    # each selected case ran 3 times, "other" never
    assert sorted(calls(project)) == ["f0"] * 3 + ["f1"] * 3 + ["f3"] * 3
    # contains passed 0 + 1 + 3 of 9 runs
    assert result["graders"]["contains"] == {"mean": 0.4444, "n": 9, "skipped": 0}
    assert [f["id"] for f in result["failures"]] == ["f0"]


@pytest.mark.slow
def test_usage_errors_exit_2_with_a_clear_message(project: Project) -> None:
    setup(project)
    suite(project, "smoke", [case("a", "yes", contains("yes"))])
    suite(project, "sanity", [case("a", "yes", contains("yes"))])
    unknown = project.run_cli("eval", "run", "smok")
    assert unknown.returncode == 2
    assert "error: no eval suite 'smok' (did you mean 'smoke'?)" in unknown.stderr
    assert "harness/evals: sanity, smoke)" in unknown.stderr

    nothing = project.run_cli("eval", "run", "--resume")
    assert nothing.returncode == 2
    assert "error: there is no unfinished eval run to resume" in nothing.stderr
    assert calls(project) == []


@pytest.mark.slow
def test_concurrency_flag_and_the_agents_max_concurrency(
    project: Project, openai_server: FakeOpenAI
) -> None:
    agent = {"provider": "openai", "model": "m", "base_url": openai_server.base_url}
    setup(project, {"agents": {"Remote": agent}})
    suite(project, "load", [case(f"c{n}", "hi", contains("slow")) for n in range(8)])
    # 8 cases of 0.25 s at -c 4: two waves, 4 requests in flight in each
    openai_server.enqueue(*[Reply(text="slow answer", delay=0.25)] * 8)
    proc = project.run_cli("eval", "run", "-c", "4", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    assert len(openai_server.requests) == 8
    assert openai_server.max_in_flight == 4

    setup(project, {"agents": {"Remote": {**agent, "max_concurrency": 2}}})
    openai_server.max_in_flight = 0
    openai_server.enqueue(*[Reply(text="slow answer", delay=0.15)] * 8)  # 4 waves of 2
    proc = project.run_cli("eval", "run", "-c", "8", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    assert len(openai_server.requests) == 16
    assert openai_server.max_in_flight == 2  # the agent's limit is below -c


@pytest.mark.slow
def test_ctrl_c_keeps_finished_cases_and_resume_finishes_without_recalling_them(
    project: Project,
) -> None:
    setup(project)
    ids = [f"c{n:02d}" for n in range(12)]
    suite(project, "long", [case(i, "sleep:0.15", contains("slept")) for i in ids])
    proc = subprocess.Popen(
        [sys.executable, "-m", "coalmine", "eval", "run", "-c", "1", "--display", "none"]
        + ["--root", str(project.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while len(calls(project)) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(calls(project)) >= 4, "the agent was never called"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 3, stderr
    assert "interrupted: finished cases are stored; resume with: coalmine eval run --resume" in (
        stderr
    )
    conn = sqlite3.connect(project.root / ".coalmine" / "coalmine.db")
    try:
        (run_id, status) = conn.execute("SELECT id, status FROM runs").fetchone()
        stored = [r[0] for r in conn.execute("SELECT case_id FROM eval_attempts ORDER BY case_id")]
    finally:
        conn.close()
    assert status == "interrupted"
    assert 3 <= len(stored) < 12 and stored == ids[: len(stored)]
    assert f"--resume {run_id}" in stderr
    assert table(stdout)["long"][-1] == "INCOMPLETE"  # not PASS: 12 cases were planned
    assert f"long: interrupted after {len(stored)} cases; its verdict waits" in stdout
    before = len(calls(project))

    resumed = project.run_cli("eval", "run", "--resume", "--display", "none", "--format", "json")
    assert resumed.returncode == 0, resumed.stderr
    [result] = json.loads(resumed.stdout)
    assert (result["runId"], result["cases"], result["passed"]) == (run_id, 12, 12)
    assert result["interrupted"] is False
    again = calls(project)[before:]
    assert sorted(again) == sorted(set(ids) - set(stored))  # no stored case was called again


@pytest.mark.slow
def test_runs_list_and_show_know_eval_runs(project: Project) -> None:
    setup(project)
    suite(project, "mix", [case("a", "yes", contains("yes")), case("b", "no", contains("yes"))])
    assert project.run_cli("eval", "run", "--display", "none").returncode == 1
    listed = project.run_cli("runs", "list")
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()[:2]
    assert header.split()[:2] == ["ID", "KIND"]
    # 1 of 2 cases passed; the run's score is the mean of its suites' scores (one: 0.5)
    assert row.split()[1] == "eval" and "1/2" in row.split() and "0.50" in row.split()
    shown = project.run_cli("runs", "show", row.split()[0])
    assert shown.returncode == 0, shown.stderr
    assert table(shown.stdout)["mix"][:3] == ["2", "1", "1"]
    as_json = project.run_cli("runs", "show", row.split()[0], "--format", "json")
    [result] = json.loads(as_json.stdout)
    jsonschema.validate(result, SCHEMA)
    assert (result["suiteId"], result["passed"], result["failed"]) == ("mix", 1, 1)


def test_result_file_paths_are_shown_from_the_working_directory(project: Project) -> None:
    setup(project)
    suite(project, "ok", [case("a", "yes", contains("yes"))])
    cwd = project.root.parent
    proc = subprocess.run(
        [sys.executable, "-m", "coalmine", "eval", "run", "--display", "none"]
        + ["--root", project.root.name],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    [shown] = [
        line.split(": ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("ok: ")
    ]
    assert shown.startswith(f"{project.root.name}/")  # as typed from here, not from the root
    assert (cwd / shown).is_file()


CRASHER = """\
import sys
sys.stdin.read()
print("loading the model", file=sys.stderr)
for n in range(30):
    print(f"noise {n}", file=sys.stderr)
print("Traceback (most recent call last):", file=sys.stderr)
print("RuntimeError: the index is missing", file=sys.stderr)
sys.exit(1)
"""


def test_an_agent_error_shows_the_end_of_its_stderr(project: Project) -> None:
    argv = project.agent_script("crasher", CRASHER)
    project.config({"agents": {"Bot": {"provider": "command", "argv": argv}}})
    suite(project, "smoke", [case("boom", "hi", contains("x"))])
    proc = project.run_cli("eval", "run", "--display", "none")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  FAIL boom: "))
    assert lines[at + 1 : at + 6] == [
        "    stderr: noise 27",
        "    stderr: noise 28",
        "    stderr: noise 29",
        "    stderr: Traceback (most recent call last):",
        "    stderr: RuntimeError: the index is missing",
    ]


ECHO = {"agents": {"Bot": {"provider": "echo"}}}


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("description: [unclosed\n", 2, "invalid YAML"),  # where the parser finds it out
        ("description: ok\nbogus: 1\n", 2, "unknown key 'bogus'"),
        ("description: ok\nrepeats: many\n", 2, "repeats: Input should be a valid integer"),
        ("- a\n- b\n", 1, "must be a mapping of keys"),
        ("description: ok\ngraders:\n  - type: nope\n", 3, "unknown grader type 'nope'"),
        ("description: ok\nprompt_template: '{{ broken'\n", 2, "prompt_template:"),
    ],
    ids=["bad-yaml", "unknown-key", "wrong-type", "top-level-list", "bad-grader", "template"],
)
def test_a_broken_suite_yaml_names_its_file_and_line(
    project: Project, text: str, line: int, words: str
) -> None:
    setup(project, ECHO)  # in-process: a python agent's module would be imported once
    suite(project, "good", [case("g", "say ok", contains("ok"))])
    suite(project, "bad", [case("b", "say ok", contains("ok"))])
    project.write("harness/evals/bad.yaml", text)
    code, output = run_main("eval", "run", "--root", str(project.root), "--display", "none")
    assert code == 2, output
    where = project.root / "harness" / "evals" / "bad.yaml"
    assert f"error: {where}:{line}: " in output and words in output, output
    assert "Traceback" not in output
    assert re.search(r"^good\s+1\s+1\s+0\s+0\b.*PASS", output, re.M), output  # the others run


@pytest.mark.parametrize("text", ["", "\n\n", "  \n\t\n \n"], ids=["empty", "blank", "spaces"])
def test_an_empty_suite_is_a_bad_suite(project: Project, text: str) -> None:
    setup(project, ECHO)
    suite(project, "good", [case("g", "say ok", contains("ok"))])
    project.write("harness/evals/empty.jsonl", text)
    code, output = run_main("eval", "run", "--root", str(project.root), "--display", "none")
    assert code == 2, output
    assert f"{project.root / 'harness' / 'evals' / 'empty.jsonl'}: the suite has no cases" in output
    assert re.search(r"^good\s+1\s+1\b", output, re.M), output
    code, output = run_main("eval", "list", "--root", str(project.root))
    assert code == 2 and "the suite has no cases" in output
