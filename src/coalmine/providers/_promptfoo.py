"""promptfoo's calling conventions, shared by the ``command`` and ``python`` providers.

With ``convention: promptfoo`` an agent is called as promptfoo 0.121.20 calls its ``exec:`` and
``file://…py`` providers: with the prompt, the provider ``options`` (``{id?, config: {…,
basePath}, env}``) and the call context (``{vars}``). Node writes those as ``JSON.stringify``
does, so :func:`js_json` does too (compact, non-ASCII kept, ``1.0`` written ``1``). A relative
``options.config.basePath`` is resolved against the config file's folder (promptfoo passes
its config's folder there).

The context holds the case's ``vars``; a promptfoo row's call adds its ``prompt`` (template,
label …), ``test`` and ``repeatIndex``, as promptfoo passes them (its ``evaluationId`` and the
``__evalId``-style runtime vars are not passed).
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from coalmine.errors import FailureKind
from coalmine.providers.base import CallContext

_ANSI = re.compile(r"\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")
"""The escape sequences promptfoo strips from an ``exec:`` answer."""
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"  # noqa: E501 - JavaScript's String.prototype.trim set
DEFAULT_FUNCTION = "call_api"
NO_OUTPUT = "No output"
"""promptfoo's failure for an answer without an ``output``."""
TOKEN_KEYS = {"prompt": "prompt_tokens", "completion": "completion_tokens",
              "total": "total_tokens", "cached": "cached_tokens"}  # fmt: skip


class ConventionError(Exception):
    """An agent broke promptfoo's convention; the message is what promptfoo reports."""

    def __init__(self, message: str, *, kind: FailureKind = "crash"):
        super().__init__(message)
        self.kind: FailureKind = kind


def js_json(value: Any) -> str:
    """``JSON.stringify(value)`` as Node writes it (raises ``TypeError`` for other objects)."""
    return "".join(_js_parts(value))


def _js_parts(value: Any) -> list[str]:
    if value is None or value is True or value is False:
        return [json.dumps(value)]
    if isinstance(value, str):
        return [json.dumps(value, ensure_ascii=False)]
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, float):
        return [js_number(value)]
    if isinstance(value, Mapping):
        parts = ["{"]
        for index, (key, item) in enumerate(value.items()):
            parts += [","] if index else []
            parts += [json.dumps(_js_key(key), ensure_ascii=False), ":", *_js_parts(item)]
        return [*parts, "}"]
    if isinstance(value, date):  # promptfoo's config reading makes a YAML date an empty object
        return ["{}"]
    if isinstance(value, list | tuple):
        parts = ["["]
        for index, item in enumerate(value):
            parts += [","] if index else []
            parts += _js_parts(item)
        return [*parts, "]"]
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _js_key(key: Any) -> str:
    return key if isinstance(key, str) else json.dumps(key)


def js_number(value: float) -> str:
    """A float as JavaScript's ``Number.prototype.toString`` writes it (``NaN`` → ``null``)."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    k, n = len(digits), exponent + len(digits)  # value = 0.<digits> × 10**n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
        text = f"{mantissa}e{'+' if n > 0 else '-'}{abs(n - 1)}"
    return ("-" if sign else "") + text


def exec_output(stdout: str) -> str:
    """An ``exec:`` answer: trimmed as JavaScript trims, then stripped of ANSI escapes.

    In that order, as promptfoo does: spaces inside the escapes survive the trim.
    """
    return _ANSI.sub("", stdout.strip(_JS_SPACE))


def call_options(options: Mapping[str, Any], base_dir: Path) -> dict[str, Any]:
    """The provider options sent to the agent, a relative ``config.basePath`` made absolute."""
    resolved = dict(options)
    config = resolved.get("config")
    if isinstance(config, Mapping) and isinstance(config.get("basePath"), str):
        base = Path(config["basePath"])
        absolute = base if base.is_absolute() else (base_dir / base).resolve()
        resolved["config"] = {**config, "basePath": str(absolute)}
    return resolved


def call_context(context: CallContext) -> dict[str, Any]:
    """The call context promptfoo's convention passes: the case's ``vars``, and the rest.

    The rest is there when the call is a promptfoo row's: ``prompt``, ``test``, ``repeatIndex``.
    """
    return {"vars": dict(context.vars or {}), **(context.promptfoo or {})}


def load_function(path: Path, name: str) -> Callable[..., Any]:
    """Load ``path`` as promptfoo's Python worker does and return ``name`` from it.

    The module is named after the file (``provider.py`` → ``provider``), its folder goes first
    on ``sys.path``, and it is not added to ``sys.modules``; ``name`` may be ``Class.method``.
    """
    if not path.is_file():
        raise ConventionError(f"no Python file {path}", kind="config")
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(path.name.rsplit(".", 1)[0], path)
    if spec is None or spec.loader is None:
        raise ConventionError(f"cannot load a module from {path}", kind="config")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's module is reported
        raise ConventionError(f"Failed to load module {path}: {exc}") from None
    owner: Any = module
    parts = name.split(".", 1)
    try:
        for part in parts:
            owner = getattr(owner, part)
    except AttributeError:
        found = sorted(
            n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))
        )
        raise ConventionError(
            f"Function {name!r} not found in {path}; its functions: {', '.join(found) or 'none'} "
            f"(promptfoo calls {DEFAULT_FUNCTION}(prompt, options, context) by default)",
            kind="config",
        ) from None
    if not callable(owner):
        raise ConventionError(f"{name!r} in {path} is not callable", kind="config")
    function: Callable[..., Any] = owner
    return function


def call_arguments(prompt: str, options: Mapping[str, Any], context: Mapping[str, Any]) -> Any:
    """``[prompt, options, context]`` as the function receives them: through JSON.

    Raises:
        ConventionError: a value JSON cannot hold (kind ``config``).
    """
    try:
        return json.loads(js_json([prompt, options, context]))
    except TypeError as exc:
        raise ConventionError(f"the call cannot be passed as JSON: {exc}", kind="config") from None


READ_FIELDS = frozenset({"output", "error", "tokenUsage", "cost", "finishReason"})
"""The fields of a response read into :class:`Answer`'s own attributes."""


@dataclass(frozen=True)
class Answer:
    """What a promptfoo-convention function answered."""

    text: str
    usage: dict[str, int] | None
    cost: float | None = None
    """The ``cost`` the function reported, when it is a number."""
    finish_reason: str | None = None
    """The ``finishReason`` the function reported, as it is (promptfoo does not map it)."""
    data: Any = None
    """The ``output`` when it is not a string (an object, a list, a number …), as it came."""
    fields: dict[str, Any] | None = None
    """The response's other fields (``guardrails``, ``logProbs``, ``metadata`` …), if any."""


def read_answer(result: Any, function: str) -> Answer:
    """Read ``{"output", "error", "tokenUsage", "cost"}`` as promptfoo does.

    The result goes through JSON as promptfoo's worker sends it. A truthy ``error`` (in
    JavaScript's sense) fails the call with that text; a missing or null ``output`` is promptfoo's
    "No output"; an ``output`` that is not a string is kept (``data``) beside its JSON text
    (what coalmine's own graders read). promptfoo marks the "No output" row failed with
    ``failureReason`` 0 (not an error), while coalmine reports a ``bad_output`` failure: the
    importer's runner decides how that row is scored.
    """
    try:
        data = json.loads(json.dumps(result, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise ConventionError(f"Python error: {exc}", kind="bad_output") from None
    if not isinstance(data, dict) or ("output" not in data and "error" not in data):
        shown = js_json(data)
        raise ConventionError(
            f"The Python script `{function}` function must return a dict with an own `output` "
            f"string/object or `error` string, instead got: {shown}",
            kind="bad_output",
        )
    error = data.get("error")
    if _js_truthy(error):
        raise ConventionError(error if isinstance(error, str) else js_json(error))
    output = data.get("output")
    if output is None:
        raise ConventionError(NO_OUTPUT, kind="bad_output")
    text = output if isinstance(output, str) else js_json(output)
    cost = data.get("cost")
    reported = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    stopped = data.get("finishReason")
    return Answer(
        text=text,
        usage=token_usage(data.get("tokenUsage")),
        cost=reported,
        finish_reason=stopped if isinstance(stopped, str) else None,
        data=None if isinstance(output, str) else output,
        fields={k: v for k, v in data.items() if k not in READ_FIELDS} or None,
    )


def _js_truthy(value: Any) -> bool:
    if isinstance(value, dict | list):
        return True  # {} and [] are truthy in JavaScript
    return bool(value) and not (isinstance(value, float) and math.isnan(value))


def token_usage(reported: Any) -> dict[str, int] | None:
    """The token counts, in coalmine's keys, of promptfoo's ``tokenUsage``."""
    if not isinstance(reported, dict):
        return None
    usage = {
        TOKEN_KEYS[key]: value
        for key, value in reported.items()
        if key in TOKEN_KEYS and isinstance(value, int) and not isinstance(value, bool)
    }
    return usage or None
