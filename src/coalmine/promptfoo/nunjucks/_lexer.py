r"""Nunjucks 3.2.4's tokenizer (``nunjucks/src/lexer.js``), ported character for character.

Jinja2's lexer reads another language: ``1e21`` is a number there and an (undefined) variable
name in Nunjucks, ``5.`` is an error there and ``5`` here, ``===`` does not exist there, string
literals take Python's escapes where Nunjucks knows only ``\n``, ``\t`` and ``\r``, a ``}}``
inside a dict literal ends the tag in Nunjucks, ``r/…/g`` is a regular expression, and a stray
``#}`` in plain text is an error. So templates are tokenized as Nunjucks does it, and
:mod:`coalmine.promptfoo.nunjucks._parser` builds the Jinja2 tree from these tokens.

A word in a tag is a run of anything but white space and the delimiters ``()[]{}%*-+~/#,:|.<>=!``:
digits alone make an integer (a float if a ``.`` and more digits follow), ``true``/``false``
a boolean, ``none``/``null`` null, anything else a symbol (a variable name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Tok", "Tokenizer"]

WHITESPACE = " \n\t\r\xa0"
DELIMITERS = "()[]{}%*-+~/#,:|.<>=!"
_INT_CHARS = "0123456789"
_COMPLEX_OPS = ("==", "===", "!=", "!==", "<=", ">=", "//", "**")
_DELIMITER_TYPES = {
    "(": "left-paren",
    ")": "right-paren",
    "[": "left-bracket",
    "]": "right-bracket",
    "{": "left-curly",
    "}": "right-curly",
    ",": "comma",
    ":": "colon",
    "~": "tilde",
    "|": "pipe",
}
_STRING_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_REGEX_FLAGS = "gimy"

BLOCK_START, BLOCK_END = "{%", "%}"
VARIABLE_START, VARIABLE_END = "{{", "}}"
COMMENT_START, COMMENT_END = "{#", "#}"


class LexError(Exception):
    """The tokenizer gave up (``unexpected end of comment`` …); ``line`` is 1-based."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Tok:
    """A token: its Nunjucks type (``symbol``, ``int``, ``block-start`` …), value and line."""

    type: str
    value: Any
    line: int
    """1-based, as Nunjucks reports it in its errors."""


class Tokenizer:
    """Nunjucks' ``Tokenizer``: :meth:`next_token` gives the tokens one by one, then ``None``."""

    def __init__(self, source: str) -> None:
        self.str = source
        self.index = 0
        self.in_code = False

    @property
    def line(self) -> int:
        return self.str.count("\n", 0, self.index) + 1

    def _current(self) -> str:
        return self.str[self.index] if self.index < len(self.str) else ""

    def _finished(self) -> bool:
        return self.index >= len(self.str)

    def _matches(self, text: str) -> bool:
        return self.str.startswith(text, self.index)

    def _extract_string(self, text: str) -> str | None:
        if self._matches(text):
            self.index += len(text)
            return text
        return None

    def _extract_matching(self, break_on_match: bool, chars: str) -> str | None:
        """Characters up to one in ``chars`` (or, not ``break_on_match``, one not in it)."""
        if self._finished():
            return None
        start = self.index
        while not self._finished() and (self._current() in chars) != break_on_match:
            self.index += 1
        return self.str[start : self.index]

    def extract_regex(self, pattern: Any) -> Any:
        """``_extractRegex``: search the rest of the source, moving past the match."""
        match = pattern.search(self.str, self.index)
        if match is None:
            return None
        self.index += match.end() - match.start()
        return match

    def back(self, count: int) -> None:
        self.index -= count

    def next_token(self) -> Tok | None:
        line = self.line
        if self.in_code:
            return self._code_token(line)
        if self._finished():
            return None
        for start, kind in ((BLOCK_START, "block-start"), (VARIABLE_START, "variable-start")):
            tok = self._extract_string(start + "-") or self._extract_string(start)
            if tok:
                self.in_code = True
                return Tok(kind, tok, line)
        return self._data_token(line)

    def _data_token(self, line: int) -> Tok:
        text, in_comment = "", False
        if self._matches(COMMENT_START):
            in_comment = True
            text = COMMENT_START
            self.index += len(COMMENT_START)
        begin_chars = BLOCK_START[0] + VARIABLE_START[0] + COMMENT_START[0] + COMMENT_END[0]
        while True:
            data = self._extract_matching(True, begin_chars)
            if data is None:
                break
            text += data
            starts = (BLOCK_START, VARIABLE_START, COMMENT_START)
            if any(self._matches(s) for s in starts) and not in_comment:
                break
            if self._matches(COMMENT_END):
                if not in_comment:
                    raise LexError("unexpected end of comment", self.line)
                text += COMMENT_END
                self.index += len(COMMENT_END)
                break
            text += self._current()
            self.index += 1
        if data is None and in_comment:
            raise LexError("expected end of comment, got end of file", self.line)
        return Tok("comment" if in_comment else "data", text, line)

    def _code_token(self, line: int) -> Tok | None:
        cur = self._current()
        if self._finished():
            return None
        if cur in "\"'":
            return Tok("string", self._parse_string(cur), line)
        if cur in WHITESPACE:
            return Tok("whitespace", self._extract_matching(False, WHITESPACE), line)
        for end, kind in ((BLOCK_END, "block-end"), (VARIABLE_END, "variable-end")):
            tok = self._extract_string(end) or self._extract_string("-" + end)
            if tok:
                self.in_code = False
                return Tok(kind, tok, line)
        if cur == "r" and self.str[self.index + 1 : self.index + 2] == "/":
            return Tok("regex", self._parse_regex(), line)
        if cur in DELIMITERS:
            self.index += 1
            pair = cur + self._current()
            if pair in _COMPLEX_OPS:
                self.index += 1
                cur = pair
                if pair + self._current() in _COMPLEX_OPS:
                    cur = pair + self._current()
                    self.index += 1
            return Tok(_DELIMITER_TYPES.get(cur, "operator"), cur, line)
        word = self._extract_matching(True, WHITESPACE + DELIMITERS) or ""
        if word and all(ch in _INT_CHARS for ch in word):
            if self._current() == ".":
                self.index += 1
                return Tok(
                    "float", word + "." + (self._extract_matching(False, _INT_CHARS) or ""), line
                )
            return Tok("int", word, line)
        if word in ("true", "false"):
            return Tok("boolean", word, line)
        if word in ("none", "null"):
            return Tok("none", word, line)
        return Tok("symbol", word, line)

    def _parse_string(self, delimiter: str) -> str:
        self.index += 1
        out = []
        while not self._finished() and self._current() != delimiter:
            cur = self._current()
            if cur == "\\":
                self.index += 1
                nxt = self._current()
                out.append(_STRING_ESCAPES.get(nxt, nxt))
            else:
                out.append(cur)
            self.index += 1
        self.index += 1
        return "".join(out)

    def _parse_regex(self) -> tuple[str, str]:
        self.index += 2
        body = []
        while not self._finished():
            if self._current() == "/" and self.str[self.index - 1] != "\\":
                self.index += 1
                break
            body.append(self._current())
            self.index += 1
        flags = []
        while not self._finished() and self._current() in _REGEX_FLAGS:
            flags.append(self._current())
            self.index += 1
        return "".join(body), "".join(flags)
