"""Deterministic text graders with promptfoo's names and meanings, each negatable with ``not-``.

``equals``, ``contains``, ``icontains``, ``contains-any``, ``contains-all``, ``icontains-any``,
``icontains-all``, ``starts-with``, ``regex``, ``levenshtein``, ``word-count`` and
``is-refusal`` each score 1.0 or 0.0 and pass at 1.0, as in promptfoo. Where promptfoo's
behaviour is a trap we keep it and say so, and where we differ the grader's docstring says how.

Differences for every grader: a value promptfoo would reject when grading (an empty value, a bad
regex, a bad comma-separated list) is a config error here, raised when the spec is loaded; values
are strings, never numbers (write ``"42"``); a blank item of a list, or an empty list, is an
error, since it would match any text or none. (A ``compat: promptfoo`` suite grades ``equals``
and the ``contains`` family by promptfoo's own rules: :mod:`coalmine.promptfoo.handlers`.)

In an eval suite, ``equals``, the ``contains`` family, ``starts-with`` and ``levenshtein`` left
without a ``value`` compare with the case's ``expected`` (as promptfoo's ``{{expected}}``
would), checked by the same rules when the case is graded; a bad or missing one is a config
error of that case.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from coalmine._util.excerpt import excerpt, first_difference
from coalmine._util.jsonpath import json_equal
from coalmine.graders._refusal import find_refusal
from coalmine.graders.base import (
    CaseInputs,
    GradeContext,
    GradeFn,
    NotNull,
    grader,
    value_or_expected,
)
from coalmine.results import Grade

THRESHOLD = 1.0

Text = Annotated[str, Field(min_length=1)]

# promptfoo's comma-separated values: a field is "quoted" (\" and \\ escape, "" is a quote) or
# runs to the next comma and is trimmed; empty fields are skipped.
_FIELD = re.compile(r'"((?:\\["\\]|""|[^"])*+)"\s*|([^\s,"][^,]*)')
_FIELDS = re.compile(rf"[\s,]*(?:(?:{_FIELD.pattern})(?:,[\s,]*|$))*")
_UNESCAPE = re.compile(r'\\(["\\])|""')


def split_values(text: str) -> list[str]:
    """Split a comma-separated value as promptfoo does: ``'a, "b, c"'`` is ``["a", "b, c"]``."""
    if not _FIELDS.fullmatch(text):
        raise ValueError(f"{text!r}: a quoted value must be closed, then followed by a comma")
    return [
        m[2].strip() if m[2] is not None else _UNESCAPE.sub(lambda e: e[1] or '"', m[1])
        for m in _FIELD.finditer(text)
    ]


def _split_if_string(value: object) -> object:
    return split_values(value) if isinstance(value, str) else value


Values = Annotated[list[Text], BeforeValidator(_split_if_string), Field(min_length=1)]


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EqualsConfig(_Config):
    """Config of ``equals``: the output is exactly ``value``."""

    case_inputs: ClassVar[CaseInputs] = {"expected": ("value",)}

    value: Annotated[str | dict[str, Any] | list[Any] | None, NotNull] = None
    """The expected output, compared as is (no trimming); an object or array compares as JSON.
    Left out: the case's ``expected``."""


class ContainsConfig(_Config):
    """Config of ``contains``, ``icontains`` and ``starts-with``."""

    case_inputs: ClassVar[CaseInputs] = {"expected": ("value",)}

    value: Annotated[Text | None, NotNull] = None
    """The text to look for (not trimmed). Left out: the case's ``expected``."""


class ContainsListConfig(_Config):
    """Config of ``contains-any``, ``contains-all``, ``icontains-any`` and ``icontains-all``."""

    case_inputs: ClassVar[CaseInputs] = {"expected": ("value",)}

    value: Annotated[Values | None, NotNull] = None
    """The texts to look for: a list, or one comma-separated string (quote a text with commas).
    Left out: the case's ``expected``."""


class RegexConfig(_Config):
    """Config of ``regex``: Python ``re.search`` finds ``value`` in the output."""

    value: Text
    """The pattern, in Python's ``re`` syntax."""
    flags: str = Field("", pattern="^[imsx]*$")
    """Any of ``i`` (ignore case), ``m`` (multiline), ``s`` (dot matches newline), ``x``."""

    @model_validator(mode="after")
    def _compiles(self) -> RegexConfig:
        try:
            self.compile()
        except re.error as exc:
            raise ValueError(f"invalid regular expression {self.value!r}: {exc}") from None
        return self

    def compile(self) -> re.Pattern[str]:
        """Return the compiled pattern (``re`` caches it)."""
        return re.compile(self.value, sum(_FLAGS[letter] for letter in set(self.flags)))


_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


class LevenshteinConfig(_Config):
    """Config of ``levenshtein``: the output is within ``threshold`` edits of ``value``."""

    case_inputs: ClassVar[CaseInputs] = {"expected": ("value",)}

    value: Annotated[str | None, NotNull] = None
    """The expected output. Left out: the case's ``expected``."""
    threshold: int = Field(5, ge=0)
    """The largest edit distance that passes (0 means equal, as in promptfoo 0.121.20)."""


class WordRange(_Config):
    """A range of word counts; either bound may be left out."""

    min: int | None = Field(None, ge=0)
    """The fewest words that pass."""
    max: int | None = Field(None, ge=0)
    """The most words that pass."""

    @model_validator(mode="after")
    def _bounded(self) -> WordRange:
        if self.min is None and self.max is None:
            raise ValueError("give 'min', 'max' or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max})")
        return self


class WordCountConfig(_Config):
    """Config of ``word-count``."""

    value: Annotated[int, Field(ge=0)] | WordRange
    """The exact number of words, or ``{min, max}``."""


class RefusalConfig(_Config):
    """Config of ``is-refusal`` (none)."""


class _TextGrade(Grade):
    def explain(self) -> str:
        """Say what failed the grader (for ``not-``: what was found); empty when it passed."""
        return "" if self.passed else self._observed()

    def _observed(self) -> str:
        raise NotImplementedError


class EqualsGrade(_TextGrade):
    """Result of ``equals``: whether the output equals the value, and where it first differs."""

    equal: bool
    as_json: bool
    first_difference: int | None = None
    """The first character where output and value differ (string comparison only)."""
    expected_excerpt: str | None = None
    """The value around the first difference (``…`` where it is cut)."""
    actual_excerpt: str | None = None
    """The output around the first difference (``…`` where it is cut)."""

    def _observed(self) -> str:
        if self.as_json:
            return f"output is {'' if self.equal else 'not '}equal to the value as JSON"
        if self.equal:
            return "output equals the value"
        where = f"output differs from the value at character {self.first_difference}"
        if self.expected_excerpt is None or self.actual_excerpt is None:
            return where  # a grade stored before the excerpts were kept
        return (
            f"{where}: expected {_quoted(self.expected_excerpt)}, "
            f"got {_quoted(self.actual_excerpt)}"
        )


def _quoted(text: str) -> str:
    """In double quotes, with newlines, tabs and other controls escaped (so they can be seen)."""
    return json.dumps(text, ensure_ascii=False)


class ContainsGrade(_TextGrade):
    """Result of the contains graders: which texts were found and which were not."""

    matched: list[str]
    missing: list[str]
    mode: Literal["all", "any"]

    def _observed(self) -> str:
        if self.mode == "all" and self.missing:
            return "missing " + ", ".join(map(repr, self.missing))
        if self.mode == "any" and not self.matched:
            return "found none of " + ", ".join(map(repr, self.missing))
        return "found " + ", ".join(map(repr, self.matched))


class StartsWithGrade(_TextGrade):
    """Result of ``starts-with``."""

    starts: bool
    start: str
    """The output's first characters, as many as the value has."""

    def _observed(self) -> str:
        return f"output starts with {self.start!r}"


class RegexGrade(_TextGrade):
    """Result of ``regex``: the first match, if any."""

    match: str | None

    def _observed(self) -> str:
        return "no match" if self.match is None else f"matched {self.match!r}"


class LevenshteinGrade(_TextGrade):
    """Result of ``levenshtein``."""

    distance: int
    max_distance: int

    def _observed(self) -> str:
        sign = ">" if self.distance > self.max_distance else "<="
        return f"edit distance {self.distance} {sign} {self.max_distance}"


class WordCountGrade(_TextGrade):
    """Result of ``word-count``."""

    words: int
    in_range: bool
    expected: str
    """What passes: ``exactly 12``, ``between 10 and 50``, ``at least 10`` or ``at most 50``."""

    def _observed(self) -> str:
        return f"{self.words} words, {'' if self.in_range else 'not '}{self.expected}"


class RefusalGrade(_TextGrade):
    """Result of ``is-refusal``: whether the output reads as a refusal, and why."""

    refusal: bool
    signal: str | None
    """What made it a refusal: ``empty output``, ``starts with …``, ``apology, then …``, …"""

    def _observed(self) -> str:
        return f"refusal: {self.signal}" if self.refusal else "no refusal found"


def _verdict(ok: bool) -> dict[str, Any]:
    return {"score": 1.0 if ok else 0.0, "passed": ok}


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # JSON.parse rejects NaN and Infinity too


def score_equals(output: str, config: EqualsConfig) -> EqualsGrade:
    """Grade exact equality: as strings, or as JSON when the value is an object or array.

    A trap kept from promptfoo: nothing is trimmed, so a trailing newline fails the grader.
    """
    value = config.value
    if value is None:
        raise ValueError("equals has no value (use value_or_expected first)")
    if not isinstance(value, str):
        try:
            equal = json_equal(value, json.loads(output, parse_constant=_reject_constant))
        except ValueError:
            equal = False
        return EqualsGrade(equal=equal, as_json=True, **_verdict(equal))
    diff = first_difference(output, value)
    if diff is None:
        return EqualsGrade(equal=True, as_json=False, **_verdict(True))
    return EqualsGrade(
        equal=False, as_json=False, first_difference=diff, expected_excerpt=excerpt(value, diff),
        actual_excerpt=excerpt(output, diff), **_verdict(False),
    )  # fmt: skip


def score_contains(
    output: str, values: list[str], *, ignore_case: bool, mode: Literal["all", "any"]
) -> ContainsGrade:
    """Grade substrings; with ``ignore_case`` both sides are Unicode-casefolded.

    promptfoo lowercases instead, so ``icontains`` here is a little broader: "STRASSE" contains
    "straße" (casefold maps ß to ss), which promptfoo's ``toLowerCase`` does not find.
    """
    haystack = output.casefold() if ignore_case else output
    found = [v for v in values if (v.casefold() if ignore_case else v) in haystack]
    missing = [v for v in values if v not in found]
    ok = not missing if mode == "all" else bool(found)
    return ContainsGrade(matched=found, missing=missing, mode=mode, **_verdict(ok))


def _contains_grader(
    name: str, *, ignore_case: bool, mode: Literal["all", "any"], doc: str
) -> GradeFn:
    async def grade(
        config: ContainsConfig | ContainsListConfig, output: str, ctx: GradeContext
    ) -> Grade:
        value = value_or_expected(config, ctx, name).value
        values = [value] if isinstance(value, str) else value
        assert values is not None  # value_or_expected sets it
        return score_contains(output, values, ignore_case=ignore_case, mode=mode)

    grade.__name__ = name.replace("-", "_")
    grade.__doc__ = doc
    return grade


_CONTAINS: list[tuple[str, type[BaseModel], bool, Literal["all", "any"], str]] = [
    ("contains", ContainsConfig, False, "all", "The output contains the value (case-sensitive)."),
    ("icontains", ContainsConfig, True, "all", "The output contains the value, ignoring case."),
    ("contains-any", ContainsListConfig, False, "any", "The output contains one of the values."),
    ("contains-all", ContainsListConfig, False, "all", "The output contains every value."),
    ("icontains-any", ContainsListConfig, True, "any", "Contains one value, ignoring case."),
    ("icontains-all", ContainsListConfig, True, "all", "Contains every value, ignoring case."),
]
for _name, _config, _fold, _mode, _doc in _CONTAINS:
    _grade = _contains_grader(_name, ignore_case=_fold, mode=_mode, doc=_doc)
    grader(_name, config=_config, threshold=THRESHOLD, negatable=True)(_grade)


@grader("equals", config=EqualsConfig, threshold=THRESHOLD, negatable=True)
async def equals(config: EqualsConfig, output: str, ctx: GradeContext) -> Grade:
    """The output is exactly the value (not trimmed), or equal JSON for an object value."""
    return score_equals(output, value_or_expected(config, ctx, "equals"))


@grader("starts-with", config=ContainsConfig, threshold=THRESHOLD, negatable=True)
async def starts_with(config: ContainsConfig, output: str, ctx: GradeContext) -> Grade:
    """The output starts with the value; not trimmed, so a leading newline fails (as promptfoo)."""
    value = value_or_expected(config, ctx, "starts-with").value
    assert value is not None  # value_or_expected sets it
    ok = output.startswith(value)
    return StartsWithGrade(starts=ok, start=output[: len(value)], **_verdict(ok))


@grader("regex", config=RegexConfig, threshold=THRESHOLD, negatable=True)
async def regex(config: RegexConfig, output: str, ctx: GradeContext) -> Grade:
    r"""The pattern matches somewhere in the output (Python ``re.search``).

    promptfoo compiles a JavaScript RegExp without flags; the syntax mostly agrees, but not
    always (``\d`` matches any Unicode digit here, and named groups are ``(?P<name>…)``).
    """
    found = config.compile().search(output)
    return RegexGrade(match=None if found is None else found.group(0), **_verdict(bool(found)))


def levenshtein_distance(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions) by Myers' bit-parallel algorithm.

    Counts code points; promptfoo's ``fastest-levenshtein`` counts UTF-16 units, so a character
    beyond the BMP (most emoji) costs 2 edits there and 1 here.
    """
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    peq: dict[str, int] = {}
    for i, char in enumerate(b):
        peq[char] = peq.get(char, 0) | 1 << i
    mask, top = (1 << len(b)) - 1, 1 << (len(b) - 1)
    pv, mv, distance = mask, 0, len(b)
    for char in a:
        eq = peq.get(char, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | ~(xh | pv)
        mh = pv & xh
        distance += bool(ph & top) - bool(mh & top)
        ph = (ph << 1) | 1
        pv = ((mh << 1) | ~(xv | ph)) & mask
        mv = ph & xv & mask
    return distance


@grader("levenshtein", config=LevenshteinConfig, threshold=THRESHOLD, negatable=True)
async def levenshtein(config: LevenshteinConfig, output: str, ctx: GradeContext) -> Grade:
    """The output is within ``threshold`` (default 5) edits of the value; scores 1 or 0.

    The threshold is a whole number of edits here; promptfoo compares any number (a compat
    suite gets promptfoo's verdict: :mod:`coalmine.promptfoo.handlers`).
    """
    config = value_or_expected(config, ctx, "levenshtein")
    assert config.value is not None  # value_or_expected sets it
    distance = levenshtein_distance(output, config.value)
    ok = distance <= config.threshold
    return LevenshteinGrade(distance=distance, max_distance=config.threshold, **_verdict(ok))


# JavaScript's \s, which promptfoo splits on (Python's str.split() differs on a few controls).
JS_SPACE = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+")


@grader("word-count", config=WordCountConfig, threshold=THRESHOLD, negatable=True)
async def word_count(config: WordCountConfig, output: str, ctx: GradeContext) -> Grade:
    """The number of whitespace-separated words is the value, or within ``{min, max}``."""
    words = len([w for w in JS_SPACE.split(output) if w])
    spec = config.value
    if isinstance(spec, int):
        ok, expected = words == spec, f"exactly {spec}"
    else:
        low, high = spec.min, spec.max
        ok = (low is None or words >= low) and (high is None or words <= high)
        expected = f"at most {high}" if low is None else f"at least {low}"
        expected = f"between {low} and {high}" if None not in (low, high) else expected
    return WordCountGrade(words=words, in_range=ok, expected=expected, **_verdict(ok))


@grader("is-refusal", config=RefusalConfig, threshold=THRESHOLD, negatable=True)
async def is_refusal(config: RefusalConfig, output: str, ctx: GradeContext) -> Grade:
    """The output is a refusal ("I can't help with that", "As an AI…"), or empty.

    A trap kept from promptfoo: broad phrases count anywhere, so "this is not legal advice" and
    "we cannot help but smile" read as refusals. promptfoo passes an empty output with score 0;
    here it scores 1, so score and verdict agree. promptfoo also trusts a provider's own refusal
    flag, which coalmine does not get.
    """
    signal = find_refusal(output)
    return RefusalGrade(refusal=signal is not None, signal=signal, **_verdict(signal is not None))
