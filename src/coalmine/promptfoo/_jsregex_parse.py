r"""JavaScript regular expression syntax, read as V8 (Node.js 20, promptfoo's runtime) reads it.

:func:`parse` turns a pattern (its code units; its code points with the ``u`` flag) into a small
tree, and refuses what ``new RegExp`` refuses, with V8's message. Without ``u`` the grammar is
ECMAScript's with the Annex B additions that browsers and Node.js accept: a ``{``, ``}`` or
``]`` that makes no quantifier is literal (so ``\u{41}`` is ``u`` 41 times), ``\c`` without a
letter is a backslash, ``\8`` is ``8``, ``\1`` beyond the groups is octal, a lookahead may be
repeated, and an escaped character with no meaning (``\e``, ``\Z``, ``\A``) is that character.
With ``u`` those are errors.

What Python's ``re`` reads but V8 refuses is refused here as there: inline flags ``(?i)`` and
modifiers ``(?i:…)`` (Node.js 20's V8 has none), ``(?P<n>…)``, ``(?P=n)``, ``(?#…)``, atomic
``(?>…)`` and conditional ``(?(1)…)`` groups are an "Invalid group"; possessive ``a++`` and
``a{1}{2}`` "Nothing to repeat"; a repeated lookbehind an "Invalid quantifier".
"""

from __future__ import annotations

from typing import NoReturn

from coalmine.promptfoo._jsregex_tree import (
    DIGITS,
    LINE_ENDS,
    SPACE,
    Alt,
    Backref,
    Chars,
    Edge,
    Group,
    JsSyntaxError,
    JsUnsupported,
    Look,
    Node,
    Parsed,
    Ranges,
    Repeat,
    Seq,
    complement,
    word_characters,
)

__all__ = ["parse"]

INFINITY = 2**31 - 1
"""V8's bound: a count in ``{…}`` this large or larger is no bound."""
_SYNTAX = "^$\\.*+?()[]{}|/"
_CONTROL = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_CLASSES = "dDsSwW"
_HEX = "0123456789abcdefABCDEF"
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def parse(pattern: str, *, flags: str, shown: str) -> Parsed:
    r"""The tree of ``pattern`` (a character per code unit, or per code point with ``u``).

    ``shown`` is the ``/source/flags`` V8's messages show.

    Raises:
        JsSyntaxError: V8 refuses the pattern.
        JsUnsupported: V8 accepts it; coalmine cannot match it (``\p{…}``, with ``u``).
    """
    return _Parser(pattern, flags, shown).pattern()


def _one(char: int) -> Ranges:
    return ((char, char),)


def _single(ranges: Ranges) -> bool:
    return len(ranges) == 1 and ranges[0][0] == ranges[0][1]


class _Parser:
    """V8's ``RegExpParser``, reduced to what decides the tree and the errors."""

    def __init__(self, pattern: str, flags: str, shown: str) -> None:
        self.s = pattern
        self.i = 0
        self.u = "u" in flags
        self.shown = shown
        self.dot = Chars(() if "s" in flags else LINE_ENDS, negated=True)
        self.top = 0x10FFFF if self.u else 0xFFFF
        self.escapes = {"d": DIGITS, "s": SPACE, "w": word_characters(flags)}
        self.total, self.named = _scan(pattern)
        self.count = 0
        self.names: dict[str, int] = {}
        self.closed: dict[int, int] = {}
        self.refs: list[str] = []
        self.clock = 0
        self.unsupported = ""

    def fail(self, message: str) -> NoReturn:
        raise JsSyntaxError(f"Invalid regular expression: {self.shown}: {message}")

    def peek(self, ahead: int = 0) -> str:
        """The character ``ahead`` of the position, or ``""`` past the end."""
        return self.s[self.i + ahead : self.i + ahead + 1]

    def take(self) -> str:
        char = self.peek()
        self.i += 1
        return char

    def pattern(self) -> Parsed:
        tree = self.disjunction()
        if self.peek() == ")":
            self.fail("Unmatched ')'")
        if any(name not in self.names for name in self.refs):  # V8 checks them last
            self.fail("Invalid named capture referenced")
        if self.unsupported:
            raise JsUnsupported(self.unsupported)
        return Parsed(tree, self.count, self.names, self.closed)

    def disjunction(self) -> Node:
        branches = [self.alternative()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.alternative())
        return branches[0] if len(branches) == 1 else Alt(tuple(branches))

    def alternative(self) -> Node:
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            atom, kind = self.term()
            items.append(atom if kind == "edge" else self.quantified(atom, kind))
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def term(self) -> tuple[Node, str]:
        """An atom, and what may follow it: ``edge`` (nothing), ``behind``, ``ahead``, ``atom``."""
        char = self.take()
        if char in "^$":
            return Edge(char), "edge"
        if char == ".":
            return self.dot, "atom"
        if char == "(":
            return self.group()
        if char == "[":
            return self.char_class(), "atom"
        if char == "\\":
            return self.escape()
        if char in "*+?":
            self.fail("Nothing to repeat")
        if char == "{":
            self.i -= 1
            if self.interval() is not None:
                self.fail("Nothing to repeat")
            self.i += 1
        if self.u and char in "{}]":
            self.fail("Lone quantifier brackets")
        return Chars(_one(ord(char))), "atom"

    def quantified(self, atom: Node, kind: str) -> Node:
        char = self.peek()
        bounds: tuple[int, int | None] | None = {"*": (0, None), "+": (1, None), "?": (0, 1)}.get(
            char
        )
        if bounds is not None:
            self.i += 1
        elif char == "{":
            bounds = self.interval()
            if bounds is None and self.u:
                self.fail("Incomplete quantifier")
        if bounds is None:
            return atom
        lazy = self.peek() == "?"
        self.i += lazy
        if kind == "behind" or (kind == "ahead" and self.u):
            self.fail("Invalid quantifier")
        return Repeat(atom, bounds[0], bounds[1], lazy)

    def interval(self) -> tuple[int, int | None] | None:
        """``{n}``, ``{n,}`` or ``{n,m}`` here (read and checked), else ``None`` (nothing read)."""
        start = self.i
        self.i += 1
        low = self.number()
        high = low
        if low is not None and self.peek() == ",":
            self.i += 1
            high = INFINITY if self.peek() == "}" else self.number()
        if low is None or high is None or self.take() != "}":
            self.i = start
            return None
        if high < low:
            self.fail("numbers out of order in {} quantifier")
        return low, None if high >= INFINITY else high

    def number(self) -> int | None:
        start = self.i
        while _ascii(self.peek(), "0123456789"):
            self.i += 1
        return min(int(self.s[start : self.i]), INFINITY) if self.i > start else None

    def group(self) -> tuple[Node, str]:
        index: int | None = None
        name: str | None = None
        look: tuple[bool, bool] | None = None  # behind, negative
        if self.peek() != "?":
            self.count += 1
            index = self.count
        elif self.peek(1) == ":":
            self.i += 2
        elif self.peek(1) in ("=", "!"):
            look = (False, self.peek(1) == "!")
            self.i += 2
        elif self.peek(1) == "<" and self.peek(2) in ("=", "!"):
            look = (True, self.peek(2) == "!")
            self.i += 3
        elif self.peek(1) == "<":
            self.i += 2
            name = self.group_name()
            self.count += 1
            index = self.count
        else:
            self.fail("Invalid group")
        body = self.disjunction()
        if self.take() != ")":
            self.fail("Unterminated group")
        self.clock += 1
        if look is not None:
            return Look(body, *look), "behind" if look[0] else "ahead"
        if index is not None:
            self.closed[index] = self.clock
        if name is not None and index is not None:  # V8 names a group when it closes
            if name in self.names:
                self.fail("Duplicate capture group name")
            self.names[name] = index
        return Group(body, index), "atom"

    def group_name(self) -> str:
        """A name and its ``>``, read as V8 reads an ``IdentifierName`` (escapes, pairs)."""
        name = ""
        while True:
            char = self.take()
            if char == "\\" and self.peek() == "u":
                self.i += 1
                char = chr(self.unicode_escape(in_name=True))
            elif "\ud800" <= char <= "\udbff" and "\udc00" <= self.peek() <= "\udfff":
                char = (char + self.take()).encode("utf-16-le", "surrogatepass").decode("utf-16-le")
            if char == ">" and name:
                return name
            if not char or not _name_character(char, first=not name):
                self.fail("Invalid capture group name")
            name += char

    def char_class(self) -> Chars:
        negated = self.peek() == "^"
        self.i += negated
        ranges: list[tuple[int, int]] = []
        while self.peek() != "]":
            if not self.peek():
                self.fail("Unterminated character class")
            first = self.class_atom()
            if self.peek() != "-" or self.peek(1) in ("", "]"):
                ranges += first
                continue
            self.i += 1
            second = self.class_atom()
            if not (_single(first) and _single(second)):  # a class escape: "-" is itself
                if self.u:
                    self.fail("Invalid character class")
                ranges += [*first, (0x2D, 0x2D), *second]
            elif first[0][0] > second[0][0]:
                self.fail("Range out of order in character class")
            else:
                ranges.append((first[0][0], second[0][0]))
        self.i += 1
        return Chars(tuple(ranges), negated)

    def class_atom(self) -> Ranges:
        r"""One member of a class: a character, or the characters of a class escape (``\d``)."""
        char = self.take()
        if char != "\\":
            return _one(ord(char))
        char = self.take()
        if not char:
            self.fail("\\ at end of pattern")
        if char in _CLASSES:
            return self.class_escape(char)
        if char == "b":
            return _one(8)
        if char == "-" and self.u:
            return _one(0x2D)
        if char == "c":
            letter = self.peek()
            if _ascii(letter, _LETTERS + ("" if self.u else "0123456789_")):
                self.i += 1
                return _one(ord(letter) & 0x1F)
            return self.lone_c()
        if char in "01234567" and not self.u:
            self.i -= 1
            return _one(self.octal())
        if char == "0" and not _ascii(self.peek(), "0123456789"):
            return _one(0)
        if char in "01234567":
            self.fail("Invalid class escape")
        if char == "k" and (self.u or self.named):
            self.fail("Invalid escape")
        value = self.character_escape(char, in_class=True)
        return ((0, 0), (2, 2)) if char in "pP" and self.u else _one(value)

    def escape(self) -> tuple[Node, str]:
        char = self.take()
        if not char:
            self.fail("\\ at end of pattern")
        if char in "bB":
            return Edge(char), "edge"
        if char in _CLASSES:
            return Chars(self.class_escape(char)), "atom"
        if char in "123456789":
            start = self.i = self.i - 1
            number = self.number()
            if number is not None and number <= self.total:
                return Backref(number, self.clock), "atom"
            if self.u:
                self.fail("Invalid escape")
            self.i = start + 1
            if char in "89":
                return Chars(_one(ord(char))), "atom"
            self.i = start
            return Chars(_one(self.octal())), "atom"
        if char == "0":
            if not self.u:
                self.i -= 1
                return Chars(_one(self.octal())), "atom"
            if _ascii(self.peek(), "0123456789"):
                self.fail("Invalid decimal escape")
            return Chars(_one(0)), "atom"
        if char == "k" and (self.u or self.named):
            if self.take() != "<":
                self.fail("Invalid named reference")
            name = self.group_name()
            self.refs.append(name)
            return Backref(name, self.clock), "atom"
        if char == "c":
            letter = self.peek()
            if _ascii(letter, _LETTERS):
                self.i += 1
                return Chars(_one(ord(letter) & 0x1F)), "atom"
            return Chars(self.lone_c()), "atom"
        return Chars(_one(self.character_escape(char))), "atom"

    def lone_c(self) -> Ranges:
        r"""``\c`` with no letter: a backslash, and the ``c`` read next (an error with ``u``)."""
        if self.u:
            self.fail("Invalid Unicode escape")
        self.i -= 1
        return _one(0x5C)

    def class_escape(self, letter: str) -> Ranges:
        ranges = self.escapes[letter.lower()]
        return complement(ranges, self.top) if letter.isupper() else ranges

    def character_escape(self, char: str, *, in_class: bool = False) -> int:
        r"""What ``\x…``, ``\u…``, a control or an identity escape means (``char`` read)."""
        if char in _CONTROL:
            return _CONTROL[char]
        if char == "x":
            value = self.hex_digits(2)
            if value is None and self.u:
                self.fail("Invalid escape")
            return ord("x") if value is None else value
        if char == "u":
            return self.unicode_escape(in_name=False)
        if char in "pP" and self.u:
            self.property_escape(in_class=in_class)
        elif self.u and char not in _SYNTAX:
            self.fail("Invalid escape")
        return ord(char)

    def property_escape(self, *, in_class: bool) -> None:
        r"""``\p{…}`` with ``u``: its syntax is checked, then it is :class:`JsUnsupported`."""
        start = self.i
        if self.take() == "{":
            while _ascii(self.peek(), _LETTERS + "0123456789_="):
                self.i += 1
        if self.take() != "}" or self.i - start < 3:
            self.fail("Invalid property name" + " in character class" * in_class)
        self.unsupported = "Unicode property escapes (\\p{…})"  # said once the rest is read

    def unicode_escape(self, *, in_name: bool) -> int:
        r"""After ``\u``: four hex digits (a pair of such with ``u``), or ``{…}`` with ``u``."""
        start = self.i
        if (self.u or in_name) and self.peek() == "{":
            self.i += 1
            while _ascii(self.peek(), _HEX):
                self.i += 1
            digits = self.s[start + 1 : self.i]
            if digits and self.take() == "}" and int(digits, 16) <= 0x10FFFF:
                return int(digits, 16)
            self.i = start
        else:
            value = self.hex_digits(4)
            if value is not None:
                if (self.u or in_name) and 0xD800 <= value <= 0xDBFF:
                    value = self.low_surrogate(value)
                return value
        if in_name:
            self.fail("Invalid capture group name")
        if self.u:
            self.fail("Invalid Unicode escape")
        return ord("u")

    def low_surrogate(self, high: int) -> int:
        start = self.i
        if self.take() == "\\" and self.take() == "u":
            low = self.hex_digits(4)
            if low is not None and 0xDC00 <= low <= 0xDFFF:
                return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        self.i = start
        return high

    def hex_digits(self, count: int) -> int | None:
        digits = self.s[self.i : self.i + count]
        if len(digits) != count or any(d not in _HEX for d in digits):
            return None
        self.i += count
        return int(digits, 16)

    def octal(self) -> int:
        """A legacy octal escape from here: up to three digits, below 256 (Annex B)."""
        value = int(self.take())
        if _ascii(self.peek(), "01234567"):
            value = value * 8 + int(self.take())
            if value < 32 and _ascii(self.peek(), "01234567"):
                value = value * 8 + int(self.take())
        return value


def _ascii(char: str, allowed: str) -> bool:
    """Whether ``char`` is one of ``allowed`` (never when it is ``""``, past the end)."""
    return char != "" and char in allowed


def _name_character(char: str, *, first: bool) -> bool:
    if char in "$_" or char.isidentifier():
        return True
    return not first and (("_" + char).isidentifier() or char in "\u200c\u200d")


def _scan(pattern: str) -> tuple[int, bool]:
    """How many capturing groups the pattern has, and whether one is named (V8's prescan)."""
    count, named, i = 0, False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 1
        elif char == "[":
            i += 1
            while i < len(pattern) and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif char == "(":
            after = pattern[i + 1 : i + 4]
            if not after.startswith("?"):
                count += 1
            elif after[1:2] == "<" and after[2:3] not in ("=", "!"):
                count += 1
                named = True
        i += 1
    return count, named
