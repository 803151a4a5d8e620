"""JavaScript value semantics for the Nunjucks templates of promptfoo configs.

promptfoo renders templates with Nunjucks, which runs in JavaScript: a printed list reads
``a,b``, ``true`` is lowercase, ``1.0`` prints ``1``, ``"1" == 1`` holds, ``[]`` is truthy and
``"2" + 1`` is ``"21"``. This module gives Python values those meanings: :class:`JsObject` and
:class:`JsArray` wrap mappings and lists (so a Python truthiness test and ``str()`` answer as
JavaScript would), and the ``js_*`` functions implement the few abstract operations of the
ECMAScript specification the templates reach (ToString, ToNumber, ``+``, ``==``, ``<``); the
JSON functions are in :mod:`coalmine.promptfoo.nunjucks._json`. The helpers at the end
(:func:`normalize`, :func:`strict_member` …) are the small pieces of Nunjucks' ``lib`` the
filters share.

A Jinja2 ``Undefined`` stands for JavaScript's ``undefined`` and ``None`` for ``null``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from jinja2 import Undefined

__all__ = [
    "JS_SPACE",
    "UNDEFINED",
    "JsArray",
    "JsObject",
    "SafeStr",
    "as_text",
    "copy_safeness",
    "is_nullish",
    "is_undefined",
    "js_add",
    "js_arith",
    "js_join",
    "js_key",
    "js_key_order",
    "js_loose_equal",
    "js_number",
    "js_object",
    "js_relation",
    "js_strict_equal",
    "js_string",
    "js_to_fixed",
    "js_to_number",
    "js_trim",
    "js_truthy",
    "js_type",
    "js_utf16_length",
    "normalize",
    "normalize_number",
    "repeat_count",
    "strict_member",
    "to_js",
]

_MAX_SAFE = 2**53
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_RADIX = {"0x": 16, "0X": 16, "0o": 8, "0O": 8, "0b": 2, "0B": 2}
UNDEFINED = Undefined()
_TRIM = re.compile(f"^[{JS_SPACE}]*|[{JS_SPACE}]*$")


class JsObject(dict[str, Any]):
    """A JavaScript plain object: string keys in JavaScript's order, always truthy."""

    def __bool__(self) -> bool:
        return True

    def __str__(self) -> str:
        return "[object Object]"


class JsArray(list[Any]):
    """A JavaScript array: always truthy, prints as its items joined by commas."""

    def __bool__(self) -> bool:
        return True

    def __str__(self) -> str:
        return js_join(self, ",")


class SafeStr(str):
    """Nunjucks' ``SafeString``: a string marked safe, which (being an object) is always truthy."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return True


def js_key(key: object) -> str:
    """The property key JavaScript makes of ``key`` (its ToString)."""
    return key if isinstance(key, str) else js_string(key)


def js_key_order(keys: Iterable[str]) -> list[str]:
    """JavaScript's own-property order: array indices ascending, then the rest as inserted."""
    keys = list(keys)
    indices = [k for k in keys if _ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1]
    if not indices:
        return keys
    rest = [k for k in keys if k not in set(indices)]
    return sorted(indices, key=int) + rest


def js_object(items: Mapping[str, Any]) -> JsObject:
    """A :class:`JsObject` of ``items`` (already JavaScript values), keys in JavaScript's order."""
    return JsObject((key, items[key]) for key in js_key_order(items))


def to_js(value: Any, _memo: dict[int, Any] | None = None) -> Any:
    """Convert mappings and lists (recursively) to :class:`JsObject` and :class:`JsArray`."""
    if isinstance(value, str | int | float | Undefined | JsObject | JsArray) or value is None:
        return value
    memo = {} if _memo is None else _memo
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, Mapping):
        obj = JsObject()
        memo[id(value)] = obj
        items = {js_key(k): v for k, v in value.items()}
        for key in js_key_order(items):
            obj[key] = to_js(items[key], memo)
        return obj
    if isinstance(value, list | tuple):
        arr = JsArray()
        memo[id(value)] = arr
        arr.extend(to_js(item, memo) for item in value)
        return arr
    return value


def js_type(value: object) -> str:
    """JavaScript's ``typeof``, with ``null`` for ``None``."""
    if isinstance(value, Undefined):
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, SafeStr):
        return "object"
    if isinstance(value, str):
        return "string"
    if callable(value) and not isinstance(value, Mapping | list):
        return "function"
    return "object"


def is_undefined(value: object) -> bool:
    return isinstance(value, Undefined)


def is_nullish(value: object) -> bool:
    return value is None or isinstance(value, Undefined)


def js_number(value: float) -> str:
    """Format a number as JavaScript's ``String(number)`` does (``1.0`` → ``1``, ``1e-7``)."""
    if isinstance(value, int):
        if abs(value) <= _MAX_SAFE:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    e = point - 1
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{head}e{'+' if e >= 0 else '-'}{abs(e)}"


def js_to_fixed(value: float, digits: int) -> str:
    """``Number.prototype.toFixed``: ties round away from zero (``0.125`` → ``0.13``)."""
    if math.isnan(value):
        return "NaN"
    if abs(value) >= 1e21 or math.isinf(value):
        return js_number(value)
    exact = Decimal(0.0 if value == 0 else value)
    return str(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def js_join(items: Iterable[Any], sep: str) -> str:
    """``Array.prototype.join``: ``null`` and ``undefined`` items become empty."""
    return sep.join(
        "" if item is None or isinstance(item, Undefined) else js_string(item) for item in items
    )


def js_string(value: object) -> str:
    """JavaScript's ``String(value)``."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, Undefined):
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, list | tuple):
        return js_join(value, ",")
    if isinstance(value, Mapping):
        return "[object Object]"
    if type(value).__str__ is not object.__str__:  # a value that prints itself (a RegExp)
        return str(value)
    if callable(value):  # a function prints its source in JavaScript; ours have none to show
        name = getattr(value, "__name__", "")
        return f"function {name if name.isidentifier() else ''}() {{ [native code] }}"
    return "[object Object]"


def js_utf16_length(text: str) -> int:
    """A string's ``length`` in JavaScript: UTF-16 code units."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def js_truthy(value: object) -> bool:
    """JavaScript truthiness: ``[]``, ``{}`` and ``"0"`` are true; ``NaN`` is false."""
    if isinstance(value, Undefined) or value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return not (value == 0 or math.isnan(value))
    if isinstance(value, SafeStr):
        return True
    if isinstance(value, str):
        return value != ""
    return True


def _to_primitive(value: object) -> object:
    """ToPrimitive: objects and arrays become their string, everything else stays."""
    if js_type(value) in ("object", "function"):
        return js_string(value)
    return value


def _string_to_number(text: str) -> float:
    """ToNumber of a string (the StringNumericLiteral grammar)."""
    text = re.sub(f"^[{JS_SPACE}]+|[{JS_SPACE}]+$", "", text)
    if not text:
        return 0
    base = _RADIX.get(text[:2])
    if base is not None:
        try:
            return int(text[2:], base) if re.fullmatch(r"[0-9a-fA-F]+", text[2:]) else math.nan
        except ValueError:
            return math.nan
    if not _DECIMAL.fullmatch(text):
        return math.nan
    return float(text.replace("Infinity", "inf"))


def js_to_number(value: object) -> float:
    """JavaScript's ``Number(value)``."""
    value = _to_primitive(value)
    if isinstance(value, Undefined):
        return math.nan
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return _string_to_number(value)
    return math.nan


def normalize_number(value: float) -> float:
    """Give an integral float back as an int, so it indexes lists and prints plainly.

    ``-0`` stays a float: it prints ``0``, but ``1 / -0`` is ``-Infinity``.
    """
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_SAFE:
        return int(value) if value or math.copysign(1.0, value) > 0 else value
    return value


def js_add(left: object, right: object) -> object:
    """JavaScript's ``+``: string concatenation when either side is (or becomes) a string."""
    left, right = _to_primitive(left), _to_primitive(right)
    if isinstance(left, str) or isinstance(right, str):
        return js_string(left) + js_string(right)
    return normalize_number(float(js_to_number(left)) + float(js_to_number(right)))


def _divide(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _remainder(a: float, b: float) -> float:
    if b == 0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    if math.isinf(b):
        return a
    return math.fmod(a, b)


def _power(a: float, b: float) -> float:
    if math.isnan(b) or (abs(a) == 1 and math.isinf(b)):
        return math.nan
    if b == 0:
        return 1.0
    try:
        return math.pow(a, b)
    except OverflowError:
        return math.inf if a > 0 or float(b).is_integer() and b % 2 == 0 else -math.inf
    except (ValueError, ZeroDivisionError):
        return math.nan if a < 0 else math.inf


def _floor(value: float) -> float:
    return math.floor(value) if math.isfinite(value) else value


_ARITH: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _divide,
    "%": _remainder,
    "**": _power,
    "//": lambda a, b: _floor(_divide(a, b)),
}


def js_arith(op: str, left: object, right: object) -> float:
    """``+ - * / % **`` on numbers, and Nunjucks' ``//`` (``Math.floor(a / b)``)."""
    a, b = float(js_to_number(left)), float(js_to_number(right))
    return normalize_number(_ARITH[op](a, b))


def js_strict_equal(left: object, right: object) -> bool:
    """JavaScript's ``===``."""
    kind = js_type(left)
    if kind != js_type(right):
        return False
    if kind in ("undefined", "null"):
        return True
    if kind in ("number", "string", "boolean"):
        return bool(left == right)
    return left is right


def js_loose_equal(left: object, right: object) -> bool:
    """JavaScript's ``==`` (the Abstract Equality Comparison)."""
    lk, rk = js_type(left), js_type(right)
    if lk == rk:
        return js_strict_equal(left, right)
    nullish = ("undefined", "null")
    if lk in nullish or rk in nullish:
        return lk in nullish and rk in nullish
    if lk == "boolean" or rk == "boolean":
        left = js_to_number(left) if lk == "boolean" else left
        right = js_to_number(right) if rk == "boolean" else right
        return js_loose_equal(left, right)
    if lk in ("object", "function") or rk in ("object", "function"):
        return js_loose_equal(_to_primitive(left), _to_primitive(right))
    return js_to_number(left) == js_to_number(right)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def js_relation(op: str, left: object, right: object) -> bool:
    """JavaScript's ``<``, ``<=``, ``>`` and ``>=``."""
    left, right = _to_primitive(left), _to_primitive(right)
    a: Any
    b: Any
    if isinstance(left, str) and isinstance(right, str):
        a, b = _utf16(left), _utf16(right)
    else:
        a, b = js_to_number(left), js_to_number(right)
        if math.isnan(a) or math.isnan(b):
            return False
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def js_trim(text: str) -> str:
    """Strip JavaScript whitespace from both ends."""
    return _TRIM.sub("", text)


def normalize(value: object, default: object) -> Any:
    """Nunjucks' ``normalize``: ``null``, ``undefined`` and ``false`` become ``default``."""
    return default if is_nullish(value) or value is False else value


def as_text(value: object, method: str) -> str:
    """``value`` as a string for a string method; JavaScript throws for anything else."""
    if isinstance(value, str):
        return value
    if is_nullish(value):
        raise TypeError(f"Cannot read properties of {js_string(value)} (reading '{method}')")
    raise TypeError(f"{js_string(value)}.{method} is not a function")


def copy_safeness(source: object, result: str) -> str:
    """Nunjucks' ``copySafeness``: keep a ``SafeString`` safe."""
    return SafeStr(result) if isinstance(source, SafeStr) else result


def repeat_count(value: object) -> int:
    """A repeat count as JavaScript's ``for (i = 0; i < n; i++)`` sees it."""
    number = js_to_number(value)
    return max(0, math.ceil(number)) if math.isfinite(number) else 0


def strict_member(obj: object, key: object) -> Any:
    """``obj[key]`` where ``obj`` must not be ``null`` or ``undefined`` (JavaScript throws)."""
    if is_nullish(obj):
        raise TypeError(f"Cannot read properties of {js_string(obj)} (reading '{js_string(key)}')")
    name = js_string(key)
    if isinstance(obj, Mapping):
        return obj.get(name, UNDEFINED)
    if isinstance(obj, list | str) and re.fullmatch(r"0|[1-9][0-9]*", name):
        index = int(name)
        return obj[index] if index < len(obj) else UNDEFINED
    if isinstance(obj, list | str) and name == "length":
        return js_utf16_length(obj) if isinstance(obj, str) else len(obj)
    return UNDEFINED
