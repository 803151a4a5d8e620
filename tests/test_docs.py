"""The documentation tells the truth: every command it shows exists with the flags it shows.

The documentation is the README and every page of ``docs/``; every command, flag and grader
must be somewhere in it, and whatever it shows must exist.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import anyio
import click

from coalmine.cli.main import cli
from coalmine.config import load_config
from coalmine.graders.base import GradeContext
from coalmine.graders.base import registry as graders
from coalmine.providers.base import provider_settings

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.parts)
DOCS = README + "".join("\n" + p.read_text(encoding="utf-8") for p in PAGES)
"""The README and the written pages (the generated references are tests/test_docs_site.py's)."""


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOCS, flags=re.DOTALL)


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in group.commands.items():
        path = (*prefix, name)
        if isinstance(command, click.Group):
            out += _commands(command, path)
        else:
            out.append(path)
    return out


def test_every_command_is_in_the_docs() -> None:
    for path in _commands(cli):
        assert f"coalmine {' '.join(path)}" in DOCS, path


def test_every_shown_flag_exists() -> None:
    shown = [
        line.split("#")[0].strip()
        for block in _blocks("sh")
        for line in block.splitlines()
        if "coalmine " in line and not line.startswith("pytest ")
    ]
    assert shown, "the docs show no coalmine command"
    for line in shown:
        words = shlex.split(line[line.index("coalmine ") :])[1:]
        command: click.Command = cli
        while isinstance(command, click.Group) and words and words[0] in command.commands:
            command = command.commands[words.pop(0)]
        assert not isinstance(command, click.Group), line
        known = {
            opt
            for p in command.params
            for opt in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]
        }
        for word in words:
            if word.startswith("-"):
                assert word.split("=")[0] in known, f"{word} in {line!r}"


def test_every_shown_pytest_flag_exists() -> None:
    shown = [
        line.split("#")[0].strip()
        for block in _blocks("sh")
        for line in block.splitlines()
        if line.startswith("pytest ")
    ]
    assert shown, "the docs show no pytest --coalmine line"
    said = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent,
    ).stdout  # fmt: skip
    for line in shown:
        for word in shlex.split(line)[1:]:
            if word.startswith("-"):
                assert re.search(rf"(^|[\s,]){re.escape(word)}([\s,=]|$)", said, re.M), line


def test_the_plugin_example_runs() -> None:
    (example,) = [b for b in _blocks("python") if "@grader" in b]
    namespace: dict[str, object] = {}
    try:
        exec(compile(example, "docs/extending.md", "exec"), namespace)  # noqa: S102 - our docs
        item = graders.get("max-words")
        config = item.config.model_validate({"max_words": 3})
        ctx = GradeContext(case_id="c", prompt="p")
        short = anyio.run(item.grade, config, "one two three", ctx)
        long = anyio.run(item.grade, config, "one two three four", ctx)
        assert (short.score, long.score) == (1.0, 0.0)
    finally:
        graders._items.pop("max-words", None)


def test_the_connect_your_agents_example_is_a_valid_config(tmp_path: Path) -> None:
    (example,) = [b for b in _blocks("yaml") if "provider: replay" in b]
    (tmp_path / "coalmine.yaml").write_text(example, encoding="utf-8")
    named = {  # the files it names must exist to load
        ".claude/agents/qa.md": "---\nname: qa\n---\nYou are QA.\n",
        "prompts/documenter.md": "You document.\n",
        "cassettes/release.jsonl": "",
        "agents/reviewer.js": "module.exports = class {};\n",
    }
    for relative, text in named.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    config = load_config(tmp_path, providers=provider_settings(), environ={})
    assert sorted(a.provider for a in config.agents.values()) == [
        "anthropic", "command", "http", "javascript", "openai", "python", "replay",
    ]  # fmt: skip
    assert config.agents["QA Coordinator"].policy.max_concurrency == 8


def test_every_built_in_grader_is_in_the_docs() -> None:
    missing = [
        name for name, _ in graders if not name.startswith("not-") and f"`{name}`" not in DOCS
    ]
    assert missing == []
