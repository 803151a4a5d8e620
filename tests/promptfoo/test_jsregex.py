"""JavaScript regular expressions read with JavaScript's meaning (promptfoo's ``regex``).

Each case's expected answer is ``new RegExp(pattern).test(text)`` in Node.js 20 (checked again
live when Node.js is here); the plain Python reading differs on most of them.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from coalmine.promptfoo.jsregex import javascript_pattern, python_pattern
from coalmine.promptfoo.node import node_available

CASES = [
    # (pattern, text, JavaScript's answer)
    (r"W.rld$", "Hello World\n", False),  # $ is the end of the input only
    (r"W.rld$", "Hello World", True),
    (r"^\d+$", "٣٤", False),  # \d is ASCII
    (r"^\d+$", "34", True),
    (r"\w+", "é", False),
    (r"\bcat\b", "écat", True),  # é is not a word character: a boundary before c
    (r"a.b", "a\rb", False),  # . stops at line terminators
    (r"a.b", "a\u2028b", False),
    (r"(?<y>\d{4})-\k<y>", "2024-2024", True),  # named groups and their back-references
    (r"(?<y>\d{4})-\k<y>", "2024-2025", False),
    (r"[]", "x", False),  # an empty class matches nothing
    (r"[^]", "\n", True),  # and its negation anything
    (r"\e", "e", True),  # an identity escape
    (r"\s", "\u00a0", True),
    (r"\s", "\x1c", False),  # Python's \s has the separators U+001C..U+001F
    (r"\S", "\x85", True),
    (r"a\cJb", "a\nb", True),  # \cJ is U+000A
    (r"[\d]+x", "12x", True),
    (r"[\w-]+$", "a-b\n", False),
    (r"(?<!a)b", "ab", False),  # lookbehinds are left alone
    (r"[$]", "$", True),  # $ in a class is a dollar
    (r"[a[]", "[", True),
    (r"^\W$", "é", True),
    (r"(a)\1", "aa", True),
]


@pytest.mark.parametrize(("pattern", "text", "expected"), CASES)
def test_the_pattern_matches_as_javascript_does(pattern: str, text: str, expected: bool) -> None:
    assert bool(re.search(python_pattern(pattern), text)) is expected


def test_the_plain_python_reading_would_differ() -> None:
    differ = 0
    for pattern, text, expected in CASES:
        try:
            differ += bool(re.search(pattern, text)) is not expected
        except re.error:
            differ += 1
    # the same: W.rld$ on "Hello World", ^\d+$ on "34", \s on U+00A0, [\d]+x, (?<!a)b, [$],
    # [a[] and (a)\1
    assert differ == 16


@pytest.mark.skipif(node_available() is not None, reason="needs Node.js >= 18")
def test_the_expected_answers_are_javascripts() -> None:
    pairs = [[p, t] for p, t, _ in CASES]
    script = (
        f"const c = {json.dumps(pairs)};"
        "console.log(JSON.stringify(c.map(([p, t]) => new RegExp(p).test(t))))"
    )
    node = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True)
    assert json.loads(node.stdout) == [e for _, _, e in CASES]


# Python patterns (coalmine's regex grader) exported to promptfoo: (pattern, text, Python's answer)
EXPORTED = [
    (r"World$", "Hello World\n", True),  # Python's $ also matches before a final newline
    (r"World\Z", "Hello World\n", False),
    (r"\Aab", "ab", True),
    (r"a.b", "a\rb", True),  # Python's . only stops at \n
    (r"a.b", "a\nb", False),
    (r"(?P<y>\d{4})-(?P=y)", "2024-2024", True),
    (r"(?P<y>\d{4})-(?P=y)", "2024-2025", False),
    (r"[]a]", "]", True),  # a ] first in a Python class is a literal
    (r"[$.]", ".", True),
    (r"^\d+$", "12\n", True),
]


def test_python_patterns_go_to_javascript_syntax() -> None:
    assert javascript_pattern(r"World$") == ("World(?=\\n?$)", [])
    assert javascript_pattern(r"(?P<y>\d{4})-(?P=y)") == (
        "(?<y>\\d{4})-\\k<y>",
        ["\\d match beyond ASCII in Python only"],
    )
    assert javascript_pattern(r"[]a]\Z")[0] == "[\\]a]$"


@pytest.mark.skipif(node_available() is not None, reason="needs Node.js >= 18")
def test_exported_patterns_match_in_javascript_as_in_python() -> None:
    assert [bool(re.search(p, t)) for p, t, _ in EXPORTED] == [e for _, _, e in EXPORTED]
    pairs = [[javascript_pattern(p)[0], t] for p, t, _ in EXPORTED]
    script = (
        f"const c = {json.dumps(pairs)};"
        "console.log(JSON.stringify(c.map(([p, t]) => new RegExp(p).test(t))))"
    )
    node = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True)
    assert json.loads(node.stdout) == [e for _, _, e in EXPORTED]
