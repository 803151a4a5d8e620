"""promptfoo assertions onto coalmine graders: one to one, a runtime, or a stated reason."""

from __future__ import annotations

import pytest

from coalmine.graders.base import registry
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.assertions import DIRECT, HANDLED, JUDGED, UNSUPPORTED, map_assertion
from coalmine.promptfoo.handlers import HANDLERS


def test_every_direct_type_and_its_not_form_is_a_registered_grader() -> None:
    for base in sorted(DIRECT | JUDGED):
        assert registry.find(base) is not None, base
    negatable = {n.removeprefix("not-") for n in registry.names() if n.startswith("not-")}
    assert negatable >= DIRECT


@pytest.mark.parametrize(
    ("raw", "grader_type", "config"),
    [
        ({"type": "contains", "value": "Paris"}, "contains", {"value": "Paris"}),
        ({"type": "not-icontains", "value": "x", "weight": 2}, "not-icontains", {"value": "x"}),
        ({"type": "levenshtein", "value": "abc", "threshold": 2}, "levenshtein",
         {"value": "abc", "threshold": 2}),
        ({"type": "contains", "value": "a", "threshold": 0.3}, "contains", {"value": "a"}),
        ({"type": "is-json"}, "is-json", {}),
        ({"type": "llm-rubric", "value": "is polite", "threshold": 0.7}, "llm-rubric",
         {"value": "is polite", "threshold": 0.7}),
    ],
)  # fmt: skip
def test_direct_types_keep_value_threshold_and_weight(
    raw: dict[str, object], grader_type: str, config: dict[str, object]
) -> None:
    mapped = map_assertion(Assertion.model_validate(raw))
    handled = grader_type.removeprefix("not-") in HANDLED
    assert mapped.runtime == ("promptfoo" if handled else "grader") and mapped.grader is not None
    assert (mapped.grader.type, mapped.grader.config) == (grader_type, config)
    assert mapped.grader.weight == raw.get("weight", 1.0)
    grader = registry.get(grader_type)
    grader.config.model_validate(mapped.grader.config)  # a config the grader accepts


def test_runtimes_and_unsupported_types() -> None:
    kinds = {
        t: map_assertion(Assertion(type=t, value="x")).runtime
        for t in ("javascript", "not-javascript", "python", "assert-set")
    }
    assert kinds == {
        "javascript": "javascript",
        "not-javascript": "javascript",
        "python": "python",
        "assert-set": "assert-set",
    }
    similar = map_assertion(Assertion(type="similar", value="x"))
    assert similar.runtime == "unsupported"
    assert similar.problem == f"similar: {UNSUPPORTED['similar']}"
    assert map_assertion(Assertion(type="not-llm-rubric")).problem == (
        "not-llm-rubric: coalmine has no not- form of llm-rubric"
    )
    assert map_assertion(Assertion(type="made-up")).problem == "made-up: unknown type"


def test_handled_types_go_to_promptfoos_handlers_whatever_their_threshold() -> None:
    assert frozenset(HANDLERS) == HANDLED
    # a CSV ``levenshtein:x`` gets promptfoo's default 0.75, which the native config refuses
    mapped = map_assertion(Assertion(type="levenshtein", value="kittens", threshold=0.75))
    assert mapped.runtime == "promptfoo"
    for name in ("gleu", "is-xml", "not-contains-xml", "is-html", "contains-html", "is-sql",
                 "not-is-sql", "contains-sql", "finish-reason", "is-valid-openai-tools-call",
                 "not-is-valid-openai-tools-call"):  # fmt: skip
        assert map_assertion(Assertion(type=name, value="x")).runtime == "promptfoo", name
