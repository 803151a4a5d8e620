"""How JavaScript's built-in functions read their arguments (for the methods and filters).

``ToIntegerOrInfinity`` (``undefined`` and ``NaN`` are 0, ``2.7`` is 2), relative start and end
positions (negative counts from the end), and calling a Python function as JavaScript calls a
function: extra arguments dropped, missing ones ``undefined``.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

from coalmine.promptfoo.nunjucks._js import UNDEFINED, is_undefined, js_to_number

__all__ = [
    "RangeError",
    "clamp",
    "item_at",
    "javascript_arity",
    "relative",
    "slice_bounds",
    "to_integer",
]


class RangeError(ValueError):
    """JavaScript's ``RangeError``."""


def javascript_arity(function: Callable[..., Any]) -> Callable[..., Any]:
    """Call ``function`` as JavaScript does: extra arguments dropped, missing ones ``undefined``.

    A missing argument gets the parameter's default when it has one (meaning the same).
    """
    params = list(inspect.signature(function).parameters.values())
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return function
    padding = [UNDEFINED if p.default is inspect.Parameter.empty else p.default for p in params]

    @functools.wraps(function)
    def call(*args: object) -> Any:
        return function(*args[: len(params)], *padding[len(args) :])

    return call


def to_integer(value: object, default: float = 0) -> float:
    """``ToIntegerOrInfinity`` (``undefined`` gives ``default``)."""
    if is_undefined(value):
        return default
    number = js_to_number(value)
    if math.isnan(number):
        return 0
    return number if math.isinf(number) else math.trunc(number)


def clamp(value: float, low: int, high: int) -> int:
    return int(min(max(value, low), high))


def relative(value: object, size: int, default: float) -> int:
    """A start or end argument: negative counts from the end, clamped to ``[0, size]``."""
    index = to_integer(value, default)
    return clamp(size + index if index < 0 else index, 0, size)


def slice_bounds(size: int, start: object, end: object) -> tuple[int, int]:
    """``slice``'s arguments: negatives count from the end."""
    return relative(start, size, 0), relative(end, size, size)


def item_at(items: str | list[Any], index: object) -> Any:
    i = to_integer(index)
    i = i + len(items) if i < 0 else i
    return items[int(i)] if 0 <= i < len(items) else UNDEFINED
