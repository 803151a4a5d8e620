"""``JSON.stringify`` and ``JSON.parse`` as JavaScript does them (``dump``, ``load``, prompts).

``JSON.stringify`` writes ``{"a":1}`` with no spaces unless indented, numbers as JavaScript
prints them (``1.0`` is ``1``), ``NaN`` as ``null``, drops ``undefined`` object members and
escapes lone surrogates. ``JSON.parse`` rejects ``NaN`` and ``Infinity`` and reads integers past
2**53 as doubles, as JavaScript does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from coalmine.promptfoo.nunjucks._js import (
    SafeStr,
    js_key,
    js_number,
    js_string,
    js_type,
    js_utf16_length,
    to_js,
)

__all__ = ["js_json_parse", "js_json_stringify"]

_MAX_SAFE = 2**53
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')


def _quote(text: str) -> str:
    def escape(match: re.Match[str]) -> str:
        ch = match.group()
        return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"

    # Lone surrogates are escaped (well-formed JSON.stringify); pairs pass through.
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return '"' + _NEEDS_ESCAPE.sub(escape, text) + '"'


def _gap(space: object) -> str:
    if isinstance(space, bool):
        return ""
    if isinstance(space, int | float):
        count = 0 if math.isnan(space) else int(min(10, space))
        return " " * count if count >= 1 else ""
    if isinstance(space, str):
        return space[:10]
    return ""


def js_json_stringify(value: object, space: object = None) -> str | None:
    """``JSON.stringify(value, null, space)``; ``None`` where JavaScript returns ``undefined``."""
    gap = _gap(space)

    def encode(item: object, indent: str) -> str | None:
        kind = js_type(item)
        if kind in ("undefined", "function"):
            return None
        if kind == "null":
            return "null"
        if kind == "boolean":
            return "true" if item else "false"
        if kind == "number":
            number = float(item) if isinstance(item, int) and abs(item) > _MAX_SAFE else item
            assert isinstance(number, int | float)
            return js_number(number) if math.isfinite(number) else "null"
        if isinstance(item, SafeStr):  # a SafeString object: its own properties
            item = {"val": str.__str__(item), "length": js_utf16_length(item)}
        elif isinstance(item, str):
            return _quote(item)
        inner = indent + gap
        if isinstance(item, list | tuple):
            parts = [encode(x, inner) or "null" for x in item]
            opening, closing = "[", "]"
        elif isinstance(item, Mapping):
            parts = []
            for key, val in item.items():
                encoded = encode(val, inner)
                if encoded is not None:
                    parts.append(_quote(js_key(key)) + (": " if gap else ":") + encoded)
            opening, closing = "{", "}"
        else:
            return "{}"
        if not parts:
            return opening + closing
        if not gap:
            return opening + ",".join(parts) + closing
        return f"{opening}\n{inner}" + f",\n{inner}".join(parts) + f"\n{indent}{closing}"

    return encode(value, "")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Unexpected token '{name[0]}', \"{name}\" is not valid JSON")


def _parse_int(text: str) -> Any:
    number = int(text)
    return number if abs(number) <= _MAX_SAFE else float(text)


def js_json_parse(text: object) -> Any:
    """``JSON.parse(text)``: the argument is first made a string, as JavaScript does."""
    source = js_string(text)
    try:
        parsed = json.loads(source, parse_constant=_reject_constant, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise ValueError(f"JSON.parse: {exc.msg} at position {exc.pos}") from None
    return to_js(parsed)
