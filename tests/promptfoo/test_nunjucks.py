"""promptfoo's Nunjucks rendering: JavaScript values, Nunjucks filters, renderPrompt's steps.

The fixtures under ``fixtures/nunjucks`` were captured from the real Nunjucks 3.2.4 as promptfoo
0.121.20 configures it (``getNunjucksEngine().renderString``) and from promptfoo's own
``renderPrompt``; the hand-written cases below pin each rule with a value worked out by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from coalmine.errors import ConfigError
from coalmine.promptfoo.nunjucks import (
    TemplateError,
    render,
    render_assertion_value,
    render_metric_name,
    render_prompt,
    render_vars_in_object,
    template_variables,
)
from coalmine.promptfoo.nunjucks._js import js_loose_equal, js_number, js_to_fixed, js_to_number
from coalmine.promptfoo.nunjucks._json import js_json_stringify

FIXTURES = Path(__file__).parent / "fixtures" / "nunjucks"
CASES = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
PROMPTS = json.loads((FIXTURES / "prompts.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: c["template"][:60])
def test_renders_as_nunjucks_does(case: dict[str, Any]) -> None:
    variables = CASES["vars"][case["vars"]]
    if "error" in case:
        with pytest.raises(TemplateError):
            render(case["template"], variables, env=CASES["env"])
    else:
        assert render(case["template"], variables, env=CASES["env"]) == case["expected"]


@pytest.mark.parametrize("case", PROMPTS["cases"], ids=lambda c: c["prompt"][:60])
def test_renders_prompts_as_promptfoo_does(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(TemplateError):
            render_prompt(case["prompt"], case["vars"], env=PROMPTS["env"])
        return
    rendered = render_prompt(case["prompt"], case["vars"], env=PROMPTS["env"])
    assert rendered.text == case["text"]
    assert rendered.vars == case["varsAfter"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (0.5, "0.5"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (123.456, "123.456"),
        (2**53 + 1, "9007199254740992"),  # an integer past 2**53 is a double in JavaScript
        (math.nan, "NaN"),
        (-math.inf, "-Infinity"),
    ],
)
def test_numbers_print_as_javascript_prints_them(value: float, text: str) -> None:
    assert js_number(value) == text


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (0.125, 2, "0.13"),
        (0.375, 2, "0.38"),
        (2 / 3, 2, "0.67"),
        (1.005, 2, "1.00"),
        (-0.001, 2, "-0.00"),
        (0.0, 2, "0.00"),
    ],
)
def test_to_fixed_rounds_ties_away_from_zero(value: float, digits: int, text: str) -> None:
    # Python's "%.2f" gives 0.12 for 0.125 (exactly representable, round-half-even).
    assert js_to_fixed(value, digits) == text


def test_dump_has_no_spaces_unless_indented() -> None:
    value = {"a": 1, "b": [1.0, None, "x"], "c": {}}
    assert js_json_stringify(value) == '{"a":1,"b":[1,null,"x"],"c":{}}'
    assert (
        js_json_stringify(value, 2)
        == '{\n  "a": 1,\n  "b": [\n    1,\n    null,\n    "x"\n  ],\n  "c": {}\n}'
    )
    assert js_json_stringify({"a": 1}, "\t") == '{\n\t"a": 1\n}'
    assert js_json_stringify({"a": 1}, True) == '{"a":1}'  # neither number nor string: no indent
    assert js_json_stringify("é\n\x01") == '"é\\n\\u0001"'


def test_objects_keep_javascript_key_order() -> None:
    # Integer-like keys come first, ascending, in JavaScript objects.
    assert (
        render("{{ o | dump }}", {"o": {"b": 1, "10": 2, "2": 3, "a": 4}})
        == '{"2":3,"10":2,"b":1,"a":4}'
    )


def test_values_print_as_javascript_strings() -> None:
    variables = {"o": {"k": 1}, "l": ["a", ["b", None]], "t": True, "n": None, "f": 2.0}
    assert render("{{ o }}|{{ l }}|{{ t }}|{{ n }}|{{ f }}|{{ nope }}", variables) == (
        "[object Object]|a,b,|true||2|"
    )


def test_tilde_and_plus_follow_javascript() -> None:
    assert render("{{ n ~ x ~ u }}", {"n": None, "x": 1.5}) == "null1.5undefined"
    assert (
        render("{{ s + 1 }}|{{ i + 1 }}|{{ l + 1 }}", {"s": "2", "i": 2, "l": [1, 2]})
        == "21|3|1,21"
    )


def test_default_replaces_only_undefined_unless_asked() -> None:
    template = "{{ a | default('x') }}|{{ b | default('x') }}|{{ c | default('x') }}|{{ c | d('x', true) }}"
    assert render(template, {"b": None, "c": ""}) == "x|||x"


def test_load_parses_json_and_rejects_what_javascript_rejects() -> None:
    assert render("{{ (s | load).a[1] }}", {"s": '{"a": [1, 2]}'}) == "2"
    with pytest.raises(TemplateError):
        render("{{ s | load }}", {"s": "NaN"})


def test_javascript_methods_are_callable() -> None:
    variables = {"s": "Hello", "l": [1, 2], "x": 3.14159}
    template = (
        "{{ s.toUpperCase() }} {{ s.length }} {{ l.join('-') }} {{ l.length }} {{ x.toFixed(2) }}"
    )
    assert render(template, variables) == "HELLO 5 1-2 2 3.14"


def test_loops_walk_objects_by_pairs_only() -> None:
    obj = {"a": 1, "b": 2}
    assert render("{% for k, v in o %}{{ k }}{{ v }}{% endfor %}", {"o": obj}) == "a1b2"
    assert render("{% for k in o %}{{ k }}{% else %}none{% endfor %}", {"o": obj}) == "none"
    assert render("{% if l %}truthy{% endif %}", {"l": []}) == "truthy"


def test_comparisons_are_loose() -> None:
    assert (
        render("{{ s == 3 }} {{ s > 2 }} {{ n == u }}", {"s": "3", "n": None}) == "true true true"
    )
    assert js_loose_equal("", 0) and not js_loose_equal(None, 0)
    assert math.isnan(js_to_number("abc")) and js_to_number(" 0x1F ") == 31


def test_env_global_reads_the_given_environment() -> None:
    assert render("{{ env.KEY }}|{{ env.NONE }}", {}, env={"KEY": "v"}) == "v|"
    assert render("{{ env }}", {"env": "mine"}, env={"KEY": "v"}) == "mine"


def test_extra_filters() -> None:
    assert render("{{ x | twice }}", {"x": "a"}, filters={"twice": lambda v: v * 2}) == "aa"


def test_errors_are_template_errors_naming_the_problem() -> None:
    with pytest.raises(TemplateError, match="filter not found: nope") as info:
        render("line one\n{{ x | nope }}", {})
    assert info.value.line == 2
    assert isinstance(info.value, ConfigError)
    with pytest.raises(TemplateError, match="line 1"):
        render("{% if %}", {})
    with pytest.raises(TemplateError, match="Template render error"):
        render("{{ missing() }}", {})


def test_jinja_only_filters_are_unknown() -> None:
    with pytest.raises(TemplateError, match="tojson"):
        render("{{ x | tojson }}", {"x": 1})


def test_keeps_the_trailing_newline() -> None:
    assert render("a\n", {}) == "a\n"


def test_template_variables_as_promptfoo_finds_them() -> None:
    template = "{{ a }} {{ b.c | upper }} {# {{ hidden }} #}{% if d > 1 %}{% endif %}{% for i in items %}{{ i }}{% endfor %}"
    assert template_variables(template) == ["a", "b.c", "d", "items"]


def test_assertion_values_render_strings_only() -> None:
    variables = {"name": "Ada"}
    assert render_assertion_value("Hi {{ name }}", variables) == "Hi Ada"
    assert render_assertion_value(["{{ name }}", 3, "file://x.txt"], variables) == [
        "Ada",
        3,
        "file://x.txt",
    ]
    assert render_assertion_value("file://{{ name }}.py", variables) == "file://{{ name }}.py"
    assert render_assertion_value({"k": "{{ name }}"}, variables) == {"k": "{{ name }}"}


def test_metric_names_render_or_stay() -> None:
    assert render_metric_name("{{ m }}", {"m": "dyn"}) == "dyn"
    assert render_metric_name("{{ m | nope }}", {"m": "dyn"}) == "{{ m | nope }}"


def test_render_vars_in_object_walks_lists_and_mappings() -> None:
    value = {"b": ["{{ x }}", 1], "1": {"c": "{{ x }}!"}}
    assert render_vars_in_object(value, {"x": "X"}) == {"1": {"c": "X!"}, "b": ["X", 1]}


def test_prompt_json_path_reindents() -> None:
    rendered = render_prompt('{"a": "{{ x }}", "n": 1.0}', {"x": "X"})
    assert rendered.text == '{\n  "a": "X",\n  "n": 1\n}'
    assert render_prompt('{"a": "{{ x }}"}', {"x": "X"}, json_autoescape=False).text == '{"a": "X"}'


def test_prompt_steps_on_vars() -> None:
    rendered = render_prompt("{{ a }}", {"a": "{{ b }}\n\n", "b": "B", "c": "x\n"}, skip_vars=["c"])
    assert rendered.text == "B\n"
    assert rendered.vars == {"a": "B\n", "b": "B", "c": "x\n"}
