"""Prompt templates: the fast path renders what jinja renders, and leaves the rest to jinja."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jinja2
import pytest

from coalmine.graders.base import grader_configs
from coalmine.specs.suite import EvalCase, _parse_case, _valid_case, load_suite
from coalmine.specs.suite import SuiteMeta as _Meta
from coalmine.specs.template import PromptTemplate

JINJA = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)  # noqa: S701 - the reference: prompts are text

SIMPLE = [
    "Say {{ word }}",
    "{{word}}",
    "{{ a }}{{ b }} and {{ a }}",
    "no variables at all",
    "",
    "ends with a newline {{ a }}\n",
    "two newlines {{ a }}\n\n",
    "  {{- a -}}  padded  ",
    "<b>{{ a }}</b> & {{ b }}",  # no escaping: autoescape is off
    "line one\n{{ a }}\r\nline three",
]
VALUES: list[dict[str, Any]] = [
    {"word": "w1", "a": "x", "b": "y"},
    {"word": 7, "a": 1.5, "b": True},
    {"word": None, "a": [1, "two", {"3": None}], "b": {"k": [False]}},
    {"word": "<&>", "a": "{{ not a template }}", "b": "é ✓ \U0001f600"},
    {"word": 10**30, "a": -0.0, "b": 1e-7},
]


@pytest.mark.parametrize("source", SIMPLE)
def test_a_template_of_text_and_names_renders_as_jinja_renders_it(source: str) -> None:
    template = PromptTemplate(source)
    assert template.substitutes_only
    for values in VALUES:
        assert template.render(values) == JINJA.from_string(source).render(**values)


@pytest.mark.parametrize(
    "source",
    [
        "{{ a | upper }}",
        "{{ a.b }}",
        "{{ a['b'] }}",
        "{% if a %}yes{% endif %}",
        "{{ 'const' }}",
        "{{ a ~ b }}",
        "{# a comment #}{{ a }}",
        "{{ none }}",
    ],
)
def test_any_other_template_goes_through_jinja(source: str) -> None:
    values = {"a": {"b": "x"}, "b": "y"}
    template = PromptTemplate(source)
    assert not template.substitutes_only or source.startswith("{#")
    assert template.render(values) == JINJA.from_string(source).render(**values)


def test_a_name_the_case_lacks_is_jinjas_error_or_jinjas_global() -> None:
    template = PromptTemplate("Say {{ word }} to {{ who }}")
    with pytest.raises(jinja2.UndefinedError, match="'who' is undefined"):
        template.render({"word": "hi"})
    ranged = PromptTemplate("{{ range }}")
    assert ranged.render({}) == JINJA.from_string("{{ range }}").render()
    assert ranged.render({"range": "mine"}) == "mine"  # the case's value wins, as in jinja


def test_a_syntax_error_is_jinjas() -> None:
    with pytest.raises(jinja2.TemplateSyntaxError):
        PromptTemplate("{{ a ")


# -- a line parsed in one pass gives the case the long way gives -------------------------------


LINES = [
    {"id": "c1", "prompt": "p", "graders": [{"type": "equals"}], "expected": "x"},
    {"id": "c2", "vars": {"w": 10**40, "f": 0.1, "u": 'é\n\t"', "n": None}, "tags": ["a"]},
    {"id": "c3", "prompt": "p", "metadata": {"deep": [[[{"k": [1, 2.5]}]]]}, "threshold": 0.25},
    {"id": "c4", "prompt": "p", "relevant": {"d1": 2}, "context": ["one", "two"]},
    {"id": "c5", "prompt": "p", "relevant": ["d1"], "forbidden_tools": ["rm"], "weight": None},
]


@pytest.mark.parametrize("line", [json.dumps(x) for x in LINES[:4]] + [
    '{"id": "dup", "prompt": "first", "prompt": "last"}',
    '{"id": "esc", "prompt": "\\u00e9\\ud83d\\ude00"}',
    '{"id":"ws",   "prompt" : "p"  }  ',
])  # fmt: skip
def test_a_valid_line_is_the_case_json_loads_and_validation_give(line: str) -> None:
    fast = _valid_case(line)
    slow = EvalCase.model_validate(json.loads(line))
    assert fast is not None and fast == slow


@pytest.mark.parametrize(
    "line",
    [
        json.dumps(LINES[4]),  # an unknown key
        '{"id": "lone", "prompt": "\\ud800"}',
        '{"id": "deep", "prompt": "p", "metadata": ' + "[" * 101 + "]" * 101 + "}",
        "{not json",
        '["a", "list"]',
        '{"id": "t", "prompt": "p", "threshold": 2}',
    ],
)
def test_a_line_the_one_pass_refuses_goes_the_long_way(line: str, tmp_path: Path) -> None:
    assert _valid_case(line) is None
    found = _parse_case(line, 1, tmp_path / "s.jsonl", _Meta())
    if isinstance(found, EvalCase):  # json.loads reads a lone surrogate: a valid case
        assert found.id == "lone" and found.prompt == "\ud800"
    else:
        assert found.message  # type: ignore[union-attr]


def test_nan_is_read_by_both_ways_alike() -> None:
    line = '{"id": "nan", "prompt": "p", "expected": NaN}'
    fast, slow = _valid_case(line), EvalCase.model_validate(json.loads(line))
    assert fast is not None and math.isnan(fast.expected) and math.isnan(slow.expected)


def test_a_line_nested_past_the_limit_is_refused_with_coalmines_message(tmp_path: Path) -> None:
    deep = '{"id": "deep", "prompt": "p", "metadata": ' + "[" * 101 + "]" * 101 + "}"
    path = tmp_path / "qa.jsonl"
    path.write_text(deep + "\n" + json.dumps({"id": "ok", "prompt": "p"}) + "\n")
    (tmp_path / "qa.yaml").write_text("graders: [{type: is-json}]\n")
    suite = load_suite(path, grader_configs=grader_configs())
    assert [c.case.id for c in suite.cases] == ["ok"]
    assert "nested more than 100 levels deep" in suite.bad[0].message
