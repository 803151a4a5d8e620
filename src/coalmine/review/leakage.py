"""The leakage lint: secret grading text must not reach the prompts of the roles it grades.

Seed 003 names *rubric leakage* as one of the three faults of a naive review harness: a role
that sees the eval's assertions, ``trap`` or ``description`` while it works is primed toward
satisfying them, and its grade then measures the rubric, not the work. Before any call, the
pipeline passes every prompt a graded role will receive (and the eval's own ``prompt``
framing, which reaches the reviewer) to :func:`find_leaks`, with the secret texts. The rules:

1. **Normalisation** (:func:`normalise`). Both sides are read as words: Unicode NFKC (so
   full-width ``ＳＱＬ`` reads as ``SQL`` and the ligature ``ﬁ`` as ``fi``), case-folded,
   format characters (Unicode category Cf: zero-width space and joiners, word joiner, soft
   hyphen, BOM, bidi marks) dropped without splitting the word they sit in, and every run of
   anything but letters, digits and combining marks a word separator, so whitespace, line
   breaks and punctuation (``_`` too) only separate words. Why: re-wrapping, re-casing or
   sprinkling invisible characters over a pasted text must not hide it.
2. **exact**: the secret's words occur contiguously in the prompt, and the prompt's text from
   the first to the last of those words is the secret's own, character for character (case
   and punctuation included) once both are NFKC-normalised, stripped of format characters and
   their whitespace runs collapsed to one space. Punctuation before the first word or after
   the last (an assertion's full stop) is not compared. Why: a verbatim paste is the plainest
   leak, and the report should say so; layout alone does not make a copy less verbatim.
   **near-exact**: the secret's words occur contiguously in the prompt, but the text differs in
   case or punctuation. Why: re-typing an assertion leaks it just as well.
3. **ngram**: otherwise, the longest run of consecutive words the secret and the prompt share
   (the longest common substring over words) is a leak when it has at least ``min_ngram`` words
   (8 by default), at least 3 of them not stop-words. Why: a reworded assertion usually keeps
   its long core ("reports that the container spec has no cpu or memory limits set"), while two
   texts about the same change share short phrases ("memory limits") by coincidence. The
   stop-words (:data:`STOP_WORDS`: English function words, plus the words every review prompt
   uses, such as *code*, *diff* and *file*) keep boilerplate like "the code in the diff of the
   file is" from matching. A secret shorter than ``min_ngram`` words can only leak whole (exact
   or near-exact): "Flags SQL injection" pasted is caught, "SQL injection" alone is not. A
   secret without words (empty, or punctuation only) never leaks.
4. **One leak per (role, source)**, the strongest kind: exact > near-exact > ngram. Its
   ``phrase`` is the matched text as the prompt has it (format characters dropped, whitespace
   collapsed to keep the message on one line), cut to 120 characters. Results are sorted by
   role, then source.

Cost. Each text is tokenised once, in time linear in its length, and each prompt's words are
indexed (word → positions). The longest shared run is the classic dynamic programme
``run[i][j] = run[i-1][j-1] + 1`` where secret word ``i`` equals prompt word ``j``, computed
row by row over the secret's words but visiting only the prompt positions holding that word
(the index), so a pair costs O(m + matches) for a secret of m words, where *matches*, the
equal word pairs, is at most m·n for a prompt of n words and in practice far fewer: words
absent from the prompt cost nothing. The whole-secret occurrences fall out of the last row, and
the exact comparison stops at the first verbatim one. Ten secrets against three 50 KB prompts
take a fraction of a second.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["STOP_WORDS", "Leak", "LeakKind", "find_leaks", "normalise"]

LeakKind = Literal["exact", "near-exact", "ngram"]
"""How a secret reached a prompt, strongest first."""

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each either else
    few for from further had has have having he her here hers him his how i if in into is it
    its itself just may me might more most must my no nor not now of off on once only or other
    our out over own same shall she should so some such than that the their them then there
    these they this those through to too under until up upon very was we were what when where
    which while who whom why will with within without would yet you your
    code diff diffs file files change changes changed line lines patch repo repository review
    reviewer staged following output prompt
    """.split()
)
"""Words too common to make a shared run a leak: function words and review boilerplate."""

MAX_PHRASE = 120
_MIN_CONTENT_WORDS = 3  # non-stop-words an n-gram leak needs
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class Leak:
    """Secret grading text found in a prompt.

    Attributes:
        source: Which secret leaked: ``"assertion 1.2"``, ``"trap"``, ``"description"``.
        role: The role whose prompt leaked it, or ``"framing"`` for the eval's own prompt.
        kind: ``exact``, ``near-exact`` or ``ngram`` (see the module's rules).
        phrase: The leaked text as it appears in the prompt, at most 120 characters.
        length: The number of words the secret and the prompt share in it.
    """

    source: str
    role: str
    kind: LeakKind
    phrase: str
    length: int

    def __str__(self) -> str:
        return (
            f"the {self.role} prompt leaks {self.source} "
            f'({self.kind}, {self.length} words): "{self.phrase}"'
        )


@dataclass(frozen=True)
class _Tokens:
    """A text read as words, each with its span in the text."""

    text: str
    words: list[str]
    spans: list[tuple[int, int]]
    index: dict[str, list[int]] = field(default_factory=dict)


def normalise(text: str) -> list[str]:
    """Read ``text`` as the lint does: a list of NFKC, case-folded words of letters and digits.

    Format characters (zero-width, soft hyphen, BOM …) are dropped without splitting the word
    they sit in; whitespace, punctuation and every other character only separate words.

    Args:
        text: Any text.

    Returns:
        Its words, in order.
    """
    return _tokenise(text).words


def find_leaks(
    secrets: Mapping[str, str], prompts: Mapping[str, str], *, min_ngram: int = 8
) -> list[Leak]:
    """Find the secret texts that reach a prompt, by the rules of the module's docstring.

    Args:
        secrets: Source → secret text: the assertion texts, the ``trap``, the ``description``.
        prompts: Role → the full prompt that role receives; ``"framing"`` → the eval's prompt.
        min_ngram: The fewest shared consecutive words that make a reworded secret a leak.

    Returns:
        At most one leak per (role, source), the strongest, sorted by role then source.

    Raises:
        ValueError: ``min_ngram`` is below 1.
    """
    if min_ngram < 1:
        raise ValueError(f"min_ngram must be at least 1, not {min_ngram}")
    secret_tokens = {source: _tokenise(secrets[source]) for source in sorted(secrets)}
    leaks: list[Leak] = []
    for role in sorted(prompts):
        prompt = _tokenise(prompts[role], indexed=True)
        for source, secret in secret_tokens.items():
            found = _compare(secret, prompt, min_ngram)
            if found is not None:
                kind, first, length = found
                start, end = prompt.spans[first][0], prompt.spans[first + length - 1][1]
                phrase = _trim(_display(prompt.text[start:end]))
                leaks.append(Leak(source, role, kind, phrase, length))
    return leaks


def _compare(secret: _Tokens, prompt: _Tokens, min_ngram: int) -> tuple[LeakKind, int, int] | None:
    """The strongest leak of ``secret`` in ``prompt``: (kind, first prompt word, length)."""
    words = secret.words
    if not words:
        return None
    content = [0]  # content[k]: the non-stop-words among the secret's first k words
    for word in words:
        content.append(content[-1] + (word not in STOP_WORDS))
    best_length, best_end = 0, -1
    row: dict[int, int] = {}  # prompt position j → length of the shared run ending at (i, j)
    for i, word in enumerate(words):
        previous = row
        row = {j: previous.get(j - 1, 0) + 1 for j in prompt.index.get(word, ())}
        for j, length in row.items():
            if (
                length > best_length
                and length >= min_ngram
                and content[i + 1] - content[i + 1 - length] >= _MIN_CONTENT_WORDS
            ):
                best_length, best_end = length, j
    whole = [j - len(words) + 1 for j, length in row.items() if length == len(words)]
    if whole:
        expected = _surface(secret.text[secret.spans[0][0] : secret.spans[-1][1]])
        for first in whole:
            start, end = prompt.spans[first][0], prompt.spans[first + len(words) - 1][1]
            if _surface(prompt.text[start:end]) == expected:
                return "exact", first, len(words)
        return "near-exact", whole[0], len(words)
    if best_length:
        return "ngram", best_end - best_length + 1, best_length
    return None


def _tokenise(text: str, *, indexed: bool = False) -> _Tokens:
    words: list[str] = []
    spans: list[tuple[int, int]] = []
    if text.isascii():  # the common case, and the same words as the general loop below
        for match in _ASCII_WORD.finditer(text):
            words.append(match.group().lower())
            spans.append(match.span())
    else:
        _tokenise_unicode(text, words, spans)
    index: dict[str, list[int]] = {}
    if indexed:
        for position, word in enumerate(words):
            index.setdefault(word, []).append(position)
    return _Tokens(text, words, spans, index)


def _tokenise_unicode(text: str, words: list[str], spans: list[tuple[int, int]]) -> None:
    current: list[str] = []
    start = end = 0
    i = 0
    while i < len(text):
        if unicodedata.category(text[i]) == "Cf":  # invisible: neither a letter nor a break
            i += 1
            continue
        j = i + 1  # a character and its combining marks normalise together (e + ́ → é)
        while j < len(text) and unicodedata.category(text[j]).startswith("M"):
            j += 1
        for char in unicodedata.normalize("NFKC", text[i:j]).casefold():
            if char.isalnum() or unicodedata.category(char).startswith("M"):
                if not current:
                    start = i
                current.append(char)
                end = j
            elif current:
                words.append("".join(current))
                spans.append((start, end))
                current = []
        i = j
    if current:
        words.append("".join(current))
        spans.append((start, end))


def _display(text: str) -> str:
    """``text`` on one line: format characters dropped, whitespace runs collapsed."""
    return " ".join("".join(c for c in text if unicodedata.category(c) != "Cf").split())


def _surface(text: str) -> str:
    """``text`` as the exact comparison sees it: NFKC, on one line, case and punctuation kept."""
    return _display(unicodedata.normalize("NFKC", text))


def _trim(phrase: str) -> str:
    return phrase if len(phrase) <= MAX_PHRASE else phrase[: MAX_PHRASE - 1].rstrip() + "…"
