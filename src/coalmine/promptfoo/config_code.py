"""Run a promptfoo config's test generators while the config is read, as promptfoo 0.121.20 does.

:class:`RunConfigCode` is the :class:`~coalmine.promptfoo.matrix.code.ConfigCode` that
``eval run --promptfoo`` and ``import promptfoo`` give the matrix reader:

- a ``.py`` generator is called as promptfoo's ``readPythonTestCases`` calls it, in a
  ``python3`` process (:func:`~coalmine.promptfoo.python_calls.call_python`): ``function``
  (``generate_tests`` by default) with the entry's ``config`` as its one argument, or none;
  its answer must be a list;
- a JavaScript or TypeScript one as ``readJavascriptTestCases``: the module (or its export
  ``function``) is imported in Node.js; a function is called with the ``config``, anything else
  is the tests itself; a list is expected.

The config author's code is trusted, as in promptfoo: it runs with coalmine's environment, in
the config's folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coalmine.promptfoo.matrix.code import NO_CONFIG
from coalmine.promptfoo.matrix.sources import ReadError
from coalmine.promptfoo.node_wire import JsError, NodeUnavailable, call_node_once
from coalmine.promptfoo.python_calls import PythonScriptError, call_python

__all__ = ["RunConfigCode", "js_type_name"]

PYTHON_DEFAULT = "generate_tests"
"""What a ``.py`` generator named without a function calls."""
TIMEOUT = 120.0
"""Seconds a generator may run."""


class RunConfigCode:
    """Runs test generators in ``python3`` and Node.js."""

    def generate_tests(
        self, file: Path, *, function: str | None, config: Any, base_dir: Path
    ) -> Any:
        """The tests the generator answers (see :class:`ConfigCode`)."""
        if file.suffix == ".py":
            args = [] if config is NO_CONFIG else [config]
            try:
                made = call_python(
                    file, function or PYTHON_DEFAULT, args, cwd=base_dir, timeout=TIMEOUT
                )
            except PythonScriptError as exc:
                raise ReadError(f"Error running Python script {file}: {exc}") from None
            what = "Python test function"
        else:
            given = config is not NO_CONFIG
            try:
                made = call_node_once(
                    "tests", base_dir=base_dir, timeout=TIMEOUT, file=str(file),
                    functionName=function, hasConfig=given, config=config if given else None,
                )  # fmt: skip
            except NodeUnavailable as exc:
                raise ReadError(f"{file} is JavaScript: {exc.hint}") from None
            except JsError as exc:
                shown = exc.message if str(file) in exc.message else f"{file}: {exc}"
                raise ReadError(shown) from None
            what = "JavaScript test generator"
        if not isinstance(made, list):
            raise ReadError(f"{what} must return a list of test cases, got {js_type_name(made)}")
        return made


def js_type_name(value: Any) -> str:
    """JavaScript's ``typeof`` of a value that came back as JSON (``null`` is ``object``)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"
