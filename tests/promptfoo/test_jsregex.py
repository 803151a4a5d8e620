"""JavaScript regular expressions compiled and matched as V8 (Node.js 20) does.

Each expected value below is what ``new RegExp(pattern, flags).exec(text)`` gives in Node.js
20 (promptfoo's ``regex`` assertion is ``new RegExp(value).test(output)``): the match's index
and text in UTF-16 code units, or V8's SyntaxError message. The live tests check them against
Node.js again when it is here; plain Python ``re`` would answer most of them otherwise.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.handlers import HandlerCall, handle
from coalmine.promptfoo.jsregex import (
    JsRegExp,
    JsSyntaxError,
    JsUnsupported,
    javascript_pattern,
)
from coalmine.promptfoo.node import NodeRuntime, node_available
from coalmine.promptfoo.verdicts import HandlerError, Verdict

needs_node = pytest.mark.skipif(node_available() is not None, reason="needs Node.js >= 18")

GRIN = "\U0001f600"  # 😀: two UTF-16 code units, \ud83d \ude00

# (pattern, flags, text, (index, match[0]) or None)
MATCHES: list[tuple[str, str, str, tuple[int, str] | None]] = [
    # JavaScript-only syntax Python's re refuses or reads otherwise
    (r"(?<y>\d{4})-\k<y>", "", "2024-2024", (0, "2024-2024")),
    (r"(?<y>\d{4})-\k<y>", "", "2024-2025", None),
    (r"\k<n>", "", "k<n>", (0, "k<n>")),  # no named group: \k is a k
    (r"a\cJb", "", "a\nb", (0, "a\nb")),
    (r"\c1", "", "\\c1", (0, "\\c1")),  # \c without a letter: a backslash
    (r"[^]", "", "\n", (0, "\n")),
    (r"[]", "", "x", None),
    (r"\u{3}", "", "uuu", (0, "uuu")),  # without u: "u" three times
    (r"\8", "", "8", (0, "8")),
    (r"\1(a)", "", "a", (0, "a")),  # a group not yet matched: the empty string
    (r"(a)?\1b", "", "b", (0, "b")),
    (r"a{,3}", "", "a{,3}", (0, "a{,3}")),  # not a quantifier
    (r"end\Z", "", "endZ", (0, "endZ")),  # \Z, \A, \e: identity escapes
    (r"\Aend", "", "Aend", (0, "Aend")),
    (r"\e", "", "e", (0, "e")),
    (r"\x4", "", "x4", (0, "x4")),
    (r"\u004", "", "u004", (0, "u004")),
    (r"[\d-z]+", "", "1-z", (0, "1-z")),  # a class escape at one end: "-" is itself
    (r"(?<=^|\s)word", "", "a word", (2, "word")),  # lookbehinds of varying width
    (r"(?<=https?://)\w+", "", "see http://x", (11, "x")),
    (r"(?=a)*b", "", "b", (0, "b")),
    (r"\10", "", "\x08", (0, "\x08")),  # beyond the groups: octal
    (r"(a)\11", "", "a\t", (0, "a\t")),
    (r"\377", "", "\xff", (0, "\xff")),
    (r"[\b]", "", "\x08", (0, "\x08")),
    # JavaScript's meaning where Python's differs
    (r"W.rld$", "", "Hello World\n", None),  # $ is the end of the input only
    (r"^\d+$", "", "\u0663\u0664", None),  # \d is ASCII
    (r"\s", "", "\xa0", (0, "\xa0")),
    (r"\s", "", "\x1c", None),  # Python's \s has U+001C..U+001F
    (r"\bcat\b", "", "\xe9cat", (1, "cat")),  # é is no word character
    (r"a.b", "", "a\u2028b", None),  # . stops at line terminators
    (r"[\w-]+$", "", "a-b\n", None),
    # UTF-16 code units: an astral character is two
    ("^.$", "", GRIN, None),
    ("^..$", "", GRIN, (0, GRIN)),
    (".", "", GRIN, (0, "\ud83d")),  # half of it
    (f"^[{GRIN}]$", "", GRIN, None),  # a class of its two halves
    (f"^[{GRIN}]+$", "", GRIN, (0, GRIN)),
    (f"{GRIN}+", "", GRIN + "\ude00", (0, GRIN + "\ude00")),  # + repeats the second half
    (r"\ud83d", "", GRIN, (0, "\ud83d")),
    (r"\ude00", "", "a" + GRIN, (2, "\ude00")),
    ("b", "", f"a{GRIN}b", (3, "b")),  # indices count code units
    # with u: code points (indices still code units)
    ("^.$", "u", GRIN, (0, GRIN)),
    (r"\u{1F600}", "u", "x" + GRIN, (1, GRIN)),
    ("b", "u", f"a{GRIN}b", (3, "b")),
    (r"[^x]", "u", GRIN, (0, GRIN)),
    (r"\ud83d", "u", GRIN, None),
    (f"{GRIN}+", "u", GRIN * 2, (0, GRIN * 2)),
    # flags
    ("\u017f", "i", "s", None),  # toUpperCase, never from beyond ASCII into it
    ("s", "iu", "\u017f", (0, "\u017f")),  # case folding with u
    ("k", "i", "\u212a", None),
    ("k", "iu", "\u212a", (0, "\u212a")),
    (r"\w", "iu", "\u017f", (0, "\u017f")),
    (r"\w", "i", "\u017f", None),
    ("\xb5", "i", "\u03bc", (0, "\u03bc")),
    ("\xdf", "i", "\u1e9e", None),
    ("[a-z]+", "i", "ABC", (0, "ABC")),
    (r"(a)\1", "i", "aA", (0, "aA")),
    ("^b", "m", "a\rb", (2, "b")),
    ("a$", "m", "a\u2028b", (0, "a")),
    ("a.b", "s", "a\nb", (0, "a\nb")),
]

# (pattern, V8's message): Python's re reads all but the last few
REFUSED = [
    (r"(?m)^a", "Invalid group"),  # inline flags and modifiers (Node.js 20 has none)
    (r"(?i)a", "Invalid group"),
    (r"(?s).", "Invalid group"),
    (r"(?x)a b", "Invalid group"),
    (r"(?i:a)", "Invalid group"),
    (r"(?-i:a)", "Invalid group"),
    (r"(?P<n>a)", "Invalid group"),
    (r"(?P=n)", "Invalid group"),
    (r"(?#note)a", "Invalid group"),
    (r"(?>a)", "Invalid group"),
    (r"(a)(?(1)b|c)", "Invalid group"),
    (r"a++", "Nothing to repeat"),  # possessive
    (r"a*+", "Nothing to repeat"),
    (r"a{1,2}+", "Nothing to repeat"),
    (r"a{1}{2}", "Nothing to repeat"),
    (r"\b+", "Nothing to repeat"),
    (r"(?<=a)*", "Invalid quantifier"),
    (r"(?<n>a)(?<n>b)", "Duplicate capture group name"),
    (r"(?<n>a)\k<m>", "Invalid named capture referenced"),
    (r"(?<n>a)\k", "Invalid named reference"),
    (r"(?<1n>a)", "Invalid capture group name"),
    (f"[{GRIN}-\U0001f602]", "Range out of order in character class"),  # halves: \ude00-\ud83d
    (r"[z-a]", "Range out of order in character class"),
    (r"(x", "Unterminated group"),
    (r"x)", "Unmatched ')'"),
    ("\\", "\\ at end of pattern"),
    (r"[a", "Unterminated character class"),
    (r"a{2,1}", "numbers out of order in {} quantifier"),
    (r"{1}", "Nothing to repeat"),
]


def found(pattern: str, flags: str, text: str) -> tuple[int, str] | None:
    match = JsRegExp(pattern, flags).exec(text)
    return None if match is None else (match.index, match.groups[0] or "")


@pytest.mark.parametrize(("pattern", "flags", "text", "expected"), MATCHES)
def test_a_pattern_matches_as_v8_matches(
    pattern: str, flags: str, text: str, expected: tuple[int, str] | None
) -> None:
    assert found(pattern, flags, text) == expected
    assert JsRegExp(pattern, flags).test(text) is (expected is not None)


@pytest.mark.parametrize(("pattern", "message"), REFUSED)
def test_what_v8_refuses_is_refused_with_its_message(pattern: str, message: str) -> None:
    with pytest.raises(JsSyntaxError) as info:
        JsRegExp(pattern)
    assert str(info.value) == f"Invalid regular expression: /{pattern}/: {message}"


def test_plain_python_would_read_most_of_them_otherwise() -> None:
    differ = 0
    for pattern, flags, text, expected in MATCHES:
        if flags:
            continue
        try:
            match = re.search(pattern, text)
        except re.error:
            differ += 1
            continue
        differ += (None if match is None else (match.start(), match.group())) != expected
    accepted = sum(_compiles(pattern) for pattern, _ in REFUSED)
    # the same: (?=a)*b, \377, [\b], \s on U+00A0 and ^[😀]+$ (5 of the 41 without flags);
    # Python accepts the inline flags and modifiers, (?P<n>a), (?#note)a, (?>a), the
    # conditional, the three possessives, (?<=a)* and [😀-😂]
    assert (differ, accepted) == (36, 15)


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def test_the_flags_are_checked_and_shown_in_order() -> None:
    with pytest.raises(JsSyntaxError, match="^Invalid flags supplied to RegExp constructor 'gg'$"):
        JsRegExp("a", "gg")
    with pytest.raises(JsSyntaxError) as info:
        JsRegExp("(", "yimgsd")
    assert str(info.value) == "Invalid regular expression: /(/dgimsy: Unterminated group"
    with pytest.raises(JsUnsupported, match="v flag"):
        JsRegExp("a", "v")


def test_what_python_cannot_match_is_said() -> None:
    with pytest.raises(JsUnsupported, match="unbounded width"):
        JsRegExp(r"(?<=a+)b")
    with pytest.raises(JsUnsupported, match="property"):
        JsRegExp(r"\p{L}", "u")
    with pytest.raises(JsSyntaxError, match="Unterminated group"):  # the syntax comes first
        JsRegExp(r"\p{L}(", "u")


def exec_all(pattern: str, flags: str, text: str) -> list[tuple[int, int, str]]:
    """``exec`` in a loop, as ``matchAll`` does: (index, lastIndex, match[0]) of each."""
    regexp, last = JsRegExp(pattern, flags), 0
    out: list[tuple[int, int, str]] = []
    while (match := regexp.exec(text, last)) is not None and len(out) < 10:
        out.append((match.index, match.end, match.groups[0] or ""))
        last = match.end if match.end > match.index else match.end + 1
    return out


def test_last_index_counts_code_units() -> None:
    assert exec_all(".", "g", "a" + GRIN) == [(0, 1, "a"), (1, 2, "\ud83d"), (2, 3, "\ude00")]
    assert exec_all(".", "gu", "a" + GRIN) == [(0, 1, "a"), (1, 3, GRIN)]
    assert exec_all("a", "y", "aab") == [(0, 1, "a"), (1, 2, "a")]  # sticky: from lastIndex only
    assert JsRegExp("a", "g").exec("ab", 3) is None  # lastIndex past the end
    assert JsRegExp(".", "gu").exec(GRIN, 1) == JsRegExp(".", "gu").exec(GRIN, 0)  # V8 steps back


def test_captures_spans_and_names_are_javascripts() -> None:
    match = JsRegExp(r"(?<word>\w+)(x)?").exec("  hi")
    assert match is not None
    assert (match.index, match.end, match.groups, dict(match.named)) == (
        2, 4, ("hi", "hi", None), {"word": "hi"}
    )  # fmt: skip
    # past its minimum a repetition that matches nothing fails (Python's re would stop there)
    assert exec_all(r"(a??|b)+", "g", "ab") == [(0, 2, "ab"), (2, 2, "")]
    looped = JsRegExp(r"(a*)*b").exec("aab")
    assert looped is not None and looped.groups == ("aab", "aa")


@needs_node
def test_the_expected_answers_are_node_s() -> None:
    cases = [[p, f, t] for p, f, t, _ in MATCHES] + [[p, "", ""] for p, _ in REFUSED]
    script = """
      const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
      console.log(JSON.stringify(cases.map(([p, f, t]) => {
        try { const m = new RegExp(p, f).exec(t); return m ? [m.index, m[0]] : null; }
        catch (e) { return e.message; }
      })).replace(/[\\ud800-\\udfff]/g, c => '\\\\u' + c.charCodeAt(0).toString(16)));
    """
    answers = _node(script, cases)
    expected: list[Any] = [None if e is None else list(e) for *_, e in MATCHES]
    expected += [f"Invalid regular expression: /{p}/: {m}" for p, m in REFUSED]
    assert answers == expected


def _node(script: str, data: Any) -> Any:
    done = subprocess.run(
        ["node", "-e", script], input=json.dumps(data), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


# --- promptfoo's regex assertion ------------------------------------------------------------------


def regex(kind: str, value: Any, output: str) -> Verdict:
    call = HandlerCall(
        assertion=Assertion(type=kind, value=value),
        value=value,
        output=output,
        text=output,
        provider={"id": "echo", "label": "", "config": {}},
        provider_response={"output": output},
        prompt="p",
        variables={},
        latency_ms=0,
        cost=0.0,
        base_dir=Path.cwd(),
        node=NodeRuntime(),
        env={},
    )
    return anyio.run(handle, call)


def test_the_regex_assertion_is_new_regexp_test() -> None:
    assert regex("regex", "^..$", GRIN) == Verdict(True, 1.0, "Assertion passed")
    assert regex("regex", "^.$", GRIN) == Verdict(
        False, 0.0, 'Expected output to match regex "^.$"'
    )
    assert regex("not-regex", "^.$", GRIN) == Verdict(True, 1.0, "Assertion passed")
    assert regex("not-regex", r"\d", "a1") == Verdict(
        False, 0.0, 'Expected output to not match regex "\\d"'
    )


def test_a_pattern_v8_refuses_fails_whatever_not_says() -> None:
    reason = "Invalid regex pattern: Invalid regular expression: /(?i)yes/: Invalid group"
    assert regex("regex", "(?i)yes", "yes") == Verdict(False, 0.0, reason)
    assert regex("not-regex", "(?i)yes", "no") == Verdict(False, 0.0, reason)


def test_no_pattern_and_one_coalmine_cannot_match_are_errors() -> None:
    for value in ("", None, 3):
        with pytest.raises(HandlerError, match='"regex" assertion type must have a string value'):
            regex("regex", value, "x")
    with pytest.raises(HandlerError, match=r"^unsupported: .*unbounded width"):
        regex("regex", "(?<=a+)b", "aab")


# --- the other way: Python patterns (coalmine's regex grader) exported to promptfoo ---------------

# (pattern, text, Python's answer)
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


def test_exported_patterns_match_here_as_in_python() -> None:
    assert [bool(re.search(p, t)) for p, t, _ in EXPORTED] == [e for _, _, e in EXPORTED]
    assert [JsRegExp(javascript_pattern(p)[0]).test(t) for p, t, _ in EXPORTED] == [
        e for _, _, e in EXPORTED
    ]


@needs_node
def test_exported_patterns_match_in_javascript_as_in_python() -> None:
    pairs = [[javascript_pattern(p)[0], t] for p, t, _ in EXPORTED]
    script = (
        "const c = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(c.map(([p, t]) => new RegExp(p).test(t))))"
    )
    assert _node(script, pairs) == [e for _, _, e in EXPORTED]
