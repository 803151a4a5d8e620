"""The coding-agent skill: written where a repository has canaries, owned, and true to coalmine.

The skill a coding agent reads must name tools the MCP server has and commands the CLI has, or
the agent is sent to something that does not exist: both are checked against the real ones.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import anyio
import click
import yaml

from coalmine.cli.main import cli
from coalmine.harness.drift import harness_status
from coalmine.mcp.server import build_server
from tests.helpers.cli import run_main

SKILL = ".claude/skills/coalmine-canaries/SKILL.md"
TRIGGERS = ("run canary tests", "canary mode", "run canaries", "test the harness",
            "validate phase agents")  # fmt: skip


def _repo(root: Path) -> Path:
    spec = root / "bench" / "canaries" / "qa" / "qa-001-login.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text(
        "id: qa-001-login\nphase: qa\ntitle: Login\nprompt: Review the login.\n"
        "expected: {graders: [{type: keyword, config: {required: [csrf]}}]}\n",
        encoding="utf-8",
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_a_repository_with_canaries_gets_the_skill_owned_by_its_kit(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    code, said = run_main("init", "--root", str(root), "--apply")
    assert code == 0, said
    assert "coding-agent-skill" in said and "coalmine:canaries" in said
    text = (root / SKILL).read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---")[1])
    assert front["name"] == "coalmine-canaries"
    for phrase in TRIGGERS:  # the seed's triggers, where an agent picks its skill
        assert phrase in front["description"]
    assert "run canary qa-001" in front["description"]

    status = harness_status(root, None)
    assert [(f.path, f.kit, f.state) for f in status.files] == [(SKILL, "coding-agent-skill", "ok")]
    (root / SKILL).write_text(text + "\nA local note.\n", encoding="utf-8")
    assert harness_status(root, None).drifted  # an edited skill is drift, as any owned file


def test_the_skill_names_only_tools_and_commands_that_exist(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    assert run_main("init", "--root", str(root), "--apply")[0] == 0
    text = (root / SKILL).read_text(encoding="utf-8")

    async def tools() -> set[str]:
        return {t.name for t in await build_server(root).list_tools()}

    served = anyio.run(tools)
    named = set(re.findall(r"`([a-z]+_[a-z_]+)`", text))  # every snake_case name in code
    assert {"list_canaries", "run_canaries", "explain_failure", "compare_runs"} <= named
    assert named <= served, named - served

    block = text.split("```sh")[1].split("```")[0]
    for line in filter(None, (x.split("#")[0].strip() for x in block.splitlines())):
        words = shlex.split(line)[1:]
        command: click.Command = cli
        while isinstance(command, click.Group) and words and words[0] in command.commands:
            command = command.commands[words.pop(0)]
        assert not isinstance(command, click.Group), line
        known = {o for p in command.params for o in getattr(p, "opts", [])}
        assert all(w in known for w in words if w.startswith("-")), line
