"""The documentation site: references that cannot drift from the code, and a strict build.

``docs/reference.py`` makes the command, grader and ``coalmine.yaml`` references from the code;
the committed pages must be what it makes now, and must name every command, grader and key.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest
import yaml

from coalmine.cli.main import cli
from coalmine.config import CallPolicy, Defaults, _ConfigFile
from coalmine.graders.base import registry as graders
from coalmine.providers.base import registry as providers

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("coalmine_docs_reference", DOCS / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGES: dict[str, str] = _reference().pages()


def _leaves(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += _leaves(command, (*path, name))
        elif not command.hidden:
            found.append((*path, name))
    return found


def test_the_committed_reference_pages_are_what_the_code_makes_now() -> None:
    for relative, text in PAGES.items():
        committed = (DOCS / relative).read_text(encoding="utf-8")
        assert committed == text, f"{relative} is stale: run .venv/bin/python docs/reference.py"


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    page = PAGES["reference/cli.md"]
    for path in _leaves(cli):
        name = " ".join(("coalmine", *path))
        assert f"`{name}`" in page, name
        command = cli
        for word in path:
            command = command.commands[word]  # type: ignore[attr-defined]
        section = page.split(f"`{name}`", 1)[1].split("\n```\n", 1)[0]
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert re.search(rf"(^|[\s,]){re.escape(opt)}\b", section), (name, opt)


def test_every_grader_and_its_config_keys_are_in_the_graders_reference() -> None:
    page = PAGES["reference/graders.md"]
    for name, item in graders:
        assert f"`{name}`" in page, name
        if name.startswith("not-"):
            continue
        section = page.split(f"## `{name}`", 1)[1].split("\n## ", 1)[0]
        for field in item.config.model_json_schema(by_alias=True).get("properties", {}):
            assert f"| `{field}` |" in section, (name, field)


def test_every_config_key_is_in_the_config_reference() -> None:
    page = PAGES["reference/config.md"]
    for model in (_ConfigFile, Defaults, CallPolicy):
        for field in model.model_fields:
            assert f"| `{field}` |" in page, (model.__name__, field)
    for name, item in providers:
        section = page.split(f"### `provider: {name}`", 1)[1].split("\n### ", 1)[0]
        for field in item.settings.model_json_schema(by_alias=True).get("properties", {}):
            assert f"| `{field}` |" in section, (name, field)


def test_a_missing_key_would_be_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _reference()
    monkeypatch.setattr(module, "fields_table", lambda model: "No keys.")
    page = module.config_page()
    assert "| `timeout_seconds` |" not in page  # the checks above read what the generator wrote


def test_the_readme_gives_the_two_commands_and_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert (
        "python3 -m venv .venv && .venv/bin/pip install -e . && "
        ".venv/bin/coalmine canary run --root examples/sdlc"
    ) in readme
    assert "\nscripts/test\n" in readme
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]

    def pages(entries: list[object]) -> list[str]:
        found: list[str] = []
        for entry in entries:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            found += pages(value) if isinstance(value, list) else [str(value)]
        return found

    listed = pages(nav)
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert set(listed) == on_disk  # every page is in the site's navigation, and exists
    for page in listed:
        if page != "index.md":
            assert f"docs/{page}" in readme, page


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "reference" / "graders" / "index.html").is_file()
    assert "stale reference pages" not in built.stderr


@pytest.mark.slow
def test_the_build_refuses_a_stale_reference(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    (copy / "docs").mkdir(parents=True)
    for path in DOCS.rglob("*"):
        if path.is_file() and "screenshots" not in path.parts:
            target = copy / "docs" / path.relative_to(DOCS)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    (copy / "mkdocs.yml").write_text((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    stale = copy / "docs" / "reference" / "graders.md"
    stale.write_text(stale.read_text(encoding="utf-8").replace("`equals`", "`equal`"))
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--site-dir", str(tmp_path / "site")],
        cwd=copy, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode != 0
    assert "stale reference pages: reference/graders.md" in built.stderr
