"""Which coalmine grader grades a promptfoo assertion, or why none can.

coalmine's text graders carry promptfoo's names and meanings (``equals``, ``contains``,
``icontains-any``, ``regex``, ``levenshtein``, ``is-json`` … each with its ``not-`` form), so
most deterministic assertions map one to one: the assertion's ``value`` (and ``threshold``,
where the grader has one) becomes the grader's config. Model-graded ones map to coalmine's
judge graders (``llm-rubric``, ``context-recall``, ``context-faithfulness``), advisory until
the judge is calibrated. ``javascript`` and ``python`` assertions are the config author's code:
the runner runs them (Node.js, Python), so they map to a runtime, not a grader. ``assert-set``
groups assertions and is scored by :mod:`coalmine.promptfoo.scoring`; ``max-score`` compares
a test's rows once all are graded (:mod:`coalmine.promptfoo.comparison`). The types whose native
grader means something else than promptfoo's handler (a stricter threshold, arrays found by
``contains-json`` …), or that read the provider's response (``finish-reason``, the tools call),
or whose verdict comes from a JavaScript parser (``is-xml``, ``is-sql`` …) map to the
``promptfoo`` runtime: :mod:`coalmine.promptfoo.handlers` grades them by promptfoo's rules.

Everything else is reported as unsupported with the reason, never dropped: the importer lists
it, and a row that needs it is an ERROR, as promptfoo makes a row with an invalid assertion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from coalmine.promptfoo.assertion import Assertion
from coalmine.specs.models import GraderSpec

__all__ = ["DIRECT", "HANDLED", "JUDGED", "UNSUPPORTED", "MappedAssertion", "map_assertion"]

Runtime = Literal[
    "grader", "promptfoo", "javascript", "python", "assert-set", "compared", "unsupported"
]

DIRECT: frozenset[str] = frozenset(
    {
        "equals",
        "contains",
        "icontains",
        "contains-any",
        "contains-all",
        "icontains-any",
        "icontains-all",
        "starts-with",
        "regex",
        "levenshtein",
        "is-json",
        "contains-json",
        "is-refusal",
        "rouge-n",
        "bleu",
        "gleu",
        "contains-html",
        "word-count",
        "latency",
        "cost",
    }
)
"""promptfoo types whose coalmine grader has the same name, config and meaning."""

WITH_THRESHOLD: frozenset[str] = frozenset(
    {"levenshtein", "rouge-n", "bleu", "gleu", "latency", "cost", "llm-rubric", "context-recall",
     "context-faithfulness"}
)  # fmt: skip
"""Graders whose config takes the assertion's ``threshold``."""

HANDLED: frozenset[str] = frozenset(
    {"levenshtein", "rouge-n", "bleu", "gleu", "latency", "cost", "is-json", "contains-json",
     "contains-html", "finish-reason", "is-valid-openai-tools-call", "is-xml", "contains-xml",
     "is-html", "is-sql", "contains-sql", "tool-call-f1", "is-valid-openai-function-call",
     "is-valid-function-call", "skill-used", "guardrails", "perplexity", "perplexity-score",
     "trace-error-spans", "trace-span-count", "trace-span-duration", "trajectory:tool-args-match",
     "trajectory:step-count", "trajectory:tool-sequence", "trajectory:tool-used", "ruby",
     "meteor", "equals", "contains", "icontains", "contains-any", "contains-all",
     "icontains-any", "icontains-all", "regex"}
)  # fmt: skip
"""Types graded by promptfoo's own rules (:mod:`coalmine.promptfoo.handlers`), each with its
``not-`` form: promptfoo's verdict differs from the native grader's, or needs the provider's
response, or comes from a JavaScript parser."""

JUDGED: frozenset[str] = frozenset({"llm-rubric", "context-recall", "context-faithfulness"})
"""Model-graded types coalmine's judge graders grade (advisory until calibrated)."""

UNSUPPORTED: dict[str, str] = {
    "similar": "needs an embedding model; coalmine grades no embeddings",
    "factuality": "a model-graded rubric coalmine has no grader for; use llm-rubric",
    "model-graded-factuality": "a model-graded rubric coalmine has no grader for; use llm-rubric",
    "model-graded-closedqa": "a model-graded rubric coalmine has no grader for; use llm-rubric",
    "answer-relevance": "needs an embedding model; coalmine grades no embeddings",
    "context-relevance": "a model-graded metric coalmine has no grader for",
    "g-eval": "a model-graded metric coalmine has no grader for; use llm-rubric",
    "moderation": "calls a moderation API coalmine does not call",
    "webhook": "calls a web service from a grader; coalmine graders reach no network",
    "classifier": "needs a classifier model coalmine does not run",
    "select-best": "a model-graded comparison of rows coalmine has no grader for",
    "human": "a human rating, not an automatic grade",
}
"""Types coalmine cannot grade, with the reason the importer reports."""


@dataclass(frozen=True)
class MappedAssertion:
    """How one promptfoo assertion is graded in coalmine."""

    assertion: Assertion
    runtime: Runtime
    grader: GraderSpec | None = None
    """The grader (``runtime == "grader"``); for ``promptfoo``, the native grader of that name
    when its config accepts the assertion's (what the judge policy and labels know it by)."""
    problem: str | None = None
    """Why it cannot be graded (``runtime == "unsupported"``)."""


def map_assertion(assertion: Assertion) -> MappedAssertion:
    """The coalmine grading of ``assertion`` (a grader, a runtime, or why it is unsupported).

    ``not-<type>`` maps to coalmine's ``not-<type>`` grader, which inverts as promptfoo does
    for that type; a negated type coalmine has no ``not-`` form of is unsupported.
    """
    base, negated = assertion.base_type, assertion.negated
    if base == "assert-set" and not negated:
        return MappedAssertion(assertion, "assert-set")
    if assertion.type == "max-score":  # not-max-score is an unknown type to promptfoo
        return MappedAssertion(assertion, "compared")
    if base == "javascript":
        return MappedAssertion(assertion, "javascript")
    if base == "python":
        return MappedAssertion(assertion, "python")
    if base in HANDLED or base in DIRECT or (base in JUDGED and not negated):
        grader, problem = None, None
        if base in DIRECT or base in JUDGED:
            try:
                # the spec only names the grader: promptfoo's scoring reads the assertion's
                # own weight, which may be negative (coalmine's native weights may not)
                weight = assertion.weight if assertion.weight >= 0 else 0.0
                grader = GraderSpec(type=assertion.type, weight=weight, config=_config(assertion))
            except ValueError as exc:
                problem = str(exc)
        if base in HANDLED:  # the native grader, when there is one, only names it
            return MappedAssertion(assertion, "promptfoo", grader=grader)
        if grader is None:
            return MappedAssertion(assertion, "unsupported", problem=problem)
        return MappedAssertion(assertion, "grader", grader=grader)
    reason = UNSUPPORTED.get(base)
    if reason is None and base in JUDGED:
        reason = f"coalmine has no not- form of {base}"
    return MappedAssertion(
        assertion, "unsupported", problem=f"{assertion.type}: {reason or 'unknown type'}"
    )


def _config(assertion: Assertion) -> dict[str, Any]:
    """The grader config: ``value`` (when given) and ``threshold`` where the grader has one."""
    config: dict[str, Any] = {}
    if assertion.value is not None:
        config["value"] = assertion.value
    if assertion.threshold is not None and assertion.base_type in WITH_THRESHOLD:
        config["threshold"] = assertion.threshold
    return config
