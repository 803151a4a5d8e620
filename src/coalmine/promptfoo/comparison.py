"""promptfoo's ``max-score``: the rows of one test graded against each other, once all are graded.

This mirrors promptfoo 0.121.20's ``selectMaxScore`` (``src/matchers``),
``mergeMaxScoreGradingResult`` and ``updateComparisonStats`` (``src/evaluator.ts``). A test
whose ``assert:`` holds a ``max-score`` (the first; one inside an ``assert-set`` is ignored,
as promptfoo ignores it) is compared after every row of the eval ran:

- each row's aggregate is over its ``componentResults`` that name an assertion other than
  ``max-score``/``select-best`` (an ``assert-set``'s own entry names none, its children do):
  Σ score·w / Σ w, or Σ score·w with ``value.method: sum``, where ``w`` is
  ``value.weights[<type>]`` (1 when not given): the assertion's own ``weight`` does not count,
  a weight-0 assertion counts with its score, and ``not-contains`` is weighted by that name;
- the first row with the highest aggregate wins, if it reaches ``value.threshold`` (when
  given); each row gets a component ``{pass, score 1|0, reason, namedScores {maxScore,
  assertionCount, totalWeight}, assertion}``, merged into its ``gradingResult`` (whose
  ``namedScores`` take those three; the row's own ``namedScores`` do not);
- a row that loses fails with score 0; a row that passed until then takes the comparison's
  reason as its reason and error, one that already failed keeps its own.

"First" is by ``promptIdx``, the order promptfoo starts a test's rows in; promptfoo takes the
order they finished in, the same unless a later column answers sooner. Where promptfoo stops
the whole eval (a test with one output, or with no other assertion to aggregate, or a row
without a grade to compare) coalmine says so: :func:`max_score_problem` before anything runs,
:func:`compare_rows` by making the test's rows ERRORs that say why.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coalmine.errors import ConfigError
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.matrix import Matrix, MatrixTest
from coalmine.promptfoo.nunjucks._js import js_relation, js_string, js_to_fixed, to_js
from coalmine.promptfoo.scoring import (
    ComponentResult,
    FailureReason,
    RowOutcome,
    RowScore,
    error_row,
)

__all__ = [
    "MAX_SCORE",
    "Compared",
    "check_max_scores",
    "compare_tests",
    "compare_rows",
    "max_score_of",
    "max_score_problem",
]

MAX_SCORE = "max-score"
_SKIPPED = frozenset({MAX_SCORE, "select-best"})
TOO_FEW = "Invariant failed: max-score assertion must have at least two outputs to compare between"
NOTHING_TO_AGGREGATE = (
    "max-score requires at least one other assertion (besides max-score or select-best) to "
    "aggregate scores from"
)


def max_score_of(assertions: Sequence[Assertion]) -> Assertion | None:
    """The test's ``max-score`` (its first, in its own ``assert:`` list), or ``None``."""
    return next((a for a in assertions if a.type == MAX_SCORE), None)


@dataclass(frozen=True)
class _Options:
    method: str
    weights: Mapping[str, float]
    threshold: Any
    """``value.threshold`` as written, compared by JavaScript's ``>=`` (``null`` as 0)."""
    threshold_given: bool

    def weight(self, kind: str) -> float:
        return self.weights.get(kind, 1.0)


def _options(value: Any) -> _Options | str:
    """``value`` as promptfoo reads it, or why promptfoo cannot use it (it throws or misreads)."""
    if not isinstance(value, Mapping):  # a string, a number or a list is read as no options
        return _Options("average", {}, None, False)
    weights: dict[str, float] = {}
    given = value.get("weights", {})
    if given is None:
        return "value.weights is null (promptfoo throws reading a weight from it)"
    for kind, weight in given.items() if isinstance(given, Mapping) else ():
        if weight is None or isinstance(weight, bool | int | float):
            weights[str(kind)] = float(weight or 0)  # JavaScript's arithmetic: null is 0
        else:
            return f"value.weights.{kind} is {weight!r}, not a number"
    method = "sum" if value.get("method") == "sum" else "average"
    return _Options(method, weights, value.get("threshold"), "threshold" in value)


def _others(assertions: Sequence[Assertion]) -> bool:
    """Whether the test has an assertion whose result max-score aggregates."""
    for assertion in assertions:
        if assertion.type == "assert-set":
            if _others(assertion.children or ()):
                return True
        elif assertion.type not in _SKIPPED:
            return True
    return False


def max_score_problem(assertions: Sequence[Assertion], *, outputs: int) -> str | None:
    """Why promptfoo would stop the eval at this test's ``max-score``, known before it runs.

    ``outputs`` is the number of the test's rows. ``None`` when the test has no max-score, or
    one promptfoo can grade.
    """
    found = max_score_of(assertions)
    if found is None:
        return None
    if outputs < 2:
        return (
            f"max-score compares a test's outputs, and this test has {outputs}: promptfoo stops "
            f"the eval ({TOO_FEW}); give the config another prompt or provider, or remove it"
        )
    if not _others(assertions):
        return (
            f"max-score has no other assertion to compare the outputs by: promptfoo stops the "
            f"eval ({NOTHING_TO_AGGREGATE}); add one"
        )
    options = _options(found.value)
    return f"max-score: {options}" if isinstance(options, str) else None


def check_max_scores(matrix: Matrix) -> None:
    """Stop where promptfoo would stop the eval at a test's ``max-score``, before any row runs.

    Raises:
        ConfigError: a test's max-score cannot be graded; it names the test's file and line.
    """
    outputs: dict[int, int] = {}
    for row in matrix.rows():
        outputs[row.test_idx] = outputs.get(row.test_idx, 0) + 1
    for test in matrix.tests:
        problem = max_score_problem(test.assertions, outputs=outputs.get(test.index, 0))
        if problem is not None:
            raise ConfigError(f"{_name(test)}: {problem}", path=test.path, line=test.line)


def _name(test: MatrixTest) -> str:
    described = f" ({test.description!r})" if test.description else ""
    return f"test {test.index}{described}"


@dataclass(frozen=True)
class _Aggregate:
    score: float
    count: int
    total_weight: float


def _aggregate(grading: RowScore, options: _Options) -> _Aggregate | None:
    """A row's score over its other assertions (``None``: it has none to aggregate)."""
    relevant = [
        c
        for c in grading.component_results
        if c.assertion is not None and c.assertion.type not in _SKIPPED
    ]
    if not relevant:
        return None
    total, weights = 0.0, 0.0
    for entry in relevant:
        assert entry.assertion is not None
        weight = options.weight(entry.assertion.type)
        score = 0.0 if math.isnan(entry.score) else entry.score  # `score || 0`
        total += score * weight
        weights += weight
    if options.method != "sum":
        total = total / weights if weights > 0 else 0.0
    return _Aggregate(total, len(relevant), weights)


@dataclass(frozen=True)
class Compared:
    """One graded row, as :func:`compare_tests` groups it."""

    test: Hashable
    """Its test (rows of one test, and one repeat, are compared with each other)."""
    column: int
    """Its ``promptIdx``."""
    assertions: Sequence[Assertion]
    outcome: RowOutcome


def compare_tests(rows: Sequence[Compared]) -> list[RowOutcome]:
    """Each row's outcome once its test's ``max-score`` (if any) compared it, in ``rows`` order.

    The one step after every row ran, for a direct run and for an imported run's held lines.
    """
    outcomes = [row.outcome for row in rows]
    by_test: dict[Hashable, list[int]] = {}
    for index, row in enumerate(rows):
        by_test.setdefault(row.test, []).append(index)
    for indexes in by_test.values():
        indexes.sort(key=lambda i: rows[i].column)
        assertion = max_score_of(rows[indexes[0]].assertions)
        if assertion is None:
            continue
        compared = compare_rows(
            [outcomes[i] for i in indexes], assertion, columns=[rows[i].column for i in indexes]
        )
        for index, outcome in zip(indexes, compared, strict=True):
            outcomes[index] = outcome
    return outcomes


def compare_rows(
    outcomes: Sequence[RowOutcome], assertion: Assertion, *, columns: Sequence[int]
) -> list[RowOutcome]:
    """Each row's outcome once the test's ``max-score`` compared them (``outcomes`` in order).

    ``columns`` gives each row's ``promptIdx`` (messages name rows by it). Where promptfoo
    would stop the eval, every row of the test becomes an ERROR saying why (a row that was an
    ERROR keeps its own message).
    """
    options = _options(assertion.value)
    if isinstance(options, str):
        return _stopped(outcomes, f"max-score: {options}")
    if len(outcomes) < 2:
        return _stopped(
            outcomes,
            f"max-score: this run has {len(outcomes)} of this test's outputs to compare: "
            f"{TOO_FEW} (promptfoo stops the eval here); run it with the suites of the other "
            "columns of its config",
        )
    aggregates: list[_Aggregate] = []
    for outcome, column in zip(outcomes, columns, strict=True):
        found = _aggregate(outcome.grading, options) if outcome.grading else None
        if found is None:
            what = "is an ERROR" if outcome.grading is None else "has no other assertion"
            return _stopped(
                outcomes,
                f"max-score: the outputs of this test cannot be compared: its row of column "
                f"{column} {what}, and promptfoo stops the eval here ({NOTHING_TO_AGGREGATE})",
            )
        aggregates.append(found)
    components = _components(aggregates, options, assertion)
    return [_merge(o, c, assertion) for o, c in zip(outcomes, components, strict=True)]


def _stopped(outcomes: Sequence[RowOutcome], problem: str) -> list[RowOutcome]:
    """Where promptfoo stops the eval: each row an ERROR saying why (an ERROR keeps its own)."""
    return [o if o.failure_reason is FailureReason.ERROR else error_row(problem) for o in outcomes]


def _components(
    aggregates: Sequence[_Aggregate], options: _Options, assertion: Assertion
) -> list[ComponentResult]:
    """``selectMaxScore``: each row's max-score result."""
    best, winner = -math.inf, 0
    for index, found in enumerate(aggregates):
        if found.score > best:
            best, winner = found.score, index
    threshold = to_js(options.threshold)
    reached = not options.threshold_given or js_relation(">=", best, threshold)
    shown = js_string(threshold)
    results = []
    for index, found in enumerate(aggregates):
        won = index == winner and reached
        score = js_to_fixed(found.score, 3)
        if won:
            reason = f"Selected as highest scoring output (score: {score})"
        elif found.score == best and not reached:
            reason = f"Not selected - score {score} below threshold {shown}"
        else:
            reason = f"Not selected (score: {score}, max: {js_to_fixed(best, 3)})"
        named = {"maxScore": found.score, "assertionCount": found.count,
                 "totalWeight": found.total_weight}  # fmt: skip
        results.append(ComponentResult(won, 1.0 if won else 0.0, reason, assertion,
                                       named_scores=named))  # fmt: skip
    return results


def _merge(outcome: RowOutcome, component: ComponentResult, assertion: Assertion) -> RowOutcome:
    """``mergeMaxScoreGradingResult`` and ``updateComparisonStats`` for one row."""
    grading = outcome.grading
    assert grading is not None
    won = component.passed
    passed = grading.passed and won
    reason = component.reason if grading.passed and not won else grading.reason
    shown = assertion.model_dump(by_alias=True, exclude_unset=True)
    merged = replace(
        grading,
        passed=passed,
        score=grading.score if won else component.score,
        reason=reason,
        named_scores={**grading.named_scores, **(component.named_scores or {})},
        component_results=(*grading.component_results, component),
        extra={**grading.extra, "assertion": shown},
    )
    if outcome.success and not passed:  # a row that passed until now fails on the comparison
        return replace(
            outcome, success=False, score=component.score, failure_reason=FailureReason.ASSERT,
            error=component.reason, grading=merged,
        )  # fmt: skip
    score = outcome.score if won else component.score
    return replace(outcome, success=passed, score=score, grading=merged)
