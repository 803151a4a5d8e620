"""The charm-service kit: go test with the race detector, the Wish smoke and session replay.

``go build`` is faked: it "builds" a small Python program (an SSH-banner server, a silent one,
a TUI) into the output path, and the gate script runs that as the binary.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.gate_sandbox import PYTHON, Sandbox, make_context, render

FAST = {"WISH_SMOKE_TIMEOUT": "1.5"}

# go env GOOS GOARCH CGO_ENABLED → FAKE_GO_ENV; go build -o OUT PKG → copy FAKE_GO_BINARY to OUT;
# go test → create the cassette FAKE_GO_RECORD (as an x/vcr test that records)
FAKE_GO = """
import shutil
args = sys.argv[1:]
if args[:1] == ["env"]:
    print(os.environ.get("FAKE_GO_ENV", "linux\\namd64\\n1"))
elif args[:1] == ["build"] and os.environ.get("FAKE_GO_BINARY"):
    out = args[args.index("-o") + 1]
    shutil.copy(os.environ["FAKE_GO_BINARY"], out)
    os.chmod(out, 0o755)
elif args[:1] == ["test"] and os.environ.get("FAKE_GO_RECORD"):
    os.makedirs(os.path.dirname(os.environ["FAKE_GO_RECORD"]), exist_ok=True)
    open(os.environ["FAKE_GO_RECORD"], "w").write("interactions: []\\n")
"""

SSH_SERVER = f"""#!{PYTHON}
import os, socket
port = int(os.environ["PORT"]) if os.environ.get("FIXED") is None else 0
server = socket.create_server(("127.0.0.1", port))
if os.environ.get("METRICS"):
    import http.server, threading
    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/metrics" else 404)
            self.end_headers()
            self.wfile.write(b"# HELP wish_sessions_total Sessions.\\n# TYPE wish_sessions_total counter\\n")
        def log_message(self, *args):
            pass
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    if not os.environ.get("SILENT"):
        conn.sendall(b"SSH-2.0-fake\\r\\n")
        conn.close()
"""

TUI = f"""#!{PYTHON}
import os, sys, tty
tty.setraw(0)
os.write(1, b"\\x1b[2J\\x1b[1;1H\\x1b[1mhello\\x1b[0m from the tui\\r\\n")
while True:
    key = os.read(0, 1)
    if key in (b"q", b""):
        os.write(1, b"bye\\r\\n")
        break
"""


def make_sandbox(tmp_path: Path, **facts: object) -> Sandbox:
    """A repository whose program is its root package (``go_mains: ["."]``) unless told."""
    facts.setdefault("go_mains", ["."])
    box = Sandbox(tmp_path, "charm-service", make_context(facts=facts))
    (box.root / "go.mod").write_text("module example.com/demo\n", encoding="utf-8")
    box.shim("go", body=FAKE_GO)
    return box


def program(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "program"
    path.write_text(text)
    return {"FAKE_GO_BINARY": str(path)}


def test_rendered_files_and_the_session_format() -> None:
    facts = {"charm": ["wish", "bubbletea", "promwish"], "go_mains": ["./cmd/cli", "./cmd/sshd"]}
    files = render("charm-service", make_context(facts=facts))
    assert list(files) == [
        "gates/charm-go-test.sh",
        "gates/wish-smoke.sh",
        "harness/vcr/sessions/smoke.jsonl",
    ]
    smoke = files["gates/wish-smoke.sh"].text
    assert "MODE=ssh " in smoke and 'PACKAGE="./cmd/sshd"' in smoke and "METRICS=1 " in smoke
    assert "# Owned by coalmine kit charm-service" in smoke
    for line in files["harness/vcr/sessions/smoke.jsonl"].text.splitlines():
        event = json.loads(line)
        assert set(event) == {"t", "dir", "data"} and event["dir"] in ("in", "out")


def test_empty_facts_build_the_module_root() -> None:
    files = render("charm-service", make_context())
    smoke = files["gates/wish-smoke.sh"].text
    assert "MODE=build " in smoke and 'PACKAGE="."' in smoke and "METRICS=0 " in smoke
    assert "cassettes" not in files["gates/charm-go-test.sh"].text


def test_charm_go_test_uses_the_race_detector_where_supported(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    result = box.run("gates/charm-go-test.sh", "-count=1")
    assert result.returncode == 0, result.stderr
    assert [c["argv"] for c in box.calls("go")] == [
        ["env", "GOOS", "GOARCH", "CGO_ENABLED"],
        ["test", "-race", "-count=1", "./..."],
    ]


@pytest.mark.parametrize(
    ("go_env", "why"),
    [("linux\namd64\n0", "it needs cgo"), ("linux\nriscv64\n1", "not supported on linux/riscv64")],
)
def test_charm_go_test_without_race_support(tmp_path: Path, go_env: str, why: str) -> None:
    box = make_sandbox(tmp_path)
    result = box.run("gates/charm-go-test.sh", env={"FAKE_GO_ENV": go_env})
    assert result.returncode == 0, result.stderr
    assert box.calls("go")[-1]["argv"] == ["test", "./..."]
    assert why in result.stderr


def test_charm_go_test_exit_codes(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    box.shim("go", code=1)
    assert box.run("gates/charm-go-test.sh").returncode == 1
    (box.bin / "go").unlink()
    result = box.run("gates/charm-go-test.sh")
    assert result.returncode == 127 and "go not found" in result.stderr


def test_vcr_cassettes_must_be_replayed_not_recorded(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["vcr"])
    cassette = box.root / "internal/api/testdata/TestFetch.yaml"
    cassette.parent.mkdir(parents=True)
    cassette.write_text("interactions: []\n")
    assert box.run("gates/charm-go-test.sh").returncode == 0
    record = {"FAKE_GO_RECORD": str(box.root / "internal/api/testdata/TestNew.yaml")}
    result = box.run("gates/charm-go-test.sh", env=record)
    assert result.returncode == 1
    assert "x/vcr recorded instead of replaying" in result.stderr
    assert "internal/api/testdata/TestNew.yaml" in result.stderr
    assert "TestFetch" not in result.stderr


def test_wish_smoke_expects_an_ssh_banner(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["wish"], go_mains=["./cmd/server"])
    result = box.run("gates/wish-smoke.sh", env=program(tmp_path, SSH_SERVER))
    assert result.returncode == 0, result.stderr
    assert "answers: SSH-2.0-fake" in result.stdout
    build = box.calls("go")[0]["argv"]
    assert build[0:2] == ["build", "-o"] and build[3] == "./cmd/server"
    assert not list(box.root.glob(".ssh")), "the server runs outside the repository"


def test_wish_smoke_finds_a_server_on_its_own_port(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["wish"])
    result = box.run("gates/wish-smoke.sh", env={**program(tmp_path, SSH_SERVER), "FIXED": "1"})
    assert result.returncode == 0, result.stderr
    assert "answers: SSH-2.0-fake" in result.stdout


def test_wish_smoke_fails_on_a_silent_server(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["wish"])
    env = {**program(tmp_path, SSH_SERVER), "SILENT": "1", **FAST}
    result = box.run("gates/wish-smoke.sh", env=env)
    assert result.returncode == 1
    assert "no SSH banner within 1.5s" in result.stderr and "sent no banner" in result.stderr
    assert "listening" in result.stderr, "the server's output is shown"


def test_wish_smoke_fails_when_the_server_exits(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["wish"])
    crash = f"#!{PYTHON}\nimport sys\nsys.exit('no host key')\n"
    result = box.run("gates/wish-smoke.sh", env={**program(tmp_path, crash), **FAST})
    assert result.returncode == 1
    assert "exited with code 1 before answering" in result.stderr and "no host key" in result.stderr


def test_wish_smoke_checks_promwish_metrics(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["wish", "promwish"])
    env = {**program(tmp_path, SSH_SERVER), **FAST}
    result = box.run("gates/wish-smoke.sh", env={**env, "METRICS": "1"})
    assert result.returncode == 0, result.stderr
    assert "metrics answer at http://127.0.0.1:" in result.stdout
    result = box.run("gates/wish-smoke.sh", env=env)
    assert result.returncode == 1 and "no Prometheus metrics answered" in result.stderr


def test_wish_smoke_build_failure_and_missing_go(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["wish"])
    box.shim("go", code=2)
    assert box.run("gates/wish-smoke.sh").returncode == 2
    (box.bin / "go").unlink()
    result = box.run("gates/wish-smoke.sh")
    assert result.returncode == 127 and "go not found" in result.stderr


def test_a_bubbletea_program_is_only_built(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["bubbletea"], go_mains=["./cmd/tui"])
    result = box.run("gates/wish-smoke.sh", env=program(tmp_path, TUI))
    assert result.returncode == 0, result.stderr
    assert [c["argv"][3] for c in box.calls("go")] == ["./cmd/tui"]
    assert "./cmd/tui builds" in result.stdout


def test_replay_drives_the_tui_through_a_terminal(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["bubbletea"])
    env = {**program(tmp_path, TUI), **FAST}
    result = box.run("gates/wish-smoke.sh", "replay", env=env)
    assert result.returncode == 0, result.stderr
    assert "replayed harness/vcr/sessions/smoke.jsonl (2 events)" in result.stdout

    session = box.root / "harness/vcr/sessions/quit.jsonl"
    events = [
        {"t": 0, "dir": "out", "data": "hello from the tui"},
        {"t": 10, "dir": "in", "data": "q"},
        {"t": 10, "dir": "out", "data": "bye"},
    ]
    session.write_text("".join(json.dumps(e) + "\n" for e in events))
    result = box.run("gates/wish-smoke.sh", "replay", str(session), env=env)
    assert result.returncode == 0, result.stderr

    events[2]["data"] = "goodbye"
    session.write_text("".join(json.dumps(e) + "\n" for e in events))
    result = box.run("gates/wish-smoke.sh", "replay", str(session), env=env)
    assert result.returncode == 1
    assert "quit.jsonl:3: 'goodbye' never appeared (the program ended)" in result.stderr


def test_replay_rejects_a_malformed_session(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["bubbletea"])
    (box.root / "harness/vcr/sessions/bad.jsonl").write_text('{"t": 0, "dir": "sideways"}\n')
    result = box.run("gates/wish-smoke.sh", "replay", env={**program(tmp_path, TUI), **FAST})
    assert result.returncode == 1
    assert 'bad.jsonl:1: want {"t": ms, "dir": "in"|"out", "data": text}' in result.stderr
    assert "replayed harness/vcr/sessions/smoke.jsonl" in result.stdout


def test_replay_over_ssh_needs_ssh(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["wish"])
    result = box.run("gates/wish-smoke.sh", "replay")
    assert result.returncode == 127 and "ssh not found" in result.stderr


def test_replay_over_ssh_connects_to_the_servers_port(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["wish"])
    tui = tmp_path / "tui"
    tui.write_text(TUI)
    tui.chmod(0o755)
    box.shim("ssh", body=f"os.execv({str(tui)!r}, [{str(tui)!r}])")
    result = box.run("gates/wish-smoke.sh", "replay", env={**program(tmp_path, SSH_SERVER), **FAST})
    assert result.returncode == 0, result.stderr
    [ssh] = box.calls("ssh")
    assert ssh["argv"][:2] == ["-tt", "-p"] and ssh["argv"][-1] == "127.0.0.1"
    assert "BatchMode=yes" in ssh["argv"]
    assert "replayed harness/vcr/sessions/smoke.jsonl" in result.stdout


def test_a_library_is_built_in_every_module_not_smoked_as_a_program(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, charm=["bubbletea", "lipgloss"], go_mains=[])
    (box.root / "examples").mkdir()
    (box.root / "examples" / "go.mod").write_text("module example.com/demo/examples\n")
    result = box.run("gates/wish-smoke.sh")
    assert result.returncode == 0, result.stdout + result.stderr
    builds = box.calls("go")
    assert [c["argv"] for c in builds] == [["build", "./..."], ["build", "./..."]]
    assert sorted(Path(c["cwd"]).name for c in builds) == ["examples", "repo"]
    assert "every package of the library builds" in result.stdout
    assert "builds (a Bubble Tea program" not in result.stdout
    replay = box.run("gates/wish-smoke.sh", "replay")
    assert replay.returncode == 0 and "a library has no program" in replay.stdout
    test = box.run("gates/charm-go-test.sh")
    assert test.returncode == 0, test.stderr
    tested = [Path(c["cwd"]).name for c in box.calls("go") if c["argv"][0] == "test"]
    assert sorted(tested) == ["examples", "repo"]
