"""Test generators run while a config is read, in ``python3`` and Node.js, as promptfoo runs them.

The rows they make are checked against promptfoo itself by the parity configs
``fixtures/parity/test_generators`` and ``test_generators_whole``; here, what each generator is
given and the errors, each named at the config's line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coalmine.errors import ConfigError
from coalmine.promptfoo.config_code import RunConfigCode
from coalmine.promptfoo.matrix import Matrix, load_matrix
from coalmine.promptfoo.node import node_available

pytestmark = pytest.mark.usefixtures("fast_python")
NEEDS_NODE = pytest.mark.skipif(node_available() is not None, reason="needs Node.js >= 18")

GENERATORS = """
import os

def make(config=None):
    return [{"vars": {"q": repr(config)}}]

def generate_tests():
    return [{"vars": {"q": os.path.basename(os.getcwd())}}]

def raises():
    raise ValueError("no tests today")

def not_a_list():
    return {"vars": {"q": 1}}

def strings():
    return ["a test"]
"""


def matrix(folder: Path, tests: str, files: dict[str, str]) -> Matrix:
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    path = folder / "promptfooconfig.yaml"
    path.write_text(f"prompts: ['{{{{q}}}}']\nproviders: [echo]\ntests:\n{tests}", encoding="utf-8")
    return load_matrix(path, code=RunConfigCode())


def test_a_python_generator_is_called_with_its_config_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "data.json").write_text('{"n": 2}')
    tests = (
        "  - file://gen.py:make\n"
        "  - path: file://gen.py:make\n"
        "    config: {a: 1, b: file://data.json}\n"
        "  - path: file://gen.py:make\n"
        "    config: null\n"
        "  - file://gen.py\n"
    )
    found = matrix(tmp_path, tests, {"gen.py": GENERATORS})
    # no config: no argument; a config's file:// values loaded; null passed as it is; a bare
    # file calls generate_tests, run in the config's folder
    assert [t.vars["q"] for t in found.tests] == [
        "None",
        "{'a': 1, 'b': {'n': 2}}",
        "None",
        tmp_path.name,
    ]
    assert [t.description for t in found.tests] == [None] * 4


def test_the_whole_of_tests_from_a_generator_is_read_as_the_configs_tests(tmp_path: Path) -> None:
    (tmp_path / "v.yaml").write_text("q: from a vars file\n")
    code = "def make():\n    return [{'vars': 'v.yaml'}, {'vars': {'q': ['a', 'b']}}]\n"
    found = matrix(tmp_path, "  file://gen.py:make\n", {"gen.py": code}).tests
    assert [t.vars["q"] for t in found] == ["from a vars file", "a", "b"]


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("raises", "Error running Python script {file}: ValueError: no tests today"),
        ("not_a_list", "Python test function must return a list of test cases, got object"),
        ("strings", 'a test must be a mapping, not "a test"'),
        ("missing", "Error running Python script {file}: AttributeError: "),
    ],
)
def test_a_generator_that_fails_is_an_error_at_the_configs_line(
    tmp_path: Path, ref: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        matrix(tmp_path, f"  - vars: {{q: 1}}\n  - file://gen.py:{ref}\n", {"gen.py": GENERATORS})
    config = tmp_path / "promptfooconfig.yaml"
    assert (caught.value.path, caught.value.line) == (config, 5)
    assert str(caught.value).startswith(
        f"{config}:5: tests from file://gen.py:{ref}: " + message.format(file=tmp_path / "gen.py")
    )


def test_a_generator_outside_the_project_is_not_run(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (tmp_path / "gen.py").write_text("def generate_tests():\n    raise SystemExit('ran')\n")
    with pytest.raises(ConfigError, match="tests from file://../gen.py: .*outside"):
        matrix(folder, "  - file://../gen.py\n", {})


@NEEDS_NODE
def test_a_javascript_generator_is_called_with_its_config_and_an_export_may_be_the_tests(
    tmp_path: Path,
) -> None:
    files = {
        "gen.js": "module.exports = async (config) => [{ vars: { q: String(JSON.stringify(config)) } }];\n"
        "module.exports.fixed = [{ vars: { q: 'fixed' } }];\n",
        "list.mjs": "export default [{ vars: { q: 'esm' } }];\n",
        "bad.cjs": "module.exports = () => { throw new TypeError('broken generator'); };\n",
    }
    tests = (
        "  - file://gen.js\n"
        "  - path: file://gen.js\n"
        "    config: {x: [1]}\n"
        "  - file://gen.js:fixed\n"
        "  - file://list.mjs\n"
    )
    found = matrix(tmp_path, tests, files)
    assert [t.vars["q"] for t in found.tests] == ["undefined", '{"x":[1]}', "fixed", "esm"]
    with pytest.raises(ConfigError, match=r":4: tests from file://bad.cjs: .*broken generator"):
        matrix(tmp_path, "  - file://bad.cjs\n", files)
