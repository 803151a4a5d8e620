"""Kit folders: the contract is checked on load, a plugin registers one, templates render."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from coalmine.errors import PluginError
from coalmine.harness.kits import all_kits, get_kit, load_kit, register_kit_folder, render_kit
from coalmine.harness.kits.registry import BUILTIN_ORDER, KIT_REGISTRY
from tests.helpers.cli import run_main


def kit_folder(root: Path, kit_id: str, templates: dict[str, str], writes: list[str]) -> Path:
    folder = root / kit_id
    (folder / "templates").mkdir(parents=True)
    lines = "".join(f"  - {w}\n" for w in writes)
    (folder / "kit.yaml").write_text(
        f"id: {kit_id}\nversion: 2\ntitle: Test kit\nrisk: none\n"
        f"appliesWhen: [test:{kit_id}]\nwrites:\n  - harness/manifest.json\n{lines}"
        "commands:\n  - {id: hello, command: 'bash gates/hello.sh', blocks: false}\n"
        "evolutionRules:\n  - When hello changes, say hello again.\n"
        "  - {text: Rerun it., watch: ['src/**'], suite: hello}\n",
        encoding="utf-8",
    )
    for rel, text in templates.items():
        path = folder / "templates" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def test_the_bundled_kits_load_the_seed_s_six_first_in_its_order() -> None:
    assert [k.id for k in all_kits()][: len(BUILTIN_ORDER)] == list(BUILTIN_ORDER)
    assert BUILTIN_ORDER[:6] == (
        "agent-runtime", "rag-system", "web-app", "go-service", "nix-project", "charm-service",
    )  # fmt: skip
    for kit_id in BUILTIN_ORDER:
        kit = get_kit(kit_id)
        assert kit.spec.writes[0] == "harness/manifest.json"
        assert kit.files() and kit.spec.evolution_rules
        # the seed's kits each bring gates; the coding-agent skill is a file an agent reads,
        # and the red-team kit's suites run under the agent-runtime and rag-system kits' gates
        assert bool(kit.spec.commands) == (kit_id not in ("coding-agent-skill", "red-team"))
        # every kit applies on signals but the red-team kit, which is asked for by name
        assert bool(kit.spec.applies_when) == (kit_id != "red-team")


def test_a_kit_must_declare_every_template_and_template_every_file(tmp_path: Path) -> None:
    folder = kit_folder(tmp_path, "k", {"a.txt": "a", "stray.txt": "s"}, ["a.txt", "b.txt"])
    with pytest.raises(PluginError) as caught:
        load_kit(folder)
    message = str(caught.value)
    assert "kit 'k'" in message
    assert "'b.txt' has no template" in message
    assert "template 'stray.txt' is not listed in writes" in message
    (folder / "kit.yaml").write_text("id: k\nversion: 0\n", encoding="utf-8")
    with pytest.raises(PluginError, match="not a valid kit"):
        load_kit(folder)


def test_a_plugin_kit_registers_renders_and_is_adopted_with_kit(tmp_path: Path) -> None:
    kit_id = f"test-{uuid.uuid4().hex[:8]}"
    folder = kit_folder(
        tmp_path,
        kit_id,
        {
            "gates/hello.sh": "#!/usr/bin/env bash\necho hello\n",
            "harness/hello.txt.j2": "project {{ project }}, agent {{ agent }}\n",
        },
        ["gates/hello.sh", "harness/hello.txt"],
    )
    kit = register_kit_folder(folder)
    try:
        assert get_kit(kit_id) is kit and all_kits()[-1] is kit
        rendered = render_kit(kit, {"project": "p", "agent": "a"})
        assert [(f.path, f.text, f.executable) for f in rendered] == [
            ("gates/hello.sh", "#!/usr/bin/env bash\necho hello\n", True),
            ("harness/hello.txt", "project p, agent a\n", False),
        ]
        with pytest.raises(PluginError, match=r"template 'harness/hello.txt.j2'.*'agent'"):
            render_kit(kit, {"project": "p"})

        repo = tmp_path / "repo"
        repo.mkdir()
        code, out = run_main("init", "--kit", kit_id, "--apply", "--no-diff", "--root", str(repo))
        assert code == 0, out
        assert (repo / "harness" / "hello.txt").read_text() == "project repo, agent app\n"
        code, out = run_main("gates", "run", "--root", str(repo))
        assert code == 0 and "PASS  hello" in out
    finally:
        KIT_REGISTRY._items.pop(kit_id, None)


def test_kits_list_names_each_kit_and_its_gates() -> None:
    code, out = run_main("kits", "list")
    assert code == 0
    assert "rag-system  v4" in out
    assert "applies when: asked for by name (init --kit, redteam generate)" in out
    assert "applies when: retrieval:embeddings, retrieval:retriever, retrieval:vector-db" in out
