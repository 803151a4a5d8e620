"""The built-in methods templates call on arrays, numbers, booleans and objects, and lookup.

Nunjucks' ``memberLookup`` hands a template any method of a value's prototype, so templates
written for promptfoo call ``Array.prototype``, ``Number.prototype`` and ``Object.prototype``
methods (and ``String.prototype``'s, in :mod:`coalmine.promptfoo.nunjucks._strings`). All are
here but the ones that take a callback, which a template cannot write; each is called as
JavaScript calls a function (missing arguments ``undefined``, extra ones ignored). Array methods
that change the array (``push``, ``pop``, ``splice``, ``sort``, ``reverse`` …) change it in
place, as in JavaScript, which is how templates build lists: ``{% set _ = items.push(x) %}``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

from coalmine.promptfoo.nunjucks._args import (
    RangeError,
    clamp,
    item_at,
    javascript_arity,
    relative,
    slice_bounds,
    to_integer,
)
from coalmine.promptfoo.nunjucks._js import (
    UNDEFINED,
    JsArray,
    SafeStr,
    is_undefined,
    js_join,
    js_number,
    js_strict_equal,
    js_string,
    js_to_fixed,
    js_to_number,
    js_type,
)
from coalmine.promptfoo.nunjucks._numbers import (
    js_to_exponential,
    js_to_locale_string,
    js_to_precision,
    js_to_radix,
)
from coalmine.promptfoo.nunjucks._regexp import regexp_methods
from coalmine.promptfoo.nunjucks._strings import STRING_METHODS, JsIterator

__all__ = ["method_of"]


# -- Array.prototype


def _same_value_zero(a: object, b: object) -> bool:
    both_nan = js_type(a) == js_type(b) == "number" and a != a and b != b  # noqa: PLR0124
    return both_nan or js_strict_equal(a, b)


def _from_index(items: list[Any], start: object) -> int:
    return relative(start, len(items), 0)


def _index(items: list[Any], value: object = UNDEFINED, start: object = UNDEFINED) -> int:
    begin = _from_index(items, start)
    return next((i for i in range(begin, len(items)) if js_strict_equal(items[i], value)), -1)


def _last_index(items: list[Any], *args: object) -> int:
    value = args[0] if args else UNDEFINED
    last = to_integer(args[1], len(items) - 1) if len(args) > 1 else len(items) - 1
    last = last + len(items) if last < 0 else min(last, len(items) - 1)
    return next((i for i in range(int(last), -1, -1) if js_strict_equal(items[i], value)), -1)


def _concat(items: list[Any], *parts: object) -> JsArray:
    out = JsArray(items)
    for part in parts:
        out.extend(part) if isinstance(part, list) else out.append(part)
    return out


def _flat(items: list[Any], depth: object = UNDEFINED) -> JsArray:
    levels = to_integer(depth, 1)

    def flatten(values: list[Any], level: float) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if isinstance(value, list) and level > 0:
                out.extend(flatten(value, level - 1))
            else:
                out.append(value)
        return out

    return JsArray(flatten(items, levels))


def _sort_key(value: object) -> tuple[int, bytes]:
    """The default ``sort`` order: by ``String(value)`` in UTF-16 units, ``undefined`` last."""
    if is_undefined(value):
        return (1, b"")
    return (0, js_string(value).encode("utf-16-be", "surrogatepass"))


def _sort(items: list[Any], compare: object = UNDEFINED) -> list[Any]:
    if not is_undefined(compare):
        raise TypeError("The comparison function must be either a function or undefined")
    items.sort(key=_sort_key)
    return items


def _splice(items: list[Any], *args: object) -> JsArray:
    start = relative(args[0], len(items), 0) if args else len(items)
    if not args:
        count = 0
    elif len(args) == 1:
        count = len(items) - start
    else:
        count = clamp(to_integer(args[1]), 0, len(items) - start)
    removed = JsArray(items[start : start + count])
    items[start : start + count] = list(args[2:])
    return removed


def _push(items: list[Any], *values: object) -> int:
    items.extend(values)
    return len(items)


def _unshift(items: list[Any], *values: object) -> int:
    items[:0] = values
    return len(items)


def _fill(items: list[Any], value: object = UNDEFINED, *bounds: object) -> list[Any]:
    start, end = slice_bounds(len(items), *(list(bounds) + [UNDEFINED, UNDEFINED])[:2])
    items[start:end] = [value] * max(end - start, 0)
    return items


def _with(items: list[Any], index: object = UNDEFINED, value: object = UNDEFINED) -> JsArray:
    i = to_integer(index)
    i = i + len(items) if i < 0 else i
    if not 0 <= i < len(items):
        raise RangeError("Invalid index : " + js_string(js_to_number(index)))
    out = JsArray(items)
    out[int(i)] = value
    return out


def _reverse(items: list[Any]) -> list[Any]:
    items.reverse()
    return items


_ARRAY: dict[str, Callable[..., Any]] = {
    "at": item_at,
    "concat": _concat,
    "entries": lambda a: JsIterator([JsArray([i, v]) for i, v in enumerate(a)], "Array"),
    "fill": _fill,
    "flat": _flat,
    "includes": lambda a, x=UNDEFINED, start=UNDEFINED: any(
        _same_value_zero(v, x) for v in a[_from_index(a, start) :]
    ),
    "indexOf": _index,
    "join": lambda a, sep=UNDEFINED: js_join(a, "," if is_undefined(sep) else js_string(sep)),
    "keys": lambda a: JsIterator(list(range(len(a))), "Array"),
    "lastIndexOf": _last_index,
    "pop": lambda a: a.pop() if a else UNDEFINED,
    "push": _push,
    "reverse": _reverse,
    "shift": lambda a: a.pop(0) if a else UNDEFINED,
    "slice": lambda a, s=UNDEFINED, e=UNDEFINED: JsArray(a[slice(*slice_bounds(len(a), s, e))]),
    "sort": _sort,
    "splice": _splice,
    "toLocaleString": lambda a: js_string(a),
    "toReversed": lambda a: JsArray(reversed(a)),
    "toSorted": lambda a, compare=UNDEFINED: _sort(JsArray(a), compare),
    "toSpliced": lambda a, *args: (copy := JsArray(a), _splice(copy, *args))[0],
    "toString": lambda a: js_string(a),
    "unshift": _unshift,
    "values": lambda a: JsIterator(list(a), "Array"),
    "with": _with,
}


# -- Number.prototype, Boolean.prototype, Object.prototype


def _digits(value: object, low: int, high: int, method: str) -> int:
    number = to_integer(value)
    if not low <= number <= high:
        raise RangeError(f"{method}() argument must be between {low} and {high}")
    return int(number)


def _to_string(number: float, radix: object = UNDEFINED) -> str:
    base = 10 if is_undefined(radix) else to_integer(radix)
    if not 2 <= base <= 36:
        raise RangeError("toString() radix must be between 2 and 36")
    return js_to_radix(number, int(base))


def _to_precision(number: float, precision: object = UNDEFINED) -> str:
    if is_undefined(precision):
        return js_number(number)
    if math.isnan(number) or math.isinf(number):
        return js_number(number)
    return js_to_precision(number, _digits(precision, 1, 100, "toPrecision"))


def _to_exponential(number: float, digits: object = UNDEFINED) -> str:
    count = None if is_undefined(digits) else to_integer(digits)
    if math.isnan(number) or math.isinf(number):
        return js_number(number)
    if count is not None:
        count = _digits(count, 0, 100, "toExponential")
    return js_to_exponential(number, count if count is None else int(count))


_NUMBER: dict[str, Callable[..., Any]] = {
    "toExponential": _to_exponential,
    "toFixed": lambda n, digits=UNDEFINED: js_to_fixed(
        float(n), _digits(digits, 0, 100, "toFixed")
    ),
    "toLocaleString": lambda n: js_to_locale_string(n),
    "toPrecision": _to_precision,
    "toString": _to_string,
    "valueOf": lambda n: n,
}
_BOOLEAN: dict[str, Callable[..., Any]] = {
    "toString": lambda b: js_string(b),
    "valueOf": lambda b: b,
}
_OBJECT: dict[str, Callable[..., Any]] = {
    "hasOwnProperty": lambda o, key=UNDEFINED: js_string(key) in o,
    "isPrototypeOf": lambda o, other=UNDEFINED: False,
    "propertyIsEnumerable": lambda o, key=UNDEFINED: js_string(key) in o,
    "toLocaleString": lambda o: "[object Object]",
    "toString": lambda o: "[object Object]",
    "valueOf": lambda o: o,
}


def _prepared(table: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    return {name: javascript_arity(method) for name, method in table.items()}


_TABLES = {
    "string": _prepared(STRING_METHODS),
    "array": _prepared(_ARRAY),
    "number": _prepared(_NUMBER),
    "boolean": _prepared(_BOOLEAN),
    "object": _prepared(_OBJECT),
}


def method_of(value: object, name: str) -> Callable[..., Any] | None:
    """``value[name]`` when that is a built-in method, bound to ``value``; else ``None``."""
    if isinstance(value, bool):
        kind = "boolean"
    elif isinstance(value, int | float):
        kind = "number"
    elif isinstance(value, str):
        if name in ("match", "search"):
            return regexp_methods(value)[name]
        kind = "string"
        value = str.__str__(value) if isinstance(value, SafeStr) else value
    elif isinstance(value, list):
        kind = "array"
    elif isinstance(value, Mapping):
        kind = "object"
    else:
        return None
    method = _TABLES[kind].get(name)
    return None if method is None else functools.partial(method, value)
