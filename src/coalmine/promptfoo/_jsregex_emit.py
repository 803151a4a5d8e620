r"""A parsed JavaScript pattern written as a Python pattern that matches as V8 does.

The Python pattern is matched against the text's UTF-16 code units (each a Python character;
code points with ``u``), so a class or a ``.`` is one code unit, as in JavaScript. Each
construct is written out, without Python's flags or its Unicode-wide ``\d``, ``\w``, ``\s``:

- a class is its exact set of characters (``[^]`` all of them, ``[]`` none); ``.`` all but
  ``\n``, ``\r``, U+2028 and U+2029 (all with ``s``); ``\b`` tests ASCII word characters;
- ``^`` and ``$`` are the input's ends (with ``m``, also at any of those line ends);
- with ``i``, each character stands for all those equal to it under JavaScript's
  ``Canonicalize``: ``toUpperCase``, never from beyond ASCII into it (ſ is not s); with ``u``,
  simple case folding (Python's ``casefold`` where that gives one character, else ``lower``);
- a back-reference to a group that has not matched (``(a)?\1``, or one not yet closed: ``\1(a)``
  or ``(a\1)``) matches the empty string;
- a lookbehind that varies in width (``(?<=^|\s)``, ``(?<=https?://)``) becomes fixed-width ones
  (Python's ``re`` takes no other); one of unbounded width is :class:`JsUnsupported`;
- past its minimum, a repetition of an atom that can match nothing must match something
  (JavaScript fails such a repetition, Python's ``re`` ends the loop there): with
  ``exact=True`` only, since that changes spans but not which texts match (unless a
  back-reference reads the captures) and costs a scan of the rest of the text per repetition.

Known differences: JavaScript clears the captures inside a repeated group at each repetition
(``(?:(a)|b)+`` leaves group 1 unset after ``ab``), Python keeps the last value; a capture
inside a lookbehind split by width is not reported; with ``i`` a back-reference compares as
Python's ``re`` does.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterator
from typing import TypeVar

from coalmine.promptfoo._jsregex_tree import (
    LINE_ENDS,
    Alt,
    Backref,
    Chars,
    Edge,
    Group,
    JsUnsupported,
    Look,
    Node,
    Parsed,
    Ranges,
    Repeat,
    Seq,
    complement,
    normalize,
    word_characters,
)

__all__ = ["Emitter"]

_T = TypeVar("_T")

_MAX_VARIANTS = 64
"""How many fixed-width lookbehinds one of varying width may become."""
_MAX_EMPTY_REPEATS = 100_000
"""Repeating an atom that can match nothing more often than this means the same (and hangs)."""


class Emitter:
    """Write one parsed pattern in Python's syntax: :meth:`emit`."""

    def __init__(self, parsed: Parsed, *, flags: str, exact: bool) -> None:
        self.parsed = parsed
        self.exact = exact
        self.unicode = "u" in flags
        self.ignore_case = "i" in flags
        self.multiline = "m" in flags
        self.top = 0x10FFFF if self.unicode else 0xFFFF
        self.word = self.char_set(word_characters(flags))
        self.referenced = frozenset(parsed.target(r) for r in _nodes(parsed.tree, Backref))
        """The groups a back-reference refers to."""
        self.aliases: dict[int, list[str]] = {}
        """Each capture's Python names: ``g1``, and ``g1_1`` … for the copies :meth:`repeat`
        makes; the last one set holds the value."""
        self.loops = 0
        """How many repetitions :meth:`repeat` rewrites (or would, with ``exact``)."""

    def emit(self, node: Node, *, behind: bool = False, plain: bool = False) -> str:
        """``node`` in Python's syntax (``behind``: in a lookbehind; ``plain``: no captures)."""
        if isinstance(node, Chars):
            ranges = self.folded(node.ranges) if self.ignore_case else normalize(node.ranges)
            return self.char_set(complement(ranges, self.top) if node.negated else ranges)
        if isinstance(node, Edge):
            return self.edge(node.kind)
        if isinstance(node, Group):
            inner = self.emit(node.body, behind=behind, plain=plain)
            if node.index is None or plain:
                return f"(?:{inner})"
            names = self.aliases.setdefault(node.index, [])
            names.append(f"g{node.index}_{len(names)}" if names else f"g{node.index}")
            return f"(?P<{names[-1]}>{inner})"
        if isinstance(node, Look) and node.behind:
            return self.lookbehind(node, plain=plain)
        if isinstance(node, Look):
            inner = self.emit(node.body, behind=behind, plain=plain)
            return f"(?{'!' if node.negative else '='}{inner})"
        if isinstance(node, Backref):
            return self.backref(node, behind=behind)
        if isinstance(node, Repeat):
            return self.repeat(node, behind=behind, plain=plain)
        if isinstance(node, Seq):
            return "".join(self.emit(item, behind=behind, plain=plain) for item in node.items)
        branches = (self.emit(b, behind=behind, plain=plain) for b in node.branches)
        return "(?:" + "|".join(branches) + ")"

    def char_set(self, ranges: Ranges) -> str:
        if not ranges:
            return "(?!)"
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            return _literal(ranges[0][0])
        parts = (_literal(a) if a == b else f"{_literal(a)}-{_literal(b)}" for a, b in ranges)
        return "[" + "".join(parts) + "]"

    def edge(self, kind: str) -> str:
        ends, word = self.char_set(LINE_ENDS), self.word
        if kind == "^":
            return f"(?:^|(?<={ends}))" if self.multiline else "^"
        if kind == "$":
            return f"(?={ends}|\\Z)" if self.multiline else "\\Z"
        if kind == "b":
            return f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"
        return f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"

    def backref(self, node: Backref, *, behind: bool) -> str:
        index = self.parsed.target(node)
        if behind:
            raise JsUnsupported("a back-reference inside a lookbehind")
        closed = self.parsed.closed.get(index)
        if closed is None or closed > node.at:
            return "(?:)"  # the group has not closed: JavaScript matches the empty string
        found = ""
        for name in self.aliases.get(index, ()):
            same = f"(?i:(?P={name}))" if self.ignore_case else f"(?P={name})"
            found = f"(?({name}){same}|{found})" if found else f"(?({name}){same})"
        return found

    def repeat(self, node: Repeat, *, behind: bool, plain: bool) -> str:
        """``atom{low,high}``; see the module docstring for the rewrite past ``low``.

        The rewritten repetition keeps, at its start, what follows it (``r1``), and must not
        be at a point where what follows is that again: it has moved.
        """
        inner = self.atom(node.atom, behind=behind, plain=plain)
        least, most = _width(node.atom)
        low, high = node.low if least else min(node.low, _MAX_EMPTY_REPEATS), node.high
        lazy = "?" if node.lazy else ""
        if least > 0 or behind or plain or high == low:
            return inner + _count(low, high) + lazy
        head = inner + _count(low, low) if low else ""
        if most == 0:
            return head  # it can only match nothing: no repetition past low
        self.loops += 1
        number = self.loops
        if not self.exact:
            return inner + _count(low, high) + lazy
        if head:  # the copy past low has its own capture names
            inner = self.atom(node.atom, behind=behind, plain=plain)
        step = f"(?:(?=(?P<r{number}>[\\s\\S]*)){inner}(?!(?P=r{number})\\Z))"
        return head + step + _count(0, None if high is None else high - low) + lazy

    def atom(self, node: Node, *, behind: bool, plain: bool) -> str:
        text = self.emit(node, behind=behind, plain=plain)
        return text if isinstance(node, Chars | Group) else f"(?:{text})"

    def lookbehind(self, node: Look, *, plain: bool) -> str:
        sign = "!" if node.negative else "="
        low, high = _width(node.body)
        if low == high:
            return f"(?<{sign}{self.emit(node.body, behind=True, plain=plain)})"
        if high is None:
            raise JsUnsupported("a lookbehind of unbounded width (Python's re needs a bound)")
        if any(g.index in self.referenced for g in _nodes(node.body, Group)):
            raise JsUnsupported("a back-reference to a group in a lookbehind of varying width")
        widths: dict[int, list[str]] = {}
        for variant in _variants(node.body):
            text = self.emit(variant, behind=True, plain=True)
            widths.setdefault(_width(variant)[0], []).append(text)
        parts = [f"(?<{sign}{'|'.join(texts)})" for texts in widths.values()]
        return "".join(parts) if node.negative else "(?:" + "|".join(parts) + ")"

    def folded(self, ranges: Ranges) -> Ranges:
        """``ranges`` and every character equal to one of them under ``i``."""
        merged = normalize(ranges)
        starts = [start for start, _ in merged]
        out = list(merged)
        for same in _case_variants(self.unicode):
            if any(_inside(merged, starts, c) for c in same):
                out += [(c, c) for c in same]
        return normalize(tuple(out))


def _count(low: int, high: int | None) -> str:
    shown = {(0, None): "*", (1, None): "+", (0, 1): "?", (1, 1): ""}.get((low, high))
    if shown is not None:
        return shown
    return f"{{{low},}}" if high is None else f"{{{low}}}" if high == low else f"{{{low},{high}}}"


def _literal(point: int) -> str:
    char = chr(point)
    if char.isascii() and char.isalnum():
        return char
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def _inside(ranges: Ranges, starts: list[int], point: int) -> bool:
    at = bisect.bisect_right(starts, point) - 1
    return at >= 0 and ranges[at][1] >= point


@functools.cache
def _case_variants(unicode: bool) -> tuple[tuple[int, ...], ...]:
    """The sets (of two or more) of characters equal under ``i`` (module docstring)."""
    same: dict[int, list[int]] = {}
    for point in range(0x20000 if unicode else 0x10000):  # no cased letters lie beyond
        same.setdefault(_canonical(point, unicode), []).append(point)
    return tuple(tuple(v) for v in same.values() if len(v) > 1)


def _canonical(point: int, unicode: bool) -> int:
    char = chr(point)
    if unicode:
        folded = char.casefold()
        folded = folded if len(folded) == 1 else char.lower()
        return ord(folded) if len(folded) == 1 else point
    upper = char.upper()
    if len(upper) != 1 or (point >= 128 and ord(upper) < 128):
        return point
    return ord(upper)


def _width(node: Node) -> tuple[int, int | None]:
    """The fewest and the most characters ``node`` matches (``None``: no bound)."""
    if isinstance(node, Chars):
        return 1, 1
    if isinstance(node, Edge | Look):
        return 0, 0
    if isinstance(node, Backref):
        return 0, None
    if isinstance(node, Group):
        return _width(node.body)
    if isinstance(node, Repeat):
        low, high = _width(node.atom)
        if high == 0:
            return 0, 0
        return low * node.low, None if high is None or node.high is None else high * node.high
    widths = [_width(n) for n in (node.items if isinstance(node, Seq) else node.branches)]
    highs = [h for _, h in widths]
    most = None if None in highs else [h or 0 for h in highs]
    if isinstance(node, Seq):
        return sum(w for w, _ in widths), None if most is None else sum(most)
    return min(w for w, _ in widths), None if most is None else max(most)


def _variants(node: Node) -> list[Node]:
    """``node`` (of bounded width) as alternatives of fixed widths, in JavaScript's order."""
    low, high = _width(node)
    if low == high:
        return [node]
    found: list[Node]
    if isinstance(node, Group):
        found = [Group(v) for v in _variants(node.body)]
    elif isinstance(node, Alt):
        found = [v for branch in node.branches for v in _variants(branch)]
    elif isinstance(node, Repeat):
        counts = range(node.low, (node.high or 0) + 1)  # bounded: its width is
        found = [v for k in (counts if node.lazy else reversed(counts))
                 for v in _variants(Seq((node.atom,) * k))]  # fmt: skip
    else:
        assert isinstance(node, Seq)
        heads: list[tuple[Node, ...]] = [()]
        for item in node.items:
            heads = [(*head, tail) for head in heads for tail in _variants(item)]
            if len(heads) > _MAX_VARIANTS:
                break
        found = [Seq(head) for head in heads]
    if len(found) > _MAX_VARIANTS:
        raise JsUnsupported("a lookbehind of this many different widths")
    return found


def _nodes(node: Node, kind: type[_T]) -> Iterator[_T]:
    """The nodes of ``kind`` in the tree under ``node`` (itself included)."""
    if isinstance(node, kind):
        yield node
    children: tuple[Node, ...] = ()
    if isinstance(node, Group | Look):
        children = (node.body,)
    elif isinstance(node, Repeat):
        children = (node.atom,)
    elif isinstance(node, Seq):
        children = node.items
    elif isinstance(node, Alt):
        children = node.branches
    for child in children:
        yield from _nodes(child, kind)
