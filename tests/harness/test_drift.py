"""``coalmine kits status|update`` and ``coalmine gates run`` on a real adopted harness."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from coalmine._util.hashing import hash_text
from coalmine.engine.history import open_store
from coalmine.harness.drift import harness_status, plan_update
from coalmine.harness.kits import (
    BASE_DIR,
    MANIFEST_PATH,
    dump_manifest,
    get_kit,
    load_manifest,
)
from coalmine.store.memory import add_lesson, list_lessons
from tests.harness.test_init import agent_repo
from tests.helpers.cli import run_main

SUITE_YAML = "harness/evals/injection-red-team.yaml"


def invoke(root: Path, *args: str) -> tuple[int, str]:
    return run_main(*args, "--root", str(root))


def adopted_repo(tmp_path: Path) -> Path:
    root = agent_repo(tmp_path / "repo")
    code, out = invoke(root, "init", "--apply", "--no-diff")
    assert code == 0, out
    return root


def states(root: Path) -> dict[str, str]:
    status = harness_status(root, None)
    return {f.path: f.state for f in status.files if f.state != "ok"}


def test_status_is_clean_after_init_and_shows_hand_edits(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    status = harness_status(root, None)
    assert status.manifest and not status.drifted
    assert [(k.id, k.applies, k.outdated) for k in status.kits] == [("agent-runtime", True, False)]
    assert invoke(root, "kits", "status", "--check")[0] == 0

    with (root / "gates" / "agent-red-team.sh").open("a", encoding="utf-8") as f:
        f.write("# my tweak\n")
    (root / "harness" / "evals" / "trajectory-goal-success.jsonl").unlink()
    assert states(root) == {
        "gates/agent-red-team.sh": "edited",
        "harness/evals/trajectory-goal-success.jsonl": "missing",
    }
    code, out = invoke(root, "kits", "status", "--check")
    assert code == 1
    assert "edited   gates/agent-red-team.sh  (agent-runtime)" in out
    assert "missing  harness/evals/trajectory-goal-success.jsonl" in out
    data = json.loads(invoke(root, "kits", "status", "--json")[1])
    assert data["drifted"] is True
    assert {"kit": "agent-runtime", "path": "gates/agent-red-team.sh", "state": "edited"} in data[
        "files"
    ]


def test_status_without_a_manifest(tmp_path: Path) -> None:
    code, out = invoke(tmp_path, "kits", "status")
    assert code == 0 and "no harness/manifest.json" in out
    assert invoke(tmp_path, "kits", "status", "--check")[0] == 1


def test_kits_that_stop_or_start_applying(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    agent = root / "agent.py"
    agent.write_text(agent.read_text("utf-8").replace("import openai", "import json"), "utf-8")
    (root / ".mcp.json").unlink()
    (root / "search.py").write_text("import chromadb\n", encoding="utf-8")
    status = harness_status(root, None)
    assert [(k.id, k.applies) for k in status.kits] == [("agent-runtime", False)]
    assert status.new_kits == (("rag-system", ("retrieval:vector-db",)),)
    out = invoke(root, "kits", "status")[1]
    version = get_kit("agent-runtime").version
    assert f"agent-runtime: v{version}, up to date; NO LONGER APPLIES" in out
    assert "rag-system: NEWLY APPLIES (retrieval:vector-db)" in out


def test_a_version_that_moved_on_is_reported(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    manifest = load_manifest(root)
    assert manifest is not None
    old = manifest.kits[0].model_copy(update={"version": 0})
    (root / MANIFEST_PATH).write_text(dump_manifest(manifest.model_copy(update={"kits": [old]})))
    [kit] = harness_status(root, None).kits
    installed = get_kit("agent-runtime").version
    assert kit.outdated and (kit.adopted_version, kit.installed_version) == (0, installed)


def test_evolution_rules_fire_when_watched_files_change_after_the_suite_ran(
    tmp_path: Path,
) -> None:
    root = adopted_repo(tmp_path)
    store = open_store(root)
    try:
        fired = harness_status(root, store).suggestions
        never = [s for s in fired if s.rerun == "coalmine eval run agent-tool-safety"]
        assert never and never[0].last_run is None and "agent.py" in never[0].changed

        code = run_main(
            "eval", "run", "agent-tool-safety", "--root", str(root), "--display", "none"
        )[0]
        assert code in (0, 1)
        assert not [
            s
            for s in harness_status(root, store).suggestions
            if s.rerun == "coalmine eval run agent-tool-safety"
        ]

        later = time.time() + 60
        os.utime(root / "agent.py", (later, later))
        [again] = [
            s
            for s in harness_status(root, store).suggestions
            if s.rerun == "coalmine eval run agent-tool-safety"
        ]
        assert again.changed == ("agent.py",) and again.last_run is not None
    finally:
        store.close()
    out = invoke(root, "kits", "status")[1]
    assert "→ coalmine eval run agent-tool-safety" in out
    assert "changed since 01" in out  # an eval run id


def test_a_rule_watches_every_file_of_a_signal_not_only_its_evidence(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    for i in range(12):  # the evidence keeps the first ten places: agent.py, then zz/w00 …
        (root / "zz").mkdir(exist_ok=True)
        (root / "zz" / f"w{i:02}.py").write_text("import openai\n", encoding="utf-8")
    store = open_store(root)
    try:
        code = run_main(
            "eval", "run", "agent-tool-safety", "--root", str(root), "--display", "none"
        )[0]
        assert code in (0, 1)
        later = time.time() + 60
        os.utime(root / "zz" / "w11.py", (later, later))
        [fired] = [
            s
            for s in harness_status(root, store).suggestions
            if s.rerun == "coalmine eval run agent-tool-safety"
        ]
        assert fired.changed == ("zz/w11.py",)
    finally:
        store.close()


def older_kit_text(root: Path, path: str, old_line: str, new_line: str) -> None:
    """Make it look as if the kit wrote ``path`` with ``old_line`` where it now has ``new_line``."""
    text = (root / path).read_text("utf-8")
    assert new_line in text
    old = text.replace(new_line, old_line, 1)
    (root / BASE_DIR / path).write_text(old, encoding="utf-8")
    (root / path).write_text(old, encoding="utf-8")
    manifest = load_manifest(root)
    assert manifest is not None
    kit = manifest.kits[0]
    files = [
        f.model_copy(update={"sha256": hash_text(old)}) if f.path == path else f for f in kit.files
    ]
    kit = kit.model_copy(update={"files": files})
    (root / MANIFEST_PATH).write_text(dump_manifest(manifest.model_copy(update={"kits": [kit]})))


def first_line(root: Path, path: str) -> str:
    return (root / path).read_text("utf-8").splitlines()[0] + "\n"


def test_update_replaces_an_unedited_file(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    line = first_line(root, SUITE_YAML)
    older_kit_text(root, SUITE_YAML, "# the old kit's first line\n", line)
    plan = plan_update(root)
    [change] = [c for c in plan.changes if c.writes]
    assert (change.path, change.action) == (SUITE_YAML, "replace")
    assert f"-# the old kit's first line\n+{line}" in change.diff()
    code, out = invoke(root, "kits", "update", "--apply", "--no-diff")
    assert code == 0, out
    assert first_line(root, SUITE_YAML) == line
    assert not states(root) and plan_update(root).empty


def test_update_restores_a_missing_owned_file(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    gate = root / "gates" / "agent-red-team.sh"
    kept = gate.read_text(encoding="utf-8")
    gate.unlink()
    (root / SUITE_YAML).unlink()
    assert states(root) == {"gates/agent-red-team.sh": "missing", SUITE_YAML: "missing"}
    code, out = invoke(root, "gates", "run", "agent-red-team")
    assert code == 1 and "exit 127" in out
    assert "gates/agent-red-team.sh is missing: it is owned by kit agent-runtime" in out
    code, out = invoke(root, "kits", "update", "--no-diff")  # a dry run says what it restores
    assert code == 0 and "up to date" not in out
    assert "gates/agent-red-team.sh" in out and "restored" in out
    code, out = invoke(root, "kits", "update", "--apply", "--no-diff")
    assert code == 0, out
    assert gate.read_text(encoding="utf-8") == kept and os.access(gate, os.X_OK)
    assert (root / SUITE_YAML).is_file()
    assert not states(root) and plan_update(root).empty
    assert invoke(root, "kits", "status", "--check")[0] == 0


def test_update_leaves_a_folder_where_an_owned_file_was(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    (root / SUITE_YAML).unlink()
    (root / SUITE_YAML).mkdir()
    [change] = [c for c in plan_update(root).changes if c.path == SUITE_YAML]
    assert not change.writes and "not a text file" in change.note
    code, out = invoke(root, "kits", "update", "--apply", "--no-diff")
    assert code == 0 and "Traceback" not in out
    assert (root / SUITE_YAML).is_dir()


def test_update_merges_the_kit_change_with_your_edit(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    line = first_line(root, SUITE_YAML)
    older_kit_text(root, SUITE_YAML, "# the old kit's first line\n", line)
    with (root / SUITE_YAML).open("a", encoding="utf-8") as f:
        f.write("# my own note at the end\n")
    store = open_store(root)
    try:
        add_lesson(store, "risk-note", "red-team suite defaults are tuned", paths=[SUITE_YAML])
        plan = plan_update(root, store=store)
    finally:
        store.close()
    [change] = [c for c in plan.changes if c.writes]
    assert (change.action, change.conflicts) == ("merge", 0)
    assert change.lessons == ("#1 risk-note: red-team suite defaults are tuned",)
    code, out = invoke(root, "kits", "update", "--no-diff")  # a dry run shows the lesson
    assert "lesson #1 risk-note: red-team suite defaults are tuned" in out
    assert "dry run" in out
    code, out = invoke(root, "kits", "update", "--apply", "--no-diff")
    assert code == 0, out
    merged = (root / SUITE_YAML).read_text("utf-8")
    assert merged.startswith(line) and merged.endswith("# my own note at the end\n")
    assert (root / BASE_DIR / SUITE_YAML).read_text("utf-8") == merged.removesuffix(
        "# my own note at the end\n"
    )
    assert states(root) == {}  # the merge result is what the manifest now records


def test_update_marks_conflicts_and_exits_1(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    line = first_line(root, SUITE_YAML)
    older_kit_text(root, SUITE_YAML, "# the old kit's first line\n", line)
    text = (root / SUITE_YAML).read_text("utf-8")
    (root / SUITE_YAML).write_text(text.replace("# the old kit's first line\n", "# mine\n"))
    code, out = invoke(root, "kits", "update", "--apply", "--no-diff")
    assert code == 1 and f"conflicts to resolve in: {SUITE_YAML}" in out
    merged = (root / SUITE_YAML).read_text("utf-8")
    assert merged.startswith(f"<<<<<<< yours\n# mine\n=======\n{line}>>>>>>> kit\n")


def test_update_leaves_edits_alone_when_the_kit_did_not_change(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    with (root / SUITE_YAML).open("a", encoding="utf-8") as f:
        f.write("# mine\n")
    plan = plan_update(root)
    assert plan.empty
    assert invoke(root, "kits", "update")[1].strip() == "the harness is up to date with its kits"


def test_a_file_the_kit_dropped_is_deleted_if_unedited_else_disowned(tmp_path: Path) -> None:
    root = adopted_repo(tmp_path)
    manifest = load_manifest(root)
    assert manifest is not None
    extra = {"harness/evals/old.jsonl": "{}\n", "harness/evals/old-edited.jsonl": "{}\n"}
    for path, text in extra.items():
        (root / path).write_text(text + ("# edited\n" if "edited" in path else ""))
    kit = manifest.kits[0]
    owned = [
        *kit.files,
        *(
            kit.files[0].model_copy(update={"path": p, "sha256": hash_text(t)})
            for p, t in extra.items()
        ),
    ]
    kit = kit.model_copy(update={"files": owned})
    (root / MANIFEST_PATH).write_text(dump_manifest(manifest.model_copy(update={"kits": [kit]})))
    actions = {c.path: c.action for c in plan_update(root).changes if c.action != "unchanged"}
    assert actions == {
        "harness/evals/old.jsonl": "delete",
        "harness/evals/old-edited.jsonl": "disown",
    }
    assert invoke(root, "kits", "update", "--apply", "--no-diff")[0] == 0
    assert not (root / "harness/evals/old.jsonl").exists()
    assert (root / "harness/evals/old-edited.jsonl").exists()
    after = load_manifest(root)
    assert after is not None and not {*extra} & after.owned_paths()


def write_gates(root: Path, commands: list[dict[str, object]]) -> None:
    manifest = {
        "schema": "coalmine.manifest.v1",
        "parameters": {"project": "p", "agent": "app"},
        "kits": [
            {
                "id": "custom",
                "version": 1,
                "adoptedAt": "2026-01-01T00:00:00+00:00",
                "updatedAt": "2026-01-01T00:00:00+00:00",
                "appliesBecause": [],
                "commands": commands,
                "evolutionRules": [],
                "files": [],
            }
        ],
    }
    (root / "harness").mkdir(parents=True, exist_ok=True)
    (root / MANIFEST_PATH).write_text(json.dumps(manifest))


def test_gates_run_honours_blocking_and_advisory(tmp_path: Path) -> None:
    write_gates(
        tmp_path,
        [
            {"id": "ok", "command": "echo fine", "blocks": True},
            {"id": "advice", "command": "echo meh >&2; exit 3", "blocks": False},
            {"id": "which", "command": "command -v coalmine", "blocks": True},
        ],
    )
    code, out = invoke(tmp_path, "gates", "run")
    assert code == 0, out  # the advisory failure does not fail the run
    assert "PASS  ok  (custom, blocking" in out
    assert "FAIL  advice  (custom, advisory" in out and "exit 3)" in out and "      meh" in out
    assert "2/3 gates passed; advisory failures: advice" in out

    write_gates(
        tmp_path,
        [
            {"id": "broken", "command": "exit 4", "blocks": True},
            {"id": "slow", "command": "sleep 5", "blocks": False, "timeoutSeconds": 0.3},
        ],
    )
    code, out = invoke(tmp_path, "gates", "run")
    assert code == 1
    assert "TIME  slow" in out
    assert "0/2 gates passed; blocking failures: broken; advisory failures: slow" in out
    assert invoke(tmp_path, "gates", "run", "slow")[0] == 0  # only the advisory one
    code, out = invoke(tmp_path, "gates", "run", "nope")
    assert code == 2 and "unknown gate or kit: nope; gates: broken, slow" in out


def test_gates_run_verbose_shows_all_output_and_a_missing_tool_keeps_its_hint(
    tmp_path: Path,
) -> None:
    many = "for i in $(seq 1 300); do echo line-$i; done"
    write_gates(
        tmp_path,
        [
            {"id": "chatty", "command": many, "blocks": True},
            {
                "id": "no-tool",
                "command": "echo 'x: frobtool not found; install it with: apt install frob' >&2; "
                + many
                + "; exit 127",
                "blocks": True,
            },
        ],
    )
    out = invoke(tmp_path, "gates", "run", "chatty", "--verbose")[1]
    assert all(f"      line-{i}\n" in out for i in (1, 150, 300))
    out = invoke(tmp_path, "gates", "run", "no-tool")[1]
    assert "line-1\n" not in out and "line-300" in out and "260 earlier" not in out
    assert "      x: frobtool not found; install it with: apt install frob" in out
    assert "exit 127: a command the gate needs was not found" in out


def test_gates_run_puts_this_coalmine_first_on_path(tmp_path: Path) -> None:
    write_gates(tmp_path, [{"id": "which", "command": "command -v coalmine", "blocks": True}])
    code, out = invoke(tmp_path, "gates", "run", "--verbose")
    assert code == 0
    import sys

    assert str(Path(sys.executable).parent / "coalmine") in out


def test_gates_list_and_no_manifest(tmp_path: Path) -> None:
    code, out = invoke(tmp_path, "gates", "list")
    assert code == 2 and "run `coalmine init` first" in out
    root = adopted_repo(tmp_path)
    out = invoke(root, "gates", "list")[1]
    assert "agent-red-team  agent-runtime  blocking  bash gates/agent-red-team.sh" in out


def test_a_blocking_gate_that_passed_then_fails_becomes_a_lesson(tmp_path: Path) -> None:
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "check.sh").write_text('test ! -e "$(dirname "$0")/../broken"\n')
    write_gates(
        tmp_path,
        [
            {"id": "check", "command": "bash gates/check.sh", "blocks": True},
            {"id": "soft", "command": "bash gates/check.sh", "blocks": False},
        ],
    )
    assert invoke(tmp_path, "gates", "run")[0] == 0
    (tmp_path / "broken").write_text("")
    assert invoke(tmp_path, "gates", "run")[0] == 1
    assert invoke(tmp_path, "gates", "run")[0] == 1  # still failing: not a new regression
    store = open_store(tmp_path)
    try:
        lessons = list_lessons(store)
    finally:
        store.close()
    [lesson] = lessons  # the advisory gate's failure is no lesson
    assert lesson.kind == "caught-regression"
    assert lesson.text.startswith("Gate check (custom) caught a regression: it passed at ")
    assert lesson.text.endswith(" and now exits 1 (bash gates/check.sh).")
    assert lesson.paths == ("gates/check.sh",) and lesson.tags == ("check", "custom", "gate")
    assert lesson.evidence[0].startswith("gate:check@")


def test_a_rule_naming_a_gate_fires_until_the_gate_runs_after_the_change(tmp_path: Path) -> None:
    write_gates(tmp_path, [{"id": "go-test", "command": "true", "blocks": True}])
    manifest = json.loads((tmp_path / MANIFEST_PATH).read_text())
    manifest["kits"][0]["evolutionRules"] = [
        {"text": "When Go code changes, rerun go test.", "watch": ["**/*.go"], "gate": "go-test"},
        "Advice that never fires.",
    ]
    (tmp_path / MANIFEST_PATH).write_text(json.dumps(manifest))
    (tmp_path / "main.go").write_text("package main\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.go").write_text("package pkg\n")
    store = open_store(tmp_path)
    try:
        status = harness_status(tmp_path, store)
        [fired] = status.suggestions
        assert (fired.rerun, fired.changed, fired.last_run) == (
            "coalmine gates run go-test",
            ("main.go", "pkg/a.go"),
            None,
        )
        assert status.advice == (("custom", "Advice that never fires."),)
        assert invoke(tmp_path, "gates", "run")[0] == 0
        assert harness_status(tmp_path, store).suggestions == ()
        later = time.time() + 60
        os.utime(tmp_path / "pkg" / "a.go", (later, later))
        [again] = harness_status(tmp_path, store).suggestions
        assert again.changed == ("pkg/a.go",) and again.last_run.startswith("go-test at 20")
    finally:
        store.close()
    out = invoke(tmp_path, "kits", "status")[1]
    assert "custom: When Go code changes, rerun go test. → coalmine gates run go-test" in out


def test_a_watch_entry_is_a_kind_only_when_it_names_one(tmp_path: Path) -> None:
    write_gates(tmp_path, [{"id": "build", "command": "true", "blocks": True}])
    manifest = json.loads((tmp_path / MANIFEST_PATH).read_text())
    manifest["kits"][0]["evolutionRules"] = [
        {"text": "justfile changed", "watch": ["justfile"], "gate": "build"},
        {"text": "nix changed", "watch": ["nix"], "gate": "build"},
    ]
    (tmp_path / MANIFEST_PATH).write_text(json.dumps(manifest))
    (tmp_path / "justfile").write_text("build:\n\ttrue\n")  # a plain word: a file, not a kind
    (tmp_path / "flake.nix").write_text("{ }\n")  # the nix signal's evidence
    fired = {s.text: s.changed for s in harness_status(tmp_path, None).suggestions}
    assert fired == {"justfile changed": ("justfile",), "nix changed": ("flake.nix",)}


def test_a_flaky_gate_keeps_one_lesson_and_a_gate_that_cannot_run_makes_none(
    tmp_path: Path,
) -> None:
    (tmp_path / "gates").mkdir()
    # exits with the code in ./code (0 when there is none)
    (tmp_path / "gates" / "check.sh").write_text('exit "$(cat code 2>/dev/null || echo 0)"\n')
    write_gates(tmp_path, [{"id": "check", "command": "bash gates/check.sh", "blocks": True}])
    for code in ("0", "1", "0", "1", "0", "2", "0", "127", "0", "1"):
        (tmp_path / "code").write_text(code)
        invoke(tmp_path, "gates", "run")
    store = open_store(tmp_path)
    try:
        [lesson] = list_lessons(store)
    finally:
        store.close()
    assert lesson.count == 3  # the three times it went from passing to exit 1
    assert lesson.text.endswith(" and now exits 1 (bash gates/check.sh).")
    assert lesson.last_run is not None and lesson.last_run == lesson.evidence[0]


@pytest.mark.slow  # three coalmine processes
def test_a_blocking_gate_blocks_on_a_suite_that_says_blocking_false(tmp_path: Path) -> None:
    (tmp_path / "coalmine.yaml").write_text("agents:\n  echo: {provider: echo}\n")
    evals = tmp_path / "harness" / "evals"
    evals.mkdir(parents=True)
    case = {
        "id": "a",
        "prompt": "hello",
        "graders": [{"type": "contains", "config": {"value": "bye"}}],
    }
    (evals / "soft.jsonl").write_text(json.dumps(case) + "\n")
    (evals / "soft.yaml").write_text("agent: echo\nblocking: false\n")
    command = "coalmine eval run soft --display plain"
    write_gates(
        tmp_path,
        [
            {"id": "evals", "command": command, "blocks": True},
            {"id": "evals-advice", "command": command, "blocks": False},
        ],
    )
    code, out = invoke(tmp_path, "gates", "run", "evals")
    assert code == 1, out  # every case fails, and the manifest calls the gate blocking
    assert "suite soft says blocking: false, but the blocking gate evals runs it" in out
    code, out = invoke(tmp_path, "gates", "run", "evals-advice")
    assert code == 0, out  # an advisory gate: the suite's own setting stands
    assert "says blocking: false" not in out
    assert run_main("eval", "run", "soft", "--root", str(tmp_path), "--display", "none")[0] == 0
