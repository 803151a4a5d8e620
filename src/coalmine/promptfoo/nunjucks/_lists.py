"""Nunjucks 3.2.4's filters over lists and objects (``nunjucks/src/filters.js``).

``join``, ``first``, ``length``, ``sort``, ``groupby``, ``select`` … as they behave in
JavaScript: ``length`` of an object counts its keys, ``sort`` compares strings without case
unless told, ``sum`` adds with JavaScript's ``+``, ``selectattr`` takes one attribute only.
"""

from __future__ import annotations

import functools
import math
import random as _random
import re
from collections.abc import Callable, Mapping
from typing import Any

from coalmine.promptfoo.nunjucks._args import slice_bounds
from coalmine.promptfoo.nunjucks._js import (
    UNDEFINED,
    JsArray,
    JsObject,
    copy_safeness,
    is_nullish,
    is_undefined,
    js_add,
    js_arith,
    js_object,
    js_relation,
    js_strict_equal,
    js_string,
    js_truthy,
    normalize,
    repeat_count,
    strict_member,
)
from coalmine.promptfoo.nunjucks._runtime import TESTS

__all__ = ["LIST_FILTERS", "items_of"]


def _length(obj: object) -> Any:
    return strict_member(obj, "length")


def items_of(obj: object) -> list[Any]:
    """Walk ``obj`` by index up to its ``length``, as Nunjucks' loops over ``arr.length`` do."""
    if isinstance(obj, list):
        return list(obj)
    if isinstance(obj, str):
        return list(obj)
    _length(obj)
    return []


def lib_map(obj: object) -> list[Any]:
    """The items ``lib.map`` walks: none of ``null``, else by index up to ``length``."""
    return [] if is_nullish(obj) else items_of(obj)


def _attr_getter(attribute: object) -> Callable[[object], Any]:
    """``lib.getAttrGetter``: a dotted path of own properties, ``undefined`` when one is missing."""
    parts = attribute.split(".") if isinstance(attribute, str) else [attribute] if attribute else []

    def get(item: object) -> Any:
        for part in parts:
            key = js_string(part)
            if isinstance(item, Mapping) and key in item:
                item = item[key]
            elif isinstance(item, list | str) and re.fullmatch(r"0|[1-9][0-9]*", key):
                item = strict_member(item, key)
                if is_undefined(item):
                    return UNDEFINED
            else:
                return UNDEFINED
        return item

    return get


def _sort_key(case_sensitive: object) -> Callable[[Any], Any]:
    def fold(value: Any) -> Any:
        return value.upper() if not js_truthy(case_sensitive) and isinstance(value, str) else value

    return fold


def batch(arr: object, linecount: object, fill_with: object = UNDEFINED) -> JsArray:
    """Split into rows of ``linecount`` items, padding the last with ``fill_with`` if given."""
    res, tmp = JsArray(), JsArray()
    for i, item in enumerate(items_of(arr)):
        if js_arith("%", i, linecount) == 0 and len(tmp):
            res.append(tmp)
            tmp = JsArray()
        tmp.append(item)
    if len(tmp):
        if js_truthy(fill_with):
            tmp.extend(fill_with for _ in range(len(tmp), repeat_count(linecount)))
        res.append(tmp)
    return res


def dictsort(value: object, case_sensitive: object = False, by: object = UNDEFINED) -> JsArray:
    """The ``[key, value]`` pairs of an object, sorted by key (or by value)."""
    if not isinstance(value, Mapping):
        raise ValueError("dictsort filter: val must be an object")
    if is_undefined(by) or by == "key":
        index = 0
    elif by == "value":
        index = 1
    else:
        raise ValueError("dictsort filter: You can only sort by either key or value")
    fold = _sort_key(case_sensitive)

    def compare(t1: JsArray, t2: JsArray) -> int:
        a, b = fold(t1[index]), fold(t2[index])
        return 1 if js_relation(">", a, b) else 0 if js_strict_equal(a, b) else -1

    pairs = [JsArray([k, v]) for k, v in value.items()]
    return JsArray(sorted(pairs, key=functools.cmp_to_key(compare)))


def first(value: object) -> Any:
    """``arr[0]``."""
    return strict_member(value, 0)


def last(value: object) -> Any:
    """``arr[arr.length - 1]``."""
    return strict_member(value, js_arith("-", _length(value), 1))


def groupby(value: object, attribute: object) -> JsObject:
    """An object of lists, keyed by each item's ``attribute`` (a dotted path)."""
    get = _attr_getter(attribute)
    groups: dict[str, JsArray] = {}
    for item in items_of(value):
        groups.setdefault(js_string(get(item)), JsArray()).append(item)
    return js_object(groups)


def join(value: object, delimiter: object = "", attribute: object = UNDEFINED) -> str:
    """``arr.join(delimiter)``, of each item's ``attribute`` when given."""
    if js_truthy(attribute):
        value = JsArray(strict_member(v, attribute) for v in lib_map(value))
    if not isinstance(value, list):
        raise TypeError(f"{js_string(value)}.join is not a function")
    sep = js_string(delimiter) if js_truthy(delimiter) else ""
    return sep.join("" if is_nullish(v) else js_string(v) for v in value)


def length(value: object) -> Any:
    """Length of a string (UTF-16 units) or list, number of keys of an object."""
    value = normalize(value, "")
    if isinstance(value, Mapping):
        return len(value)
    return _length(value)


def list_(value: object) -> JsArray:
    """A string's characters, an object's ``{key, value}`` entries, or the list itself."""
    if isinstance(value, str):
        return JsArray(value)
    if isinstance(value, Mapping):
        return JsArray(JsObject(key=k, value=v) for k, v in value.items())
    if isinstance(value, list):
        return value if isinstance(value, JsArray) else JsArray(value)
    raise ValueError("list filter: type not iterable")


def random(value: object) -> Any:
    """A random item."""
    items = items_of(value)
    return items[math.floor(_random.random() * len(items))] if items else UNDEFINED


def reverse(value: object) -> Any:
    """A string reversed, or a reversed copy of a list."""
    if isinstance(value, str):
        return copy_safeness(value, value[::-1])
    return JsArray(reversed(value)) if isinstance(value, list) else JsArray()


def slice_(value: object, slices: object, fill_with: object = UNDEFINED) -> JsArray:
    """Split into ``slices`` columns, the first ones one longer when it does not divide."""
    size = strict_member(value, "length")
    length = js_arith("/", size, slices)
    length = math.floor(length) if math.isfinite(length) else length
    extra = js_arith("%", size, slices)
    res, offset, i = JsArray(), 0, 0
    while js_relation("<", i, slices):
        start = js_arith("+", offset, js_arith("*", i, length))
        if js_relation("<", i, extra):
            offset += 1
        end = js_arith("+", offset, js_arith("*", i + 1, length))
        if not isinstance(value, str | list):
            raise TypeError("arr.slice is not a function")
        part = value[slice(*slice_bounds(len(value), start, end))]
        if js_truthy(fill_with) and js_relation(">=", i, extra):
            if isinstance(part, str):
                raise TypeError("currSlice.push is not a function")
            part.append(fill_with)
        res.append(part if isinstance(part, str) else JsArray(part))
        i += 1
    return res


def sum_(value: object, attribute: object = UNDEFINED, start: object = 0) -> Any:
    """``start + arr.reduce((a, b) => a + b, 0)``, with JavaScript's ``+``."""
    if js_truthy(attribute):
        items = [strict_member(v, attribute) for v in lib_map(value)]
    elif isinstance(value, list):
        items = list(value)
    elif is_nullish(value):
        raise TypeError(f"Cannot read properties of {js_string(value)} (reading 'reduce')")
    else:
        raise TypeError("arr.reduce is not a function")
    total: Any = 0
    for item in items:
        total = js_add(total, item)
    return js_add(0 if is_undefined(start) else start, total)


def sort(
    value: object,
    reverse: object = False,
    case_sensitive: object = False,
    attribute: object = UNDEFINED,
) -> JsArray:
    """A sorted copy; strings compare case-insensitively unless ``case_sensitive``."""
    get = _attr_getter(attribute) if js_truthy(attribute) else (lambda item: item)
    flip = js_truthy(reverse)

    def compare(a: object, b: object) -> int:
        x, y = get(a), get(b)
        if not js_truthy(case_sensitive) and isinstance(x, str) and isinstance(y, str):
            x, y = x.lower(), y.lower()
        if js_relation("<", x, y):
            return 1 if flip else -1
        if js_relation(">", x, y):
            return -1 if flip else 1
        return 0

    items = list(value) if isinstance(value, list | str) else []
    return JsArray(sorted(items, key=functools.cmp_to_key(compare)))


def _to_array(value: object) -> list[Any]:
    """``Array.prototype.slice.call(value)``."""
    if value is None or is_undefined(value):
        raise TypeError("Array.prototype.slice called on null or undefined")
    return list(value) if isinstance(value, list | str) else []


def _select(expected: bool) -> Callable[..., JsArray]:
    def select(value: object, test: object = "truthy", arg: object = UNDEFINED) -> JsArray:
        name = "truthy" if is_undefined(test) else js_string(test)
        if name not in TESTS:
            raise ValueError(f"test not found: {name}")
        return JsArray(v for v in _to_array(value) if TESTS[name](v, arg) is expected)

    return select


def _select_attr(expected: bool) -> Callable[..., JsArray]:
    def select(value: object, attribute: object = UNDEFINED, *_ignored: object) -> JsArray:
        if not isinstance(value, list):
            raise TypeError(f"{js_string(value)}.filter is not a function")
        return JsArray(v for v in value if js_truthy(strict_member(v, attribute)) is expected)

    return select


LIST_FILTERS: dict[str, Callable[..., Any]] = {
    "batch": batch,
    "dictsort": dictsort,
    "first": first,
    "groupby": groupby,
    "join": join,
    "last": last,
    "length": length,
    "list": list_,
    "random": random,
    "reject": _select(False),
    "rejectattr": _select_attr(False),
    "reverse": reverse,
    "select": _select(True),
    "selectattr": _select_attr(True),
    "slice": slice_,
    "sort": sort,
    "sum": sum_,
}
"""Nunjucks' list and object filters."""
