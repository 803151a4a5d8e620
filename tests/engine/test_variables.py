"""Environment variables are checked when they are needed, and only then.

A run checks every variable of the agents and the judge it will call before the first call (an
unset one stops it with exit 2, naming the variable, the agent and the config's line; nothing is
recorded, no lesson is kept); an agent it does not call may lack its own. A command that only
reads the store does not look at the agents at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from coalmine.store.runs import Store
from tests.helpers.cli import run_main
from tests.helpers.openai_server import FakeOpenAI, Reply
from tests.helpers.project import Project

ANSWER = "import sys\nsys.stdin.read()\nprint('SQL injection in login()')\n"
JUDGED = [
    {"type": "keyword", "weight": 0.5, "config": {"required": ["injection"]}},
    {"type": "llm-judge", "weight": 0.5, "config": {"criteria": ["accuracy"]}},
]


def configure(project: Project, server: FakeOpenAI, **agents: dict[str, Any]) -> None:
    """QA Coordinator behind the loopback server (key in AGENT_KEY), and a judge (JUDGE_KEY)."""
    endpoint = {"provider": "openai", "base_url": server.base_url, "retries": 0}
    project.config(
        {
            "agents": {
                "QA Coordinator": {**endpoint, "model": "agent-model", "api_key_env": "AGENT_KEY"},
                **agents,
            },
            "judge": {**endpoint, "model": "judge-model", "api_key_env": "JUDGE_KEY"},
        }
    )


def cli(project: Project, *args: str) -> tuple[int, str]:
    code, output = run_main(*args, "--root", str(project.root))
    assert "Traceback" not in output
    return code, output


def stored(project: Project) -> tuple[int, int]:
    """Runs and lessons in the project's store (none when it was never made)."""
    path = project.root / ".coalmine" / "coalmine.db"
    if not path.exists():
        return 0, 0
    store = Store.open(path)
    try:
        runs = store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        lessons = store.conn.execute("SELECT COUNT(*) FROM lessons").fetchone()[0]
        return runs, lessons
    finally:
        store.close()


def config_line(project: Project, text: str) -> int:
    lines = (project.root / "coalmine.yaml").read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_a_missing_api_key_stops_the_run_before_the_first_call(
    project: Project, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-judge-1234")
    configure(project, openai_server)
    project.canary("qa-001-login")
    project.canary("qa-002-logout")
    code, output = cli(project, "canary", "run", "--display", "plain")
    assert code == 2, output
    line = config_line(project, "QA Coordinator")
    assert f"coalmine.yaml:{line}: agent 'QA Coordinator' (api_key_env): the environment " in output
    assert "variable AGENT_KEY is not set; export AGENT_KEY=<value> and run again" in output
    assert openai_server.requests == []
    assert project.results() == []
    assert stored(project) == (0, 0)  # no run, no caught-regression lesson


def test_an_unset_variable_stops_every_kind_of_run_that_calls_its_agent(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANALYST_KEY", raising=False)
    argv = project.agent_script("analyst", ANSWER)
    analyst = {"provider": "command", "argv": argv, "env": {"OPENAI_API_KEY": "${ANALYST_KEY}"}}
    project.config({"agents": {"Analyst": analyst}, "judge": "none"})
    project.canary("qa-001-login")
    project.config({"agents": {"Analyst": analyst}, "routing": {"qa": "Analyst"}, "judge": "none"})
    line = {"id": "c1", "prompt": "Review login()", "graders": [{"type": "equals"}]}
    project.write("harness/evals/one.jsonl", json.dumps(line | {"expected": "x"}) + "\n")
    pipeline = {"roles": {"reviewer": {"agent": "Analyst", "inputs": ["diff"]},
                          "grader": {"agent": "Analyst", "inputs": ["reviewer", "assertions"],
                                     "grader": True}}}  # fmt: skip
    project.write("evals/review/pipeline.yaml", yaml.safe_dump(pipeline, sort_keys=False))
    eval_json = {"prompt": "Review it.", "assertions": [{"id": "1", "text": "names the flaw"}]}
    project.write("evals/review/sql/eval.json", json.dumps(eval_json))
    project.write("evals/review/sql/test-files/a.py", "x = 1\n")
    at = config_line(project, "OPENAI_API_KEY")
    expected = (
        f"coalmine.yaml:{at}: agent 'Analyst' (env.OPENAI_API_KEY): the environment variable "
        "ANALYST_KEY is not set; set it, or give a default with ${ANALYST_KEY:-value}"
    )
    for command in (["canary", "run", "--display", "plain"], ["eval", "run"], ["review", "run"]):
        code, output = cli(project, *command)
        assert code == 2, (command, output)
        assert expected in output, (command, output)
    assert project.results() == []
    assert stored(project) == (0, 0)
    monkeypatch.setenv("ANALYST_KEY", "sk-analyst-5678")
    assert cli(project, "canary", "run", "--display", "none")[0] == 0


def test_the_judge_is_checked_only_when_a_grader_asks_for_it(
    project: Project, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", "sk-agent-1234")
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    configure(project, openai_server)
    openai_server.default = lambda received: Reply(text="SQL injection in login()")
    project.canary("qa-001-login", graders=JUDGED)
    code, output = cli(project, "canary", "run", "--display", "plain")
    assert code == 2 and "agent 'judge' (api_key_env): the environment variable JUDGE_KEY" in output
    assert openai_server.requests == []
    assert cli(project, "canary", "run", "--no-judge", "--display", "none")[0] == 0
    project.canary("qa-001-login")  # no judge grader: the judge is not called, nor checked
    assert cli(project, "canary", "run", "--display", "none")[0] == 0


def test_an_agent_the_run_does_not_call_may_lack_its_variables(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOT_SET_HERE", raising=False)
    argv = project.agent_script("qa", ANSWER)
    project.config(
        {
            "agents": {
                "QA Coordinator": {"provider": "command", "argv": argv},
                "Deployer": {"provider": "http", "url": "${NOT_SET_HERE}/deploy?q={{prompt}}",
                             "method": "GET", "headers": {"Authorization": "${NOT_SET_HERE}"}},
                "Analyst": {"provider": "openai", "model": "m", "api_key_env": "NOT_SET_HERE"},
            },
            "judge": "none",
        }
    )  # fmt: skip
    project.canary("qa-001-login")
    code, output = cli(project, "canary", "run", "--display", "plain")
    assert code == 0, output


def test_read_only_commands_never_need_the_agents_variables(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QA_TOKEN", "tok-9876")
    argv = project.agent_script("qa", ANSWER)
    agent = {"provider": "command", "argv": argv, "env": {"QA_TOKEN": "${QA_TOKEN}"}}
    config = {"agents": {"QA Coordinator": agent}, "judge": {"provider": "openai", "model": "m",
              "base_url": "${JUDGE_URL}", "api_key_env": "JUDGE_KEY"},
              "defaults": {"timeout_seconds": "${TIMEOUT:-60}"}}  # fmt: skip
    monkeypatch.setenv("JUDGE_URL", "http://127.0.0.1:9/v1")
    project.config(config)
    project.canary("qa-001-login")
    assert cli(project, "canary", "run", "--display", "none")[0] == 0
    assert cli(project, "canary", "run", "--display", "none")[0] == 0
    monkeypatch.delenv("QA_TOKEN")
    monkeypatch.delenv("JUDGE_URL")
    result = str(project.results()[0])
    for command in (
        ["runs", "list"],
        ["runs", "show", "latest"],
        ["report", "latest", "--format", "html"],
        ["compare", "latest", result],
        ["runs", "import", result],
        ["judge", "report"],
    ):
        code, output = cli(project, *command)
        assert code == 0, (command, output)
        assert "is not set" not in output, (command, output)
    empty = Project(tmp_path / "fresh")
    empty.config(config)
    code, output = cli(empty, "view", "--port", "0")
    assert code == 2 and "there is no run store at" in output and "is not set" not in output
    code, output = cli(project, "canary", "run", "--display", "none")
    assert code == 2 and "QA_TOKEN is not set" in output
