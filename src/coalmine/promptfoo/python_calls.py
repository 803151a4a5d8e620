"""promptfoo's ``python`` assertions, run as promptfoo 0.121.20 runs them: in a ``python`` process.

An inline assertion becomes the body of ``def main(output, context)`` (one line is ``return
<line>``; several lines are indented by the first indented line's indentation, four spaces if
none), written to a temporary ``script.py``; a ``file://x.py[:name]`` value calls ``name``
(``get_assert`` by default) in that file. The function receives ``output`` and ``context``
through JSON and its answer comes back through JSON, as promptfoo's ``wrapper.py`` passes them.
The interpreter is ``$PROMPTFOO_PYTHON``, else ``python3`` (or ``python``) on ``PATH``.

What the answer means (promptfoo's ``normalizeScriptResult``, with ``Python code`` as the label):
``True``/``"true"`` and ``False``/``"false"`` (any case) score 1/0; a JSON object (or a string
starting with ``{``) must be a GradingResult (``pass`` boolean, ``score`` number, ``reason``
string; ``pass_``, ``named_scores`` … accepted) and is failed when its score is below the
assertion's ``threshold``; a list is an object to JavaScript, so never a GradingResult (the
assertion fails, as an object without ``pass`` does); anything else is read with JavaScript's
``parseFloat`` and passes above 0 (at ``>= threshold`` with one). ``not-python`` inverts
``pass``. A failing reason is ``Python code returned false`` and, for inline code, a newline
and the code.

The same wrapper calls the config's other Python functions (var loaders, prompt functions, test
generators: :func:`call_python` waits for one while a config is read), awaiting an ``async``
one, as promptfoo's ``wrapper.py`` does. The config author's code is trusted, as in promptfoo:
it runs with coalmine's environment.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from coalmine._util.scratch import scratch
from coalmine.promptfoo.script_results import is_grading_result
from coalmine.promptfoo.where import python_frame

__all__ = [
    "PythonScriptError",
    "ScriptVerdict",
    "call_python",
    "python_executable",
    "run_python",
    "script_verdict",
]

DEFAULT_FUNCTION = "get_assert"
"""What a ``file://x.py`` assertion calls when its value names no function."""
_TIMEOUT = 120.0
PASSED = "Assertion passed"

_WRAPPER = """\
import asyncio, importlib.util, inspect, json, os, sys
path, method, out = sys.argv[1], sys.argv[2], sys.argv[3]
args = json.load(sys.stdin)
sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
name = os.path.splitext(os.path.basename(path))[0]
spec = importlib.util.spec_from_file_location(name, path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
target = module
for part in method.split("."):
    target = getattr(target, part)
result = asyncio.run(target(*args)) if inspect.iscoroutinefunction(target) else target(*args)
with open(out, "w", encoding="utf-8") as handle:
    json.dump({"type": "final_result", "data": result}, handle)
"""
"""Loads the file, calls the function with the JSON arguments (awaited when it is a coroutine
function, as promptfoo's ``wrapper.py`` awaits it), writes the answer as JSON."""


class PythonScriptError(Exception):
    """The script did not run, raised, or answered something promptfoo rejects."""


@dataclass(frozen=True)
class ScriptVerdict:
    """A ``python`` assertion's verdict."""

    passed: bool
    score: float
    reason: str
    extra: Mapping[str, Any] = field(default_factory=dict)
    """The other keys of a GradingResult the script returned (``namedScores``,
    ``componentResults`` …, snake_case keys read as promptfoo reads them)."""


def python_executable() -> str:
    """The interpreter promptfoo would use: ``$PROMPTFOO_PYTHON``, else ``python3``/``python``."""
    configured = os.environ.get("PROMPTFOO_PYTHON")
    if configured:
        return configured
    return shutil.which("python3") or shutil.which("python") or sys.executable


def inline_script(code: str) -> str:
    """Inline code as the body of ``main(output, context)`` (promptfoo's ``buildPythonScript``)."""
    if "\n" not in code:
        return f"import json\n\ndef main(output, context):\n    return {code}\n"
    indent = re.search(r"^(?!\s*$)\s+", code, re.MULTILINE)
    prefix = indent.group() if indent else "    "
    body = "\n".join(prefix + line for line in code.split("\n"))
    return f"import json\n\ndef main(output, context):\n{body}\n"


async def run_python(
    script: Path,
    function: str,
    args: list[Any],
    *,
    cwd: Path,
    python: str | None = None,
    timeout: float = _TIMEOUT,
) -> Any:
    """Call ``function`` of ``script`` with ``args`` in a Python process; return its answer.

    Raises:
        PythonScriptError: the process could not start, the script raised (its last
            traceback line is the message), timed out, or answered something that is not JSON.
    """
    with _prepared(script, function, args, python) as (command, payload, out):
        try:
            with anyio.fail_after(timeout):
                done = await anyio.run_process(
                    command, input=payload, cwd=cwd, check=False, stderr=subprocess.PIPE
                )
        except TimeoutError:
            raise _timed_out(timeout) from None
        except OSError as exc:
            raise _not_started(command, exc) from None
        return _answer(done.returncode, done.stderr, out)


def call_python(
    script: Path,
    function: str,
    args: list[Any],
    *,
    cwd: Path,
    python: str | None = None,
    timeout: float = _TIMEOUT,
) -> Any:
    """:func:`run_python`, waited for: the code a config runs while it is read (test generators).

    Raises:
        PythonScriptError: as :func:`run_python`.
    """
    with _prepared(script, function, args, python) as (command, payload, out):
        try:
            done = subprocess.run(
                command, input=payload, cwd=cwd, check=False, timeout=timeout,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise _timed_out(timeout) from None
        except OSError as exc:
            raise _not_started(command, exc) from None
        return _answer(done.returncode, done.stderr, out)


@contextmanager
def _prepared(
    script: Path, function: str, args: list[Any], python: str | None
) -> Iterator[tuple[list[str], bytes, Path]]:
    """The command that calls ``function``, its JSON input, and the file its answer goes to."""
    payload = _payload(args)
    with scratch("python") as tmp:
        out = Path(tmp) / "output.json"
        command = [python or python_executable(), "-c", _WRAPPER, str(script), function, str(out)]
        yield command, payload, out


def _timed_out(timeout: float) -> PythonScriptError:
    return PythonScriptError(f"the script did not finish within {timeout:g} s")


def _not_started(command: list[str], exc: OSError) -> PythonScriptError:
    return PythonScriptError(f"cannot run {command[0]}: {exc}")


def _payload(args: list[Any]) -> bytes:
    try:
        return json.dumps(args, ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise PythonScriptError(
            f"the output or context cannot be passed to Python: {exc}"
        ) from None


def _answer(returncode: int, stderr: bytes, out: Path) -> Any:
    """The function's answer, or why there is none (the last line of its traceback)."""
    if returncode != 0:
        trace = stderr.decode("utf-8", errors="replace").strip()
        lines = trace.splitlines()
        where = python_frame(trace)
        message = lines[-1] if lines else f"exit code {returncode}"
        raise PythonScriptError(message + (f" (at {where})" if where else ""))
    try:
        answer = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PythonScriptError(f"Invalid JSON returned by Python script: {exc}") from None
    return answer.get("data") if isinstance(answer, dict) else None


async def run_inline(code: str, args: list[Any], *, cwd: Path, python: str | None = None) -> Any:
    """Run inline assertion code as ``main(output, context)``."""
    with scratch("python-code") as tmp:
        script = Path(tmp) / "script.py"
        script.write_text(inline_script(code), encoding="utf-8")
        return await run_python(script, "main", args, cwd=cwd, python=python)


_SNAKE = {
    "pass_": "pass",
    "named_scores": "namedScores",
    "component_results": "componentResults",
    "tokens_used": "tokensUsed",
}


def _camel_case(value: Mapping[str, Any]) -> dict[str, Any]:
    """``mapSnakeCaseToCamelCase`` as promptfoo maps a result, its ``componentResults`` too."""
    mapped = dict(value)
    for snake, camel in _SNAKE.items():
        if snake in mapped and camel not in mapped:
            mapped[camel] = mapped[snake]
    components = mapped.get("componentResults")
    if isinstance(components, list):
        mapped["componentResults"] = [
            _camel_case(c) if isinstance(c, Mapping) else c for c in components
        ]
    return mapped


def _grading_result(value: Mapping[str, Any]) -> dict[str, Any] | None:
    """``mapSnakeCaseToCamelCase`` then ``isGradingResult``: the object, or None."""
    mapped = _camel_case(value)
    return mapped if is_grading_result(mapped) else None


_FLOAT = re.compile(r"\s*([+-]?(?:Infinity|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))")


def _parse_float(text: str) -> float:
    """JavaScript's ``parseFloat``: the longest number at the start, else NaN."""
    found = _FLOAT.match(text)
    if found is None:
        return math.nan
    return float(found.group(1).replace("Infinity", "inf"))


def _js_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def script_verdict(
    result: Any, *, threshold: float | None, inverse: bool, suffix: str | None
) -> ScriptVerdict:
    """What promptfoo makes of a script's answer (``normalizeScriptResult``).

    Raises:
        PythonScriptError: the answer is neither a boolean, a number nor a GradingResult.
    """
    lowered = result.lower() if isinstance(result, str) else None
    if result is True or lowered == "true":
        return _boolean(True, inverse=inverse, suffix=suffix)
    if result is False or lowered == "false":
        return _boolean(False, inverse=inverse, suffix=suffix)
    if isinstance(result, str) and result.startswith("{"):
        try:
            result = json.loads(result)
        except ValueError as exc:
            raise PythonScriptError(f"Invalid JSON: {exc} when parsing result: {result}") from None
        if not isinstance(result, dict):
            raise PythonScriptError(_SHAPE + f" Got instead: {result}")
    if isinstance(result, list | tuple):  # an object to JavaScript, spread: {"0": …, "1": …}
        result = {str(i): item for i, item in enumerate(result)}
    if isinstance(result, dict):
        return _object(result, threshold=threshold, inverse=inverse)
    score = _parse_float(_js_text(result))
    if math.isnan(score):
        raise PythonScriptError(_SHAPE + f" Instead got:\n{_js_text(result)}")
    raw = score > 0 if threshold is None else score >= threshold
    passed = raw != inverse
    reason = "Assertion passed" if passed else _returned(raw, suffix)
    return ScriptVerdict(passed, score, reason)


_SHAPE = "Python assertion must return a boolean, number, or {pass, score, reason} object."


def _returned(raw: bool, suffix: str | None) -> str:
    reason = f"Python code returned {'true' if raw else 'false'}"
    return f"{reason}\n{suffix}" if suffix else reason


def _boolean(raw: bool, *, inverse: bool, suffix: str | None) -> ScriptVerdict:
    passed = raw != inverse
    reason = PASSED if passed else _returned(raw, suffix)
    return ScriptVerdict(passed, 1.0 if passed else 0.0, reason)


def _object(value: Mapping[str, Any], *, threshold: float | None, inverse: bool) -> ScriptVerdict:
    mapped = _grading_result(value)
    if mapped is None:
        shown = json.dumps(dict(value), indent=2, ensure_ascii=False, default=str)
        raise PythonScriptError(_SHAPE + f" Got instead:\n{shown}")
    raw, score, reason = mapped["pass"], float(mapped["score"]), mapped["reason"]
    if threshold is not None and score < threshold:
        raw = False
        message = f"Python score {_js_number(score)} is less than threshold {_js_number(threshold)}"
        reason = f"{message}: {reason}" if reason else message
    passed = raw != inverse
    if passed != raw:
        reason = (
            "Assertion passed" if passed else f"Python code returned {'true' if raw else 'false'}"
        )
    extra = {k: v for k, v in mapped.items() if k not in ("pass", "score", "reason", "assertion")}
    return ScriptVerdict(passed, score, reason, extra)


def _js_number(value: float) -> str:
    """A number as JavaScript prints it (``1.0`` → ``1``)."""
    return str(int(value)) if value.is_integer() else repr(value)
