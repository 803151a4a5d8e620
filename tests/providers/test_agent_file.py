"""Agent definitions in markdown with YAML front matter (``.claude/agents/*.md``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from coalmine.errors import ConfigError
from coalmine.providers.agent_file import AgentDefinition, load_agent_file

BODY = (
    "You are the **Analyst**.\n"
    "\n"
    "Turn a request into numbered requirements:\n"
    "  1. one per line\n"
    "  2. each testable\n"
    "\n"
    "\n"
    "Never invent facts. Quote «the user» exactly; tabs\tstay.   \n"
    "---\n"
    "A later '---' line is part of the prompt.\n"
)


def write(tmp_path: Path, text: str, name: str = "analyst.md") -> Path:
    path = tmp_path / ".claude" / "agents" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def error_of(tmp_path: Path, text: str) -> ConfigError:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_agent_file(path)
    assert info.value.path == path
    assert str(path) in str(info.value)
    return info.value


def test_claude_agent_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "---\n"
        "name: analyst\n"
        "description: Turns a request into requirements. Use it first.\n"
        "model: gpt-4o-mini\n"
        "tools: Read, Grep,  Glob\n"
        "---\n" + BODY,
    )
    assert load_agent_file(path) == AgentDefinition(
        name="analyst",
        description="Turns a request into requirements. Use it first.",
        model="gpt-4o-mini",
        tools=["Read", "Grep", "Glob"],
        system_prompt=BODY,
        path=path,
    )


def test_tools_as_a_yaml_list_and_a_multiline_description(tmp_path: Path) -> None:
    text = (
        "---\n"
        "name: qa\n"
        "description: |\n"
        "  Reviews code.\n"
        "  Runs tests.\n"
        "tools:\n"
        "  - Read\n"
        "  - Bash\n"
        "---\n"
        "\n"
        "Check everything.\n"
    )
    agent = load_agent_file(write(tmp_path, text))
    assert agent.tools == ["Read", "Bash"]
    assert agent.description == "Reviews code.\nRuns tests.\n"
    assert agent.system_prompt == "\nCheck everything.\n"  # the body is kept exactly


def test_crlf_file_reads_as_lf_like_system_prompt_file(tmp_path: Path) -> None:
    body = "Line one.\r\n\r\nLine two.\r\n"
    agent = load_agent_file(write(tmp_path, "\ufeff---\r\nname: a\r\n---\r\n" + body))
    assert (agent.name, agent.system_prompt) == ("a", "Line one.\n\nLine two.\n")


@pytest.mark.parametrize("model", ["", "model: inherit\n"])
def test_without_a_model_the_callers_setting_stays(tmp_path: Path, model: str) -> None:
    agent = load_agent_file(write(tmp_path, f"---\nname: a\n{model}---\nBody\n"))
    assert (agent.model, agent.description, agent.tools) == (None, None, [])


def test_unknown_keys_are_kept_out(tmp_path: Path) -> None:
    text = "---\nname: a\ncolor: blue\npermissionMode: plan\nhooks: {pre: [x]}\nmodel: m\n---\nB\n"
    agent = load_agent_file(write(tmp_path, text))
    assert [f.name for f in dataclasses.fields(agent)] == [
        "name",
        "description",
        "model",
        "tools",
        "system_prompt",
        "path",
    ]
    assert (agent.name, agent.model, agent.system_prompt) == ("a", "m", "B\n")
    assert "blue" not in repr(agent) and "plan" not in repr(agent)


def test_the_definition_is_frozen(tmp_path: Path) -> None:
    agent = load_agent_file(write(tmp_path, "---\nname: a\n---\n"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.name = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    "text",
    ["You are the analyst.\n", "", "\n---\nname: a\n---\nbody\n", "--- \nname: a\n"],
)
def test_missing_or_unclosed_front_matter(tmp_path: Path, text: str) -> None:
    error = error_of(tmp_path, text)
    assert error.line == 1
    assert "front matter" in str(error)
    assert "'---'" in str(error)


def test_broken_yaml_names_its_line(tmp_path: Path) -> None:
    text = "---\nname: a\ndescription: fine\ntools: [Read, Grep\nmodel: m\n---\nbody\n"
    error = error_of(tmp_path, text)
    assert error.line == 5  # where the parser noticed the unclosed list
    assert "invalid YAML" in str(error)
    assert f":{error.line}:" in str(error)


def test_bad_indentation_names_its_line(tmp_path: Path) -> None:
    error = error_of(tmp_path, "---\nname: a\n  model: m\nx: : y\n---\n")
    assert error.line == 3
    assert "invalid YAML" in str(error)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("---\ndescription: d\n---\n", 1, "needs a 'name:'"),
        ("---\nmodel: m\nname:\n---\n", 3, "needs a 'name:'"),
        ("---\nname: a\nmodel: 4\n---\n", 3, "'model' must be text, not int"),
        ("---\nname: a\n\ntools: {Read: yes}\n---\n", 4, "'tools' must be a comma-separated"),
        ("---\nname: a\ntools: [Read, 3]\n---\n", 3, "'tools' must be a comma-separated"),
        ("---\n- a\n- b\n---\n", 2, "must be a mapping"),
    ],
)
def test_invalid_values_name_their_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    error = error_of(tmp_path, text)
    assert (error.line, message in error.reason) == (line, True)


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "none.md"
    with pytest.raises(ConfigError) as info:
        load_agent_file(missing)
    assert info.value.path == missing
    assert "cannot read agent file" in str(info.value)
    bad = write(tmp_path, "")
    bad.write_bytes(b"---\nname: \xff\n---\n")
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        load_agent_file(bad)
