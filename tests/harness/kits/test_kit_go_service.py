"""The go-service kit: go test, go vet and the Windows build gates, run against a fake go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.gate_sandbox import Sandbox, make_context, render

CONTRACT = "harness/contracts/windows-service.json"

# go build -o DIR/ PKG...: one DIR/<last path element>.exe per package, as go names them
FAKE_BUILD = """
args = sys.argv[1:]
if args[:1] == ["build"] and "-o" in args:
    out = args[args.index("-o") + 1]
    for pkg in [a for a in args[1:] if a.startswith(".") and a != out]:
        name = "demo" if pkg in (".", "./...") else pkg.rstrip("/").split("/")[-1]
        open(os.path.join(out, name + ".exe"), "w").close()
"""


def make_sandbox(tmp_path: Path, **facts: object) -> Sandbox:
    box = Sandbox(tmp_path, "go-service", make_context(project="demo", facts=facts))
    (box.root / "go.mod").write_text("module example.com/demo\n", encoding="utf-8")
    return box


def test_contract_names_the_service_and_its_packages() -> None:
    facts = {"go_module": "example.com/demo", "go_mains": ["./cmd/cli", "./cmd/server"]}
    contract = json.loads(render("go-service", make_context(facts=facts))[CONTRACT].text)
    assert contract["schema"] == "coalmine.contract.windows-service.v1"
    assert contract["$comment"].startswith("Owned by coalmine kit go-service")
    assert "where Windows is available" in contract["$comment"]
    assert contract["service"] == {
        "name": "demo",
        "package": "./cmd/server",
        "binary": "server.exe",
    }
    assert contract["packages"] == ["./cmd/cli", "./cmd/server"]
    assert [s["step"] for s in contract["lifecycle"]] == ["install", "start", "stop", "uninstall"]
    assert '-BinaryPathName "$PWD\\server.exe"' in contract["lifecycle"][0]["powershell"]


def test_a_root_main_package_is_named_after_the_module() -> None:
    facts = {"go_module": "example.com/acme/tool/v2", "go_mains": ["."]}
    contract = json.loads(render("go-service", make_context(facts=facts))[CONTRACT].text)
    assert contract["service"]["binary"] == "tool.exe"


def test_empty_facts_give_a_valid_contract() -> None:
    contract = json.loads(render("go-service", make_context())[CONTRACT].text)
    assert contract["packages"] == ["./..."]
    assert contract["service"]["binary"] is None
    assert "No main package was found" in contract["$comment"]


@pytest.mark.parametrize(
    ("script", "verb"), [("gates/go-test.sh", "test"), ("gates/go-vet.sh", "vet")]
)
def test_go_gates_run_over_every_package(tmp_path: Path, script: str, verb: str) -> None:
    box = make_sandbox(tmp_path)
    box.shim("go")
    result = box.run(script, "-count=1")
    assert result.returncode == 0, result.stderr
    assert [c["argv"] for c in box.calls("go")] == [[verb, "-count=1", "./..."]]
    (box.root / "examples").mkdir()  # a nested module (examples/ of a library) is tested too
    (box.root / "examples" / "go.mod").write_text("module example.com/demo/examples\n")
    box.log.unlink()
    assert box.run(script).returncode == 0
    assert sorted(Path(c["cwd"]).name for c in box.calls("go")) == ["examples", "repo"]


@pytest.mark.parametrize(
    "script", ["gates/go-test.sh", "gates/go-vet.sh", "gates/windows-build.sh"]
)
def test_go_gates_exit_with_gos_code(tmp_path: Path, script: str) -> None:
    box = make_sandbox(tmp_path, go_mains=["./cmd/server"])
    box.shim("go", code=2)
    assert box.run(script).returncode == 2


@pytest.mark.parametrize(
    "script", ["gates/go-test.sh", "gates/go-vet.sh", "gates/windows-build.sh"]
)
def test_go_gates_without_go_give_a_hint(tmp_path: Path, script: str) -> None:
    result = make_sandbox(tmp_path).run(script)
    assert result.returncode == 127
    assert "go not found; install Go from https://go.dev/dl/" in result.stderr


def test_windows_build_cross_compiles_the_contracts_packages(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, go_mains=["./cmd/server", "./cmd/cli"])
    box.shim("go", body=FAKE_BUILD)
    result = box.run("gates/windows-build.sh", "-tags", "prod")
    assert result.returncode == 0, result.stderr
    [call] = box.calls("go")
    assert call["env"]["GOOS"] == "windows" and call["env"]["GOARCH"] == "amd64"
    out = call["argv"][2]
    assert out.endswith("/") and not out.startswith(str(box.root))
    assert call["argv"] == ["build", "-o", out, "-tags", "prod", "./cmd/server", "./cmd/cli"]
    assert "built server.exe" in result.stdout and "built cli.exe" in result.stdout
    assert not Path(out).exists(), "the temporary folder is removed"


def test_windows_build_honours_windows_goarch(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    box.shim("go", body=FAKE_BUILD)
    result = box.run("gates/windows-build.sh", env={"WINDOWS_GOARCH": "arm64"})
    assert result.returncode == 0, result.stderr
    [call] = box.calls("go")
    assert call["env"]["GOARCH"] == "arm64" and call["argv"][-1] == "./..."


def test_windows_build_fails_when_the_service_binary_is_not_built(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, go_mains=["./cmd/server"])
    box.shim("go")  # builds nothing
    result = box.run("gates/windows-build.sh")
    assert result.returncode == 1
    assert "the service binary server.exe" in result.stderr


def test_windows_build_checks_the_contract_before_building(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, go_mains=["./cmd/server"])
    box.shim("go", body=FAKE_BUILD)
    contract = json.loads((box.root / CONTRACT).read_text())
    contract["schema"] = "something.else"
    contract["service"]["package"] = "./cmd/other"
    contract["lifecycle"] = contract["lifecycle"][:1]
    (box.root / CONTRACT).write_text(json.dumps(contract))
    result = box.run("gates/windows-build.sh")
    assert result.returncode == 1
    assert 'schema must be "coalmine.contract.windows-service.v1"' in result.stderr
    assert "service.package './cmd/other' is not in packages" in result.stderr
    assert "lifecycle has no start, stop step" in result.stderr
    assert box.calls("go") == []


def test_windows_build_builds_each_package_in_its_own_module(tmp_path: Path) -> None:
    """Two modules and no go.work: go builds a module's packages only from inside it."""
    box = make_sandbox(tmp_path, go_mains=["./cmd/cli", "./services/api/cmd/api"])
    (box.root / "services" / "api" / "cmd" / "api").mkdir(parents=True)
    (box.root / "services" / "api" / "go.mod").write_text("module example.com/api\n")
    box.shim("go", body=FAKE_BUILD)
    result = box.run("gates/windows-build.sh")
    assert result.returncode == 0, result.stderr
    calls = [
        (Path(c["cwd"]).relative_to(box.root).as_posix(), c["argv"][3:]) for c in box.calls("go")
    ]
    assert calls == [(".", ["./cmd/cli"]), ("services/api", ["./cmd/api"])]
    assert "go build ./cmd/api (in module services/api)" in result.stdout
    assert "built cli.exe" in result.stdout and "built api.exe" in result.stdout
