"""The profiler, the entry finder and ``init`` on fixtures shaped like real public repositories.

Each folder of ``tests/harness/repos/`` is a trimmed repository of one kind (a LangGraph agent,
a Chroma RAG tutorial, a Claude Agent SDK monorepo, an OpenAI Agents SDK app, a Next.js SaaS app,
a Go library with Charm v2 examples, Go's example modules, a Nix flake), written in the way such
repositories are, with its ``EXPECTED.yaml``: what a careful reader says it has. These tests
hold the profile, the facts, the chosen entry and ``init --apply`` to it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from coalmine.config import load_config
from coalmine.harness.entry import find_entries
from coalmine.harness.profile import scan_repository
from coalmine.harness.profile.facts import collect_facts
from coalmine.providers.base import provider_settings
from tests.helpers.cli import run_main

REPOS = Path(__file__).parent / "repos"
NAMES = sorted(p.name for p in REPOS.iterdir() if (p / "EXPECTED.yaml").is_file())

ENTRY_KINDS = {
    "script-argv": ("script", "argv"),
    "script-stdin": ("script", "stdin"),
    "claude-agent-sdk": ("project-script", None),  # the package script that runs the demo
}
"""EXPECTED.yaml's entry kinds that are one kind here, told apart by the input."""


def expected(name: str) -> dict[str, Any]:
    data = yaml.safe_load((REPOS / name / "EXPECTED.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def copy(name: str, tmp_path: Path) -> Path:
    """The fixture in a fresh git repository (init writes files; the fixture stays as it is)."""
    root = tmp_path / name
    shutil.copytree(REPOS / name, root, ignore=shutil.ignore_patterns("EXPECTED.yaml"))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.mark.parametrize("name", NAMES)
def test_the_profile_finds_each_signal_and_no_false_one(name: str, tmp_path: Path) -> None:
    want = expected(name)
    profile, files = scan_repository(copy(name, tmp_path))
    kinds = {s.kind for s in profile.signals}
    missing = sorted(set(want["signals"]) - kinds)
    assert not missing, f"{name}: not found: {missing}"
    for kind, shown_in in want["signals"].items():
        assert files[kind] & set(shown_in), f"{name}: {kind} found only in {sorted(files[kind])}"
    false = sorted(kinds & set(want["not_signals"]))
    assert not false, f"{name}: found but not there: {false}"


@pytest.mark.parametrize("name", NAMES)
def test_the_facts_name_the_repositorys_tools_documents_and_shell(
    name: str, tmp_path: Path
) -> None:
    want = expected(name)
    root = copy(name, tmp_path)
    facts = collect_facts(root, scan_repository(root)[0].signals)
    tools = {t["base"]: t for t in facts["tools"]}
    for tool in want["tools"]:
        assert tool["name"] in tools, f"{name}: tool {tool['name']} not found in {sorted(tools)}"
        got = tools[tool["name"]]["danger"] is not None
        assert got == tool["dangerous"], f"{name}: {tool['name']} dangerous={got}"
    servers = {s["name"]: s for s in facts["mcp"]}
    for server, declared in (want["mcp_servers"] or {}).items():
        assert server in servers, f"{name}: MCP server {server} not found"
        if declared:
            assert set(declared) <= set(servers[server]["tools"]), f"{name}: {server}"
            for tool in declared:
                assert f"mcp__{server}__{tool}" in {t["name"] for t in facts["tools"]}
        else:
            assert servers[server]["local"] is None, f"{name}: {server} is remote"
    titles = {d["id"]: d["title"] for d in facts["docs"]}
    for doc, title in (want["docs"] or {}).items():
        assert titles.get(doc) == title, f"{name}: {doc}: {titles.get(doc)!r}"
    if want["docs"] and len(want["docs"]) == 1:
        assert facts["near_misses"] == []
    assert facts["nix"]["tools"] == want["nix_tools"], name
    programs = [
        m for m in want["go_mains"] if "/examples/" not in f"{m}/"
    ]  # examples: the library's
    assert facts["go_mains"] == sorted(programs, key=lambda m: (m != ".", m)), name


@pytest.mark.parametrize("name", NAMES)
def test_the_entry_is_the_one_production_runs(name: str, tmp_path: Path) -> None:
    want = expected(name)["entry"]
    entries = find_entries(copy(name, tmp_path))
    if want["kind"] == "none":
        assert not entries, f"{name}: {entries[0].why}"
        return
    assert entries, f"{name}: no entry found"
    best = entries[0]
    kind, how = ENTRY_KINDS.get(want["kind"], (want["kind"], want["input"]))
    assert (best.kind, best.path) == (kind, want["path"]), f"{name}: {best.why}"
    if want.get("symbol") and best.symbol is not None:
        assert best.symbol == want["symbol"], name
    how = how or want["input"]
    if how:
        assert best.input == how, f"{name}: {best.input}"


@pytest.mark.parametrize("name", NAMES)
def test_init_apply_writes_a_config_that_loads(name: str, tmp_path: Path) -> None:
    want = expected(name)
    root = copy(name, tmp_path)
    code, out = run_main("init", "--apply", "--no-diff", "--root", str(root))
    assert code == 0, out
    if not (root / "coalmine.yaml").exists():  # no kit writes suites: no config is proposed
        assert "harness/evals/" not in out
        return
    assert "coalmine.yaml loads" in out
    config = load_config(root, providers=provider_settings())
    assert config.agents, name
    text = (root / "coalmine.yaml").read_text("utf-8")
    if want["entry"]["kind"] == "none":
        assert "STAND-IN" in text and "STAND-IN" in out
    else:
        assert "STAND-IN" not in text, out
        assert f"because {want['entry']['path']}" in out or want["entry"]["path"] in out
    safety = root / "harness/evals/agent-tool-safety.jsonl"
    for tool in want["tools"]:
        if tool["dangerous"] and safety.exists():
            assert tool["name"] in safety.read_text("utf-8"), f"{name}: {tool['name']}"
    recall = root / "harness/evals/retrieval-recall.jsonl"
    for title in (want["docs"] or {}).values():
        assert title in recall.read_text("utf-8"), f"{name}: {title}"
    assert ".coalmine/" in (root / ".gitignore").read_text("utf-8")
    web = root / "harness/web/playwright.config.ts"
    if web.exists():  # the repo's own .env may set BASE_URL: it must not stop the app starting
        assert "process.env.BASE_URL" not in web.read_text("utf-8")
        assert "process.env.COALMINE_WEB_URL" in web.read_text("utf-8")


@pytest.mark.slow  # every adopted kit's gates, for real, on every fixture
@pytest.mark.parametrize("name", NAMES)
def test_the_gates_run_and_end_in_a_verdict_not_a_traceback(name: str, tmp_path: Path) -> None:
    """Every gate ends in a verdict: pass, fail with its reason, or a missing tool's hint.

    A missing tool exits 127 and says how to install it; no gate ends in a Python traceback.
    Gates that call the agent get a stand-in for it (test_adapters.py runs the adapters).
    """
    root = copy(name, tmp_path)
    assert run_main("init", "--apply", "--no-diff", "--root", str(root))[0] == 0
    config = root / "coalmine.yaml"
    if config.exists():  # the suites' agent: a stand-in that declines everything, quickly
        text = config.read_text("utf-8")
        agent = "  app: {provider: echo}\n"
        config.write_text(
            "\n".join(line for line in text.splitlines() if not line.startswith("  app:")).replace(
                "agents:", "agents:\n" + agent.rstrip("\n")
            )
            + "\n",
            encoding="utf-8",
        )
    code, out = run_main("gates", "run", "--root", str(root))
    assert code in (0, 1), out
    assert "Traceback" not in out, out
    for line in out.splitlines():
        if line.startswith(("PASS", "FAIL", "TIME")) and "exit 127" in line:
            assert "not found" in out and "install" in out, out
    if shutil.which("go") and name == "go-examples":  # modules of the standard library only
        assert "PASS  go-test" in out and "PASS  go-vet" in out, out
