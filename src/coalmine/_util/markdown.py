r"""Untrusted text in GitHub-flavoured markdown, escaped so that it reads as written.

Every markdown coalmine writes (the run report, the comparison, the review session notes) holds
text it does not control: agent outputs, prompts, expected values, judge reasons, titles, ids,
error messages, tags. A job summary renders that markdown, so each such text goes through
:func:`md_text` (one line: HTML and markup characters backslash-escaped, line breaks and tabs
made spaces, control characters shown as ``\xNN``) or :func:`md_code` (an inline code span whose
backtick fence is longer than any run of backticks in the text). Neither can then open an HTML
element, a link, an image, emphasis, a heading or a list, close a table cell or end a list item.
"""

from __future__ import annotations

import re

_ALWAYS = frozenset("\\`*[]|~")
"""Characters escaped wherever they are (``|`` would end a table cell)."""
_OPENS = {"<": re.compile(r"[A-Za-z/!?]"), "&": re.compile(r"[A-Za-z#]")}
"""``<`` and ``&`` are escaped where they could begin an HTML tag (or autolink) or an entity."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# At the start of a line these open a block: a heading, a quote, a list item, a thematic break.
_BLOCK_START = re.compile(r"(?:#{1,6}|[-+>]|\d{1,9}[.)])(?=\s|$)|-[ \t]*-[ \t]*-")
_TICKS = re.compile(r"`+")


def md_text(text: str) -> str:
    """``text`` as markdown that renders as the text itself, on one line (a cell, a list item)."""
    flat = _CONTROL.sub(_shown, " ".join(text.split()))
    out = []
    for i, ch in enumerate(flat):
        opens = _OPENS.get(ch)
        if (
            ch in _ALWAYS
            or (ch == "_" and not _inside_word(flat, i))
            or (opens is not None and opens.match(flat, i + 1))
        ):
            out.append("\\" + ch)
        else:
            out.append(ch)
    escaped = "".join(out)
    start = _BLOCK_START.match(escaped)
    if start is None:
        return escaped
    at = start.end() - 1 if escaped[0].isdigit() else 0  # "1." is escaped at its dot
    return escaped[:at] + "\\" + escaped[at:]


def md_code(text: str) -> str:
    """``text`` as an inline code span that its own backticks cannot close (on one line)."""
    flat = _CONTROL.sub(_shown, " ".join(text.split()))
    fence = "`" * (max((len(run) for run in _TICKS.findall(flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def _inside_word(text: str, i: int) -> bool:
    """Whether the ``_`` at ``i`` sits between two letters or digits (it cannot emphasise)."""
    return 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def _shown(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"
