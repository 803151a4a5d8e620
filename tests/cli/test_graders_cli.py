"""``coalmine graders list|schema``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from coalmine.cli.main import cli


def test_list_shows_each_grader_with_its_threshold() -> None:
    result = CliRunner().invoke(cli, ["graders", "list"])
    assert result.exit_code == 0
    rows = {line.split()[0]: line.split() for line in result.output.splitlines()[1:]}
    assert rows["keyword"][1] == "0.8"
    assert rows["llm-judge"][1:3] == ["0.7", "yes"]


def test_schema_carries_the_field_descriptions() -> None:
    result = CliRunner().invoke(cli, ["graders", "schema", "structural"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema["additionalProperties"] is False
    assert "heading or label" in schema["properties"]["required_sections"]["description"]


def test_an_unknown_grader_lists_the_known_ones() -> None:
    result = CliRunner().invoke(cli, ["graders", "schema", "kewyord"])
    assert result.exit_code != 0
    assert "unknown grader 'kewyord'" in str(result.exception)
