"""promptfoo's ``gradingResult`` of a row, as its result file writes it (promptfoo 0.121.20).

Built from :class:`~coalmine.promptfoo.scoring.RowScore`: the row's pass, score and reason,
its named scores and ``componentResults`` (an ``assert-set`` nests its own), in promptfoo's key
order. coalmine's graders report no tokens, so ``tokensUsed`` is all zeros.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    return _aggregate(head, score.named_scores, score.named_score_weights, score.component_results)


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
    head: dict[str, Any] = {"pass": entry.passed, "score": entry.score, "reason": entry.reason}
    if "assertionSet" in entry.metadata:
        found = _aggregate(head, entry.named_scores, entry.named_score_weights, entry.children)
        found["metadata"] = dict(entry.metadata)
        return found
    if entry.named_scores:
        head["namedScores"] = dict(entry.named_scores)
    if entry.assertion is not None:
        head["assertion"] = entry.assertion.model_dump(by_alias=True, exclude_unset=True)
    if entry.metadata:
        head["metadata"] = dict(entry.metadata)
    return head
