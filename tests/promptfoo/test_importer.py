"""Importing a promptfoo config: the planned suites and agents, and coalmine.yaml's agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from coalmine._source import SourceError
from coalmine.errors import ConfigError
from coalmine.graders.base import grader_configs
from coalmine.promptfoo.importer import ImportedSuite, ImportPlan, add_agents, plan_import
from coalmine.specs.suite import SUITES_DIR, scan_suite

NEW = {"new": {"provider": "command", "argv": ["python3", "x.py"]}}
"""An agent to add."""

TWO_BY_TWO = """\
prompts:
  - label: say
    raw: "Say {{ word }}"
  - label: shout
    raw: "Shout {{ word }}"
providers:
  - echo
  - "exec: python3 x.py"
tests:
  - vars: {word: a}
  - description: only say
    prompts: [say]
    vars: {word: c}
"""

RICH = """\
description: Rich
prompts:
  - "Shout {{ word }} {{ env.SOME_VAR }}"
providers:
  - echo
  - webhook:http://localhost:1/x
env:
  OPENAI_API_KEY: sk-test
  GREETING: hi
evaluateOptions: {timeoutMs: 2500, delay: 10}
defaultTest:
  vars: {extra: e, word: default}
  assert:
    - type: contains
      value: d
tests:
  - description: First one
    vars: {word: "{{ env.SOME_VAR }}"}
    assert: [{type: icontains, value: x}]
  - description: dup
    vars: {word: ["1", "2"]}
  - description: dup
    vars: {word: z}
    assert: [{type: llm-rubric, value: nice}, {type: not-a-type}, {type: similar, value: q}]
  - vars: {n: [1, 2]}
  - description: Test 9
    assert: [{type: equals, value: q}]
"""


def write_config(tmp_path: Path, text: str) -> Path:
    """The promptfoo config ``text`` in ``tmp_path/pf``."""
    folder = tmp_path / "pf"
    folder.mkdir(exist_ok=True)
    path = folder / "promptfooconfig.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def plan(tmp_path: Path, text: str, **options: Any) -> ImportPlan:
    """The import plan of ``text``, for a project in ``tmp_path/proj``."""
    return plan_import(write_config(tmp_path, text), out_dir=tmp_path / "proj", **options)


def lines(suite: ImportedSuite) -> list[dict[str, Any]]:
    """The suite's lines, read back from its ``.jsonl`` text."""
    return [json.loads(line) for line in suite.jsonl_text().splitlines()]


def all_text(plan: ImportPlan) -> str:
    """Every file the plan writes, as one text."""
    return "".join(s.yaml_text() + s.jsonl_text() for s in plan.suites)


# --- add_agents ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [None, "", "\n"])
def test_add_agents_to_nothing_writes_an_agents_block(text: str | None) -> None:
    result = add_agents(text, NEW)
    assert result is not None
    assert yaml.safe_load(result) == {"agents": NEW}


EXISTING = """\
# coalmine config
judge:
    provider: echo   # inline comment
agents:
    # the agents
    old:
        provider: echo
        argv: [a, b]
    other:  # second
        provider: echo

timeout_seconds: 30
"""


def test_add_agents_inserts_at_the_end_of_the_block_keeping_every_line() -> None:
    result = add_agents(EXISTING, NEW)
    assert result is not None
    old = EXISTING.splitlines()
    added = [
        "    new:",
        "      provider: command",
        "      argv:",
        "      - python3",
        "      - x.py",
    ]
    assert result.splitlines() == old[:10] + added + old[10:]
    before = yaml.safe_load(EXISTING)
    assert yaml.safe_load(result) == {**before, "agents": {**before["agents"], **NEW}}


def test_add_agents_leaves_an_agent_of_the_same_name_alone() -> None:
    text = "agents:\n  new:\n    provider: echo\n"
    assert add_agents(text, NEW) is None
    both = {**NEW, "more": {"provider": "echo"}}
    result = add_agents(text, both)
    assert result is not None
    assert result.startswith(text)
    assert yaml.safe_load(result)["agents"] == {
        "new": {"provider": "echo"},
        "more": {"provider": "echo"},
    }


def test_add_agents_with_no_agents_returns_none() -> None:
    assert add_agents(EXISTING, {}) is None


@pytest.mark.parametrize("text", ["agents: {}\n", "agents:\n", "x: 1\nagents: {}\ny: 2\n"])
def test_add_agents_replaces_an_empty_agents_entry(text: str) -> None:
    result = add_agents(text, NEW)
    assert result is not None
    assert "{}" not in result
    assert result.count("agents:") == 1
    expected = {**(yaml.safe_load(text) or {}), "agents": NEW}
    assert yaml.safe_load(result) == expected


def test_add_agents_to_a_flow_style_block_asks_for_them_by_hand() -> None:
    with pytest.raises(ConfigError, match="add them by hand"):
        add_agents("agents: {a: {provider: echo}}\n", NEW)


def test_add_agents_to_a_file_of_comments_keeps_them() -> None:
    result = add_agents("# nothing yet\n", NEW)
    assert result is not None
    assert result.startswith("# nothing yet\n")
    assert yaml.safe_load(result) == {"agents": NEW}


def test_the_next_keys_comment_stays_above_it() -> None:
    text = "agents:\n    old:\n        provider: echo\n\n# trailing section\ntimeout_seconds: 30\n"
    result = add_agents(text, NEW)
    assert result is not None
    assert result.endswith("\n\n# trailing section\ntimeout_seconds: 30\n")
    assert yaml.safe_load(result)["agents"] == {"old": {"provider": "echo"}, **NEW}


@pytest.mark.parametrize("text", ["- a\n- b\n", "just text\n", "agents: [a, b]\n"])
def test_add_agents_refuses_what_is_not_a_mapping(text: str) -> None:
    with pytest.raises(ConfigError, match="must be a mapping"):
        add_agents(text, NEW)


# --- plan_import ---------------------------------------------------------------------------------


def test_each_column_is_a_suite(tmp_path: Path) -> None:
    found = plan(tmp_path, TWO_BY_TWO)
    assert [s.name for s in found.suites] == [
        "pf-say-echo",
        "pf-shout-echo",
        "pf-say-exec-python3-x-py",
        "pf-shout-exec-python3-x-py",
    ]
    evals = tmp_path / "proj" / SUITES_DIR
    config = (tmp_path / "pf" / "promptfooconfig.yaml").resolve()
    for index, suite in enumerate(found.suites):
        assert suite.meta["compat"] == "promptfoo"
        source = suite.meta["promptfoo"]
        assert source["prompt_idx"] == index == suite.column.index
        assert (evals / source["base_dir"]).resolve() == (tmp_path / "pf").resolve()
        assert (evals / source["config"]).resolve() == config
    templates = [s.meta["prompt_template"] for s in found.suites]
    assert templates == ["Say {{ word }}", "Shout {{ word }}"] * 2
    assert [s.meta["agent"] for s in found.suites] == ["echo", "echo", *["exec:python3 x.py"] * 2]
    command = found.agents["exec:python3 x.py"]
    assert command["argv"] == ["python3", "x.py"]
    assert (tmp_path / "proj" / command["cwd"]).resolve() == (tmp_path / "pf").resolve()
    assert found.warnings == ()


def test_a_given_name_is_the_base_of_the_suite_names(tmp_path: Path) -> None:
    found = plan(tmp_path, TWO_BY_TWO, name="My Suite!")
    assert found.suites[0].name == "my-suite-say-echo"


def test_a_prompt_filter_keeps_a_test_to_its_columns(tmp_path: Path) -> None:
    found = plan(tmp_path, TWO_BY_TWO)
    ids = [[line["id"] for line in lines(s)] for s in found.suites]
    assert ids == [["test-0", "only-say"], ["test-0"], ["test-0", "only-say"], ["test-0"]]


def test_default_test_comes_first_and_its_vars_are_merged(tmp_path: Path) -> None:
    first = lines(plan(tmp_path, RICH).suites[0])[0]
    assert first["assert"] == [
        {"type": "contains", "value": "d"},
        {"type": "icontains", "value": "x"},
    ]
    assert first["vars"] == {"extra": "e", "word": "{{ env.SOME_VAR }}"}
    assert first["testIdx"] == 0


def test_list_vars_expand_to_consecutive_lines(tmp_path: Path) -> None:
    found = lines(plan(tmp_path, RICH).suites[0])
    assert [(line["testIdx"], line["vars"]["word"]) for line in found[1:3]] == [(1, "1"), (2, "2")]
    # promptfoo expands only lists of strings: a list of numbers stays one value
    numbers = [line for line in found if "n" in line["vars"]]
    assert [(line["testIdx"], line["vars"]["n"]) for line in numbers] == [(4, [1, 2])]


def test_line_ids_are_unique_descriptions_else_test_n(tmp_path: Path) -> None:
    found = plan(tmp_path, RICH)
    for suite in found.suites:
        assert [line["id"] for line in lines(suite)] == [
            "first-one",
            "test-1",
            "test-2",
            "test-3",
            "test-4",
            "test-5",
        ]


def test_env_templates_are_not_rendered_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_VAR", "leaked-value")
    found = plan(tmp_path, RICH)
    suite = found.suites[0]
    assert suite.meta["prompt_template"] == "Shout {{ word }} {{ env.SOME_VAR }}"
    assert lines(suite)[0]["vars"]["word"] == "{{ env.SOME_VAR }}"
    assert "leaked-value" not in all_text(found)


def test_secret_looking_config_env_is_not_copied(tmp_path: Path) -> None:
    found = plan(tmp_path, RICH)
    for suite in found.suites:
        assert suite.meta["promptfoo"]["env"] == {"GREETING": "hi"}
    assert "sk-test" not in all_text(found)
    assert "OPENAI_API_KEY" not in all_text(found)
    assert "sk-test" not in json.dumps(found.agents)
    assert [w for w in found.warnings if "OPENAI_API_KEY" in w] == [
        f"{found.matrix.path}: env: OPENAI_API_KEY not copied into the suites (they look like "
        "secrets): set them in the environment"
    ]


def test_a_providers_env_is_kept_in_its_suite_but_what_looks_like_a_secret(
    tmp_path: Path,
) -> None:
    text = (
        "prompts: [hi]\nproviders:\n  - id: file://p.js\n    label: js\n"
        "    env: {MODE: fast, SERVICE_TOKEN: t0k-value}\ntests: [{vars: {}}]\n"
    )
    found = plan(tmp_path, text)
    (suite,) = found.suites
    assert suite.meta["promptfoo"]["provider"]["env"] == {"MODE": "fast"}
    assert "t0k-value" not in all_text(found)
    assert (
        "provider js: env: SERVICE_TOKEN not copied into the suites (they look like secrets)"
        in (found.warnings)
    )


def test_unknown_and_unsupported_assertions_are_listed(tmp_path: Path) -> None:
    found = plan(tmp_path, RICH)
    assert len(found.unsupported_assertions) == 2
    unknown, similar = found.unsupported_assertions
    assert unknown == "assertion not-a-type: unknown type (1 use; those rows will be ERRORs)"
    assert similar.startswith("assertion similar: ")
    assert similar.endswith("(1 use; those rows will be ERRORs)")
    assert set(found.unsupported_assertions) <= set(found.warnings)


def test_a_provider_with_no_agent_keeps_its_suite(tmp_path: Path) -> None:
    found = plan(tmp_path, RICH)
    assert [p.ref_id for p in found.unsupported_providers] == ["webhook:http://localhost:1/x"]
    echo, webhook = found.suites
    assert echo.meta["agent"] == "echo"
    assert "agent" not in webhook.meta
    assert webhook.meta["promptfoo"]["provider"]["id"] == "webhook:http://localhost:1/x"
    assert "HTTP providers" in webhook.meta["promptfoo"]["provider"]["problem"]
    assert "problem" not in echo.meta["promptfoo"]["provider"]
    assert list(found.agents) == ["echo"]
    assert len(lines(webhook)) == 6


def test_llm_rubric_needs_a_judge(tmp_path: Path) -> None:
    assert plan(tmp_path, RICH).needs_judge is True
    assert plan(tmp_path, TWO_BY_TWO).needs_judge is False


def test_an_agent_name_taken_by_another_entry_is_renamed(tmp_path: Path) -> None:
    taken = {"echo": {"provider": "command", "argv": ["x"]}}
    found = plan(tmp_path, TWO_BY_TWO, existing_agents=taken)
    assert list(found.agents) == ["echo-2", "exec:python3 x.py"]
    assert found.agents["echo-2"] == {"provider": "echo"}
    assert [s.meta["agent"] for s in found.suites[:2]] == ["echo-2", "echo-2"]


def test_an_agent_with_the_same_entry_keeps_its_name(tmp_path: Path) -> None:
    found = plan(tmp_path, TWO_BY_TWO, existing_agents={"echo": {"provider": "echo"}})
    assert list(found.agents) == ["echo", "exec:python3 x.py"]
    assert [s.meta["agent"] for s in found.suites[:2]] == ["echo", "echo"]


def test_evaluate_options_give_timeout_and_delay(tmp_path: Path) -> None:
    for suite in plan(tmp_path, RICH).suites:
        assert suite.meta["timeout_seconds"] == 2.5
        assert suite.meta["promptfoo"]["provider"]["delay"] == 10.0
    plain = plan(tmp_path, TWO_BY_TWO).suites[0].meta
    assert "timeout_seconds" not in plain
    assert "delay" not in plain["promptfoo"]["provider"]


# --- the written suites load ---------------------------------------------------------------------


def write_suite(evals: Path, suite: ImportedSuite) -> Path:
    """Write the suite's ``.yaml`` and ``.jsonl`` into ``evals``; the ``.jsonl`` path."""
    evals.mkdir(parents=True, exist_ok=True)
    (evals / f"{suite.name}.yaml").write_text(suite.yaml_text(), encoding="utf-8")
    path = evals / f"{suite.name}.jsonl"
    path.write_text(suite.jsonl_text(), encoding="utf-8")
    return path


@pytest.mark.parametrize("config", [TWO_BY_TWO, RICH], ids=["two-by-two", "rich"])
def test_every_planned_line_loads(tmp_path: Path, config: str) -> None:
    found = plan(tmp_path, config)
    evals = tmp_path / "proj" / SUITES_DIR
    for suite in found.suites:
        index = scan_suite(write_suite(evals, suite), grader_configs=grader_configs())
        written = lines(suite)
        assert index.bad == []
        assert index.meta.compat == "promptfoo"
        assert index.meta.promptfoo is not None
        assert index.meta.promptfoo.prompt_idx == suite.column.index
        assert index.ids == [line["id"] for line in written]
        for position, line in enumerate(written):
            case = index.read(position)
            assert case.promptfoo is not None
            assert case.promptfoo.test_idx == line["testIdx"]
            assert case.promptfoo.assertions == line["assert"]
            assert case.agent == suite.meta.get("agent")
            assert case.graders == []


def test_a_broken_line_is_a_bad_line_and_the_rest_loads(tmp_path: Path) -> None:
    suite = plan(tmp_path, TWO_BY_TWO).suites[0]
    path = write_suite(tmp_path / "proj" / SUITES_DIR, suite)
    broken = ['{"id": "x", "assert": "notalist"}', '{"id": "y", "bogus": 1}']
    path.write_text(suite.jsonl_text() + "\n".join(broken) + "\n", encoding="utf-8")
    index = scan_suite(path, grader_configs=grader_configs())
    assert index.ids == ["test-0", "only-say"]
    assert [(b.path, b.line, b.case_id) for b in index.bad] == [(path, 3, "x"), (path, 4, "y")]
    assert "assert" in index.bad[0].message
    assert "valid list" in index.bad[0].message
    assert "unknown key 'bogus'" in index.bad[1].message
    assert str(index.bad[0]).startswith(f"{path}:3: case 'x': ")


def test_a_compat_suite_takes_no_graders(tmp_path: Path) -> None:
    suite = plan(tmp_path, TWO_BY_TWO).suites[0]
    path = write_suite(tmp_path / "proj" / SUITES_DIR, suite)
    meta = {**suite.meta, "graders": [{"type": "is-json"}]}
    path.with_suffix(".yaml").write_text(yaml.safe_dump(meta), encoding="utf-8")
    with pytest.raises(SourceError, match="takes no 'graders'") as caught:
        scan_suite(path, grader_configs=grader_configs())
    assert caught.value.path == path.with_suffix(".yaml")


def test_rows_that_cannot_run_are_counted_by_reason(tmp_path: Path) -> None:
    (tmp_path / "prompts.py").write_text("def make(context):\n    return 'hi'\n")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{ x }}', 'file://prompts.py:make']\n"
        "providers: [echo]\n"
        "tests:\n"
        "  - vars: {x: a}\n"
        "  - vars: {x: b}\n"
        "    provider: echo\n",
        encoding="utf-8",
    )
    found = plan_import(config, out_dir=tmp_path / "proj")
    # rows in promptfoo's order: (a, template), (a, function), (b, template), (b, function);
    # the prompt function runs (it is no reason), the test's own provider does not
    assert found.unsupported_rows == (
        "unsupported: a test with its own 'provider' (coalmine runs the config's providers) "
        "(2 rows; they will be ERRORs)",
    )


def test_code_coalmine_runs_is_not_listed_as_rows_that_cannot_run(tmp_path: Path) -> None:
    for name in ("t.py", "score.py"):
        (tmp_path / name).write_text("def get_transform(v, c):\n    return v\n")
    (tmp_path / "score.js").write_text("module.exports = () => ({})\n")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{ x }}']\n"
        "providers: [{id: echo, transform: 'file://t.py'}]\n"
        "defaultTest:\n"
        "  assertScoringFunction: file://score.js\n"
        "  options: {transformVars: 'file://t.py:get_transform'}\n"
        "tests:\n"
        "  - vars: {x: a}\n"
        "    options: {transform: 'file://t.py'}\n"
        "    assert: [{type: contains, value: a, transform: 'file://t.py'}]\n"
        "  - vars: {x: b}\n"
        "    assertScoringFunction: file://score.py:func\n"
        "    options: {transformVars: '({...vars, y: 1})'}\n",
        encoding="utf-8",
    )
    found = plan_import(config, out_dir=tmp_path / "proj")
    assert (found.unsupported_rows, found.unsupported_assertions, found.warnings) == ((), (), ())
    first, second = found.suites[0].lines
    assert first["assertScoringFunction"] == "file://score.js"
    assert first["options"]["transformVars"] == "file://t.py:get_transform"
    assert second["assertScoringFunction"] == "file://score.py:func"
    assert second["options"]["transformVars"] == "({...vars, y: 1})"


def test_a_suite_carries_what_its_code_needs_and_loads(tmp_path: Path) -> None:
    (tmp_path / "p.py").write_text("def make(context):\n    return 'hi'\n")
    (tmp_path / "gen.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "shout.js").write_text("module.exports = (v) => v;\n")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "nunjucksFilters: {shout: ./shout.js}\n"
        "prompts: [file://p.py:make, 'exec:./gen.sh --loud']\n"
        "providers: [echo]\n"
        "evaluateOptions: {repeat: 2}\n"
        "tests:\n"
        "  - vars: {x: file://p.py}\n",
        encoding="utf-8",
    )
    found = plan_import(config, out_dir=tmp_path / "proj")
    assert found.unsupported_rows == ()
    prompts = [suite.meta["promptfoo"]["prompt"] for suite in found.suites]
    assert prompts == [
        {"label": "p.py:make", "kind": "function", "function": "p.py:make"},
        {"label": "gen.sh --loud", "kind": "exec", "function": "gen.sh --loud"},
    ]
    assert {s.meta["promptfoo"]["nunjucks_filters"]["shout"] for s in found.suites} == {"shout.js"}
    assert [line.get("repeatIndex") for line in lines(found.suites[0])] == [None, 1]
    for suite in found.suites:
        index = scan_suite(
            write_suite(tmp_path / "proj" / SUITES_DIR, suite), grader_configs=grader_configs()
        )
        assert index.bad == []
        assert index.meta.promptfoo is not None
        assert index.meta.promptfoo.prompt.kind == suite.meta["promptfoo"]["prompt"]["kind"]
        assert index.meta.promptfoo.nunjucks_filters == {"shout": "shout.js"}
        assert [index.read(i).promptfoo.repeat_index for i in range(2)] == [0, 1]  # type: ignore[union-attr]


def test_a_test_that_stores_its_output_is_named_as_differing_when_imported(
    tmp_path: Path,
) -> None:
    path = write_config(
        tmp_path,
        "prompts: ['{{q}} {{prev}}']\nproviders: [echo]\ntests:\n"
        "  - vars: {q: a}\n"
        "  - vars: {q: b}\n    options: {storeOutputAs: prev}\n"
        "  - vars: {q: c}\n",
    )
    found = plan_import(path, out_dir=tmp_path / "project")
    (warning,) = found.warnings
    assert warning.startswith(f"{path}:5: options.storeOutputAs 'prev': ")
    assert "`coalmine eval run --promptfoo`" in warning
