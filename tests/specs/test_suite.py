"""Eval suites: JSONL cases, YAML defaults, templates, and bad lines that do not stop the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coalmine._source import SourceError
from coalmine.graders.base import grader_configs
from coalmine.specs.suite import load_suite


def write_suite(folder: Path, lines: list[object | str], meta: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "qa.jsonl"
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    if meta is not None:
        (folder / "qa.yaml").write_text(meta, encoding="utf-8")
    return path


def test_cases_load_with_the_suites_defaults(tmp_path: Path) -> None:
    meta = (
        "agent: QA Coordinator\n"
        "prompt_template: 'Review {{ file }} for {{ issue }}.'\n"
        "graders: [{type: keyword, config: {required: [injection]}}]\n"
        "threshold: 0.6\n"
    )
    path = write_suite(
        tmp_path,
        [
            {"id": "c1", "vars": {"file": "login.py", "issue": "SQL injection"}},
            {"id": "c2", "prompt": "As written.", "agent": "Analyst", "threshold": 0.9,
             "graders": [{"type": "structural", "config": {"required_sections": ["Findings"]}}]},
        ],
        meta,
    )  # fmt: skip
    suite = load_suite(path, grader_configs=grader_configs())
    assert suite.name == "qa" and suite.bad == []
    first, second = suite.cases
    assert first.prompt == "Review login.py for SQL injection."
    assert (first.agent, first.threshold) == ("QA Coordinator", 0.6)
    assert [g.type for g in second.graders] == ["keyword", "structural"]  # suite's first
    assert (second.agent, second.threshold, second.prompt) == ("Analyst", 0.9, "As written.")


def test_bad_lines_are_named_and_the_rest_loads(tmp_path: Path) -> None:
    meta = "prompt_template: 'Hello {{ name }}'\ngraders: [{type: is-json}]\n"
    path = write_suite(
        tmp_path,
        [
            {"id": "ok", "prompt": "fine"},
            "{not json",
            {"id": "missing-var", "vars": {"nom": "x"}},
            {"id": "typo", "promt": "x"},
            {"id": "both", "prompt": "x", "vars": {"name": "y"}},
            {"id": "ok", "prompt": "again"},
            {"id": "bad-grader", "prompt": "x", "graders": [{"type": "kewyord"}]},
            ["a", "list"],
        ],
        meta,
    )
    suite = load_suite(path, grader_configs=grader_configs())
    assert [c.case.id for c in suite.cases] == ["ok"]
    messages = {b.line: b.message for b in suite.bad}
    assert messages[2].startswith("not valid JSON")
    assert "'name' is undefined" in messages[3]
    assert "unknown key 'promt' (did you mean 'prompt'?)" in messages[4]
    assert "either 'prompt' or 'vars'" in messages[5]
    assert messages[6] == "duplicate id 'ok' (first on line 1)"
    assert "unknown grader type 'kewyord' (did you mean 'keyword'?)" in messages[7]
    assert messages[8] == "a case must be a JSON object"
    assert str(suite.bad[0]) == f"{path}:2: {messages[2]}"


def test_a_broken_suite_yaml_stops_that_suite_with_its_line(tmp_path: Path) -> None:
    path = write_suite(tmp_path, [{"id": "a", "prompt": "x"}], "agent: A\nrepeat: 3\n")
    with pytest.raises(SourceError) as info:
        load_suite(path, grader_configs=grader_configs())
    assert info.value.line == 2
    assert "unknown key 'repeat' (did you mean 'repeats'?)" in info.value.message


@pytest.mark.parametrize(
    ("grader", "says"),
    [
        ({"type": "regex", "config": {"value": "(unclosed"}}, "missing ), unterminated subpattern"),
        ({"type": "is-json", "config": {"value": {"type": "nope"}}}, "invalid JSON Schema"),
        ({"type": "recall@k", "config": {"k": 0}}, "greater than or equal to 1"),
    ],
)
def test_a_bad_grader_config_is_a_bad_line_naming_file_line_and_case(
    tmp_path: Path, grader: dict[str, object], says: str
) -> None:
    path = write_suite(
        tmp_path, [{"id": "fine", "prompt": "x", "graders": [{"type": "is-json"}]},
                   {"id": "broken", "prompt": "x", "graders": [grader]}],
    )  # fmt: skip
    suite = load_suite(path, grader_configs=grader_configs())
    assert [c.case.id for c in suite.cases] == ["fine"]
    [bad] = suite.bad
    assert str(bad).startswith(f"{path}:2: case 'broken': ")
    assert says in str(bad)


def test_a_line_without_graders_is_a_bad_line(tmp_path: Path) -> None:
    path = write_suite(tmp_path, [{"id": "bare", "prompt": "x"}])
    [bad] = load_suite(path, grader_configs=grader_configs()).bad
    assert str(bad) == f"{path}:1: case 'bare': no graders: give the case 'graders' (or the suite)"
