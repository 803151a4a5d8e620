"""Tests read from files and CSV rows as promptfoo 0.121.20 reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coalmine.errors import ConfigError
from coalmine.promptfoo.matrix import Matrix, load_matrix
from coalmine.promptfoo.matrix.csvtests import assertion_from_string, csv_row_to_test, split_values
from coalmine.promptfoo.matrix.sources import Problems


@pytest.mark.parametrize(
    ("cell", "assertion"),
    [
        ("Paris", {"type": "equals", "value": "Paris"}),
        ("contains: Paris ", {"type": "contains", "value": "Paris"}),
        ("not-icontains:london", {"type": "not-icontains", "value": "london"}),
        ("icontains-all:a, b ,c", {"type": "icontains-all", "value": ["a", "b", "c"]}),
        ('contains-any:"a,b", c', {"type": "contains-any", "value": ["a,b", "c"]}),
        ("starts-with:Hi", {"type": "starts-with", "value": "Hi", "threshold": 0.75}),
        (
            "similar(0.9):close to this",
            {"type": "similar", "value": "close to this", "threshold": 0.9},
        ),
        ("similar:close", {"type": "similar", "value": "close", "threshold": 0.8}),
        ("levenshtein(5):abc", {"type": "levenshtein", "value": "abc", "threshold": 5}),
        ("is-json", {"type": "is-json", "value": None}),
        ('contains-json: {"a": 1}', {"type": "contains-json", "value": ' {"a": 1}'}),
        ("javascript: output.length > 3", {"type": "javascript", "value": "output.length > 3"}),
        ("fn:output === 'x'", {"type": "javascript", "value": "output === 'x'"}),
        ("eval:1", {"type": "javascript", "value": "1"}),
        ("file://check.js", {"type": "javascript", "value": "file://check.js"}),
        ("grade: is polite", {"type": "llm-rubric", "value": " is polite"}),
        ("llm-rubric:kind", {"type": "llm-rubric", "value": "kind"}),
        ("python: len(output) > 1", {"type": "python", "value": "len(output) > 1"}),
        ("file://check.py", {"type": "python", "value": "check.py"}),
        ("file://check.py:fn", {"type": "python", "value": "check.py:fn"}),
        ("regex:^\\d+$", {"type": "regex", "value": "^\\d+$"}),
        ("containsnothing", {"type": "equals", "value": "containsnothing"}),
        ("similar:cosine:x", {"type": "similar", "value": "cosine:x", "threshold": 0.8}),
    ],
)
def test_an_expected_cell_becomes_an_assertion(cell: str, assertion: dict[str, Any]) -> None:
    assert assertion_from_string(cell) == assertion


def test_quoted_values_in_a_list_assertion() -> None:
    assert split_values('a, "b, c" , "say ""hi""", "x\\"y", d') == [
        "a",
        "b, c",
        'say "hi"',
        'x"y',
        "d",
    ]
    with pytest.raises(ValueError, match="Unterminated"):
        split_values('"open')


def test_a_csv_row_with_every_special_column() -> None:
    problems = Problems()
    cells = {
        "question": " What? ",
        "__expected": "contains:yes",
        "__expected2": "",
        "__expected3": "icontains:no",
        "__description": "desc",
        "__prefix": "P:",
        "__suffix": "",
        "__threshold": "0.5",
        "__metric": "quality",
        "__metadata:topic": "geo",
        "__metadata:tags[]": "a, b\\,c",
        "__metadata:empty": " ",
        "__config:__expected2:threshold": "0.7",
        "__providerOutput": "fixed",
        " spaced ": "kept",
    }

    test = csv_row_to_test(cells, path=Path("t.csv"), line=2, problems=problems)

    assert test == {
        "vars": {"question": " What? ", "spaced": "kept"},
        "assert": [
            {"type": "contains", "value": "yes", "metric": "quality"},
            {"type": "icontains", "value": "no", "metric": "quality", "threshold": 0.7},
        ],
        "options": {"prefix": "P:", "suffix": ""},
        "description": "desc",
        "providerOutput": "fixed",
        "threshold": 0.5,
        "metric": "quality",
        # promptfoo also files a __config threshold under metadata
        "metadata": {"topic": "geo", "tags": ["a", "b,c"], "threshold": 0.7},
    }
    assert problems.errors == problems.warnings == []


def test_csv_column_mistakes() -> None:
    problems = Problems()
    cells = {"_expected": "x", "__metadata": "y", "__config:bad": "1", "v": "1"}

    test = csv_row_to_test(cells, path=Path("t.csv"), line=3, problems=problems)

    assert test is not None and test["vars"] == {"_expected": "x", "v": "1"}
    assert [str(w) for w in problems.warnings] == [
        't.csv:3: You used a single underscore for the key "_expected". '
        'Did you mean to use "__expected" instead?',
        't.csv:3: The "__metadata" column requires a key, e.g. "__metadata:category": ignored',
        't.csv:3: Invalid __config column format: "__config:bad". Expected format: '
        "__config:__expected:threshold or __config:__expected<N>:threshold",
    ]


def _matrix(tmp_path: Path, config: str, files: dict[str, str]) -> Matrix:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text("prompts: ['{{q}}']\nproviders: [echo]\n" + config, encoding="utf-8")
    return load_matrix(path)


def test_tests_given_as_one_path_get_row_numbers(tmp_path: Path) -> None:
    files = {
        "t.json": '[{"vars": {"q": 1}}, {"description": "named", "vars": {"q": 2}}]',
        "t.jsonl": '{"vars": {"q": 3}}\n\n{"vars": {"q": 4}}\n',
        "t.csv": "q,__description\n5,\n6,six\n",
    }

    whole = [
        [t.description for t in _matrix(tmp_path, f"tests: file://{name}\n", files).tests]
        for name in ("t.json", "t.jsonl", "t.csv")
    ]
    listed = _matrix(tmp_path, "tests: [file://t.json, file://t.jsonl, file://t.csv]\n", files)

    assert whole == [["Row #1", "named"], ["Row #1", "Row #2"], ["Row #1", "six"]]
    assert [t.description for t in listed.tests] == [None, "named", None, None, "Row #1", "six"]
    assert [(t.path.name, t.line) for t in listed.tests] == [
        ("t.json", 1),
        ("t.json", 1),
        ("t.jsonl", 1),
        ("t.jsonl", 3),
        ("t.csv", 2),
        ("t.csv", 3),
    ]


def test_vars_files_are_read_beside_the_test_and_their_file_values_from_the_config(
    tmp_path: Path,
) -> None:
    files = {
        "sub/tests.yaml": "- vars: [v1.yaml, v2.yaml]\n- vars: file://v1.yaml\n",
        "sub/v1.yaml": "a: 1\nb: file://texts/b.txt\n",
        "sub/v2.yaml": "a: 2\n",
        "texts/b.txt": "bee\n",
    }

    matrix = _matrix(tmp_path, "tests: file://sub/tests.yaml\n", files)

    assert [dict(t.vars) for t in matrix.tests] == [{"a": 2, "b": "bee\n"}, {}]
    assert matrix.warnings == (
        f"{tmp_path / 'sub/tests.yaml'}:2: vars file file://v1.yaml matched no file: no vars read "
        "from it (promptfoo does not strip file:// here: write the bare path)",
    )


def test_a_test_files_file_values_load_except_vars_and_code(tmp_path: Path) -> None:
    files = {
        "tests.yaml": (
            "- vars: {q: file://q.txt}\n"
            "  assert:\n"
            "    - {type: equals, value: file://expected.txt}\n"
            "    - {type: python, value: file://check.py}\n"
            "    - {type: contains, value: file://check.py}\n"
        ),
        "q.txt": "question\n",
        "expected.txt": "answer\n",
        "check.py": "def get_assert(output, context):\n    return True\n",
    }

    test = _matrix(tmp_path, "tests: [file://tests.yaml]\n", files).tests[0]

    assert dict(test.vars) == {"q": "file://q.txt"}
    assert [a.value for a in test.assertions] == [
        "answer\n",
        "file://check.py",
        "def get_assert(output, context):\n    return True\n",
    ]


def test_a_test_must_set_something(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Test case must contain one of"):
        _matrix(tmp_path, "tests:\n  - description: nothing else\n", {})


def test_sources_that_need_a_reader_the_network_or_code_not_given_are_errors(
    tmp_path: Path,
) -> None:
    # read without a ConfigCode (the pure reader runs nothing): generators are errors that say so
    config = (
        "tests:\n"
        "  - file://gen.py:make_tests\n"
        "  - huggingface://datasets/x/y\n"
        "  - path: file://gen.js\n"
        "  - file://sheet.xlsx\n"
    )

    with pytest.raises(ConfigError) as caught:
        _matrix(tmp_path, config, {})

    assert str(caught.value).splitlines() == [
        "4 problems in the promptfoo config:",
        f"  {tmp_path / 'promptfooconfig.yaml'}:4: tests from file://gen.py:make_tests are made "
        "by code, which is not run here",
        f"  {tmp_path / 'promptfooconfig.yaml'}:5: tests from huggingface://datasets/x/y are "
        "fetched over the network: not supported",
        f"  {tmp_path / 'promptfooconfig.yaml'}:6: tests from file://gen.js are made by code, "
        "which is not run here",
        f"  {tmp_path / 'promptfooconfig.yaml'}:7: tests from file://sheet.xlsx need a "
        "spreadsheet reader: not supported",
    ]


def test_a_bad_jsonl_line_names_its_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _matrix(tmp_path, "tests: [file://t.jsonl]\n", {"t.jsonl": '{"vars": {}}\n{nope\n'})

    assert caught.value.path == tmp_path / "t.jsonl"
    assert caught.value.line == 2


def test_a_glob_of_test_files_that_matches_nothing_is_a_warning(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path, "tests: [file://none/*.yaml]\n", {})

    assert matrix.warnings == (
        f"{tmp_path / 'promptfooconfig.yaml'}:3: No test files found for path: none/*.yaml",
    )
    # with no tests at all, promptfoo runs one empty test (defaultTest alone)
    assert [(t.index, dict(t.vars), t.line) for t in matrix.tests] == [(0, {}, None)]


def test_a_yaml_file_given_as_path_is_read_as_csv_rows(tmp_path: Path) -> None:
    files = {"rows.yaml": '- q: hi\n  __expected: "contains:hi"\n- q: yo\n  __description: named\n'}

    matrix = _matrix(tmp_path, "tests:\n  path: file://rows.yaml\n", files)

    assert [(t.description, dict(t.vars)) for t in matrix.tests] == [
        ("Row #1", {"q": "hi"}),
        ("named", {"q": "yo"}),
    ]
    assert [(a.type, a.value) for a in matrix.tests[0].assertions] == [("contains", "hi")]
