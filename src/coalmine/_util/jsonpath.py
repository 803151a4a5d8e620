"""Parsed JSON: strict parsing, values found in prose, JSON equality, and a safe path subset.

``parse_json`` reads one value as ``JSON.parse`` does (no ``NaN`` or ``Infinity``, which
Python's ``json`` would let through); ``find_json`` finds the objects and arrays inside prose or
code fences; ``json_equal`` compares as JSON does (key order ignored, ``75 == 75.0``, but
``"5" != 5`` and ``true != 1``).

``parse_path`` turns ``choices.0.message.content`` or ``$.choices[0]['message'].content`` into
steps (keys and indexes); ``lookup`` follows them. The JSONPath subset is deliberately small:
``$``, ``.key``, ``[0]`` (negative counts from the end), ``['key']`` and ``["key"]`` (a backslash
escapes the next character). Wildcards, filters, slices, ``..`` and script are refused, so a
path never evaluates anything and always names at most one value. In the dotted form a part
that is an integer is an index into a list and, on an object, the key spelled that way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "PathNotFound",
    "Step",
    "find_json",
    "json_equal",
    "lookup",
    "parse_json",
    "parse_path",
    "render_path",
]

Step = str | int
"""One step of a path: a key of an object, or an index into a list."""

_INT = re.compile(r"-?\d+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STEP = re.compile(
    r"""\.([^.\[\]'"*]+)|\[(-?\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]"""
)
_KEYS_SHOWN = 20
_OPENER = re.compile(r"[\[{]")


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_not_json)


def parse_json(text: str) -> Any:
    """Parse ``text`` as one JSON value (surrounding whitespace allowed); ``ValueError`` if not."""
    try:
        return _DECODER.decode(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def find_json(text: str) -> list[Any]:
    """Return each JSON object or array in ``text``, outermost only, in order."""
    found: list[Any] = []
    pos = 0
    while (match := _OPENER.search(text, pos)) is not None:
        try:
            value, pos = _DECODER.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            pos = match.start() + 1
            continue
        found.append(value)
    return found


def json_equal(a: object, b: object) -> bool:
    """Compare two values as JSON does.

    Object key order is ignored, numbers compare by value (75 == 75.0), arrays compare in
    order, and kinds never mix: "5" != 5, true != 1, null != 0. Tuples count as arrays.

    Args:
        a: A JSON value (None, bool, int, float, str, list, tuple or mapping).
        b: Another JSON value.

    Returns:
        Whether the two values are equal as JSON.

    Raises:
        TypeError: Either value holds something that is not a JSON value.
    """
    kind = _json_kind(a)
    if kind != _json_kind(b):
        return False
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):  # before the number test: bool is an int subclass
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    raise TypeError(f"{type(value).__name__} value {value!r} is not a JSON value")


class PathNotFound(LookupError):
    """A path does not lead to a value; ``depth`` counts the steps that did."""

    def __init__(self, depth: int, reason: str):
        self.depth = depth
        """How many steps were followed before this one failed (0: the first)."""
        self.reason = reason
        """What was found instead, in words."""
        super().__init__(f"at step {depth + 1}: {reason}")


def parse_path(text: str) -> tuple[Step, ...]:
    """Split a dotted or ``$`` JSONPath into keys and indexes.

    Raises:
        ValueError: an empty dotted part, or JSONPath syntax outside the supported subset.
    """
    if not text.startswith("$"):
        parts = text.split(".")
        if "" in parts:
            raise ValueError(
                f"path {text!r} has an empty part; write a.b.0, or $['a.b'] for a key with a dot"
            )
        return tuple(int(p) if _INT.fullmatch(p) else p for p in parts)
    steps: list[Step] = []
    pos = 1
    while pos < len(text):
        match = _STEP.match(text, pos)
        if match is None:
            raise ValueError(
                f"unsupported JSONPath {text!r} at character {pos + 1}: use $.key, $[0] or "
                "$['key'] steps (no wildcards, filters, slices or '..')"
            )
        name, index, single, double = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            quoted = single if single is not None else double
            steps.append(name if quoted is None else re.sub(r"\\(.)", r"\1", quoted))
        pos = match.end()
    return tuple(steps)


def lookup(value: Any, path: tuple[Step, ...]) -> Any:
    """Follow ``path`` into ``value`` (parsed JSON) and return what it leads to.

    Raises:
        PathNotFound: a key or index is missing, or a step meets a value it cannot enter.
    """
    for depth, step in enumerate(path):
        if isinstance(value, dict):
            key = str(step)
            if key not in value:
                shown = ", ".join(repr(k) for k in list(value)[:_KEYS_SHOWN]) or "none"
                more = " …" if len(value) > _KEYS_SHOWN else ""
                raise PathNotFound(depth, f"no key {key!r}; keys there: {shown}{more}")
            value = value[key]
        elif isinstance(value, list) and isinstance(step, int):
            if not -len(value) <= step < len(value):
                raise PathNotFound(depth, f"no index {step}: the list has {len(value)} item(s)")
            value = value[step]
        else:
            raise PathNotFound(depth, f"cannot take {step!r} of {_kind(value)}")
    return value


def render_path(steps: tuple[Step, ...], spec: str) -> str:
    """Write ``steps`` in the notation of ``spec`` (dotted or ``$``): where a lookup stopped."""
    if not spec.startswith("$"):
        return ".".join(str(s) for s in steps)
    parts = [
        f"[{s}]" if isinstance(s, int) else f".{s}" if _NAME.fullmatch(s) else f"[{s!r}]"
        for s in steps
    ]
    return "$" + "".join(parts)


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    return names.get(type(value), "null" if value is None else "a number")
