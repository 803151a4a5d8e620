"""promptfoo's verdict for a row, from the outcome of each of its assertions.

This mirrors promptfoo 0.121.20: the ``AssertionsResult`` class
(``src/assertions/assertionsResult.ts``), the end of ``runAssertion`` and ``runAssertions``
(``src/assertions/index.ts``), and ``applyGradingResult`` and the error paths of ``runEval``
(``src/evaluator.ts``). Each grader decides its own assertion's pass and score, ``not-``
inversion included (promptfoo's handlers invert for themselves, each in its own way, e.g.
``1 - score`` for ``similar``); :func:`score_row` then does what promptfoo does with them:

- **weight 0 passes**: an assertion of weight 0 is reported as passed (its score is kept, its
  reason too) and counts for nothing in the score. Bug kept: a ``file://`` Python value whose
  script raises fails the assertion before that rule, so it fails at weight 0 too.
- **score** = Σ score·weight / Σ weight over the top-level entries, 0 when Σ weight is 0.
- **pass**: without a threshold, the row passes unless an entry failed; with one (a number),
  it passes iff score ≥ threshold, whatever the entries did, and the reason becomes
  ``Aggregate score 0.67 ≥ 0.6 threshold``.
- **reason**: ``All assertions passed``, or the reason of the LAST failing entry, where the
  assert-sets are added after all plain assertions: a failing set's reason wins over any plain
  assertion's, even one written after it. A failing entry with an empty reason does not fail
  the row (promptfoo tests the reason, not the pass).
- **assert-set**: one entry, scored by its own nested aggregate (its children, its
  ``threshold``); its ``weight`` and ``metric`` apply to that entry. Its children follow it in
  ``componentResults`` (promptfoo flattens them in, and keeps them inside the set's entry too).
  Bug kept: ``weight: 0`` on an assert-set does NOT make it pass (only ``runAssertion`` forces
  that, and a set never goes through it), though it still counts for nothing in the score.
- **namedScores**: per ``metric`` (rendered with the vars), Σ score·weight / Σ weight; a set's
  children's metrics reach the row weighted by child weight × set weight, except a child
  metric equal to the set's own, which only the set's entry feeds.
- no assertions at all: pass, score 1, ``No assertions``.
- a failing ``guardrails`` assertion with ``config.purpose: redteam`` makes its aggregate pass
  with the reason ``Content failed guardrail safety checks``.
- a plain assertion's own ``threshold`` (``similar``, ``llm-rubric`` …) is its grader's business;
  only the test's and an assert-set's thresholds are applied here.
- ``PROMPTFOO_SHORT_CIRCUIT_TEST_FAILURES`` (the first failure throws, making the row an ERROR)
  is not modelled.

Row outcomes (``failureReason``): ``NONE`` (0) for a pass, ``ASSERT`` (1) for a graded
failure, ``ERROR`` (2) when anything threw while the row ran: the prompt failed to render, the
provider returned ``error`` or threw, a ``transform`` (test-level or assertion-level) threw or
returned nothing, an assertion type is unknown (``Unknown assertion type: …``), a grader's
invariant failed (``regex`` without a value …), an assertion value failed to render, the row
timed out. Not errors: a ``file://*.py`` assertion script that throws (a failure with its
message), an invalid regex (``Invalid regex pattern: …``), and an output of ``null``: promptfoo
marks that row failed with ``No output`` but leaves ``failureReason`` at 0, so its statistics
count it as a failure. ``select-best``/``max-score`` are graded across outputs afterwards and
are skipped here (``max-score``: :mod:`coalmine.promptfoo.comparison`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.nunjucks import render_metric_name
from coalmine.promptfoo.nunjucks._js import js_number, js_to_fixed

__all__ = [
    "AssertSetOutcome",
    "AssertionOutcome",
    "ComponentResult",
    "FailureReason",
    "RowOutcome",
    "RowScore",
    "empty_output_row",
    "error_row",
    "graded_row",
    "score_row",
]

ALL_PASSED = "All assertions passed"
NO_ASSERTIONS = "No assertions"
GUARDRAIL_BLOCKED = "Content failed guardrail safety checks"
NO_OUTPUT = "No output"


@dataclass(frozen=True)
class AssertionOutcome:
    """What a grader returned for one assertion (``not-`` already applied by the grader)."""

    assertion: Assertion
    passed: bool
    score: float
    reason: str
    named_scores: Mapping[str, float] = field(default_factory=dict)
    """Scores a grader reports by name itself (a ``javascript`` result's ``namedScores``)."""
    named_score_weights: Mapping[str, float] = field(default_factory=dict)
    """The weights a script's GradingResult gives its ``namedScores`` (1 where it gives none)."""
    components: tuple[ComponentResult, ...] = ()
    """The ``componentResults`` a script's GradingResult holds (:func:`script_components`)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """The other keys of a script's GradingResult (``tokensUsed``, ``comment`` …), as given."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    rendered_value: Any = None
    """The assertion's value after rendering, when the grader used a rendered string."""
    early: bool = False
    """promptfoo returned this before its weight-0 rule (a ``file://`` Python value whose script
    raised): it fails even at weight 0."""


@dataclass(frozen=True)
class AssertSetOutcome:
    """An ``assert-set`` and the outcomes of its children, in the set's order."""

    assertion: Assertion
    children: tuple[AssertionOutcome, ...]


@dataclass(frozen=True)
class ComponentResult:
    """One entry of promptfoo's ``gradingResult.componentResults``."""

    passed: bool
    score: float
    reason: str
    assertion: Assertion | None
    """``None`` for an assert-set's own entry (promptfoo writes no assertion there)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    named_scores: Mapping[str, float] | None = None
    """An assert-set's normalised named scores; ``None`` for a plain assertion."""
    named_score_weights: Mapping[str, float] = field(default_factory=dict)
    children: tuple[ComponentResult, ...] = ()
    """An assert-set's own entries, or the ``componentResults`` of a script's GradingResult
    (they also follow it in the flattened list)."""
    raw: Mapping[str, Any] | None = None
    """A result a script returned inside its GradingResult, as it returned it (its
    ``assertion`` is then the parent's when it names none); ``None`` for coalmine's own."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """The other keys of a script's GradingResult (``tokensUsed``, ``comment`` …), as given."""


@dataclass(frozen=True)
class RowScore:
    """promptfoo's ``gradingResult`` for a row (or for an assert-set)."""

    passed: bool
    score: float
    reason: str
    named_scores: dict[str, float]
    named_score_weights: dict[str, float]
    component_results: tuple[ComponentResult, ...]
    """Flattened: each assert-set entry is followed by its children."""
    has_assertions: bool = True
    """False for promptfoo's ``No assertions`` result (which has no ``namedScores`` key)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """What an ``assertScoringFunction`` answered besides ``pass``, ``score``, ``reason``,
    ``namedScores`` and ``componentResults`` (``tokensUsed``, ``metadata`` …), as given; and the
    ``assertion`` a ``max-score`` comparison leaves there."""

    @property
    def assertions_passed(self) -> int:
        """Passed entries, counted as promptfoo's ``assertPassCount`` counts them."""
        return sum(1 for c in self.component_results if c.passed)

    @property
    def assertions_failed(self) -> int:
        """Failed entries, counted as promptfoo's ``assertFailCount`` counts them."""
        return sum(1 for c in self.component_results if not c.passed)


def _is_comparison(assertion: Assertion) -> bool:
    return assertion.type.startswith("select-") or assertion.type == "max-score"


class _Aggregate:
    """promptfoo's ``AssertionsResult``: entries added one by one, then one result."""

    def __init__(self, threshold: float | None) -> None:
        self.threshold = threshold
        self.total_score = 0.0
        self.total_weight = 0.0
        self.failed_reason: str | None = None
        self.entries: dict[int, ComponentResult] = {}
        self.named: dict[str, float] = {}
        self.named_weights: dict[str, float] = {}
        self.guardrail_blocked = False

    def add(self, index: int, entry: ComponentResult, *, metric: str | None, weight: float) -> None:
        self.total_score += entry.score * weight
        self.total_weight += weight
        self.entries[index] = entry
        assertion = entry.assertion
        if (
            assertion is not None
            and assertion.type == "guardrails"
            and assertion.config.get("purpose") == "redteam"
            and not entry.passed
        ):
            self.guardrail_blocked = True
        if metric:
            self.named[metric] = self.named.get(metric, 0) + entry.score * weight
            self.named_weights[metric] = self.named_weights.get(metric, 0) + weight
        for name, score in (entry.named_scores or {}).items():
            if name != metric:
                incoming = entry.named_score_weights.get(name, 1) * weight
                self.named[name] = self.named.get(name, 0) + score * incoming
                self.named_weights[name] = self.named_weights.get(name, 0) + incoming
        if not entry.passed:
            self.failed_reason = entry.reason

    def result(self) -> RowScore:
        score = self.total_score / self.total_weight if self.total_weight > 0 else 0.0
        passed = not self.failed_reason
        reason = self.failed_reason or ALL_PASSED
        if self.threshold is not None and not math.isnan(self.threshold):
            passed = score >= self.threshold
            comparator = "≥" if passed else "<"
            reason = (
                f"Aggregate score {js_to_fixed(score, 2)} {comparator} "
                f"{js_number(self.threshold)} threshold"
            )
        if self.guardrail_blocked:
            passed, reason = True, GUARDRAIL_BLOCKED
        flat: list[ComponentResult] = []
        for index in sorted(self.entries):
            entry = self.entries[index]
            flat.append(entry)
            flat.extend(entry.children)
        named = {
            key: value / self.named_weights[key] if self.named_weights.get(key, 0) > 0 else 0.0
            for key, value in self.named.items()
        }
        return RowScore(passed, score, reason, named, dict(self.named_weights), tuple(flat))


def _graded_entry(outcome: AssertionOutcome) -> ComponentResult:
    """What ``runAssertion`` returns after the grader: metadata noted, weight 0 forced to pass."""
    metadata = dict(outcome.metadata)
    rendered = outcome.rendered_value
    if isinstance(rendered, str) and rendered != outcome.assertion.value:
        metadata["renderedAssertionValue"] = rendered
    return ComponentResult(
        passed=True if outcome.assertion.weight == 0 and not outcome.early else outcome.passed,
        score=outcome.score,
        reason=outcome.reason,
        assertion=outcome.assertion,
        metadata=metadata,
        named_scores=dict(outcome.named_scores) or None,
        named_score_weights=dict(outcome.named_score_weights),
        children=outcome.components,
        extra=dict(outcome.extra),
    )


def _metric(assertion: Assertion, variables: Mapping[str, Any]) -> str | None:
    return render_metric_name(assertion.metric, variables) if assertion.metric else None


def _set_metadata(assertion: Assertion) -> dict[str, Any]:
    given = assertion.model_fields_set
    info: dict[str, Any] = {
        "type": assertion.type,
        "assertionCount": len(assertion.children or ()),
    }
    for name in ("metric", "threshold", "weight"):
        if name in given:
            info[name] = getattr(assertion, name)
    return {"assertionSet": info}


def _score_set(outcome: AssertSetOutcome, variables: Mapping[str, Any]) -> ComponentResult:
    nested = _Aggregate(outcome.assertion.threshold)
    for index, child in enumerate(outcome.children):
        if not _is_comparison(child.assertion):
            nested.add(
                index,
                _graded_entry(child),
                metric=_metric(child.assertion, variables),
                weight=child.assertion.weight,
            )
    result = nested.result()
    return ComponentResult(
        passed=result.passed,
        score=result.score,
        reason=result.reason,
        assertion=None,
        metadata=_set_metadata(outcome.assertion),
        named_scores=result.named_scores,
        named_score_weights=result.named_score_weights,
        children=tuple(_with_assertion(c, outcome.assertion) for c in result.component_results),
    )


def _with_assertion(entry: ComponentResult, fallback: Assertion) -> ComponentResult:
    return entry if entry.assertion is not None else replace(entry, assertion=fallback)


def score_row(
    outcomes: Sequence[AssertionOutcome | AssertSetOutcome],
    *,
    threshold: float | None = None,
    variables: Mapping[str, Any] | None = None,
) -> RowScore:
    """Promptfoo's ``runAssertions`` result for a row, from its assertions' outcomes.

    Args:
        outcomes: One per assertion of the test, in the test's order (``defaultTest``'s first).
        threshold: The test's ``threshold``.
        variables: The test's vars (metric names are rendered with them).
    """
    if not outcomes:
        return RowScore(True, 1.0, NO_ASSERTIONS, {}, {}, (), has_assertions=False)
    variables = variables or {}
    main = _Aggregate(threshold)
    sets: list[tuple[int, AssertSetOutcome]] = []
    for index, outcome in enumerate(outcomes):
        if isinstance(outcome, AssertSetOutcome):
            sets.append((index, outcome))
        elif not _is_comparison(outcome.assertion):
            main.add(
                index,
                _graded_entry(outcome),
                metric=_metric(outcome.assertion, variables),
                weight=outcome.assertion.weight,
            )
    for index, set_outcome in sets:
        main.add(
            index,
            _score_set(set_outcome, variables),
            metric=_metric(set_outcome.assertion, variables),
            weight=set_outcome.assertion.weight,
        )
    return main.result()


class FailureReason(IntEnum):
    """promptfoo's ``ResultFailureReason``."""

    NONE = 0
    ASSERT = 1
    ERROR = 2


@dataclass(frozen=True)
class RowOutcome:
    """A row as promptfoo reports it: ``success``, ``score``, ``failureReason``, ``error``."""

    success: bool
    score: float
    failure_reason: FailureReason
    error: str | None
    named_scores: dict[str, float]
    grading: RowScore | None = None

    @property
    def status(self) -> str:
        """``pass``, ``fail`` or ``error``, as promptfoo's statistics count the row."""
        if self.success:
            return "pass"
        return "error" if self.failure_reason is FailureReason.ERROR else "fail"


def graded_row(grading: RowScore) -> RowOutcome:
    """The row of a graded output (``applyGradingResult``); a failure keeps its score."""
    return RowOutcome(
        success=grading.passed,
        score=grading.score,
        failure_reason=FailureReason.NONE if grading.passed else FailureReason.ASSERT,
        error=None if grading.passed else grading.reason,
        named_scores=dict(grading.named_scores),
        grading=grading,
    )


def error_row(message: str) -> RowOutcome:
    """A row on which something threw, or whose provider returned an error: score 0."""
    return RowOutcome(False, 0.0, FailureReason.ERROR, message, {})


def empty_output_row() -> RowOutcome:
    """A row whose provider returned no output: failed, but ``failureReason`` stays 0."""
    return RowOutcome(False, 0.0, FailureReason.NONE, NO_OUTPUT, {})
