"""promptfoo's Nunjucks rendering: JavaScript values, Nunjucks filters, renderPrompt's steps.

The fixtures under ``fixtures/nunjucks`` were captured from the real Nunjucks 3.2.4 as promptfoo
0.121.20 configures it (``getNunjucksEngine().renderString``) and from promptfoo's own
``renderPrompt``; the hand-written cases below pin each rule with a value worked out by hand.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jinja2 import Undefined

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
from coalmine.promptfoo.nunjucks._args import javascript_arity
from coalmine.promptfoo.nunjucks._js import js_loose_equal, js_number, js_to_fixed, js_to_number
from coalmine.promptfoo.nunjucks._json import js_json_stringify
from coalmine.promptfoo.nunjucks._lexer import Tokenizer
from coalmine.promptfoo.nunjucks._numbers import (
    js_to_exponential,
    js_to_locale_string,
    js_to_precision,
    js_to_radix,
)

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


# -- Nunjucks' own syntax and JavaScript's semantics, where Jinja2 reads templates otherwise.
# Each expected value is what Nunjucks 3.2.4 renders, configured as promptfoo 0.121.20 configures
# it (``nunjucks.configure({autoescape: false})`` and renderString, run with node); an error case
# names a part of coalmine's message, Nunjucks' own is in the comment above it.


@dataclass(frozen=True)
class Fails:
    """The template fails (an ERROR row in promptfoo) with a message holding ``message``."""

    message: str


GAP_VARS = {
    "s": "Hello, World",
    "l": [3, 1, 2],
    "n": 255,
    "f": 3.14159,
    "o": {"a": 1, "b": "x"},
    "z": None,
}

NUNJUCKS_GAPS = [
    pytest.param(
        "{{ 1 === 1 }}|{{ 1 === '1' }}|{{ 1 !== '1' }}|{{ z === u }}|{{ l === l }}|{{ [] === [] }}",
        "true|false|true|false|true|false",
        id="strict-equality",
    ),
    pytest.param(
        "{% if n === 255 %}strict{% endif %}{% if n !== '255' %} typed{% endif %}",
        "strict typed",
        id="strict-in-if",
    ),
    pytest.param(
        "[{{ 1e21 }}][{{ 1e3 }}][{{ 0x1F }}][{{ 1_000 }}][{{ 2abc }}][{{ 5. }}][{{ 3.50 }}]",
        "[][][][][][5][3.5]",
        id="number-words-are-names",
    ),
    # nunjucks: expected variable end
    pytest.param("{{ 1.5e-7 }}", Fails("expected variable end"), id="exponent-is-no-number"),
    pytest.param(
        "{{ 10 ** 21 }}|{{ 10 ** 20 }}|{{ 0.1 * 3 }}|{{ 1 / 3 }}|{{ 1 / 0 }}|{{ -1 / 0 }}|{{ 0 / 0 }}|{{ 0 * -1 }}|{{ 2 ** 53 + 1 }}",
        "1e+21|100000000000000000000|0.30000000000000004|0.3333333333333333|Infinity|-Infinity|NaN|0|9007199254740992",
        id="number-printing",
    ),
    pytest.param(
        "{{ 123456789012345678901234 }}|{{ 0.0000001 }}|{{ 0.000001 }}",
        "1.2345678901234569e+23|1e-7|0.000001",
        id="number-printing-large-small",
    ),
    pytest.param(
        "[{{ '  p  ' | trim('p') }}][{{ l | first(2) }}][{{ l | batch | dump }}][{{ l | join }}][{{ 'ab' | upper(1, 2) }}][{{ l | length('x') }}]",
        "[p][3][[[3,1,2]]][312][AB][3]",
        id="filter-extra-args",
    ),
    pytest.param(
        "[{{ l | sort(attribute='x') }}][{{ 'x' | int(default=5) }}][{{ '12' | int(base=8) }}][{{ u | default('a', boolean=true) }}]",
        "[3,1,2][5][10][a]",
        id="filter-keyword-args",
    ),
    pytest.param(
        "[{{ l | center }}][{{ n | center(8) }}][{{ l | slice(2) | dump }}][{{ s | slice(2) | dump }}][{{ z | urlencode }}][{{ z | sum(2) }}]",
        '[                                      3,1,2                                       ][255][[[3,1],[2]]][["Hello,"," World"]][][0]',
        id="filter-any-value",
    ),
    # nunjucks: TypeError: arr.reduce is not a function
    pytest.param("{{ s | sum }}", Fails("arr.reduce is not a function"), id="sum-needs-an-array"),
    pytest.param(
        "{{ s.split('').reverse().join('') }}|{{ l.reverse() }}|{{ l }}",
        "dlroW ,olleH|2,1,3|2,1,3",
        id="string-reverse-and-array-reverse",
    ),
    pytest.param(
        "{{ s.lastIndexOf('o') }}|{{ s.lastIndexOf('o', 5) }}|{{ l.lastIndexOf(2) }}|{{ [1, [2, [3, [4]]]].flat() | dump }}|{{ [1, [2, [3]]].flat(9) | dump }}",
        "8|4|2|[1,2,[3,[4]]]|[1,2,3]",
        id="lastIndexOf-and-flat",
    ),
    pytest.param(
        "{{ s.match('o') }}|{{ s.match('o').index }}|{{ s.match(r/o/g) }}|{{ s.match('zz') === null }}|{{ s.search('W') }}|{{ s.search(r/z/) }}",
        "o|4|o,o|true|7|-1",
        id="match-and-search",
    ),
    pytest.param(
        "{{ 'a'.localeCompare('b') }}|{{ 'b'.localeCompare('a') }}|{{ 'a'.localeCompare('A') }}|{{ 'résumé'.localeCompare('resume') }}",
        "-1|1|-1|1",
        id="localeCompare",
    ),
    pytest.param(
        "{{ s.codePointAt(0) }}|{{ s.charCodeAt(1) }}|{{ s.charCodeAt(99) }}|{{ 'é'.normalize().length }}|{{ 'é'.normalize('NFD').length }}",
        "72|101|NaN|1|2",
        id="code-points-and-normalize",
    ),
    pytest.param(
        "{{ o.hasOwnProperty('a') }}|{{ o.hasOwnProperty('c') }}|{{ o.toString() }}|{{ o.valueOf() | dump }}",
        'true|false|[object Object]|{"a":1,"b":"x"}',
        id="object-methods",
    ),
    pytest.param(
        "{{ n.toString(16) }}|{{ n.toString(2) }}|{{ (-255).toString(36) }}|{{ f.toString(2) }}|{{ (0.5).toString(16) }}",
        "ff|11111111|-73|11.00100100001111110011111000000011011100001100110111|0.8",
        id="toString-radix",
    ),
    pytest.param(
        "{{ f.toFixed(2) }}|{{ f.toPrecision(3) }}|{{ (0.00001234).toPrecision(2) }}|{{ (1234567.891).toPrecision(2) }}|{{ f.toExponential(2) }}|{{ (1234.5678).toLocaleString() }}",
        "3.14|3.14|0.000012|1.2e+6|3.14e+0|1,234.568",
        id="number-formats",
    ),
    pytest.param(
        "{{ s.substr(-5, 2) }}|{{ s.padStart(15, '*') }}|{{ s.at(-1) }}|{{ s.replaceAll('l', 'L') }}|{{ s.split(', ', 1) }}|{{ s.startsWith('World', 7) }}",
        "Wo|***Hello, World|d|HeLLo, WorLd|Hello|true",
        id="string-methods",
    ),
    pytest.param(
        "{% set items = [] %}{% for x in l %}{% set _ = items.push(x * 2) %}{% endfor %}{{ items }}|{{ items.pop() }}|{{ items.shift() }}|{{ items }}|{{ [3, 20, 100].sort() }}",
        "6,2,4|4|6|2|100,20,3",
        id="array-mutators",
    ),
    pytest.param(
        "{{ l.indexOf(1) }}|{{ l.includes(2) }}|{{ l.slice(-2) }}|{{ l.concat([4], 5) }}|{{ l.at(-1) }}|{{ l.keys() }}|{% for i in l.keys() %}{{ i }}{% endfor %}",
        "1|true|1,2|3,1,2,4,5|2|[object Array Iterator]|012",
        id="array-methods",
    ),
    # nunjucks: RangeError: toString() radix argument must be between 2 and 36
    pytest.param(
        "{{ n.toString(1) }}", Fails("toString() radix must be between 2 and 36"), id="radix-range"
    ),
    pytest.param(
        "{{ r/a+/gi }}|{{ r/a+/gi.source }}|{{ r/a+/gi.flags }}|{{ r/x/.test('xyz') }}|{{ r/(\\d+)/.exec('ab12cd').index }}|{{ 'aaa' | replace(r/a/g, 'b') }}|{{ 'aaa' | replace(r/a/, 'b') }}",
        "/a+/gi|a+|gi|true|2|bbb|baa",
        id="regex-literals",
    ),
    pytest.param(
        "{{ 'John Smith'.replace(r/(\\w+)\\s(\\w+)/, '$2, $1') }}|{{ 'a-b_c'.split(r/[-_]/) }}|{{ r/a/ | dump }}",
        "Smith, John|a,b,c|{}",
        id="regex-replace-split-dump",
    ),
    # nunjucks: Error: Unable to call `loop["cycle"]`, which is undefined or falsey
    pytest.param(
        "{% for x in l %}{{ loop.cycle('a', 'b') }}{% endfor %}",
        Fails('Unable to call `loop["cycle"]`, which is undefined or falsey'),
        id="loop-cycle",
    ),
    pytest.param(
        "{% for x in l %}[{{ loop.previtem }}|{{ loop.nextitem }}|{{ loop.depth }}|{{ loop.index }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}]{% endfor %}",
        "[|||12truefalse3][|||21falsefalse3][|||30falsetrue3]",
        id="loop-jinja-attributes",
    ),
    pytest.param(
        "{% for x in l %}{{ loop | dump }}{% endfor %}",
        '{"index":1,"index0":0,"revindex":3,"revindex0":2,"first":true,"last":false,"length":3}{"index":2,"index0":1,"revindex":2,"revindex0":1,"first":false,"last":false,"length":3}{"index":3,"index0":2,"revindex":1,"revindex0":0,"first":false,"last":true,"length":3}',
        id="loop-object",
    ),
    # nunjucks: parseAggregate: expected comma after expression
    pytest.param("{{ l[1:3] }}", Fails("expected comma after expression"), id="slice"),
    # nunjucks: unexpected token: :
    pytest.param("{{ l[:2] }}", Fails(":"), id="slice-from-start"),
    # nunjucks: unknown block tag: with
    pytest.param("{% with a = 1 %}{{ a }}{% endwith %}", Fails("with"), id="with"),
    # nunjucks: expected block end in set statement
    pytest.param(
        "{% set a, b = 1, 2 %}{{ a }}", Fails("expected block end in set statement"), id="tuple-set"
    ),
    pytest.param("{% set a, b = 5 %}{{ a }}|{{ b }}", "5|5", id="set-many-targets"),
    # nunjucks: expected variable end
    pytest.param("{{ 'a' 'b' }}", Fails("expected variable end"), id="implicit-concat"),
    # nunjucks: expected variable end
    pytest.param(
        "{{ n is divisibleby 3 }}", Fails("expected variable end"), id="test-without-parens"
    ),
    pytest.param(
        "{{ n is divisibleby(5) }}|{{ n is not odd }}|{{ n is 'odd' }}|{{ z is null }}",
        "true|false|true|true",
        id="tests",
    ),
    # nunjucks: expected name as lookup value, got 0
    pytest.param("{{ l.0 }}", Fails("expected name as lookup value, got 0"), id="dot-number"),
    pytest.param("{{ (1, 2, 3) }}|{{ (1) }}", "3|1", id="comma-operator"),
    # nunjucks: compilePair: Dict keys must be strings or names
    pytest.param("{{ {1: 2} }}", Fails("Dict keys must be strings or names"), id="dict-number-key"),
    # nunjucks: expected block end in for statement
    pytest.param(
        "{% for x in l recursive %}{{ x }}{% endfor %}",
        Fails("expected block end in for statement"),
        id="recursive-loop",
    ),
    # nunjucks: unknown block tag: autoescape
    pytest.param(
        "{% autoescape true %}{{ s }}{% endautoescape %}", Fails("autoescape"), id="autoescape"
    ),
    # nunjucks: Error: Unable to call `namespace`, which is undefined or falsey
    pytest.param(
        "{% set ns = namespace(a=1) %}{{ ns.a }}",
        Fails("Unable to call `namespace`, which is undefined or falsey"),
        id="namespace",
    ),
    # nunjucks: unknown block tag: break
    pytest.param("{% for x in l %}{% break %}{% endfor %}", Fails("break"), id="break"),
    pytest.param(
        "{{ 'a\\u0041b' }}|{{ 'a\\x41b' }}|{{ 'a\\nb' }}", "au0041b|ax41b|a\nb", id="string-escapes"
    ),
    # nunjucks: parseAggregate: expected comma after expression
    pytest.param(
        "{{ {a: {b: 1}} }}", Fails("expected comma after expression"), id="braces-end-the-tag"
    ),
    # nunjucks: Error: unexpected end of comment
    pytest.param("a #} b", Fails("unexpected end of comment"), id="stray-comment-end"),
    # nunjucks: SyntaxError: Invalid left-hand side expression in prefix operation
    pytest.param(
        "{{ - -1 }}", Fails("Invalid left-hand side expression in prefix operation"), id="decrement"
    ),
    pytest.param(
        "{{ 'x' + 1 - 1 }}|{{ 10 / 5 % 3 }}|{{ 1 ~ 2 + 3 }}|{{ not 1 == 2 }}|{{ 7 // 2 * 2 }}|{{ 2 * 3 ** 2 }}|{{ -2 ** 2 }}",
        "NaN|2|123|false|6|18|4",
        id="compiled-precedence",
    ),
    pytest.param(
        "{{ 0 / 0 or 'nan is falsy' }}|{{ (0 / 0) and 'x' }}", "nan is falsy|NaN", id="nan-is-falsy"
    ),
    pytest.param(
        "{% set total = 0 %}{% for x in l %}{% set total = total + x %}{% endfor %}{{ total }}",
        "6",
        id="set-in-loop-updates-outer",
    ),
    pytest.param(
        "{% for x in l %}{% set y = x %}{% endfor %}[{{ y }}]", "[]", id="set-in-loop-stays-in-loop"
    ),
    pytest.param(
        "{% for x in l %}{% if loop.first %}{% set seen = 'yes' %}{% endif %}{{ seen }}{% endfor %}",
        "yesyesyes",
        id="set-in-loop-keeps-value",
    ),
    pytest.param(
        "{% for x in l %}{% macro m() %}[{{ x }}]{% endmacro %}{{ m() }}{% endfor %}",
        "[][][]",
        id="macro-does-not-see-loop",
    ),
    pytest.param(
        "{% set n = 5 %}{% macro m() %}{{ n }}{% endmacro %}{% set n = 6 %}{{ m() }}",
        "6",
        id="macro-sees-context",
    ),
    pytest.param(
        "{% macro m() %}{% endmacro %}{% if m() %}macro output is a SafeString{% endif %}|{{ m() is escaped }}",
        "macro output is a SafeString|true",
        id="macro-returns-safestring",
    ),
    pytest.param(
        "a  {%- if true %}  b  {% endif -%}  c|{{- ' d ' -}}  |{#- c -#}  e",
        "a  b  c| d |e",
        id="whitespace-control",
    ),
    pytest.param(
        "{% raw %}{{ x }}{% endraw %}|{% verbatim %}{% if %}{% endverbatim %}",
        "{{ x }}|{% if %}",
        id="raw-verbatim",
    ),
    pytest.param(
        "{% switch n %}{% case 1 %}one{% case 255 %}{% case 2 %}two{% default %}other{% endswitch %}|{% switch '255' %}{% case 255 %}num{% default %}str{% endswitch %}",
        "two|str",
        id="switch",
    ),
    pytest.param(
        "{% if false %}{{ x | nope }}{{ x is nope }}{% endif %}lazy",
        "lazy",
        id="lazy-filter-and-test-lookup",
    ),
    # nunjucks: Error: filter not found: nope
    pytest.param("{{ x | nope }}", Fails("nope"), id="unknown-filter"),
]


@pytest.mark.parametrize(("template", "expected"), NUNJUCKS_GAPS)
def test_renders_nunjucks_syntax_and_javascript_semantics(
    template: str, expected: str | Fails
) -> None:
    if isinstance(expected, Fails):
        with pytest.raises(TemplateError, match=re.escape(expected.message)):
            render(template, GAP_VARS)
    else:
        assert render(template, GAP_VARS) == expected


def test_tokens_are_nunjucks_words() -> None:
    # A word runs to the next space or delimiter: digits alone are a number, "1e21" a name.
    tokens = Tokenizer("{{ 1e21 === 5. ~ 'a\\qb' }}")
    seen = []
    while (tok := tokens.next_token()) is not None:
        if tok.type != "whitespace":
            seen.append((tok.type, tok.value))
    assert seen == [
        ("variable-start", "{{"),
        ("symbol", "1e21"),
        ("operator", "==="),
        ("float", "5."),
        ("tilde", "~"),
        ("string", "aqb"),  # an unknown escape is the letter itself
        ("variable-end", "}}"),
    ]


def test_operators_mean_what_the_compiled_javascript_means() -> None:
    # Nunjucks parses a + (b - c) but writes "a + b - c": JavaScript computes ("x" + 1) - 1.
    assert render("{{ a + b - c }}", {"a": "x", "b": 1, "c": 1}) == "NaN"
    # ~ is looser than + in the parse, but both are JavaScript's + once written: ((1 + "") + 2) + 3.
    assert render("{{ 1 ~ 2 + 3 }}", {}) == "123"
    # "not a == b" is written "!a == b": (!0) == 2 is true == 2, false.
    assert render("{{ not a == 2 }}", {"a": 0}) == "false"
    # Parentheses stay: (1 + 2) * 3.
    assert render("{{ (1 + 2) * 3 }}", {}) == "9"


def test_set_in_a_loop_writes_to_the_frame_that_has_the_variable() -> None:
    template = (
        "{% set total = 0 %}{% for x in xs %}{% set total = total + x %}{% endfor %}{{ total }}"
    )
    assert render(template, {"xs": [1, 2, 3]}) == "6"  # 0 + 1 + 2 + 3
    # A variable first set inside the loop lives in the loop's frame: gone after it.
    assert (
        render("{% for x in xs %}{% set last = x %}{% endfor %}[{{ last }}]", {"xs": [1]}) == "[]"
    )
    # A variable set to undefined is looked up again further out: here, in the vars.
    assert render("{% for x in [1] %}{% set n = nothing %}{{ n }}{% endfor %}", {"n": 7}) == "7"


def test_macros_see_their_arguments_and_the_context_only() -> None:
    template = "{% for x in [1] %}{% macro m(a) %}{{ a }}[{{ x }}]{{ v }}{% endmacro %}{{ m('A') }}{% endfor %}"
    assert render(template, {"v": "V"}) == "A[]V"


def test_number_methods_format_as_v8() -> None:
    assert js_to_radix(255, 16) == "ff"
    assert js_to_radix(-255, 2) == "-11111111"
    assert js_to_radix(0.5, 2) == "0.1"  # one half is 0.1 in binary
    assert (
        js_to_radix(0.1, 3) == "0.0022002200220022002200220022002201"
    )  # to the double's precision
    assert js_to_precision(123.456, 4) == "123.5"
    assert js_to_precision(0.00001234, 2) == "0.000012"
    assert js_to_precision(1234567.891, 2) == "1.2e+6"
    assert js_to_exponential(0, 2) == "0.00e+0"
    assert js_to_exponential(1234.5, None) == "1.2345e+3"
    assert js_to_locale_string(1234567.891) == "1,234,567.891"
    assert js_to_locale_string(0.0005) == "0.001"  # three decimals, the tie rounds up


def test_javascript_arity_drops_and_fills_arguments() -> None:
    def pair(a: object, b: object = "b") -> tuple[object, object]:
        return a, b

    call = javascript_arity(pair)
    assert call(1, 2, 3) == (1, 2)
    assert call(1) == (1, "b")
    first, second = call()
    assert isinstance(first, Undefined) and second == "b"


def test_runtime_errors_name_the_template_line() -> None:
    with pytest.raises(
        TemplateError,
        match=r'line 3\): TypeError: Unable to call `x\["nope"\]`, which is not a function',
    ) as info:
        render("a\nb\n{{ x.nope() }}", {"x": {"nope": 1}})
    assert info.value.line == 3
