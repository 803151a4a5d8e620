"""The frame of the config author's own code that a row error names."""

from __future__ import annotations

from pathlib import Path

import pytest

from coalmine.promptfoo.where import js_frame, python_frame

PY_TRACE = """\
Traceback (most recent call last):
  File "<string>", line 12, in <module>
  File "/usr/lib/python3.12/asyncio/runners.py", line 194, in run
  File "/repo/evals/checks.py", line 7, in grade
    return helper(output)
  File "/repo/evals/helpers.py", line 3, in helper
    raise KeyError("gone")
  File "/venv/lib/python3.12/site-packages/yaml/__init__.py", line 80, in load
KeyError: 'gone'
"""

JS_STACK = """\
TypeError: Cannot read properties of undefined (reading 'deeper')
    at /opt/coalmine/promptfoo/node_worker.js:40:7
    at module.exports (/repo/evals/bad.js:2:22)
    at file:///repo/evals/esm.mjs:5:3
    at loadFromJavaScriptFile (/repo/node_modules/promptfoo/dist/src/graders.js:451:56)
    at node:internal/process/task_queues:95:5
"""


def test_python_names_the_deepest_frame_of_the_authors_files() -> None:
    # not the wrapper (<string>), the standard library or an installed package
    assert python_frame(PY_TRACE) == "/repo/evals/helpers.py:3"
    assert python_frame("KeyError: 'gone'") is None
    inline = 'File "/tmp/coalmine-python-code-x1/script.py", line 4, in main'
    assert python_frame(inline) is None  # inline code: its temporary file means nothing


def test_javascript_names_the_first_frame_outside_the_worker() -> None:
    assert js_frame(JS_STACK, skip=Path("/opt/coalmine/promptfoo")) == "/repo/evals/bad.js:2:22"
    worker_only = "Error: x\n    at /opt/coalmine/promptfoo/node_worker.js:40:7\n"
    assert js_frame(worker_only, skip=Path("/opt/coalmine/promptfoo")) is None
    esm_only = "Error: x\n    at file:///repo/evals/esm.mjs:5:3\n"
    assert js_frame(esm_only, skip=Path("/opt")) == "/repo/evals/esm.mjs:5:3"


def test_a_frame_inside_the_working_folder_is_shown_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    trace = f'  File "{tmp_path}/evals/checks.py", line 9, in grade\nValueError: no'
    assert python_frame(trace) == "evals/checks.py:9"
