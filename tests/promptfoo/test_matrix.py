"""The matrix: tests numbered as promptfoo's testIdx, rows in its order (values by hand)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from coalmine.errors import ConfigError
from coalmine.promptfoo.matrix import Matrix, load_matrix
from coalmine.promptfoo.matrix.rules import parse_filter_range, repeat_count, var_combinations

FIXTURES = Path(__file__).parent / "fixtures" / "matrix"


def _matrix(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> Matrix:
    for name, content in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content, encoding="utf-8")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(text, encoding="utf-8")
    return load_matrix(path)


def _rows(matrix: Matrix) -> list[tuple[int, int, dict[str, Any]]]:
    return [(r.test_idx, r.prompt_idx, dict(r.test.vars)) for r in matrix.rows()]


def test_two_prompts_times_two_lists_of_two_give_eight_rows() -> None:
    matrix = load_matrix(FIXTURES / "expansion" / "promptfooconfig.yaml")

    rows = [(r.test_idx, r.prompt.label[0], dict(r.test.vars)) for r in matrix.rows()]

    assert rows[:8] == [
        (0, "A", {"a": "1", "b": "x"}),
        (0, "B", {"a": "1", "b": "x"}),
        (1, "A", {"a": "1", "b": "y"}),
        (1, "B", {"a": "1", "b": "y"}),
        (2, "A", {"a": "2", "b": "x"}),
        (2, "B", {"a": "2", "b": "x"}),
        (3, "A", {"a": "2", "b": "y"}),
        (3, "B", {"a": "2", "b": "y"}),
    ]
    assert [dict(t.vars) for t in matrix.tests[4:]] == [{"n": [1, 2]}, {"m": "one"}, {"m": 2}]
    assert [t.declared_index for t in matrix.tests] == [0, 0, 0, 0, 1, 2, 2]


def test_var_combinations_follow_javascript_key_order(tmp_path: Path) -> None:
    # integer-like keys come first in a JavaScript object, whatever the order written
    assert var_combinations({"b": ["b1", "b2"], "2": ["t1", "t2"]}, base_dir=tmp_path) == [
        {"2": "t1", "b": "b1"},
        {"2": "t1", "b": "b2"},
        {"2": "t2", "b": "b1"},
        {"2": "t2", "b": "b2"},
    ]
    assert var_combinations({"e": [], "o": [{"k": 1}]}, base_dir=tmp_path) == [
        {"e": [], "o": [{"k": 1}]}
    ]


def test_a_file_var_is_a_glob_one_test_per_file(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    for name in ("b.txt", "a.txt"):
        (tmp_path / "docs" / name).write_text(name, encoding="utf-8")
    order = [f"file://docs/{n}" for n in os.listdir(tmp_path / "docs")]  # promptfoo's order

    combos = var_combinations(
        {"doc": "file://docs/*.txt", "one": "file://./docs/a.txt"}, base_dir=tmp_path
    )

    assert combos == [{"doc": d, "one": "file://docs/a.txt"} for d in order]
    with pytest.raises(Exception, match="No files found for variable x at path nope.txt"):
        var_combinations({"x": "file://nope.txt"}, base_dir=tmp_path)


CONFIG = """\
prompts: ["P {{x}}", "Q {{x}}"]
providers: [echo]
"""


def test_default_test_vars_assertions_and_options(tmp_path: Path) -> None:
    matrix = _matrix(
        tmp_path,
        CONFIG + "metadata: {top: 1}\n"
        "defaultTest:\n"
        "  vars: {x: [d1, d2], keep: k}\n"
        "  assert: [{type: contains, value: P}]\n"
        "  options: {prefix: '>', suffix: '<', transform: output.trim()}\n"
        "  threshold: 0.5\n"
        "  metadata: {from: default}\n"
        "  providerOutput: not for plain tests\n"
        "tests:\n"
        "  - vars: {y: own}\n"
        "    assert: [{type: equals, value: x}]\n"
        "    options: {prefix: ''}\n"
        "    metadata: {own: 1}\n"
        "  - vars: {x: mine}\n"
        "    threshold: 0.9\n"
        "    options: {disableDefaultAsserts: true}\n",
    )

    first, second, third = matrix.tests
    assert [dict(t.vars) for t in matrix.tests] == [
        {"x": "d1", "keep": "k", "y": "own"},
        {"x": "d2", "keep": "k", "y": "own"},
        {"x": "mine", "keep": "k"},
    ]
    assert [(a.type, a.value) for a in first.assertions] == [("contains", "P"), ("equals", "x")]
    assert third.assertions == ()
    assert dict(first.options) == {"prefix": "", "suffix": "<", "transform": "output.trim()"}
    # an empty prefix falls back to defaultTest's, as promptfoo's `||` does
    assert (first.prefix, first.suffix) == (">", "<")
    assert (first.threshold, third.threshold) == (0.5, 0.9)
    # a defaultTest mapping always brings its own metadata: the top-level one is not used
    assert dict(first.metadata) == {"from": "default", "own": 1}
    assert first.provider_output is None
    assert next(matrix.rows()).template == ">P {{x}}<"


def test_top_level_metadata_applies_without_a_default_test(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path, CONFIG + "metadata: {top: 1}\ntests:\n  - vars: {x: 1}\n")

    assert dict(matrix.tests[0].metadata) == {"top": 1}


def test_scenarios_come_after_the_tests_config_times_tests(tmp_path: Path) -> None:
    matrix = _matrix(
        tmp_path,
        CONFIG + "defaultTest:\n"
        "  assert: [{type: contains, value: d}]\n"
        "  providerOutput: fixed\n"
        "tests:\n"
        "  - vars: {x: plain}\n"
        "scenarios:\n"
        "  - description: not used as a test description\n"
        "    config:\n"
        "      - vars: {x: [c1, c2]}\n"
        "        assert: [{type: contains, value: c}]\n"
        "      - vars: {x: c3}\n"
        "        description: entry\n"
        "    tests:\n"
        "      - vars: {t: t1}\n"
        "        description: first test\n"
        "      - vars: {t: t2, x: from-test}\n"
        "  - description: without tests a scenario runs nothing\n"
        "    config: [{vars: {x: other}}]\n",
    )

    got = [
        (
            t.index,
            dict(t.vars),
            t.description,
            [a.value for a in t.assertions],
            t.metadata.get("conversationId"),
        )
        for t in matrix.tests
    ]

    assert got == [
        (0, {"x": "plain"}, None, ["d"], None),
        (1, {"x": "c1", "t": "t1"}, "first test", ["d", "c"], "__scenario_0__"),
        (2, {"x": "c2", "t": "t1"}, "first test", ["d", "c"], "__scenario_0__"),
        (3, {"x": "from-test", "t": "t2"}, None, ["d", "c"], "__scenario_0__"),
        (4, {"x": "c3", "t": "t1"}, "first test", ["d"], "__scenario_1__"),
        (5, {"x": "from-test", "t": "t2"}, "entry", ["d"], "__scenario_1__"),
    ]  # fmt: skip
    # a scenario test starts from the whole defaultTest, providerOutput included
    assert [t.provider_output for t in matrix.tests] == [None] + ["fixed"] * 5


def test_repeat_filter_range_and_disabled_expansion(tmp_path: Path) -> None:
    matrix = _matrix(
        tmp_path,
        CONFIG.replace('"Q {{x}}"', "") + "evaluateOptions: {repeat: 2, filterRange: '1:3'}\n"
        "tests:\n"
        "  - vars: {x: skipped}\n"
        "  - vars: {x: [a, b]}\n"
        "  - vars: {x: [p, q]}\n"
        "    options: {disableVarExpansion: true, repeat: 1}\n"
        "  - vars: {x: skipped too}\n",
    )

    assert [(t.index, t.repeat_index, t.declared_index, dict(t.vars)) for t in matrix.tests] == [
        (0, 0, 0, {"x": "a"}),
        (1, 0, 0, {"x": "b"}),
        (2, 1, 0, {"x": "a"}),
        (3, 1, 0, {"x": "b"}),
        (4, 0, 1, {"x": ["p", "q"]}),
    ]


def test_without_tests_there_is_one_empty_test_unless_there_are_scenarios(tmp_path: Path) -> None:
    assert _rows(_matrix(tmp_path, CONFIG)) == [(0, 0, {}), (0, 1, {})]
    assert _rows(_matrix(tmp_path, CONFIG + "scenarios: []\n")) == []


def test_filters_choose_the_rows(tmp_path: Path) -> None:
    matrix = _matrix(
        tmp_path,
        "prompts:\n"
        "  - id: ask\n    label: 'Group:ask'\n    raw: Ask {{x}}\n"
        "  - id: tell\n    label: 'Group:tell'\n    raw: Tell {{x}}\n"
        "  - Other {{x}}\n"
        "providers:\n  - id: echo\n    label: one\n  - id: echo\n    label: two\n"
        "tests:\n"
        "  - vars: {x: 0}\n"
        "  - vars: {x: 1}\n    prompts: [Group]\n    providers: [two]\n"
        "  - vars: {x: 2}\n    prompts: ['Oth*', tell]\n"
        "  - vars: {x: 3}\n    prompts: []\n",
    )

    rows = [(r.test_idx, r.provider.key, r.prompt.label, r.prompt_idx) for r in matrix.rows()]

    assert [(c.index, c.provider.key, c.prompt.label) for c in matrix.columns] == [
        (0, "one", "Group:ask"),
        (1, "one", "Group:tell"),
        (2, "one", "Other {{x}}"),
        (3, "two", "Group:ask"),
        (4, "two", "Group:tell"),
        (5, "two", "Other {{x}}"),
    ]
    assert rows == [
        (0, "one", "Group:ask", 0),
        (0, "one", "Group:tell", 1),
        (0, "one", "Other {{x}}", 2),
        (0, "two", "Group:ask", 3),
        (0, "two", "Group:tell", 4),
        (0, "two", "Other {{x}}", 5),
        (1, "two", "Group:ask", 3),
        (1, "two", "Group:tell", 4),
        (2, "one", "Group:tell", 1),
        (2, "one", "Other {{x}}", 2),
        (2, "two", "Group:tell", 4),
        (2, "two", "Other {{x}}", 5),
    ]


def test_a_filter_naming_nothing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _matrix(
            tmp_path,
            CONFIG + "defaultTest:\n  providers: [nobody]\n"
            "tests:\n  - vars: {x: 1}\n    prompts: [R*]\n",
        )

    assert [line.strip() for line in str(caught.value).splitlines()[1:]] == [
        f"{tmp_path / 'promptfooconfig.yaml'}:3: defaultTest references provider 'nobody' which "
        "does not exist. Available providers: ['echo']",
        f"{tmp_path / 'promptfooconfig.yaml'}:6: test references prompt 'R*' which does not "
        "exist. Available prompts: ['P {{x}}', 'Q {{x}}']",
    ]


def test_what_a_test_carries_through(tmp_path: Path) -> None:
    matrix = _matrix(
        tmp_path,
        CONFIG + "tests:\n"
        "  - vars: {x: 1}\n"
        "    providerOutput: {text: fixed}\n"
        "    provider: openai:gpt-4o-mini\n"
        "    options: {provider: openai:gpt-4o}\n"
        "    metric: ignored\n"
        "    assert:\n"
        "      - type: assert-set\n"
        "        threshold: 0.5\n"
        "        assert: [{type: contains, value: a}, {type: contains, value: b, weight: 0}]\n",
    )

    test = matrix.tests[0]
    assert test.provider_output == {"text": "fixed"}
    assert test.provider == "openai:gpt-4o-mini"
    assert dict(test.options) == {"provider": "openai:gpt-4o"}
    assert test.metric == "ignored"
    (assert_set,) = test.assertions
    assert assert_set.children is not None
    assert [(c.value, c.weight) for c in assert_set.children] == [("a", 1.0), ("b", 0)]
    assert (test.path.name, test.line) == ("promptfooconfig.yaml", 4)
    assert matrix.warnings == (
        f"{tmp_path / 'promptfooconfig.yaml'}:4: a test's 'metric' is not read by promptfoo "
        "(set it on each assertion): ignored",
    )


def test_a_default_test_file(tmp_path: Path) -> None:
    matrix = _matrix(
        tmp_path,
        CONFIG + "metadata: {top: 1}\ndefaultTest: file://default.yaml\ntests:\n  - vars: {}\n",
        {"default.yaml": "vars: {x: [a, b]}\nassert: [{type: equals, value: a}]\n"},
    )

    assert [dict(t.vars) for t in matrix.tests] == [{"x": "a"}, {"x": "b"}]
    # read from a file, defaultTest has no metadata of its own: the top-level one applies
    assert dict(matrix.tests[0].metadata) == {"top": 1}


@pytest.mark.parametrize(
    ("text", "span"),
    [("1:3", (1, 3)), (":2", (0, 2)), ("4:", (4, None)), (" 0 : 0 ", (0, 0))],
)
def test_filter_ranges(text: str, span: tuple[int, int | None]) -> None:
    assert parse_filter_range(text) == span


@pytest.mark.parametrize("text", ["3:1", "1", "a:b", ":", "1:2:3", "-1:2"])
def test_bad_filter_ranges(text: str) -> None:
    with pytest.raises(ValueError, match="filterRange"):
        parse_filter_range(text)


@pytest.mark.parametrize(
    ("value", "count"),
    [(3, 3), (2.0, 2), (0, 1), (-2, 1), (1.5, 1), ("3", 1), (True, 1), (None, 1)],
)
def test_repeat_counts(value: object, count: int) -> None:
    assert repeat_count(value) == count


def test_transform_vars_is_noted_only_where_list_vars_expand(tmp_path: Path) -> None:
    matrix = _matrix(
        tmp_path,
        CONFIG + "defaultTest:\n  options: {transformVars: '({y: vars.x})'}\n"
        "tests:\n  - vars: {x: 1}\n  - vars: {x: [a, b]}\n  - vars: {x: [c, d]}\n"
        "    options: {disableVarExpansion: true}\n",
    )

    assert len(matrix.tests) == 4
    assert matrix.warnings == (
        f"{tmp_path / 'promptfooconfig.yaml'}:7: options.transformVars: promptfoo runs it once "
        "on the test's vars before it expands list vars (it sees each list whole); coalmine runs "
        "it on each expanded test's vars",
    )


def test_a_scoring_function_promptfoo_cannot_load_is_refused_at_its_line(tmp_path: Path) -> None:
    text = CONFIG + (
        "defaultTest: {assertScoringFunction: 'file://score.js:fn'}\n"
        "tests:\n"
        "  - vars: {x: 1}\n"
        "  - {vars: {x: 2}, assertScoringFunction: score.js}\n"
        "  - {vars: {x: 3}, assertScoringFunction: file://score.txt}\n"
        "  - {vars: {x: 4}, assertScoringFunction: file://missing.js}\n"
        "  - {vars: {x: 5}, assertScoringFunction: file://missing.py:fn}\n"
    )
    with pytest.raises(ConfigError) as caught:
        _matrix(tmp_path, text, {"score.js": "module.exports.fn = () => ({})"})
    config = tmp_path / "promptfooconfig.yaml"
    assert [line.strip() for line in str(caught.value).splitlines()[1:]] == [
        f"{config}:6: assertScoringFunction 'score.js': URL must start with file://",
        f"{config}:7: assertScoringFunction 'file://score.txt': File must be a JavaScript (.js, "
        ".cjs, .mjs, .ts, .cts, .mts) or Python (.py) file",
        f"{config}:8: assertScoringFunction 'file://missing.js': no such file: "
        f"{tmp_path / 'missing.js'}",
    ]
