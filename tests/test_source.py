"""The shared YAML loader refuses recursive aliases, alias bombs and runaway nesting.

Every YAML file coalmine reads goes through it; each kind is attacked here through its own
loader (coalmine.yaml, a canary spec, a suite's YAML, an agent file's front matter, a kit,
``init``'s look at coalmine.yaml, a promptfoo config and test file, and coalmine.yaml as
``import promptfoo`` extends it). A bomb must be refused quickly and with bounded memory.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from coalmine._source import MAX_ALIAS_NODES, MAX_DEPTH, SourceError, load_yaml, safe_load
from coalmine.config import load_config
from coalmine.errors import ConfigError, PluginError
from coalmine.graders.base import grader_configs
from coalmine.harness.init import plan_init
from coalmine.harness.kits.model import load_kit
from coalmine.promptfoo.files import import_promptfoo
from coalmine.promptfoo.matrix import load_matrix
from coalmine.promptfoo.matrix.config import load_config as load_promptfoo_config
from coalmine.promptfoo.matrix.sources import Problems
from coalmine.providers.agent_file import load_agent_file
from coalmine.providers.base import provider_settings
from coalmine.specs.loader import InvalidSpec, load_canary_spec
from coalmine.specs.suite import scan_suite

RECURSIVE = "graders: &g [*g]\n"
"""The alias is on line 1."""


def bomb() -> str:
    """Nine nested anchors of nine aliases each: 9**9 nodes when expanded."""
    lines = ["x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 9):
        lines.append(f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


BOMB_LINE = 6
"""The line of the alias that crosses the limit (9**5 expanded nodes > 100,000)."""


@contextmanager
def bounded(seconds: float = 3.0, megabytes: float = 64.0) -> Iterator[None]:
    """The block must finish within ``seconds`` and allocate at most ``megabytes`` at peak."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < seconds, f"took {elapsed:.1f}s"
    assert peak < megabytes * 2**20, f"peaked at {peak / 2**20:.0f} MB"


# -- the loader itself ----------------------------------------------------------------------


def test_recursive_alias_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    with pytest.raises(SourceError) as caught:
        load_yaml(path, text="title: t\n" + RECURSIVE)
    assert caught.value.line == 2
    assert "recursive alias" in caught.value.message
    assert "*g" in caught.value.message


def test_alias_inside_a_mapping_that_it_names_is_recursive(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="recursive alias"):
        load_yaml(tmp_path / "a.yaml", text="a: &x\n  b:\n    c: *x\n")


def test_alias_bomb_is_refused_quickly_at_its_line(tmp_path: Path) -> None:
    with bounded(), pytest.raises(SourceError) as caught:
        load_yaml(tmp_path / "a.yaml", text=bomb())
    assert caught.value.line == BOMB_LINE
    assert f"{MAX_ALIAS_NODES:,}" in caught.value.message


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    text = "a: " + "[" * 500 + "]" * 500 + "\n"  # libyaml refuses 1,000 levels itself
    with pytest.raises(SourceError, match=f"more than {MAX_DEPTH} levels"):
        load_yaml(tmp_path / "a.yaml", text=text)
    with pytest.raises(yaml.YAMLError):
        safe_load(text)


def test_legitimate_aliases_still_work(tmp_path: Path) -> None:
    text = (
        "defaults: &d {timeout: 5, graders: [{type: keyword}]}\n"
        "first: *d\n"
        "second:\n  <<: *d\n  timeout: 9\n"
    )
    doc = load_yaml(tmp_path / "a.yaml", text=text)
    assert doc.data["first"] == {"timeout": 5, "graders": [{"type": "keyword"}]}
    assert doc.data["second"] == {"timeout": 9, "graders": [{"type": "keyword"}]}
    assert safe_load(text) == doc.data


def test_aliases_just_under_the_limit_are_kept(tmp_path: Path) -> None:
    # one anchor of 999 items (1,000 nodes) reused 99 times adds 99,000 nodes
    items = ", ".join(["x"] * 999)
    text = f"a: &a [{items}]\nb: [" + ", ".join(["*a"] * 99) + "]\n"
    doc = load_yaml(tmp_path / "a.yaml", text=text)
    assert len(doc.data["b"]) == 99


def test_a_large_document_without_aliases_is_not_limited(tmp_path: Path) -> None:
    text = "".join(f"k{i}: [a, b, c]\n" for i in range(40_000))  # 200,000 nodes
    assert len(load_yaml(tmp_path / "a.yaml", text=text).data) == 40_000


# -- every loader kind, with both attacks -----------------------------------------------------

ATTACKS = {"recursive": RECURSIVE, "bomb": bomb()}


def _config(root: Path, text: str) -> str:
    (root / "coalmine.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(root, providers=provider_settings())
    return str(caught.value)


def _canary(root: Path, text: str) -> str:
    path = root / "qa-001.yaml"
    path.write_text("id: qa-001\nphase: qa\n" + text, encoding="utf-8")
    found = load_canary_spec(path, phases=["qa"], grader_configs=grader_configs())
    assert isinstance(found, InvalidSpec)
    return found.reason


def _suite_yaml(root: Path, text: str) -> str:
    (root / "s.jsonl").write_text('{"id": "a", "prompt": "p"}\n', encoding="utf-8")
    (root / "s.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        scan_suite(root / "s.jsonl", grader_configs=grader_configs())
    return f"{caught.value.path}:{caught.value.line}: {caught.value.message}"


def _agent_file(root: Path, text: str) -> str:
    path = root / "agent.md"
    path.write_text("---\nname: a\n" + text + "---\nYou are a.\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_agent_file(path)
    return str(caught.value)


def _kit(root: Path, text: str) -> str:
    folder = root / "kit"
    (folder / "templates").mkdir(parents=True)
    (folder / "kit.yaml").write_text("id: k\n" + text, encoding="utf-8")
    with pytest.raises(PluginError) as caught:
        load_kit(folder)
    return str(caught.value)


def _init(root: Path, text: str) -> str:
    (root / "coalmine.yaml").write_text(text, encoding="utf-8")
    plan_init(root)  # it only reads the first agent's name; a refused file has none
    return "coalmine.yaml:2: refused"


def _promptfoo_config(root: Path, text: str) -> str:
    path = root / "promptfooconfig.yaml"
    path.write_text("prompts: [hi]\n" + text, encoding="utf-8")
    problems = Problems()
    assert load_promptfoo_config(path, problems=problems) is None
    return "; ".join(str(p) for p in problems.errors)


def _promptfoo_import(root: Path, text: str) -> str:
    (root / "promptfooconfig.yaml").write_text(
        "prompts: ['{{q}}']\nproviders: [echo]\ntests: [{vars: {q: hi}}]\n", encoding="utf-8"
    )
    (root / "coalmine.yaml").write_text("agents: {}\n" + text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        import_promptfoo(root / "promptfooconfig.yaml", out_dir=root)
    return str(caught.value)


LOADERS: dict[str, Callable[[Path, str], str]] = {
    "coalmine.yaml": _config,
    "canary spec": _canary,
    "suite yaml": _suite_yaml,
    "agent file": _agent_file,
    "kit": _kit,
    "init": _init,
    "promptfoo config": _promptfoo_config,
    "promptfoo import": _promptfoo_import,
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("kind", sorted(LOADERS))
def test_every_yaml_loader_refuses_the_attack(tmp_path: Path, kind: str, attack: str) -> None:
    with bounded():
        message = LOADERS[kind](tmp_path, ATTACKS[attack])
    expected = "recursive alias" if attack == "recursive" else f"{MAX_ALIAS_NODES:,} nodes"
    if kind != "init":
        assert expected in message


def test_promptfoo_test_file_refuses_a_bomb(tmp_path: Path) -> None:
    item = "".join(f"  {line}\n" for line in bomb().splitlines())
    (tmp_path / "tests.yaml").write_text("- vars: {q: hi}\n" + item, encoding="utf-8")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text("prompts: ['{{q}}']\nproviders: [echo]\ntests: file://tests.yaml\n")
    with bounded(), pytest.raises(ConfigError) as caught:
        load_matrix(path)
    assert f"{MAX_ALIAS_NODES:,} nodes" in str(caught.value)
    assert "tests.yaml" in str(caught.value)
