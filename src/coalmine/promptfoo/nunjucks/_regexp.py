r"""JavaScript regular expressions in templates: ``r/…/g`` literals and the string methods.

Nunjucks reads ``r/\d+/g`` as ``new RegExp("\\d+", "g")``; its ``replace`` filter and the
string methods ``replace``, ``replaceAll``, ``match``, ``search`` and ``split`` take one (and
``match``/``search`` make one of a string). :class:`RegExpValue` is that object, with its
``lastIndex`` and members; :class:`coalmine.promptfoo.jsregex.JsRegExp` matches as V8 does.
Indices are UTF-16 code units, as in JavaScript.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from coalmine.promptfoo.jsregex import JsMatch, JsRegExp
from coalmine.promptfoo.nunjucks._js import UNDEFINED, JsArray, is_undefined, js_string

__all__ = [
    "MatchArray",
    "RegExpValue",
    "all_matches",
    "from_utf16_units",
    "regexp_methods",
    "replace_with",
    "split",
    "utf16_units",
]

_REFERENCE = re.compile(r"\$(\$|&|`|'|[0-9]{1,2}|<[^>]*>)")


def utf16_units(text: str) -> str:
    """``text`` as UTF-16 code units, one Python character each (a surrogate for half of 😀)."""
    if text.isascii():
        return text
    encoded = text.encode("utf-16-le", "surrogatepass")
    return "".join(
        chr(int.from_bytes(encoded[i : i + 2], "little")) for i in range(0, len(encoded), 2)
    )


def from_utf16_units(units: str) -> str:
    if units.isascii():
        return units
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


class MatchArray(JsArray):
    """The array ``exec`` and ``match`` give: the match, its groups, ``index`` and ``input``."""

    def __init__(self, found: JsMatch, text: str) -> None:
        super().__init__(UNDEFINED if g is None else g for g in found.groups)
        named = {k: UNDEFINED if v is None else v for k, v in found.named.items()}
        self.props: dict[str, Any] = {
            "index": found.index,
            "input": text,
            "groups": named or UNDEFINED,
        }


class RegExpValue:
    """``new RegExp(source, flags)`` in a template."""

    def __init__(self, source: object = UNDEFINED, flags: object = UNDEFINED) -> None:
        self.source = "(?:)" if is_undefined(source) or source == "" else js_string(source)
        self.engine = JsRegExp(self.source, "" if is_undefined(flags) else js_string(flags))
        self.flags = self.engine.flags
        self.last_index = 0

    def __str__(self) -> str:
        return f"/{self.source}/{self.flags}"

    @property
    def is_global(self) -> bool:
        return "g" in self.flags

    def find(self, text: str, start: int = 0) -> JsMatch | None:
        """The match from code unit ``start`` (as ``exec`` with ``lastIndex`` = ``start``)."""
        return self.engine.exec(text, start) if start <= len(utf16_units(text)) else None

    def exec(self, text: object) -> MatchArray | None:
        """``RegExp.prototype.exec``: from ``lastIndex`` when global or sticky."""
        subject = js_string(text)
        moving = "g" in self.flags or "y" in self.flags
        found = self.find(subject, self.last_index if moving else 0)
        if moving:
            self.last_index = found.end if found else 0
        return MatchArray(found, subject) if found else None

    def members(self) -> dict[str, Any]:
        """What ``regex.name`` gives in a template."""
        return {
            "source": self.source,
            "flags": self.flags,
            "global": "g" in self.flags,
            "ignoreCase": "i" in self.flags,
            "multiline": "m" in self.flags,
            "sticky": "y" in self.flags,
            "dotAll": "s" in self.flags,
            "unicode": "u" in self.flags,
            "hasIndices": "d" in self.flags,
            "lastIndex": self.last_index,
            "test": lambda text=UNDEFINED, *_: self.exec(text) is not None,
            "exec": lambda text=UNDEFINED, *_: self.exec(text),
            "toString": lambda *_: str(self),
        }


def _all(regexp: RegExpValue, text: str) -> list[JsMatch]:
    """Every match, as a global ``exec`` loop finds them (an empty one steps one further)."""
    found: list[JsMatch] = []
    pos = 0
    while (match := regexp.find(text, pos)) is not None:
        found.append(match)
        pos = match.end + (1 if match.end == match.index else 0)
    return found


def all_matches(regexp: RegExpValue, text: str) -> list[MatchArray]:
    """``matchAll``: every match, each as ``exec`` gives it."""
    return [MatchArray(found, text) for found in _all(regexp, text)]


def _substitute(found: JsMatch, units: str, replacement: str) -> str:
    """``GetSubstitution``: ``$&``, ``$1``, ``$<name>``, ``$``` and ``$'`` in a replacement."""
    groups = found.groups

    def expand(ref: re.Match[str]) -> str:
        token = ref.group(1)
        if token in ("$", "&"):
            return "$" if token == "$" else groups[0] or ""
        if token in ("`", "'"):
            return from_utf16_units(units[: found.index] if token == "`" else units[found.end :])
        if token.startswith("<"):
            return (found.named.get(token[1:-1]) or "") if found.named else ref.group()
        if 1 <= int(token) < len(groups):
            return groups[int(token)] or ""
        if len(token) == 2 and 1 <= int(token[0]) < len(groups):
            return (groups[int(token[0])] or "") + token[1]
        return ref.group()

    return _REFERENCE.sub(expand, replacement)


def replace_with(text: str, regexp: RegExpValue, replacement: object, *, every: bool) -> str:
    """``text.replace(regexp, replacement)`` (``replaceAll`` when ``every``)."""
    if every and not regexp.is_global:
        raise TypeError("replaceAll must be called with a global RegExp")
    template, units = js_string(replacement), utf16_units(text)
    if regexp.is_global:
        regexp.last_index = 0
        matches = _all(regexp, text)
    else:
        first = regexp.find(text, regexp.last_index if "y" in regexp.flags else 0)
        matches = [first] if first else []
    out, pos = [], 0
    for found in matches:
        out.append(from_utf16_units(units[pos : found.index]) + _substitute(found, units, template))
        pos = found.end
    return "".join(out) + from_utf16_units(units[pos:])


def split(text: str, regexp: RegExpValue, limit: int) -> JsArray:
    """``String.prototype.split`` with a regular expression (captures go in the result)."""
    out = JsArray()
    if limit == 0:
        return out
    units = utf16_units(text)
    sticky = RegExpValue(regexp.source, regexp.flags.replace("g", "") + "y")
    if not units:
        return out if sticky.find(text, 0) else JsArray([text])
    p = q = 0
    while q < len(units):
        found = sticky.find(text, q)
        if found is None or found.end == p:
            q += 1
            continue
        out.append(from_utf16_units(units[p:q]))
        if len(out) == limit:
            return out
        p = found.end
        for group in found.groups[1:]:
            out.append(UNDEFINED if group is None else group)
            if len(out) == limit:
                return out
        q = p
    out.append(from_utf16_units(units[p:]))
    return out


def _as_regexp(value: object) -> RegExpValue:
    return value if isinstance(value, RegExpValue) else RegExpValue(value)


def regexp_methods(text: str) -> dict[str, Callable[..., Any]]:
    """The string methods that make a regular expression of a string: ``match``, ``search``."""

    def match(pattern: object = UNDEFINED, *_: object) -> Any:
        regexp = _as_regexp(pattern)
        if not regexp.is_global:
            return MatchArray(found, text) if (found := regexp.find(text)) else None
        found_all = _all(regexp, text)
        regexp.last_index = 0
        return JsArray(m.groups[0] for m in found_all) if found_all else None

    def search(pattern: object = UNDEFINED, *_: object) -> int:
        found = _as_regexp(pattern).find(text)
        return found.index if found else -1

    return {"match": match, "search": search}
