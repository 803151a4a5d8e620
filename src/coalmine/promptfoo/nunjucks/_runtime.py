"""The rest of Nunjucks' runtime for promptfoo templates: member lookup, tests and globals.

``obj.key`` and ``obj[key]`` follow JavaScript (``memberLookup``): an object yields its
property, a list or string its index or ``length``, a missing one ``undefined`` and so does any
lookup on ``null`` or ``undefined`` (no error). Templates written for Nunjucks also call
JavaScript methods (``name.toUpperCase()``, ``items.join(", ")``, ``x.toFixed(2)``), found in
:mod:`coalmine.promptfoo.nunjucks._methods`. Loops take JavaScript's shapes too: one name
over an object runs no iteration, two names over an object walk its key/value pairs.
"""

from __future__ import annotations

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
    js_relation,
    js_strict_equal,
    js_string,
    js_to_number,
    js_truthy,
    js_type,
    normalize_number,
    strict_member,
)
from coalmine.promptfoo.nunjucks._methods import method_of
from coalmine.promptfoo.nunjucks._regexp import MatchArray, RegExpValue
from coalmine.promptfoo.nunjucks._strings import JsIterator

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
    return value is None or isinstance(
        value, str | int | float | Mapping | list | Undefined | RegExpValue | JsIterator
    )


def js_member(obj: object, key: object) -> Any:
    """``obj[key]`` as Nunjucks' ``memberLookup`` gives it for data values."""
    if obj is None or isinstance(obj, Undefined):
        return UNDEFINED
    name = js_string(key)
    if isinstance(obj, RegExpValue):
        return obj.members().get(name, UNDEFINED)
    if isinstance(obj, Mapping) and name in obj:
        return obj[name]
    if isinstance(obj, str | list) and (_INDEX.fullmatch(name) or name == "length"):
        return strict_member(obj, name)
    if isinstance(obj, MatchArray) and name in obj.props:
        return obj.props[name]
    method = method_of(obj, name)
    return UNDEFINED if method is None else method


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
        elif op == "seq":
            result = js_strict_equal(result, right)
        elif op == "sne":
            result = not js_strict_equal(result, right)
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
    if isinstance(value, JsIterator):  # ``fromIterator``: an iterator is walked as an array
        value = JsArray(value.items)
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
