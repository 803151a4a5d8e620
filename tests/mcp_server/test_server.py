"""``coalmine mcp`` as a coding agent meets it: a subprocess driven by the MCP SDK's own client.

The bundled example project (a copy) answers the canary and store tools; a project of its own,
whose agent is slow, shows a cancelled ``run_evals`` leaving a run that resumes.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers.project import Project

EXAMPLE = Path(__file__).parents[2] / "examples" / "sdlc"
TOOLS = {
    "list_canaries", "run_canaries", "list_suites", "run_evals", "list_runs", "show_run",
    "explain_failure", "compare_runs", "kits_status", "redteam_report",
}  # fmt: skip
SECRET = "sk-planted-0123456789abcdef"

pytestmark = pytest.mark.slow


def _server(root: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "coalmine", "mcp", "--root", str(root)], env=env
    )


def _session(root: Path, work: Callable[[Client], Awaitable[None]], **env: str) -> None:
    async def main() -> None:
        with anyio.fail_after(120):
            async with Client(_server(root, **env)) as client:
                await work(client)

    anyio.run(main)


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content, text


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "sdlc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".coalmine", "results"))
    return root


def test_an_agent_runs_the_canaries_reads_the_runs_and_compares_them(example: Path) -> None:
    seen: dict[str, Any] = {}

    async def work(client: Client) -> None:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert set(tools) == TOOLS
        described = tools["run_canaries"].description or ""
        for phrase in ("run canary tests", "canary mode", "run canaries", "test the harness",
                       "validate phase agents"):  # fmt: skip
            assert phrase in described  # the seed's triggers pick the tool

        data, text = await _call(client, "list_canaries")
        ids = [c["id"] for c in data["canaries"]]
        assert len(ids) == 9 and "qa-001-security-review" in ids
        assert "| qa-001-security-review | qa |" in text

        reported: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reported.append((progress, total, message))

        every = await client.call_tool("run_canaries", {}, progress_callback=on_progress)
        assert not every.is_error
        run = every.structured_content["run"]
        assert run["summary"]["total"] == 9 and run["summary"]["passed"] == 7
        assert every.structured_content["exit_code"] == 1
        assert (example / every.structured_content["results_path"]).is_file()
        assert [p[0] for p in reported] == list(range(1, 10)) and reported[-1][1] == 9

        one, text = await _call(client, "run_canaries", selectors=["qa-001"])
        assert [r["id"] for r in one["run"]["results"]] == ["qa-001-security-review"]
        assert "qa-001" in text and "FAIL" in text
        seen["first"], seen["second"] = every.structured_content, one

        runs, text = await _call(client, "list_runs")
        assert [r["id"] for r in runs["runs"]] == [one["run_id"], seen["first"]["run_id"]]
        assert one["run_id"] in text

        shown, text = await _call(client, "show_run", run="latest")
        assert shown["id"] == one["run_id"] and "Canary Run Results" in text

        failing = [r for r in run["results"] if r["verdict"] != "PASS"]
        case = failing[0]["id"]
        why, text = await _call(client, "explain_failure", run=seen["first"]["run_id"], case=case)
        assert why["case"]["id"] == case and why["case"]["verdict"] == "FAIL"
        assert "| grader | score | passed |" in text and "output:" in text

        compared, text = await _call(
            client, "compare_runs", base=seen["first"]["run_id"], new=one["run_id"]
        )
        assert compared["base_id"] and compared["new_id"]
        assert text.strip()

        missing = await client.call_tool("explain_failure", {"run": "latest", "case": "nope"})
        assert missing.is_error
        said = missing.content[0].text  # type: ignore[union-attr]
        assert "no case 'nope'" in said and "qa-001-security-review" in said  # coalmine's words

        suites, _ = await _call(client, "list_suites")
        assert [s["name"] for s in suites["suites"]] == ["triage"]
        status, text = await _call(client, "kits_status")
        assert "manifest" in status and text

    _session(example, work)
    with sqlite3.connect(example / ".coalmine" / "coalmine.db") as db:
        kinds = [k for (k,) in db.execute("SELECT kind FROM runs ORDER BY started_at")]
    assert kinds == ["canary", "canary"]  # every run the agent made is stored like any other


SLOW_AGENT = """
import os, sys, time
prompt = sys.stdin.read()
with open(os.environ["CALLS"], "a") as log:
    log.write(prompt.strip() + "\\n")
time.sleep(0.25)
sys.stdout.write(prompt.strip().removeprefix("Say "))
"""


def _slow_project(project: Project, cases: int) -> Path:
    argv = project.agent_script("slow", SLOW_AGENT)
    calls = project.root / "calls.log"
    project.config(
        {
            "agents": {
                "slow": {"provider": "command", "argv": argv, "max_concurrency": 2,
                         "env": {"CALLS": str(calls)}},
                "keyed": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1",
                          "model": "m", "api_key_env": "PLANTED_KEY"},
            },
            "judge": "none",
        }
    )  # fmt: skip
    project.write("harness/evals/slow.yaml", "agent: slow\nprompt_template: 'Say {{ word }}'\n")
    lines = [
        json.dumps({"id": f"c{i:02d}", "vars": {"word": f"w{i}"}, "expected": f"w{i}",
                    "graders": [{"type": "equals"}]})
        for i in range(cases)
    ]  # fmt: skip
    project.write("harness/evals/slow.jsonl", "\n".join(lines) + "\n")
    return calls


def test_a_cancelled_run_evals_is_kept_and_resumes_without_calling_a_stored_case_again(
    project: Project,
) -> None:
    calls = _slow_project(project, cases=24)
    cancelled: dict[str, Any] = {}

    async def work(client: Client) -> None:
        moved = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            cancelled["progress"] = (progress, total)
            if progress >= 4:
                moved.set()

        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await client.call_tool("run_evals", {"suites": ["slow"]},
                                       progress_callback=on_progress)  # fmt: skip

            tg.start_soon(call)
            await moved.wait()
            tg.cancel_scope.cancel()  # the client gives up: notifications/cancelled
        with anyio.fail_after(30):  # the server stops the run and goes on serving
            while True:
                runs, _ = await _call(client, "list_runs")
                if runs["runs"] and runs["runs"][0]["status"] != "running":
                    break
                await anyio.sleep(0.1)
        cancelled["run"] = runs["runs"][0]

    _session(project.root, work, PLANTED_KEY=SECRET)
    run = cancelled["run"]
    assert run["kind"] == "eval" and run["status"] == "interrupted"
    assert cancelled["progress"][1] == 24
    before = calls.read_text().splitlines()
    assert 4 <= len(before) < 24

    resumed = project.run_cli("eval", "run", "--resume", run["id"], "--display", "none")
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(project.root / ".coalmine" / "coalmine.db") as db:
        stored = [c for (c,) in db.execute("SELECT case_id FROM eval_attempts WHERE run_id = ?",
                                           (run["id"],))]  # fmt: skip
        status = db.execute("SELECT status FROM runs WHERE id = ?", (run["id"],)).fetchone()[0]
    assert sorted(stored) == [f"c{i:02d}" for i in range(24)] and status == "finished"
    after = calls.read_text().splitlines()
    # every case was called, and only a case in flight when the call was cancelled (its answer
    # never stored) twice: at most max_concurrency of them
    assert set(after) == {f"Say w{i}" for i in range(24)}
    assert len(after) - 24 <= 2


def test_a_tool_returns_no_secret_of_the_environment(project: Project) -> None:
    _slow_project(project, cases=1)
    # a secret that reached a file by another road (here: a case's own text) is scrubbed too
    project.write("harness/evals/slow.jsonl", json.dumps(
        {"id": "leak", "vars": {"word": SECRET}, "expected": "x", "graders": [{"type": "equals"}]}
    ) + "\n")  # fmt: skip
    said: list[str] = []

    async def work(client: Client) -> None:
        for tool, args in (("run_evals", {}), ("list_runs", {}), ("show_run", {"run": "latest"}),
                           ("explain_failure", {"run": "latest", "case": "leak"})):  # fmt: skip
            result = await client.call_tool(tool, args)
            assert not result.is_error, result.content
            said.append(json.dumps(result.structured_content))
            said.append(result.content[0].text)  # type: ignore[union-attr]

    _session(project.root, work, PLANTED_KEY=SECRET)
    assert said and not any(SECRET in text for text in said)
    assert any("leak" in text for text in said)


def test_without_the_sdk_the_command_says_what_to_install(project: Project) -> None:
    project.config({"agents": {}, "judge": "none"})
    blocker = project.root / "blocker"
    blocker.mkdir()
    (blocker / "mcp").mkdir()
    (blocker / "mcp" / "__init__.py").write_text("raise ImportError('no', name='mcp')\n")
    done = subprocess.run(
        [sys.executable, "-c",
         f"import sys; sys.path.insert(0, {str(blocker)!r}); from coalmine.cli.main import run; "
         f"sys.argv = ['coalmine', 'mcp', '--root', {str(project.root)!r}]; run()"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "pip install 'coalmine[mcp]'" in done.stderr and "Traceback" not in done.stderr


def test_a_coding_agent_reads_the_red_team_findings(tmp_path: Path) -> None:
    from tests.helpers.cli import run_main
    from tests.redteam.conftest import write_repo
    from tests.redteam.test_packs import configure

    root = write_repo(tmp_path / "helpdesk")
    code, out = run_main("redteam", "generate", "--surface", "general", "--strategies", "base64",
                         "--no-diff", "--root", str(root))  # fmt: skip
    assert code == 0, out
    configure(root, "comply")
    code, out = run_main("eval", "run", "redteam-general", "--root", str(root), "--display", "none")
    assert code == 1, out

    async def work(client: Client) -> None:
        found, text = await _call(client, "redteam_report")
        assert found["schema"] == "coalmine.redteam.report.v1"
        assert found["findings"] == found["attack_cases"] == 12 and not found["flagged_controls"]
        assert "| LLM07:2025 System Prompt Leakage | 4 | 4 |" in text
        missing = await client.call_tool("redteam_report", {"run": "nope"})
        assert missing.is_error and "nope" in missing.content[0].text  # type: ignore[union-attr]

    _session(root, work)
