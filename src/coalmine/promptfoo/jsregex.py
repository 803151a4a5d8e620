r"""JavaScript regular expressions, compiled and matched as V8 (Node.js 20) does, with ``re``.

promptfoo's ``regex`` assertion is ``new RegExp(value).test(output)``: JavaScript's syntax and
meaning, without flags. :class:`JsRegExp` is that ``RegExp``:

- it refuses what V8 refuses, with V8's message (:mod:`coalmine.promptfoo._jsregex_parse`):
  Python's inline flags ``(?i)``, ``(?P<n>…)``, ``(?#…)``, possessive ``a++``, atomic
  ``(?>…)`` … are errors there, while ``\Z``, ``\A`` or ``\e`` are just ``Z``, ``A``, ``e``;
- it matches on UTF-16 code units, as JavaScript strings are: without ``u`` an astral
  character (😀) is two of them, so ``^.$`` does not match it, ``^..$`` does and ``.`` matches
  its first half. The text is searched as a Python string of code units (a lone surrogate is
  a Python character) and a match's indices are code units, as JavaScript reports them; with
  ``u``, the characters are code points (indices still code units);
- the pattern is written in Python's terms with JavaScript's meaning
  (:mod:`coalmine.promptfoo._jsregex_emit`): ASCII ``\d``, ``\w`` and ``\b``, JavaScript's
  ``\s``, ``.`` and ``$``, back-references to groups that have not matched, lookbehinds of
  varying width, the flags ``d g i m s u y``.

:class:`JsUnsupported` is what V8 accepts and Python's ``re`` cannot be made to match: a
lookbehind of unbounded width (``(?<=a+)``), a back-reference inside a lookbehind, ``\p{…}``
and the ``v`` flag. Rare differences are listed in :mod:`coalmine.promptfoo._jsregex_emit`;
with ``u``, V8 also tries positions inside a surrogate pair for a pattern that begins with an
assertion (``\B`` matches inside 😀), and not for one that is only characters; here, never.

:func:`javascript_pattern` goes the other way: a Python pattern (coalmine's ``regex`` grader)
in JavaScript's syntax, for export.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from coalmine.promptfoo._jsregex_emit import Emitter
from coalmine.promptfoo._jsregex_parse import parse
from coalmine.promptfoo._jsregex_tree import JsSyntaxError, JsUnsupported

__all__ = ["JsMatch", "JsRegExp", "JsSyntaxError", "JsUnsupported", "javascript_pattern"]

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_FLAGS = frozenset("dgimsuvy")


@dataclass(frozen=True)
class JsMatch:
    """A match, as ``RegExp.prototype.exec`` gives it."""

    index: int
    """Where it starts, in UTF-16 code units (``match.index``)."""
    end: int
    """Where it ends, in code units (the ``lastIndex`` after it, with ``g`` or ``y``)."""
    groups: tuple[str | None, ...]
    """``match[0]``, ``match[1]`` …: ``None`` for ``undefined``; half of an astral character
    is a lone surrogate, as in JavaScript."""
    named: Mapping[str, str | None]
    """``match.groups``."""


class JsRegExp:
    """``new RegExp(source, flags)``.

    Raises:
        JsSyntaxError: V8 refuses the pattern or the flags (the message is V8's).
        JsUnsupported: V8 accepts it; Python's ``re`` cannot be made to match it (it says why).
    """

    def __init__(self, source: str, flags: str = "") -> None:
        if len(set(flags)) < len(flags) or set(flags) - _FLAGS or {"u", "v"} <= set(flags):
            raise JsSyntaxError(f"Invalid flags supplied to RegExp constructor '{flags}'")
        if "v" in flags:
            raise JsUnsupported("the v flag (Unicode sets)")
        self.source = source
        self.flags = "".join(sorted(flags))
        self.unicode = "u" in flags
        pattern = _joined(_units(source)) if self.unicode else _units(source)
        try:
            self._parsed = parse(pattern, flags=self.flags, shown=f"/{source}/{self.flags}")
            fast = Emitter(self._parsed, flags=self.flags, exact=False)
            self.python = _compile(fast.emit(self._parsed.tree))
            self._exact = self.python
            if fast.loops:
                exact = Emitter(self._parsed, flags=self.flags, exact=True)
                self._exact = _compile(exact.emit(self._parsed.tree))
        except RecursionError:
            raise JsUnsupported("a pattern nested this deeply") from None
        self._reads_captures = bool(fast.referenced)

    def exec(self, text: str, last_index: int = 0) -> JsMatch | None:
        """What ``exec`` gives; ``last_index`` counts only with ``g`` or ``y``, as there."""
        start = last_index if "g" in self.flags or "y" in self.flags else 0
        found = self._find(_units(text), start, spans=True)
        if found is None:
            return None
        count = self._parsed.groups
        groups = [found.group(0)] + [_capture(found, i) for i in range(1, count + 1)]
        index, end = found.start(), found.end()
        if self.unicode:
            index, end = _unit_index(found.string, index), _unit_index(found.string, end)
        else:
            groups = [None if g is None else _joined(g) for g in groups]
        named = {name: groups[i] for name, i in self._parsed.names.items()}
        return JsMatch(index, end, tuple(groups), named)

    def test(self, text: str) -> bool:
        """What ``test`` gives on a new ``RegExp``: whether ``text`` matches (from 0)."""
        return self._find(_units(text), 0, spans=False) is not None

    def _find(self, units: str, start: int, *, spans: bool) -> re.Match[str] | None:
        """The match from code unit ``start``.

        :attr:`python` finds what JavaScript finds and where it starts; the exact pattern
        (slower: see :mod:`coalmine.promptfoo._jsregex_emit`) is asked for the spans, and
        for everything when a back-reference reads the captures.
        """
        if start > len(units):
            return None
        subject, start = _points(units, start) if self.unicode else (units, start)
        pattern = self._exact if self._reads_captures else self.python
        found = (pattern.match if "y" in self.flags else pattern.search)(subject, start)
        if found is None or not spans or pattern is self._exact:
            return found
        return self._exact.match(subject, found.start()) or found


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:  # a gap in the translation
        raise JsUnsupported(f"this pattern (Python's re: {exc})") from None


def _capture(found: re.Match[str], index: int) -> str | None:
    """Capture ``index``: its last copy set (``g1``, ``g1_1`` …: ``Emitter.aliases``).

    A capture inside a lookbehind split by width has no name: ``None``.
    """
    names = found.re.groupindex
    copies = [f"g{index}"] + [f"g{index}_{k}" for k in range(1, len(names))]
    for name in reversed([c for c in copies if c in names]):
        if found.group(name) is not None:
            return found.group(name)
    return None


def _units(text: str) -> str:
    """``text`` as JavaScript holds it: UTF-16 code units, each a Python character."""
    if text.isascii():
        return text
    return _ASTRAL.sub(lambda m: _pair(ord(m.group())), text)


def _pair(point: int) -> str:
    point -= 0x10000
    return chr(0xD800 + (point >> 10)) + chr(0xDC00 + (point & 0x3FF))


def _joined(units: str) -> str:
    """Code units as a Python string: each surrogate pair one character, a lone half kept."""
    if units.isascii():
        return units
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _unit_index(points: str, index: int) -> int:
    """The code unit where code point ``index`` of ``points`` starts."""
    return index + len(_ASTRAL.findall(points, 0, index))


def _points(units: str, start: int) -> tuple[str, int]:
    """``units`` as code points, and the one that holds code unit ``start``.

    Inside a pair, V8 steps back to the pair's start (but for a pattern that is only
    characters, which it searches for as a string: a rare difference).
    """
    points = _joined(units)
    if start >= len(units):
        return points, len(points)
    return points, len(_joined(units[: start + 1])) - 1


# --- the other way: Python patterns for promptfoo -----------------------------------------------

_UNICODE_CLASSES = ("\\d", "\\D", "\\w", "\\W", "\\b", "\\B", "\\s", "\\S")


def javascript_pattern(python: str) -> tuple[str, list[str]]:
    r"""A Python pattern (coalmine's ``regex`` grader) as a JavaScript one, and what differs.

    ``$`` (the end, or before a final newline) becomes ``(?=\n?$)``, ``\Z`` and ``\A`` become
    ``$`` and ``^``, ``.`` becomes ``[^\n]``, and named groups take JavaScript's syntax. What
    cannot be said without flags is kept and listed: ``\d``, ``\w``, ``\b`` and ``\s`` are
    Unicode-wide in Python and ASCII (or JavaScript's white space) in JavaScript, which matters
    only for text beyond ASCII.
    """
    out: list[str] = []
    notes: list[str] = []
    i, n = 0, len(python)
    in_class = False
    while i < n:
        char = python[i]
        if char == "\\" and i + 1 < n:
            pair = python[i : i + 2]
            i += 2
            if not in_class and pair == "\\Z":
                out.append("$")
            elif not in_class and pair == "\\A":
                out.append("^")
            else:
                if pair in _UNICODE_CLASSES and pair not in notes:
                    notes.append(pair)
                out.append(pair)
            continue
        if in_class:
            if char == "]" and out[-1] in ("[", "[^"):
                char = "\\]"  # first in a Python class, a literal; JavaScript would end it
            elif char == "]":
                in_class = False
            out.append(char)
            i += 1
            continue
        if char == "[":
            opening = "[^" if python.startswith("[^", i) else "["
            out.append(opening)
            in_class = True
            i += len(opening)
            continue
        if python.startswith("(?P<", i):
            out.append("(?<")
            i += 4
            continue
        if python.startswith("(?P=", i) and ")" in python[i:]:
            end = python.index(")", i)
            out.append(f"\\k<{python[i + 4 : end]}>")
            i = end + 1
            continue
        out.append({"$": "(?=\\n?$)", ".": "[^\\n]"}.get(char, char))
        i += 1
    shown = [f"{' '.join(notes)} match beyond ASCII in Python only"] if notes else []
    return "".join(out), shown
