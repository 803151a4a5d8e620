"""The rest of Nunjucks' runtime for promptfoo templates: member lookup, tests and globals.

``obj.key`` and ``obj[key]`` follow JavaScript (``memberLookup``): an object yields its
property, a list or string its index or ``length``, a missing one ``undefined`` and so does any
lookup on ``null`` or ``undefined`` (no error). Templates written for Nunjucks also call
JavaScript methods (``name.toUpperCase()``, ``items.join(", ")``, ``x.toFixed(2)``); the common
string, array and number methods are provided. Loops take JavaScript's shapes too: one name
over an object runs no iteration, two names over an object walk its key/value pairs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import Undefined

from coalmine.promptfoo.nunjucks._js import (
    UNDEFINED,
    JsArray,
    SafeStr,
    js_arith,
    js_loose_equal,
    js_number,
    js_relation,
    js_strict_equal,
    js_string,
    js_to_fixed,
    js_to_number,
    js_trim,
    js_truthy,
    js_type,
    js_utf16_length,
    normalize_number,
    strict_member,
)

__all__ = [
    "GLOBALS",
    "TESTS",
    "Cycler",
    "is_js_value",
    "js_compare",
    "js_iter",
    "js_member",
]

_INDEX = re.compile(r"0|[1-9][0-9]*")


def is_js_value(value: object) -> bool:
    """Whether ``value`` is data (not a template object such as ``loop`` or a macro)."""
    return value is None or isinstance(value, str | int | float | Mapping | list | Undefined)


def _int_arg(value: object, default: int) -> int:
    if isinstance(value, Undefined):
        return default
    number = js_to_number(value)
    return default if math.isnan(number) else int(max(min(number, 2**53), -(2**53)))


def _slice_bounds(size: int, start: object, end: object) -> tuple[int, int]:
    """``slice``'s arguments: negatives count from the end."""
    lo, hi = _int_arg(start, 0), _int_arg(end, size)
    lo = max(size + lo, 0) if lo < 0 else min(lo, size)
    hi = max(size + hi, 0) if hi < 0 else min(hi, size)
    return lo, hi


def _js_replace(text: str, search: object, replacement: object, *, every: bool) -> str:
    """``String.prototype.replace``/``replaceAll`` with a string pattern and ``$`` patterns."""
    needle, template = js_string(search), js_string(replacement)
    if every:
        step = max(len(needle), 1)
        found, at = [], text.find(needle)
        while at != -1 and at <= len(text):
            found.append(at)
            at = text.find(needle, at + step) if at + step <= len(text) else -1
    else:
        found = [i] if (i := text.find(needle)) != -1 else []

    def expand(pos: int) -> str:
        parts = {"$": "$", "&": needle, "`": text[:pos], "'": text[pos + len(needle) :]}
        return re.sub(r"\$([$&`'])", lambda m: parts[m.group(1)], template)

    out, pos = [], 0
    for at in found:
        out.append(text[pos:at] + expand(at))
        pos = at + len(needle)
    return "".join(out) + text[pos:]


def _split(text: str, sep: object = UNDEFINED, limit: object = UNDEFINED) -> JsArray:
    if isinstance(sep, Undefined):
        parts = [text]
    elif js_string(sep) == "":
        parts = list(text)
    else:
        parts = text.split(js_string(sep))
    return JsArray(parts if isinstance(limit, Undefined) else parts[: _int_arg(limit, 0)])


def _pad(text: str, length: object, fill: object, *, start: bool) -> str:
    filler = " " if isinstance(fill, Undefined) else js_string(fill)
    missing = _int_arg(length, 0) - js_utf16_length(text)
    if missing <= 0 or not filler:
        return text
    pad = (filler * (missing // len(filler) + 1))[:missing]
    return pad + text if start else text + pad


def _at(items: str | list[Any], index: object) -> Any:
    i = _int_arg(index, 0)
    i = i + len(items) if i < 0 else i
    return items[i] if 0 <= i < len(items) else UNDEFINED


def _string_methods(text: str) -> dict[str, Callable[..., Any]]:
    return {
        "toUpperCase": lambda: text.upper(),
        "toLowerCase": lambda: text.lower(),
        "trim": lambda: js_trim(text),
        "trimStart": lambda: js_trim(text + "x")[:-1],
        "trimEnd": lambda: js_trim("x" + text)[1:],
        "split": lambda sep=UNDEFINED, limit=UNDEFINED: _split(text, sep, limit),
        "includes": lambda s, pos=UNDEFINED: js_string(s) in text[_int_arg(pos, 0) :],
        "startsWith": lambda s, pos=UNDEFINED: text.startswith(js_string(s), _int_arg(pos, 0)),
        "endsWith": lambda s, end=UNDEFINED: text[: _int_arg(end, len(text))].endswith(
            js_string(s)
        ),
        "indexOf": lambda s, pos=UNDEFINED: text.find(js_string(s), max(_int_arg(pos, 0), 0)),
        "lastIndexOf": lambda s: text.rfind(js_string(s)),
        "slice": lambda a=UNDEFINED, b=UNDEFINED: text[slice(*_slice_bounds(len(text), a, b))],
        "substring": lambda a=UNDEFINED, b=UNDEFINED: text[
            slice(
                *sorted(max(0, min(_int_arg(x, d), len(text))) for x, d in ((a, 0), (b, len(text))))
            )
        ],
        "charAt": lambda i=UNDEFINED: "" if isinstance(c := _at(text, i), Undefined) else c,
        "at": lambda i=UNDEFINED: _at(text, i),
        "concat": lambda *parts: text + "".join(js_string(p) for p in parts),
        "repeat": lambda n=UNDEFINED: text * _int_arg(n, 0),
        "padStart": lambda n, fill=UNDEFINED: _pad(text, n, fill, start=True),
        "padEnd": lambda n, fill=UNDEFINED: _pad(text, n, fill, start=False),
        "replace": lambda s, r: _js_replace(text, s, r, every=False),
        "replaceAll": lambda s, r: _js_replace(text, s, r, every=True),
        "toString": lambda: str.__str__(text),
    }


def _same_value_zero(a: object, b: object) -> bool:
    both_nan = js_type(a) == js_type(b) == "number" and a != a and b != b  # noqa: PLR0124
    return both_nan or js_strict_equal(a, b)


def _array_methods(items: list[Any]) -> dict[str, Callable[..., Any]]:
    def concat(*parts: object) -> JsArray:
        out = JsArray(items)
        for part in parts:
            out.extend(part) if isinstance(part, list) else out.append(part)
        return out

    return {
        "join": lambda sep=UNDEFINED: ("," if isinstance(sep, Undefined) else js_string(sep)).join(
            "" if v is None or isinstance(v, Undefined) else js_string(v) for v in items
        ),
        "includes": lambda x: any(_same_value_zero(v, x) for v in items),
        "indexOf": lambda x: next((i for i, v in enumerate(items) if js_strict_equal(v, x)), -1),
        "slice": lambda a=UNDEFINED, b=UNDEFINED: JsArray(
            items[slice(*_slice_bounds(len(items), a, b))]
        ),
        "concat": concat,
        "at": lambda i=UNDEFINED: _at(items, i),
        "toString": lambda: js_string(items),
    }


def _number_methods(number: float) -> dict[str, Callable[..., Any]]:
    return {
        "toFixed": lambda digits=UNDEFINED: js_to_fixed(float(number), _int_arg(digits, 0)),
        "toString": lambda: js_number(number),
    }


def js_member(obj: object, key: object) -> Any:
    """``obj[key]`` as Nunjucks' ``memberLookup`` gives it for data values."""
    if obj is None or isinstance(obj, Undefined):
        return UNDEFINED
    name = js_string(key)
    if isinstance(obj, Mapping):
        return obj.get(name, UNDEFINED)
    if isinstance(obj, str | list) and (_INDEX.fullmatch(name) or name == "length"):
        return strict_member(obj, name)
    methods: Mapping[str, Callable[..., Any]]
    if isinstance(obj, str):
        methods = _string_methods(obj)
    elif isinstance(obj, list):
        methods = _array_methods(obj)
    elif isinstance(obj, bool):
        methods = {"toString": lambda: js_string(obj)}
    elif isinstance(obj, int | float):
        methods = _number_methods(obj)
    else:
        methods = {}
    return methods.get(name, UNDEFINED)


def _in(key: object, container: object) -> bool:
    """Nunjucks' ``inOperator``."""
    if isinstance(container, list):
        return any(js_strict_equal(v, key) for v in container)
    if isinstance(container, str):
        return js_string(key) in container
    if isinstance(container, Mapping):
        return js_string(key) in container
    raise TypeError(
        f'Cannot use "in" operator to search for "{js_string(key)}" in unexpected types.'
    )


_RELATIONS = {"lt": "<", "lteq": "<=", "gt": ">", "gteq": ">="}


def js_compare(value: object, *operands: object) -> Any:
    """A comparison chain as JavaScript evaluates it: left to right, ``(a < b) < c``."""
    result: Any = value
    for op, right in zip(operands[::2], operands[1::2], strict=True):
        if op == "eq":
            result = js_loose_equal(result, right)
        elif op == "ne":
            result = not js_loose_equal(result, right)
        elif op == "in":
            result = _in(result, right)
        elif op == "notin":
            result = not _in(result, right)
        else:
            result = js_relation(_RELATIONS[str(op)], result, right)
    return result


def js_iter(value: object, names: int) -> list[Any]:
    """What a ``{% for %}`` with ``names`` loop variables walks over ``value``."""
    if not js_truthy(value):
        return []
    if names == 1:
        return list(value) if isinstance(value, list | str) else []
    pad = (UNDEFINED,) * (names - 2)
    if isinstance(value, list):
        return [tuple(js_member(item, i) for i in range(names)) for item in value]
    if isinstance(value, Mapping):
        return [(k, v, *pad) for k, v in value.items()]
    if isinstance(value, str):
        return [(str(i), ch, *pad) for i, ch in enumerate(value)]
    return []


TESTS: dict[str, Callable[..., bool]] = {
    "callable": lambda v, *_: js_type(v) == "function",
    "defined": lambda v, *_: not isinstance(v, Undefined),
    "divisibleby": lambda a, b=UNDEFINED, *_: js_strict_equal(js_arith("%", a, b), 0),
    "escaped": lambda v, *_: isinstance(v, SafeStr),
    "equalto": lambda a, b=UNDEFINED, *_: js_strict_equal(a, b),
    "eq": lambda a, b=UNDEFINED, *_: js_strict_equal(a, b),
    "sameas": lambda a, b=UNDEFINED, *_: js_strict_equal(a, b),
    "even": lambda v, *_: js_strict_equal(js_arith("%", v, 2), 0),
    "odd": lambda v, *_: js_strict_equal(js_arith("%", v, 2), 1),
    "falsy": lambda v, *_: not js_truthy(v),
    "truthy": lambda v, *_: js_truthy(v),
    "ge": lambda a, b=UNDEFINED, *_: js_relation(">=", a, b),
    "gt": lambda a, b=UNDEFINED, *_: js_relation(">", a, b),
    "greaterthan": lambda a, b=UNDEFINED, *_: js_relation(">", a, b),
    "le": lambda a, b=UNDEFINED, *_: js_relation("<=", a, b),
    "lt": lambda a, b=UNDEFINED, *_: js_relation("<", a, b),
    "lessthan": lambda a, b=UNDEFINED, *_: js_relation("<", a, b),
    "ne": lambda a, b=UNDEFINED, *_: not js_strict_equal(a, b),
    "null": lambda v, *_: v is None,
    "none": lambda v, *_: v is None,  # ``is none`` and ``is null`` both reach Nunjucks' null test
    "undefined": lambda v, *_: isinstance(v, Undefined),
    "number": lambda v, *_: js_type(v) == "number",
    "string": lambda v, *_: js_type(v) == "string",
    "lower": lambda v, *_: _case_test(v, "toLowerCase"),
    "upper": lambda v, *_: _case_test(v, "toUpperCase"),
    "iterable": lambda v, *_: _iterable(v),
    "mapping": lambda v, *_: js_type(v) == "object" and not isinstance(v, list),
}
"""Nunjucks' tests (``x is odd``), with JavaScript comparisons."""


def _case_test(value: object, method: str) -> bool:
    if not isinstance(value, str):
        raise TypeError(f"{js_string(value)}.{method} is not a function")
    return (value.lower() if method == "toLowerCase" else value.upper()) == value


def _iterable(value: object) -> bool:
    if value is None or isinstance(value, Undefined):
        raise TypeError(
            f"Cannot read properties of {js_string(value)} (reading 'Symbol(Symbol.iterator)')"
        )
    return isinstance(value, str | list)


class Cycler:
    """``cycler(a, b, …)``: ``next()`` returns the items in turn; ``current`` the last one."""

    def __init__(self, items: tuple[object, ...]) -> None:
        self._items, self._index = items, -1
        self.current: object = None

    def next(self) -> object:
        """The next item, wrapping around."""
        self._index = 0 if self._index + 1 >= len(self._items) else self._index + 1
        self.current = self._items[self._index] if self._items else UNDEFINED
        return self.current

    def reset(self) -> None:
        """Start again from the first item."""
        self._index, self.current = -1, None


def _joiner(sep: object = UNDEFINED) -> Callable[[], str]:
    text = js_string(sep) if js_truthy(sep) else ","
    state = {"first": True}

    def join() -> str:
        out = "" if state["first"] else text
        state["first"] = False
        return out

    return join


def _range(start: object, stop: object = UNDEFINED, step: object = UNDEFINED) -> JsArray:
    if isinstance(stop, Undefined):
        begin, end, stride = 0.0, float(js_to_number(start)), 1.0
    else:
        begin, end = float(js_to_number(start)), float(js_to_number(stop))
        stride = float(js_to_number(step)) if js_truthy(step) else 1.0
    out, i = JsArray(), begin
    while (i < end) if stride > 0 else (i > end):
        out.append(normalize_number(i))
        i += stride
    return out


GLOBALS: dict[str, Any] = {
    "range": _range,
    "cycler": lambda *items: Cycler(items),
    "joiner": _joiner,
}
"""Nunjucks' globals (``env`` is added per render)."""
