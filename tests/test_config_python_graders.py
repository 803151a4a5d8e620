"""``python_graders:`` in coalmine.yaml and [tool.coalmine]: name → ``module:function``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from coalmine.config import Config, load_config
from coalmine.errors import ConfigError
from coalmine.providers.base import provider_settings


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(root: Path) -> Config:
    return load_config(root, providers=provider_settings(), environ={})


def config_error(root: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load(root)
    return info.value


def test_python_graders_are_loaded_as_written(tmp_path: Path) -> None:
    write(
        tmp_path,
        "coalmine.yaml",
        """\
        python_graders:
          sql-valid: graders.sql:is_valid
          json_ok: checks:json_ok
          nested: pkg.sub.mod:Checker.check
        """,
    )
    assert load(tmp_path).python_graders == {
        "sql-valid": "graders.sql:is_valid",
        "json_ok": "checks:json_ok",
        "nested": "pkg.sub.mod:Checker.check",
    }


def test_without_python_graders_none_are_enabled(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "judge: none\n")
    assert load(tmp_path).python_graders == {}
    assert Config(root=tmp_path).python_graders == {}


def test_python_graders_in_pyproject(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        """\
        [tool.coalmine.python_graders]
        sql-valid = "graders.sql:is_valid"
        """,
    )
    assert load(tmp_path).python_graders == {"sql-valid": "graders.sql:is_valid"}


@pytest.mark.parametrize(
    "value",
    [
        "graders.sql.is_valid",  # no colon
        "graders.sql:",  # no function
        ":is_valid",  # no module
        "graders/sql.py:is_valid",  # a path, not a module
        "graders.sql:is_valid:x",
        "graders.sql: is_valid",
        "graders.sql:is valid",
        "graders.sql:is_valid\n",  # a trailing newline
        "",
        ".:.",
        "a..b:c",
        "1up:fn",
    ],
)
def test_a_value_not_of_the_form_module_function_is_an_error_at_its_line(
    tmp_path: Path, value: str
) -> None:
    text = f"judge: none\npython_graders:\n  ok: checks:fine\n  bad: {json.dumps(value)}\n"
    path = write(tmp_path, "coalmine.yaml", text)
    error = config_error(tmp_path)
    assert (error.path, error.line) == (path, 4)
    assert error.reason.startswith("python_graders.bad: ")
    assert "is not module:function (e.g. graders.sql:is_valid)" in error.reason
    assert str(error).startswith(f"{path}:4: python_graders.bad: ")


@pytest.mark.parametrize("value", ["[checks, fn]", "42", "{module: checks}"])
def test_a_value_that_is_not_a_string_is_an_error_at_its_line(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, "coalmine.yaml", f"python_graders:\n  bad: {value}\n")
    error = config_error(tmp_path)
    assert (error.path, error.line) == (path, 2)
    assert error.reason.startswith("python_graders.bad: ")
    assert "valid string" in error.reason


def test_python_graders_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "coalmine.yaml", "judge: none\npython_graders:\n  - checks:fn\n")
    error = config_error(tmp_path)
    assert (error.path, error.line) == (path, 2)
    assert error.reason.startswith("python_graders: ")


def test_a_typo_of_python_graders_suggests_it(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "python_grader:\n  a: checks:fn\n")
    error = config_error(tmp_path)
    assert error.line == 1
    assert "unknown key 'python_grader' (did you mean 'python_graders'?)" in error.reason
