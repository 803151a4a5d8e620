"""The nix-project kit: flake check and the dev shell smoke, run against a fake nix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gate_sandbox import Sandbox, make_context, render

CONTRACT = "harness/contracts/devshell.json"
ENTER_FLAKE = ["--extra-experimental-features", "nix-command flakes", "develop", "--command"]

# nix develop --command CMD…: run CMD (the shell is "entered"); nix config show: print a config
FAKE_NIX = """
args = sys.argv[1:]
if "--command" in args:
    rest = args[args.index("--command") + 1:]
    os.execvp(rest[0], rest)
if "config" in args:
    print(os.environ.get("FAKE_NIX_CONFIG", ""))
"""
FAKE_NIX_SHELL = """
args = sys.argv[1:]
os.execvp("bash", ["bash", "-c", args[args.index("--run") + 1]])
"""


def nix_facts(
    *, flake: bool = True, envrc: bool = False, tools: list[str] | None = None
) -> dict[str, object]:
    return {"nix": {"flake": flake, "shell_nix": not flake, "envrc": envrc, "tools": tools or []}}


def make_sandbox(tmp_path: Path, **nix: Any) -> Sandbox:
    return Sandbox(tmp_path, "nix-project", make_context(facts=nix_facts(**nix)))


def version_shim(box: Sandbox, name: str, line: str) -> None:
    box.shim(name, body=f"print({line!r})")


def test_contract_maps_packages_to_commands_and_versions() -> None:
    facts = nix_facts(tools=["go", "node", "python311", "ripgrep", "awscli2", "jq"], envrc=True)
    contract = json.loads(render("nix-project", make_context(facts=facts))[CONTRACT].text)
    assert contract["schema"] == "coalmine.contract.devshell.v1"
    assert contract["$comment"].startswith("Owned by coalmine kit nix-project")
    assert contract["shell"] == "flake"
    assert [(t["name"], t["command"], t["versionContains"]) for t in contract["tools"]] == [
        ("go", "go", None),
        ("node", "node", None),
        ("python311", "python3", "Python 3.11"),
        ("ripgrep", "rg", None),
        ("awscli2", "aws", None),
        ("jq", "jq", None),
    ]
    assert contract["tools"][0]["versionArgs"] == ["version"]
    assert contract["direnv"] == {"envrc": True, "use": "flake"}


def test_empty_facts_give_an_explicit_empty_contract() -> None:
    contract = json.loads(render("nix-project", make_context())[CONTRACT].text)
    assert contract["shell"] == "nix-shell" and contract["tools"] == []
    assert "list the tools it must expose" in contract["$comment"]
    assert contract["direnv"] == {"envrc": False, "use": None}


def test_flake_check_runs_nix_flake_check(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    (box.root / "flake.nix").write_text("{ }\n")
    box.shim("nix")
    result = box.run("gates/nix-flake-check.sh", "-L")
    assert result.returncode == 0, result.stderr
    assert [c["argv"] for c in box.calls("nix")] == [
        ["--extra-experimental-features", "nix-command flakes", "flake", "check", "-L"]
    ]
    box.shim("nix", code=1)
    assert box.run("gates/nix-flake-check.sh").returncode == 1


def test_without_a_flake_shell_nix_must_parse_and_instantiate(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, flake=False)
    (box.root / "shell.nix").write_text("{ }\n")
    box.shim("nix-instantiate")
    result = box.run("gates/nix-flake-check.sh")
    assert result.returncode == 0, result.stderr
    assert [c["argv"] for c in box.calls()] == [["--parse", "shell.nix"], ["shell.nix"]]
    box.shim("nix-instantiate", code=1)
    assert box.run("gates/nix-flake-check.sh").returncode == 1


@pytest.mark.parametrize(("flake", "tool"), [(True, "nix"), (False, "nix-instantiate")])
def test_flake_check_without_nix_gives_a_hint(tmp_path: Path, flake: bool, tool: str) -> None:
    box = make_sandbox(tmp_path, flake=flake)
    (box.root / ("flake.nix" if flake else "shell.nix")).write_text("{ }\n")
    result = box.run("gates/nix-flake-check.sh")
    assert result.returncode == 127
    assert f"{tool} not found; install Nix" in result.stderr


def test_dev_shell_smoke_checks_every_tool_inside_the_shell(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, tools=["go", "ripgrep"])
    box.shim("nix", body=FAKE_NIX)
    version_shim(box, "go", "go version go1.22.4 linux/amd64")
    version_shim(box, "rg", "ripgrep 14.1.0")
    result = box.run("gates/dev-shell-smoke.sh")
    assert result.returncode == 0, result.stderr
    [enter] = box.calls("nix")
    assert enter["argv"][:4] == ENTER_FLAKE and enter["argv"][4] == "bash"
    assert "ok go" in result.stdout and "go version go1.22.4 linux/amd64" in result.stdout
    assert "ok rg" in result.stdout and "ripgrep 14.1.0" in result.stdout
    assert [c["argv"] for c in box.calls("go")] == [["version"]]


def test_dev_shell_smoke_names_missing_tools_and_wrong_versions(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, tools=["go", "ripgrep", "jq"])
    contract = json.loads((box.root / CONTRACT).read_text())
    contract["tools"][0]["versionContains"] = "go1.22"
    (box.root / CONTRACT).write_text(json.dumps(contract))
    box.shim("nix", body=FAKE_NIX)
    version_shim(box, "go", "go version go1.21.0 linux/amd64")
    version_shim(box, "jq", "jq-1.7")
    result = box.run("gates/dev-shell-smoke.sh")
    assert result.returncode == 1
    assert "the dev shell lacks: go (go1.22) rg" in result.stderr
    assert "ok jq" in result.stdout


def test_dev_shell_smoke_enters_nix_shell_without_a_flake(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, flake=False, tools=["jq"])
    box.shim("nix-shell", body=FAKE_NIX_SHELL)
    version_shim(box, "jq", "jq-1.7")
    result = box.run("gates/dev-shell-smoke.sh")
    assert result.returncode == 0, result.stderr
    [enter] = box.calls("nix-shell")
    assert enter["argv"][0] == "--run" and enter["argv"][1].startswith("bash ")
    assert "ok jq" in result.stdout


def test_dev_shell_smoke_with_no_tools_only_enters_the_shell(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    box.shim("nix", body=FAKE_NIX)
    result = box.run("gates/dev-shell-smoke.sh")
    assert result.returncode == 0, result.stderr
    assert "no tools are listed" in result.stderr


def test_dev_shell_smoke_exits_with_nix_code_when_the_shell_fails(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    box.shim("nix", code=1)
    assert box.run("gates/dev-shell-smoke.sh").returncode == 1


def test_dev_shell_smoke_without_nix_gives_a_hint(tmp_path: Path) -> None:
    result = make_sandbox(tmp_path).run("gates/dev-shell-smoke.sh")
    assert result.returncode == 127 and "nix not found; install Nix" in result.stderr


def test_direnv_policy_is_enforced(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, envrc=True)
    box.shim("nix", body=FAKE_NIX)
    result = box.run("gates/dev-shell-smoke.sh")
    assert result.returncode == 1
    assert "direnv.envrc is true but there is no .envrc (want a `use flake` line)" in result.stderr
    (box.root / ".envrc").write_text("dotenv\n")
    result = box.run("gates/dev-shell-smoke.sh")
    assert result.returncode == 1 and "has no `use flake` line" in result.stderr
    (box.root / ".envrc").write_text("dotenv\nuse flake\n")
    assert box.run("gates/dev-shell-smoke.sh").returncode == 0
    assert box.calls("nix"), "the shell is entered once the policy holds"


def test_an_envrc_that_loads_the_shell_against_the_policy_fails(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    box.shim("nix", body=FAKE_NIX)
    (box.root / ".envrc").write_text("dotenv\n")
    assert box.run("gates/dev-shell-smoke.sh").returncode == 0
    (box.root / ".envrc").write_text("use nix\n")
    result = box.run("gates/dev-shell-smoke.sh")
    assert result.returncode == 1
    assert "direnv.envrc is false but .envrc loads the dev shell (`use nix`)" in result.stderr


def test_configured_substituters_must_be_used(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    box.shim("nix", body=FAKE_NIX)
    contract = json.loads((box.root / CONTRACT).read_text())
    contract["substituters"] = ["https://demo.cachix.org"]
    (box.root / CONTRACT).write_text(json.dumps(contract))
    config = "substituters = https://cache.nixos.org/ https://demo.cachix.org"
    result = box.run("gates/dev-shell-smoke.sh", env={"FAKE_NIX_CONFIG": config})
    assert result.returncode == 0, result.stderr
    assert "cache https://demo.cachix.org is configured" in result.stdout
    result = box.run("gates/dev-shell-smoke.sh", env={"FAKE_NIX_CONFIG": "substituters = x"})
    assert (
        result.returncode == 1 and "not configured to use: https://demo.cachix.org" in result.stderr
    )
