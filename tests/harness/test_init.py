"""``coalmine init``: plan read-only, write exactly the plan, record ownership, propose nothing twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coalmine._util.hashing import hash_text
from coalmine.harness.init import plan_init
from coalmine.harness.kits import BASE_DIR, MANIFEST_PATH, get_kit, load_manifest
from tests.helpers.cli import run_main

AGENT = '''\
"""A stand-in agent: refuses what is destructive or injected, else does the task."""
import sys

import openai  # the profile's evidence of an LLM SDK

RISKY = ("delete", "drop", "force", "rm -rf", "ignore", "secret", "password", ".env", "chmod")


def main() -> None:
    prompt = sys.stdin.read()
    if any(word in prompt.lower() for word in RISKY):
        print("I can't help with that: it is destructive or not what you asked.")
    else:
        print("Done. Here is a summary of what I did for the task you gave me.")


if __name__ == "__main__":
    main()
'''


def agent_repo(root: Path) -> Path:
    """A small Python agent repository with an MCP config, in a real git repository."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.py").write_text(AGENT, encoding="utf-8")
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {}}}), encoding="utf-8")
    (root / "README.md").write_text("# Shop agent\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (outside .git and .coalmine) with its content hash."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".coalmine")]
        for name in filenames:
            path = Path(dirpath, name)
            found[path.relative_to(root).as_posix()] = hash_text(path.read_text("utf-8"))
    return found


def invoke(root: Path, *args: str) -> tuple[int, str]:
    return run_main(*args, "--root", str(root))


def test_the_plan_writes_nothing_and_shows_evidence_and_diffs(tmp_path: Path) -> None:
    root = agent_repo(tmp_path / "repo")
    before = tree(root)
    plan = plan_init(root)
    assert [p.kit.id for p in plan.proposals] == ["agent-runtime"]
    because = {s.kind: [e.path for e in s.evidence] for s in plan.proposals[0].because}
    assert because == {
        "agent-runtime:llm-sdk": ["agent.py"],
        "agent-runtime:mcp": [".mcp.json"],
    }
    code, out = invoke(root, "init")  # not a terminal: a dry run
    assert code == 0, out
    assert "because agent-runtime:llm-sdk: agent.py:4" in out
    assert "+++ b/coalmine.yaml" in out and "+++ b/gates/agent-red-team.sh" in out
    assert "dry run: nothing written" in out
    assert tree(root) == before


def test_apply_writes_exactly_the_plan_and_the_manifest_records_it(tmp_path: Path) -> None:
    root = agent_repo(tmp_path / "repo")
    before = tree(root)
    plan = plan_init(root)
    planned = {c.path for c in plan.changes if c.writes}
    kit = get_kit("agent-runtime")
    # agent.py reads its prompt on stdin: called as it is, so the kit writes no adapter
    files = [p for p in kit.files() if p != "harness/adapters/agent.py"]
    assert planned == {"coalmine.yaml", ".gitignore", *files}

    code, out = invoke(root, "init", "--apply", "--no-diff")
    assert code == 0, out
    after = tree(root)
    new = set(after) - set(before)
    bases = {f"{BASE_DIR}/{p}" for p in files}
    assert new == planned | {MANIFEST_PATH} | bases
    assert all(after[p] == before[p] for p in before)  # nothing existing was touched
    for script in (root / "gates").glob("*.sh"):
        assert os.access(script, os.X_OK)

    manifest = load_manifest(root)
    assert manifest is not None
    assert manifest.parameters == {"project": "repo", "agent": "app"}
    [adopted] = manifest.kits
    assert (adopted.id, adopted.version) == ("agent-runtime", kit.version)
    assert adopted.applies_because == ["agent-runtime:llm-sdk", "agent-runtime:mcp"]
    assert [f.path for f in adopted.files] == files
    for owned in adopted.files:
        text = (root / owned.path).read_text("utf-8")
        assert owned.sha256 == hash_text(text)
        assert (root / BASE_DIR / owned.path).read_text("utf-8") == text
    assert [c.id for c in adopted.commands] == [c.id for c in kit.spec.commands]
    assert (root / ".gitignore").read_text("utf-8").endswith("\n.coalmine/\n")
    assert "coalmine.yaml loads" in out
    assert not [c for c in plan_init(root).changes if c.path == ".gitignore"]  # offered once
    config = (root / "coalmine.yaml").read_text("utf-8")
    assert 'app: {provider: command, argv: ["python3", "agent.py"]}' in config

    again = plan_init(root)
    assert again.empty
    code, out = invoke(root, "init")
    assert code == 0 and "nothing new to propose (adopted: agent-runtime)" in out


@pytest.mark.slow
def test_the_written_suites_run(tmp_path: Path) -> None:
    root = agent_repo(tmp_path / "repo")
    assert invoke(root, "init", "--apply", "--no-diff")[0] == 0
    suites = sorted(p.stem for p in (root / "harness" / "evals").glob("*.jsonl"))
    assert suites == ["agent-tool-safety", "injection-red-team", "trajectory-goal-success"]
    run = subprocess.run(
        [sys.executable, "-m", "coalmine", "eval", "run", "--root", str(root), "--display", "none"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode in (0, 1), run.stdout + run.stderr
    for suite in suites:
        [result] = (root / ".coalmine" / "reports" / "evals" / suite).glob("*.json")
        data = json.loads(result.read_text("utf-8"))
        assert data["badLines"] == 0 and data["cases"] > 0
        assert data["cases"] == data["passed"] + data["failed"], data  # nothing errored


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    root = agent_repo(tmp_path / "repo")
    kit_text = {c.path: c.after for c in plan_init(root).changes}
    (root / "gates").mkdir()
    (root / "gates" / "agent-red-team.sh").write_text("echo mine\n", encoding="utf-8")
    identical = "harness/evals/injection-red-team.yaml"
    (root / identical).parent.mkdir(parents=True)
    (root / identical).write_text(str(kit_text[identical]), encoding="utf-8")

    plan = plan_init(root)
    actions = {c.path: c.action for c in plan.changes}
    assert actions["gates/agent-red-team.sh"] == "keep"
    assert actions[identical] == "adopt"
    code, out = invoke(root, "init", "--apply", "--no-diff")
    assert code == 0
    assert "keep      gates/agent-red-team.sh  (agent-runtime)  exists with other content" in out
    assert (root / "gates" / "agent-red-team.sh").read_text("utf-8") == "echo mine\n"
    manifest = load_manifest(root)
    assert manifest is not None
    owned = manifest.owned_paths()
    assert "gates/agent-red-team.sh" not in owned and identical in owned


def test_kit_option_adopts_a_kit_that_does_not_apply(tmp_path: Path) -> None:
    root = agent_repo(tmp_path / "repo")
    plan = plan_init(root, kits=["nix-project"])
    assert [(p.kit.id, p.because) for p in plan.proposals] == [("nix-project", ())]
    assert not any(c.path == "coalmine.yaml" for c in plan.changes)  # no suites, no config
    code, out = invoke(root, "init", "--kit", "no-such-kit")
    assert code == 2 and "unknown kit 'no-such-kit'" in out


REPOS = {
    "rag": (
        {
            "search.py": "import chromadb\n\nclient = chromadb.Client()\n",
            "docs/refunds.md": "# Refund policy\nRefunds within 30 days.\n",
            "docs/shipping.md": "# Shipping policy\nWe ship in 2 days.\n",
            "docs/returns.md": "# Returns\nReturn by mail.\n",
        },
        ["rag-system"],
    ),
    "next": (
        {
            "package.json": json.dumps({"dependencies": {"next": "15"}, "scripts": {"dev": "x"}}),
            "app/page.tsx": "export default function Page() { return null }\n",
            "app/about/page.tsx": "export default function Page() { return null }\n",
        },
        ["web-app"],
    ),
    "go": (
        {
            "go.mod": "module example.com/svc\n\ngo 1.22\n",
            "main.go": 'package main\n\nimport "net/http"\n\nfunc main() { http.ListenAndServe(":8080", nil) }\n',
        },
        ["go-service"],
    ),
    "nix": (
        {"flake.nix": "{ outputs = { self }: { }; }\n", ".envrc": "use flake\n"},
        ["nix-project"],
    ),
}


@pytest.mark.parametrize("kind", sorted(REPOS))
def test_init_on_each_kind_of_repository(tmp_path: Path, kind: str) -> None:
    files, kits = REPOS[kind]
    root = tmp_path / kind
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    plan = plan_init(root)
    assert [p.kit.id for p in plan.proposals] == kits
    code, out = invoke(root, "init", "--apply", "--no-diff")
    assert code == 0, out
    manifest = load_manifest(root)
    assert manifest is not None and [k.id for k in manifest.kits] == kits
    assert {c.path for c in plan.changes if c.writes} <= set(tree(root))
    assert plan_init(root).empty
    assert invoke(root, "kits", "status", "--check")[0] == 0
    if kind == "rag":
        code, out = invoke(root, "eval", "run", "--display", "none")
        assert code in (0, 1), out  # the stand-in agent answers nothing useful, but it runs
        result = json.loads(
            next((root / ".coalmine/reports/evals/retrieval-recall").glob("*.json")).read_text()
        )
        assert result["cases"] == 3 and result["badLines"] == 0
    if kind == "next":
        spec = (root / "harness/web/smoke.spec.ts").read_text("utf-8")
        assert '"/about"' in spec
