"""The config author's code a row runs besides its assertions, where promptfoo 0.121.20 runs it.

Transforms (promptfoo's ``transform`` in ``src/util/transform.ts``): a provider's
``transform``, a test's ``options.transform`` (or ``postprocess``), an assertion's
``transform`` and ``options.transformVars``. Inline code and ``file://x.js[:name]`` run in
Node.js (:mod:`coalmine.promptfoo.node`); ``file://x.py[:name]`` calls ``name`` (default
``get_transform``) with ``(input, context)`` in Python (:mod:`coalmine.promptfoo.python_calls`),
as promptfoo's ``runPython`` does. The file is relative to the config's folder; the function
name follows the last ``:``. A transform that throws, or answers ``null``, makes the row an
ERROR (:class:`RowError`), with promptfoo's ``Transform failed (<label>): …`` words.

``assertScoringFunction`` (promptfoo's ``loadFunction`` and ``AssertionsResult.testResult``):
``file://x.js[:name]`` (the named export, else the module's function, its default export or
its ``func``) runs in Node.js, ``file://x.py[:name]`` (default ``func``) in Python; either is
called with the row's named scores and ``{threshold, componentResults, tokensUsed}`` and its
answer replaces the row's result (:func:`~coalmine.promptfoo.scoring.apply_scoring_result`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from coalmine.promptfoo.matrix.sources import ReadError, require_inside
from coalmine.promptfoo.node import (
    JsError,
    JsLoadError,
    JsUnsupported,
    NodeRuntime,
    NodeUnavailable,
)
from coalmine.promptfoo.python_calls import PythonScriptError, run_python

__all__ = [
    "DEFAULT_SCORING_FUNCTION",
    "DEFAULT_TRANSFORM_FUNCTION",
    "RowError",
    "ScriptFailed",
    "run_scoring_function",
    "run_transform",
    "unsupported_js",
]

DEFAULT_TRANSFORM_FUNCTION = "get_transform"
DEFAULT_SCORING_FUNCTION = "func"
FILE_LABEL = "[file transform]"
_JS_FILE = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")


class RowError(Exception):
    """Something promptfoo throws while it runs a row: the row is an ERROR with this message."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ScriptFailed(Exception):
    """A scoring function that threw or could not run: promptfoo fails the row with this."""


def unsupported_js(exc: JsError, what: str) -> str:
    """The row error for JavaScript coalmine cannot run (no Node.js, a TypeScript file …)."""
    if isinstance(exc, NodeUnavailable):
        return f"unsupported: {what} needs Node.js: {exc.hint}"
    return f"unsupported: {what}: {exc.message or exc}"


def _python_file(code: str, *, split_any_colon: bool) -> tuple[str, str | None] | None:
    """``(path, function)`` of a ``file://…py[:name]`` reference, else ``None``."""
    if not code.startswith("file://"):
        return None
    rest = code.removeprefix("file://")
    colon = rest.rfind(":")
    path, function = (rest[:colon], rest[colon + 1 :]) if colon > 1 else (rest, None)
    if not split_any_colon and function is not None and not path.endswith((".py", *_JS_FILE)):
        path, function = rest, None  # loadFunction's parseFileUrl splits only a code file's name
    return (path, function or None) if path.endswith(".py") else None


def _script(path: str, base_dir: Path) -> Path:
    try:
        return require_inside(base_dir / path)
    except ReadError as exc:
        raise RowError(exc.message) from None


async def run_transform(
    code: Any,
    value: Any,
    *,
    context: Mapping[str, Any],
    node: NodeRuntime,
    base_dir: Path,
    what: str,
    input_name: Literal["output", "vars"] = "output",
) -> Any:
    """``value`` through the transform ``code``, with promptfoo's ``context`` for it.

    Raises:
        RowError: the transform threw, did not load, or answered nothing (``what`` names it
            where coalmine cannot run it at all).
    """
    if not isinstance(code, str):
        raise RowError(f"{what} must be JavaScript code or a file:// path, not {code!r}")
    python = _python_file(code, split_any_colon=True)
    if python is None:
        try:
            return await node.transform(
                code, output=value, context=context, base_dir=base_dir, input_name=input_name
            )
        except (NodeUnavailable, JsUnsupported) as exc:
            raise RowError(unsupported_js(exc, what)) from None
        except JsError as exc:
            raise RowError(str(exc)) from None
    path, function = python
    script = _script(path, base_dir)
    try:
        result = await run_python(
            script, function or DEFAULT_TRANSFORM_FUNCTION, [value, dict(context)], cwd=base_dir
        )
    except PythonScriptError as exc:
        raise RowError(
            f"Error: Transform failed ({FILE_LABEL}): Error running Python script: {exc}"
        ) from None
    if result is None:
        raise RowError(f"Error: Transform function did not return a value\n\n{FILE_LABEL}")
    return result


async def run_scoring_function(
    reference: Any,
    named_scores: Mapping[str, float],
    context: Mapping[str, Any],
    *,
    node: NodeRuntime,
    base_dir: Path,
) -> Any:
    """The answer of a test's ``assertScoringFunction`` for the row's result.

    Raises:
        RowError: the JavaScript file does not load or export the function (promptfoo stops
            the whole evaluation there; coalmine makes the row an ERROR).
        ScriptFailed: the function threw or could not run (promptfoo fails the row).
    """
    if not isinstance(reference, str):
        raise ScriptFailed("scoringFunction is not a function")
    python = _python_file(reference, split_any_colon=False)
    if python is not None:
        path, function = python
        script = _script(path, base_dir)
        try:
            return await run_python(
                script,
                function or DEFAULT_SCORING_FUNCTION,
                [dict(named_scores), dict(context)],
                cwd=base_dir,
            )
        except PythonScriptError as exc:
            raise ScriptFailed(f"Error running Python script: {exc}") from None
    what = f"assertScoringFunction {reference}"
    try:
        return await node.call_function(
            reference, args=[dict(named_scores), dict(context)], base_dir=base_dir
        )
    except (NodeUnavailable, JsUnsupported) as exc:
        raise RowError(unsupported_js(exc, what)) from None
    except JsLoadError as exc:
        raise RowError(f"{what}: {exc.message}") from None
    except JsError as exc:
        raise ScriptFailed(exc.message) from None
