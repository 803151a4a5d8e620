"""``String.prototype``'s methods, as templates call them: ``name.split(",")``, ``s.trim()``.

Nunjucks' ``memberLookup`` hands a template any method of a string, and templates written for
promptfoo call them. All are here but ``matchAll``'s iterator protocol (a loop walks it) and the
locale-specific ones, which follow ``en-US`` (``localeCompare`` sorts punctuation before digits
before letters, then accents, then lower case before upper case, as ICU's root collation does).
Positions count code points (JavaScript counts UTF-16 units; only characters beyond U+FFFF
differ), except ``charCodeAt``/``codePointAt``, which count units.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from typing import Any, Literal, cast

from coalmine.promptfoo.nunjucks._args import (
    RangeError,
    clamp,
    item_at,
    relative,
    slice_bounds,
    to_integer,
)
from coalmine.promptfoo.nunjucks._js import (
    UNDEFINED,
    JsArray,
    is_undefined,
    js_string,
    js_to_number,
    js_trim,
    js_utf16_length,
)
from coalmine.promptfoo.nunjucks._regexp import (
    RegExpValue,
    all_matches,
    from_utf16_units,
    replace_with,
    split,
    utf16_units,
)

__all__ = ["STRING_METHODS", "JsIterator"]


class JsIterator:
    """An iterator (``items.keys()``): a loop walks it; it prints ``[object Array Iterator]``."""

    def __init__(self, items: list[Any], kind: str) -> None:
        self.items, self.kind = items, kind

    def __str__(self) -> str:
        return f"[object {self.kind} Iterator]"


def _replace(text: str, pattern: object, replacement: object, every: bool) -> str:
    if isinstance(pattern, RegExpValue):
        return replace_with(text, pattern, replacement, every=every)
    needle, template = js_string(pattern), js_string(replacement)
    found: list[int] = []
    at = text.find(needle)
    while at != -1:
        found.append(at)
        if not every:
            break
        at = text.find(needle, at + max(len(needle), 1)) if at < len(text) else -1

    def expand(pos: int) -> str:
        parts = {"$": "$", "&": needle, "`": text[:pos], "'": text[pos + len(needle) :]}
        out, i = [], 0
        while i < len(template):
            if template[i] == "$" and template[i + 1 : i + 2] in parts:
                out.append(parts[template[i + 1]])
                i += 2
            else:
                out.append(template[i])
                i += 1
        return "".join(out)

    out, pos = [], 0
    for at in found:
        out.append(text[pos:at] + expand(at))
        pos = at + len(needle)
    return "".join(out) + text[pos:]


def _split(text: str, sep: object = UNDEFINED, limit: object = UNDEFINED) -> JsArray:
    count = 2**32 - 1 if is_undefined(limit) else int(to_integer(limit)) % 2**32
    if isinstance(sep, RegExpValue):
        return split(text, sep, count)
    if count == 0:
        return JsArray()
    if is_undefined(sep):
        return JsArray([text])
    needle = js_string(sep)
    parts = list(text) if needle == "" else text.split(needle)
    return JsArray(parts[:count])


def _pad(text: str, length: object, fill: object, start: bool) -> str:
    filler = " " if is_undefined(fill) else js_string(fill)
    missing = int(min(to_integer(length), 2**32)) - js_utf16_length(text)
    if missing <= 0 or not filler:
        return text
    pad = (filler * (missing // len(filler) + 1))[:missing]
    return pad + text if start else text + pad


def _index_of(text: str, search: object = UNDEFINED, position: object = UNDEFINED) -> int:
    return text.find(js_string(search), clamp(to_integer(position), 0, len(text)))


def _last_index_of(text: str, search: object = UNDEFINED, position: object = UNDEFINED) -> int:
    needle, number = js_string(search), js_to_number(position)
    start = len(text) if math.isnan(number) else clamp(to_integer(position), 0, len(text))
    return text.rfind(needle, 0, start + len(needle))


def _substring(text: str, start: object = UNDEFINED, end: object = UNDEFINED) -> str:
    a = clamp(to_integer(start), 0, len(text))
    b = clamp(to_integer(end, len(text)), 0, len(text))
    return text[min(a, b) : max(a, b)]


def _substr(text: str, start: object = UNDEFINED, length: object = UNDEFINED) -> str:
    begin = relative(start, len(text), 0)
    size = clamp(to_integer(length, len(text)), 0, len(text) - begin)
    return text[begin : begin + size]


def _repeat(text: str, count: object = UNDEFINED) -> str:
    number = to_integer(count)
    if number < 0 or math.isinf(number):
        raise RangeError(f"Invalid count value: {js_string(js_to_number(count))}")
    return text * int(number)


def _char_code_at(text: str, index: object = UNDEFINED) -> float:
    units, i = utf16_units(text), to_integer(index)
    return ord(units[int(i)]) if 0 <= i < len(units) else math.nan


def _code_point_at(text: str, index: object = UNDEFINED) -> Any:
    units, i = utf16_units(text), to_integer(index)
    if not 0 <= i < len(units):
        return UNDEFINED
    return ord(from_utf16_units(units[int(i) : int(i) + 2])[0])


def _normalize(text: str, form: object = UNDEFINED) -> str:
    name = "NFC" if is_undefined(form) else js_string(form)
    if name not in ("NFC", "NFD", "NFKC", "NFKD"):
        raise RangeError("The normalization form should be one of NFC, NFD, NFKC, NFKD.")
    return unicodedata.normalize(cast(Literal["NFC", "NFD", "NFKC", "NFKD"], name), text)


def _match_all(text: str, pattern: object = UNDEFINED) -> JsIterator:
    regexp = pattern if isinstance(pattern, RegExpValue) else RegExpValue(pattern, "g")
    if not regexp.is_global:
        raise TypeError("String.prototype.matchAll called with a non-global RegExp argument")
    return JsIterator(list(all_matches(regexp, text)), "RegExp String")


def _collation_key(text: str) -> tuple[list[tuple[int, str]], list[str], list[int]]:
    """ICU's root collation, roughly: punctuation, digits, letters; then accents; then case."""
    primary, accents, case = [], [], []
    for char in text:
        decomposed = unicodedata.normalize("NFD", char)
        base = decomposed[0].lower()
        kind = 2 if base.isalpha() else 1 if base.isdigit() else 0
        primary.append((kind, base))
        accents.append(decomposed[1:])
        case.append(0 if decomposed[0] == base else 1)
    return primary, accents, case


def _locale_compare(text: str, other: object = UNDEFINED) -> int:
    mine, theirs = _collation_key(text), _collation_key(js_string(other))
    return (mine > theirs) - (mine < theirs)


def _html(tag: str, attribute: str = "") -> Callable[..., str]:
    def method(text: str, value: object = UNDEFINED) -> str:
        attr = f' {attribute}="{js_string(value).replace(chr(34), "&quot;")}"' if attribute else ""
        return f"<{tag}{attr}>{text}</{tag}>"

    return method


STRING_METHODS: dict[str, Callable[..., Any]] = {
    "at": item_at,
    "charAt": lambda t, i=UNDEFINED: (
        "" if is_undefined(c := item_at(t, i)) or to_integer(i) < 0 else c
    ),
    "charCodeAt": _char_code_at,
    "codePointAt": _code_point_at,
    "concat": lambda t, *parts: t + "".join(js_string(p) for p in parts),
    "endsWith": lambda t, s=UNDEFINED, end=UNDEFINED: t[
        : clamp(to_integer(end, len(t)), 0, len(t))
    ].endswith(js_string(s)),
    "includes": lambda t, s=UNDEFINED, pos=UNDEFINED: _index_of(t, s, pos) != -1,
    "indexOf": _index_of,
    "isWellFormed": lambda t: not any("\ud800" <= c <= "\udfff" for c in t),
    "lastIndexOf": _last_index_of,
    "localeCompare": _locale_compare,
    "matchAll": _match_all,
    "normalize": _normalize,
    "padEnd": lambda t, n=UNDEFINED, fill=UNDEFINED: _pad(t, n, fill, False),
    "padStart": lambda t, n=UNDEFINED, fill=UNDEFINED: _pad(t, n, fill, True),
    "repeat": _repeat,
    "replace": lambda t, s=UNDEFINED, r=UNDEFINED: _replace(t, s, r, False),
    "replaceAll": lambda t, s=UNDEFINED, r=UNDEFINED: _replace(t, s, r, True),
    "slice": lambda t, a=UNDEFINED, b=UNDEFINED: t[slice(*slice_bounds(len(t), a, b))],
    "split": _split,
    "startsWith": lambda t, s=UNDEFINED, pos=UNDEFINED: t.startswith(
        js_string(s), clamp(to_integer(pos), 0, len(t))
    ),
    "substr": _substr,
    "substring": _substring,
    "toLocaleLowerCase": lambda t: t.lower(),
    "toLocaleUpperCase": lambda t: t.upper(),
    "toLowerCase": lambda t: t.lower(),
    "toString": lambda t: str.__str__(t),
    "toUpperCase": lambda t: t.upper(),
    "toWellFormed": lambda t: "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in t),
    "trim": lambda t: js_trim(t),
    "trimEnd": lambda t: js_trim("x" + t)[1:],
    "trimLeft": lambda t: js_trim(t + "x")[:-1],
    "trimRight": lambda t: js_trim("x" + t)[1:],
    "trimStart": lambda t: js_trim(t + "x")[:-1],
    "valueOf": lambda t: str.__str__(t),
    "anchor": _html("a", "name"),
    "big": _html("big"),
    "blink": _html("blink"),
    "bold": _html("b"),
    "fixed": _html("tt"),
    "fontcolor": _html("font", "color"),
    "fontsize": _html("font", "size"),
    "italics": _html("i"),
    "link": _html("a", "href"),
    "small": _html("small"),
    "strike": _html("strike"),
    "sub": _html("sub"),
    "sup": _html("sup"),
}
