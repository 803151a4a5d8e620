r"""A JavaScript regular expression as a Python pattern that matches the same texts.

promptfoo's ``regex`` assertion is ``new RegExp(value).test(output)``: JavaScript syntax and
meaning, no flags. Python's ``re`` reads most of it alike; where they differ, the pattern is
rewritten so ``re.search`` gives JavaScript's answer:

- ``$`` ends the input only (Python's also matches before a final newline): ``\Z``;
- ``.`` matches anything but ``\n``, ``\r``, U+2028 and U+2029;
- ``\d``, ``\w``, ``\b`` (and their negations) are ASCII, ``\s`` is JavaScript's set of
  white space (Python's are Unicode-wide and differ);
- ``(?<name>…)`` and ``\k<name>`` are Python's ``(?P<name>…)`` and ``(?P=name)``;
- ``[]`` matches nothing and ``[^]`` anything;
- an escaped letter with no meaning (``\e``) is the letter, as in JavaScript.

A pattern JavaScript would reject may still compile here (Python accepts inline flags, for
one); one that neither accepts fails the assertion with the compile error, as in promptfoo.
"""

from __future__ import annotations

__all__ = ["javascript_pattern", "python_pattern"]

_WORD = "A-Za-z0-9_"
_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_OUTSIDE = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
    "b": f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))",
    "B": f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))",
}
_INSIDE = {"d": "0-9", "w": _WORD, "s": _SPACE}
_PYTHON_ESCAPES = set("tnrvf0123456789xu")
"""Letters and digits whose escape means the same in both (``\\cX``, ``\\k<…>`` apart)."""
_DOT = "[^\\n\\r\\u2028\\u2029]"


def python_pattern(js: str) -> str:
    """The Python pattern that matches what the JavaScript ``js`` matches (see the module)."""
    out: list[str] = []
    i, n = 0, len(js)
    in_class = False
    while i < n:
        char = js[i]
        if char == "\\" and i + 1 < n:
            nxt = js[i + 1]
            i += 2
            if nxt == "k" and not in_class and js.startswith("<", i) and ">" in js[i:]:
                end = js.index(">", i)
                out.append(f"(?P={js[i + 1 : end]})")
                i = end + 1
            elif nxt == "c":
                if i < n and js[i].isascii() and js[i].isalpha():
                    out.append(f"\\x{ord(js[i]) % 32:02x}")  # a control character
                    i += 1
                else:
                    out.append("\\\\c")  # no letter: a backslash and a "c", as JavaScript
            else:
                out.append(_escape(nxt, in_class))
            continue
        if in_class:
            if char == "]":
                in_class = False
            elif char == "[":
                char = "\\["  # a literal in JavaScript; Python warns of nested sets
            out.append(char)
            i += 1
            continue
        if char == "[":
            if js.startswith("[]", i):
                out.append("(?!)")
                i += 2
                continue
            if js.startswith("[^]", i):
                out.append("[\\s\\S]")
                i += 3
                continue
            in_class = True
            opening = "[^" if js.startswith("[^", i) else "["
            out.append(opening)
            i += len(opening)
            continue
        if char == "$":
            out.append("\\Z")
        elif char == ".":
            out.append(_DOT)
        elif js.startswith("(?<", i) and not js.startswith(("(?<=", "(?<!"), i):
            out.append("(?P<")
            i += 3
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _escape(letter: str, in_class: bool) -> str:
    r"""One escape ``\letter`` in Python's terms."""
    table = _INSIDE if in_class else _OUTSIDE
    if letter in table:
        return table[letter]
    if in_class and letter in "DWS":
        return "\\" + letter  # rare; Python's Unicode reading of it is kept
    if letter == "b" and in_class:
        return "\\x08"  # backspace, in both
    if letter.isascii() and letter.isalnum() and letter not in _PYTHON_ESCAPES:
        return letter  # an identity escape: JavaScript matches the letter itself
    return "\\" + letter


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
