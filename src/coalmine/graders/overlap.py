"""Overlap with a reference: ``rouge-n``, ``bleu`` and ``gleu``, named and meant as promptfoo's.

Each is also ``not-<name>``. Where promptfoo's behaviour is a trap, coalmine differs:

- ``rouge-n`` is ROUGE-N recall as Lin defined it (repeated n-grams clipped to their count in
  the reference) on case-sensitive Penn Treebank tokens, as js-rouge tokenises. promptfoo's
  value drifted with js-rouge: up to 3.0, recall over *distinct* n-grams, so an answer equal
  to a reference with a repeated word scored below 1 (and ``n`` was ignored); from 3.1, the F1
  of precision and recall, which is ``measure: f1`` here.
- ``bleu`` is BLEU-4 as promptfoo now computes it: lower-cased whitespace tokens; the brevity
  penalty ``exp(1 - r/c)`` against the closest reference length, the shorter on a tie; each
  reference clipped on its own and the best total taken (not Papineni's per-n-gram maximum);
  an order the output is too short to have dropped, the weights shared by the others; a zero
  precision smoothed to 1e-7. Older promptfoo inverted the penalty (``exp(1 - c/r)``, a bonus
  up to e for a short output, scores above 1): not kept. An empty output scores 0.
- ``gleu`` is Google-BLEU exactly as promptfoo computes it: lower-cased whitespace tokens, each
  stripped of trailing dots; the 1- to 4-grams of output and reference counted together, the
  clipped matches over each side's total giving precision and recall, the score their minimum
  (1 when the token lists are equal), the best reference taken. An empty output scores 0 here
  (promptfoo throws).

In an eval suite, either grader left without a ``value`` takes the case's ``expected`` as its
reference, checked by the same rules when the case is graded (a bad or missing one is a config
error of that case).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from coalmine.graders.base import CaseInputs, GradeContext, NotNull, grader, value_or_expected
from coalmine.graders.text import JS_SPACE
from coalmine.results import Grade

ROUGE_THRESHOLD = 0.75
BLEU_THRESHOLD = 0.5
GLEU_THRESHOLD = 0.5
BLEU_SMOOTHING = 1e-7
_CONFIG = ConfigDict(extra="forbid", frozen=True)
_CONTRACTIONS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\b(can)(not)\b", r"\b(d)('ye)\b", r"\b(gim)(me)\b", r"\b(gon)(na)\b",
        r"\b(got)(ta)\b", r"\b(lem)(me)\b", r"\b(more)('n)\b", r"\b(wan)(na) ",
        r" ('t)(is)\b", r" ('t)(was)\b",
    )
)  # fmt: skip
# A sentence ends at . ? or ! before a capital or a digit (js-rouge also knows abbreviations).
_TRAILING_DOTS = re.compile(r"\.+$")
_SENTENCE_END = re.compile(r"(?<=[.?!]) (?=[\"'(\[]*[A-Z0-9])")
Text = Annotated[str, Field(pattern=r"\S")]


def treebank_tokens(text: str) -> list[str]:
    """Split ``text`` into Penn Treebank tokens, sentence by sentence, as js-rouge does."""
    sentences = _SENTENCE_END.split(" ".join(text.split()))
    return [token for sentence in sentences if sentence for token in _sentence_tokens(sentence)]


def _sentence_tokens(text: str) -> list[str]:
    text = re.sub(r'^"', " `` ", text)
    text = re.sub(r'([ (\[{<])"', r"\1 `` ", text)
    text = re.sub(r"\.\.+", " ... ", text)
    text = re.sub(r"[;@#$%&]", r" \g<0> ", text)
    text = re.sub(r"([^.])(\.)([\])}>\"']*)\s*$", r"\1 \2\3 ", text)
    text = re.sub(r"[:,](?!\d)|[?!]", r" \g<0> ", text)
    text = re.sub(r"[\][(){}<>]", r" \g<0> ", text)
    text = f" {text.replace('--', ' -- ')} ".replace('"', " '' ")
    text = re.sub(r"([^'])' ", r"\1 ' ", text)
    text = re.sub(r"'([sSmMdD]) ", r" '\1 ", text)
    text = re.sub(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r" \1 ", text)
    for contraction in _CONTRACTIONS:
        text = contraction.sub(r" \1 \2 ", text)
    return text.split()


def _ngrams(tokens: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def rouge_n(candidate: str, reference: str, *, n: int = 1, measure: str = "recall") -> float:
    """ROUGE-N of ``candidate`` against ``reference``: recall, or ``measure="f1"``."""
    ref = _ngrams(treebank_tokens(reference), n)
    cand = _ngrams(treebank_tokens(candidate), n)
    overlap = sum((cand & ref).values())
    if not overlap:
        return 0.0
    recall = overlap / sum(ref.values())
    if measure == "recall":
        return recall
    precision = overlap / sum(cand.values())
    return 2 * precision * recall / (precision + recall)


class RougeConfig(BaseModel):
    """Config of ``rouge-n``."""

    model_config = _CONFIG

    case_inputs: ClassVar[CaseInputs] = {"expected": ("value",)}

    value: Annotated[Text | None, NotNull] = None
    """The reference text. Left out: the case's ``expected``."""
    n: int = Field(1, ge=1)
    """The n-gram size: 1 for unigrams, 2 for bigrams …"""
    threshold: float = Field(ROUGE_THRESHOLD, ge=0, le=1)
    """The score at which it passes."""
    measure: Literal["recall", "f1"] = "recall"
    """``recall`` (ROUGE-N as defined) or ``f1`` (promptfoo with js-rouge 3.1 or later)."""

    @model_validator(mode="after")
    def _long_enough(self) -> RougeConfig:
        if self.value is not None and len(treebank_tokens(self.value)) < self.n:
            raise ValueError(f"the reference has fewer than n={self.n} tokens")
        return self


class OverlapGrade(Grade):
    """Result of ``rouge-n`` and ``bleu``."""

    metric: str
    threshold: float

    def explain(self) -> str:
        """Compare the score with the threshold."""
        if self.score is None or self.score >= self.threshold:
            return ""
        return f"{self.metric} {self.score:.4f} < {self.threshold:g}"


@grader("rouge-n", config=RougeConfig, threshold=ROUGE_THRESHOLD, negatable=True)
async def rouge(config: RougeConfig, output: str, ctx: GradeContext) -> Grade:
    """Score the n-gram overlap of the output with the reference."""
    config = value_or_expected(config, ctx, "rouge-n")
    assert config.value is not None  # value_or_expected sets it
    score = rouge_n(output, config.value, n=config.n, measure=config.measure)
    metric, passed = f"ROUGE-{config.n} {config.measure}", score >= config.threshold
    return OverlapGrade(score=score, passed=passed, metric=metric, threshold=config.threshold)


def bleu_score(candidate: str, references: list[str]) -> float:
    """BLEU-4 of ``candidate`` against ``references``, computed as promptfoo does."""
    words = candidate.lower().split()
    if not words:
        return 0.0
    refs = [ref.lower().split() for ref in references]
    closest = min((len(ref) for ref in refs), key=lambda length: (abs(length - len(words)), length))
    logs = []
    for n in range(1, 5):
        cand = _ngrams(words, n)
        total = sum(cand.values())
        if not total:
            continue  # an output shorter than n: the other orders share the weight
        clipped = max(sum((cand & _ngrams(ref, n)).values()) for ref in refs)
        logs.append(math.log(clipped / total or BLEU_SMOOTHING))
    penalty = 1.0 if len(words) > closest else math.exp(1 - closest / len(words))
    return penalty * math.exp(sum(logs) / len(logs))


class _References(BaseModel):
    """The references of ``bleu`` and ``gleu``."""

    model_config = _CONFIG

    case_inputs: ClassVar[CaseInputs] = {"expected": ("value",)}

    value: Annotated[Text | Annotated[list[Text], Field(min_length=1)] | None, NotNull] = None
    """The reference text, or a list of references. Left out: the case's ``expected``."""

    def references(self, ctx: GradeContext, name: str) -> list[str]:
        value = value_or_expected(self, ctx, name).value
        assert value is not None  # value_or_expected sets it
        return [value] if isinstance(value, str) else value


class BleuConfig(_References):
    """Config of ``bleu``."""

    threshold: float = Field(BLEU_THRESHOLD, ge=0, le=1)
    """The score at which it passes."""


@grader("bleu", config=BleuConfig, threshold=BLEU_THRESHOLD, negatable=True)
async def bleu(config: BleuConfig, output: str, ctx: GradeContext) -> Grade:
    """Score the output's BLEU-4 against the reference(s)."""
    score = bleu_score(output, config.references(ctx, "bleu"))
    passed = score >= config.threshold
    return OverlapGrade(score=score, passed=passed, metric="BLEU", threshold=config.threshold)


def _gleu_words(text: str) -> list[str]:
    stripped = JS_SPACE.sub(" ", text.lower()).strip(" ")
    return [_TRAILING_DOTS.sub("", word) for word in stripped.split(" ")]


def gleu_score(candidate: str, references: list[str]) -> float:
    """Google-BLEU of ``candidate`` against ``references``, computed as promptfoo does."""
    words = _gleu_words(candidate)
    best = 0.0
    for reference in references:
        ref = _gleu_words(reference)
        if ref == words:
            return 1.0
        matches = total_candidate = total_reference = 0
        for n in range(1, 5):
            cand, refs = _ngrams(words, n), _ngrams(ref, n)
            matches += sum((cand & refs).values())
            total_candidate += sum(cand.values())
            total_reference += sum(refs.values())
        if total_candidate and total_reference:
            best = max(best, min(matches / total_candidate, matches / total_reference))
    return best


class GleuConfig(_References):
    """Config of ``gleu``."""

    threshold: float = Field(GLEU_THRESHOLD, ge=0, le=1)
    """The score at which it passes."""


@grader("gleu", config=GleuConfig, threshold=GLEU_THRESHOLD, negatable=True)
async def gleu(config: GleuConfig, output: str, ctx: GradeContext) -> Grade:
    """Score the output's Google-BLEU against the reference(s)."""
    score = gleu_score(output, config.references(ctx, "gleu")) if output.strip() else 0.0
    passed = score >= config.threshold
    return OverlapGrade(score=score, passed=passed, metric="GLEU", threshold=config.threshold)
