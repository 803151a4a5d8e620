"""What the config's code answers as a GradingResult, read as promptfoo 0.121.20 reads it.

Two places take a GradingResult from the author's code:

- a ``javascript`` or ``python`` assertion may return one with its own ``componentResults``:
  promptfoo keeps them inside the assertion's entry and adds them, after it, to the row's (or
  the assert-set's) flattened ``componentResults``, each with the assertion's ``assertion``
  when it names none (``AssertionsResult.testResult``). They are shown, counted as passed or
  failed entries, and never change the row's pass or score: :func:`script_components`.
- a test's ``assertScoringFunction`` gets the row's named scores and ``{threshold,
  componentResults, tokensUsed}`` and its answer, which must be a GradingResult, replaces the
  row's result key by key (``pass``, ``score``, ``reason``, and ``namedScores``,
  ``componentResults`` … when it gives them); anything else, or a function that throws, fails
  the row with ``Scoring function error: …``: :func:`apply_scoring_result`. promptfoo applies
  it to the row's own result only (never an assert-set's), and not to a row without
  assertions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.scoring import ComponentResult, RowScore

__all__ = [
    "apply_scoring_result",
    "is_grading_result",
    "numbers",
    "script_components",
    "scoring_context",
    "scoring_failed",
]

_REPLACED = ("pass", "score", "reason", "namedScores", "namedScoreWeights", "componentResults")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _object(value: Any) -> bool:
    """JavaScript's ``typeof value === "object"`` for a JSON value (``null`` included)."""
    return value is None or isinstance(value, dict | list)


def is_grading_result(value: Any) -> bool:
    """Whether ``value`` is a GradingResult, as promptfoo's ``isGradingResult`` decides."""
    if not isinstance(value, dict):
        return False
    optional = {"namedScores", "namedScoreWeights", "tokensUsed"}
    return (
        isinstance(value.get("pass"), bool)
        and _number(value.get("score"))
        and isinstance(value.get("reason"), str)
        and all(key not in value or _object(value[key]) for key in optional)
        and isinstance(value.get("componentResults", []), list)
        and ("assertion" not in value or _object(value["assertion"]))
        and isinstance(value.get("comment", ""), str)
    )


def numbers(value: Any) -> dict[str, float]:
    """The numeric entries of a ``namedScores``-like mapping."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): float(v) for k, v in value.items() if _number(v)}


def _assertion(value: Any) -> Assertion | None:
    if not isinstance(value, dict):
        return None
    try:
        return Assertion.model_validate(value)
    except ValidationError:
        return None


def script_components(raw: Any, parent: Assertion | None) -> tuple[ComponentResult, ...]:
    """A script's ``componentResults`` as entries of the row (one level: theirs stay inside)."""
    if not isinstance(raw, list):
        return ()
    found = []
    for item in raw:
        given = dict(item) if isinstance(item, dict) else {}
        score, metadata = given.get("score"), given.get("metadata")
        found.append(
            ComponentResult(
                passed=given.get("pass") is True,
                score=float(score) if isinstance(score, int | float) else 0.0,
                reason=str(given.get("reason", "")),
                assertion=_assertion(given.get("assertion")) or parent,
                metadata=metadata if isinstance(metadata, dict) else {},
                named_scores=numbers(given.get("namedScores")) or None,
                raw=given,
            )
        )
    return tuple(found)


def scoring_context(threshold: float | None, grading: Mapping[str, Any]) -> dict[str, Any]:
    """The second argument of an ``assertScoringFunction``, from the row's ``gradingResult``.

    ``undefined`` keys are left out, as JSON leaves them out.
    """
    context: dict[str, Any] = {}
    if threshold is not None:
        context["threshold"] = threshold
    context["componentResults"] = list(grading.get("componentResults") or [])
    context["tokensUsed"] = dict(grading.get("tokensUsed") or {})
    return context


def scoring_failed(score: RowScore, message: str) -> RowScore:
    """The row's result when its scoring function threw or answered no GradingResult."""
    return replace(score, passed=False, score=0.0, reason=f"Scoring function error: {message}")


def apply_scoring_result(score: RowScore, answer: Any) -> RowScore:
    """The row's result once its ``assertScoringFunction`` answered ``answer``."""
    if not is_grading_result(answer):
        return scoring_failed(score, "assertion scoring function must return a GradingResult")
    passed, value, reason = answer["pass"], float(answer["score"]), answer["reason"]
    named = score.named_scores
    if "namedScores" in answer:
        named = numbers(answer["namedScores"])
    weights = score.named_score_weights
    if "namedScoreWeights" in answer:
        weights = numbers(answer["namedScoreWeights"])
    components = score.component_results
    if "componentResults" in answer:
        components = script_components(answer["componentResults"], None)
    return replace(
        score,
        passed=passed,
        score=value,
        reason=reason,
        named_scores=named,
        named_score_weights=dict(weights),
        component_results=components,
        extra={k: v for k, v in answer.items() if k not in _REPLACED},
    )
