"""The door the eval engine runs compat suites by: promptfoo found through the registry."""

from __future__ import annotations

import pytest

from coalmine.errors import PluginError
from coalmine.evals.compat import COMPAT_KINDS, case_graders, get_compat_kind
from coalmine.promptfoo.suite import PROMPTFOO
from coalmine.specs.compat import PromptfooCase
from coalmine.specs.models import GraderSpec
from coalmine.specs.suite import EvalCase, SuiteCase


def _case(
    *, promptfoo: PromptfooCase | None = None, graders: list[GraderSpec] | None = None
) -> SuiteCase:
    return SuiteCase(
        case=EvalCase.model_validate({"id": "c1", "prompt": "hi"}),
        prompt="hi",
        graders=graders or [],
        threshold=None,
        agent=None,
        line=1,
        promptfoo=promptfoo,
    )


def _line(*assertions: dict[str, object]) -> PromptfooCase:
    return PromptfooCase.model_validate({"id": "c1", "assert": list(assertions)})


def test_the_engine_finds_promptfoo_by_the_name_a_suite_gives() -> None:
    assert get_compat_kind("promptfoo") is PROMPTFOO
    assert "promptfoo" in COMPAT_KINDS.names()


def test_an_unknown_kind_is_a_plugin_error_naming_the_known_ones() -> None:
    with pytest.raises(PluginError, match=r"unknown compat suite kind 'inspect'; known: promptfoo"):
        get_compat_kind("inspect")


def test_a_native_case_keeps_its_own_graders() -> None:
    own = [GraderSpec.model_validate({"type": "keyword", "config": {"required": ["x"]}})]
    case = _case(graders=own)
    assert case.compat is None
    assert case_graders(case) == own


def test_a_compat_line_is_graded_by_what_its_assertions_map_to() -> None:
    case = _case(
        promptfoo=_line(
            {"type": "contains", "value": "Paris"}, {"type": "llm-rubric", "value": "polite"}
        )
    )
    assert case.compat == "promptfoo"
    assert [(g.type, g.config) for g in case_graders(case)] == [
        ("contains", {"value": "Paris"}),
        ("llm-rubric", {"value": "polite"}),
    ]
    assert PROMPTFOO.needs_judge(case)
    assert not PROMPTFOO.needs_judge(_case(promptfoo=_line({"type": "contains", "value": "Paris"})))


def test_a_line_whose_assertion_cannot_be_read_says_where() -> None:
    broken = _case(promptfoo=_line({"value": "no type"}))
    problem = PROMPTFOO.check(broken)
    assert problem is not None and problem.startswith("assert[0]")
    assert PROMPTFOO.check(_case(promptfoo=_line({"type": "equals", "value": "x"}))) is None
