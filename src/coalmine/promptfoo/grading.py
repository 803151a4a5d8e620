"""promptfoo's ``gradingResult`` of a row, as its result file writes it (promptfoo 0.121.20).

Built from :class:`~coalmine.promptfoo.scoring.RowScore`: the row's pass, score and reason,
its named scores and ``componentResults`` (an ``assert-set`` nests its own), in promptfoo's key
order. coalmine's graders report no tokens, so ``tokensUsed`` is all zeros.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.scoring import ComponentResult, RowScore

__all__ = ["grading_result"]

_TOKENS = ("total", "prompt", "completion", "cached", "numRequests")


def _tokens() -> dict[str, int]:
    return dict.fromkeys(_TOKENS, 0)


def grading_result(score: RowScore) -> dict[str, Any]:
    """The ``gradingResult`` promptfoo writes for a row (``AssertionsResult.testResult``)."""
    head = {"pass": score.passed, "score": score.score, "reason": score.reason}
    if not score.has_assertions:
        return {**head, "tokensUsed": _tokens()}
    found = _aggregate(head, score.named_scores, score.named_score_weights, score.component_results)
    return {**found, **score.extra}  # what a scoring function added


def _aggregate(
    head: dict[str, Any],
    named: Mapping[str, float] | None,
    weights: Mapping[str, float],
    components: tuple[ComponentResult, ...],
) -> dict[str, Any]:
    """An aggregate's keys in promptfoo's order (``namedScoreWeights`` only when some)."""
    result = {**head, "namedScores": dict(named or {})}
    if weights:
        result["namedScoreWeights"] = dict(weights)
    result["tokensUsed"] = _tokens()
    result["componentResults"] = [_component(c) for c in components]
    return result


def _component(entry: ComponentResult) -> dict[str, Any]:
    if entry.raw is not None:  # what a script returned, with its parent's assertion
        found = dict(entry.raw)
        if not found.get("assertion") and entry.assertion is not None:
            found["assertion"] = _assertion(entry.assertion)
        return found
    head: dict[str, Any] = {"pass": entry.passed, "score": entry.score, "reason": entry.reason}
    if "assertionSet" in entry.metadata:
        found = _aggregate(head, entry.named_scores, entry.named_score_weights, entry.children)
        found["metadata"] = dict(entry.metadata)
        return found
    if entry.named_scores:
        head["namedScores"] = dict(entry.named_scores)
    if entry.named_score_weights:
        head["namedScoreWeights"] = dict(entry.named_score_weights)
    head.update(entry.extra)
    if entry.children:  # a script's GradingResult keeps its own results as it gave them
        head["componentResults"] = [dict(c.raw or {}) for c in entry.children]
    if entry.assertion is not None:
        head["assertion"] = _assertion(entry.assertion)
    if entry.metadata:
        head["metadata"] = dict(entry.metadata)
    return head


def _assertion(assertion: Assertion) -> dict[str, Any]:
    return assertion.model_dump(by_alias=True, exclude_unset=True)
