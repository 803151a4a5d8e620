r"""The tree a JavaScript regular expression parses to, and the character sets it names.

:mod:`coalmine.promptfoo._jsregex_parse` builds it, :mod:`coalmine.promptfoo._jsregex_emit`
writes it as a Python pattern. A character is a code unit (a code point with the ``u`` flag),
as an ``int``; a set of them is a tuple of inclusive ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DIGITS", "LINE_ENDS", "SPACE", "WORD", "Alt", "Backref", "Chars", "Edge", "Group",
    "JsSyntaxError", "JsUnsupported", "Look", "Node", "Parsed", "Ranges", "Repeat", "Seq",
    "complement", "normalize", "word_characters",
]  # fmt: skip

Ranges = tuple[tuple[int, int], ...]
DIGITS: Ranges = ((0x30, 0x39),)
WORD: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
SPACE: Ranges = (
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)  # fmt: skip
LINE_ENDS: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))


class JsSyntaxError(ValueError):
    """What ``new RegExp(pattern, flags)`` throws; the message is V8's."""


class JsUnsupported(ValueError):
    """A pattern V8 accepts and coalmine cannot match with Python's ``re`` (it says what)."""


@dataclass(frozen=True)
class Chars:
    """One character of ``ranges`` (of none of them when ``negated``)."""

    ranges: Ranges
    negated: bool = False


@dataclass(frozen=True)
class Edge:
    r"""An assertion: ``^``, ``$``, ``b`` (``\b``) or ``B`` (``\B``)."""

    kind: str


@dataclass(frozen=True)
class Group:
    body: Node
    index: int | None = None
    """The capture's number; ``None`` for ``(?:…)``."""


@dataclass(frozen=True)
class Look:
    body: Node
    behind: bool
    negative: bool


@dataclass(frozen=True)
class Backref:
    r"""``\1`` (the group's number) or ``\k<name>`` (its name)."""

    group: int | str
    at: int
    """When it was read, on the clock of :attr:`Parsed.closed`."""


@dataclass(frozen=True)
class Repeat:
    atom: Node
    low: int
    high: int | None
    lazy: bool


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    branches: tuple[Node, ...]


Node = Chars | Edge | Group | Look | Backref | Repeat | Seq | Alt


@dataclass(frozen=True)
class Parsed:
    tree: Node
    groups: int
    names: dict[str, int]
    closed: dict[int, int]
    """When each capture closed: a back-reference read earlier matches the empty string."""

    def target(self, ref: Backref) -> int:
        """The number of the group ``ref`` refers to."""
        return ref.group if isinstance(ref.group, int) else self.names[ref.group]


def word_characters(flags: str) -> Ranges:
    r"""What ``\w`` and ``\b`` count as word characters: with ``u`` and ``i``, also ſ and K."""
    if "u" in flags and "i" in flags:
        return (*WORD, (0x17F, 0x17F), (0x212A, 0x212A))
    return WORD


def complement(ranges: Ranges, top: int) -> Ranges:
    """The characters from 0 to ``top`` in none of ``ranges``."""
    out: list[tuple[int, int]] = []
    low = 0
    for start, end in normalize(ranges):
        if start > low:
            out.append((low, start - 1))
        low = max(low, end + 1)
    if low <= top:
        out.append((low, top))
    return tuple(out)


def normalize(ranges: Ranges) -> Ranges:
    """``ranges`` sorted, with overlapping and adjacent ones merged."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return tuple(out)
