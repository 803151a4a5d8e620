"""Parsed JSON helpers: strict parsing, finding JSON in prose, JSON equality, safe paths."""

from __future__ import annotations

from typing import Any

import pytest

from coalmine._util.jsonpath import (
    PathNotFound,
    find_json,
    json_equal,
    lookup,
    parse_json,
    parse_path,
    render_path,
)

DATA: dict[str, Any] = {
    "a": {"b": [10, {"c": "deep"}]},
    "a b": 1,
    "k.dot": 2,
    "it's": 3,
    "7": "seven",
    "items": [],
}


# ---------------------------------------------------------------- parse_path


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("output", ("output",)),
        ("choices.0.message.content", ("choices", 0, "message", "content")),
        ("a.-1", ("a", -1)),
        ("$", ()),
        ("$.a.b[0]", ("a", "b", 0)),
        ("$.a.b[-1].c", ("a", "b", -1, "c")),
        ("$['a b']", ("a b",)),
        ('$["a b"][2]', ("a b", 2)),
        ("$['k.dot']", ("k.dot",)),
        (r"$['it\'s']", ("it's",)),
        ('$["say \\"hi\\""]', ('say "hi"',)),
        ("$[0][1]", (0, 1)),
    ],
)
def test_parse_path(text: str, steps: tuple[str | int, ...]) -> None:
    assert parse_path(text) == steps


@pytest.mark.parametrize(
    "text",
    ["$.*", "$..a", "$[0:2]", "$[*]", "$[?(@.a)]", "$.a[", "$a", "$['a]"],
)
def test_unsupported_jsonpath_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="unsupported JSONPath"):
        parse_path(text)


def test_unsupported_jsonpath_names_the_character() -> None:
    # "$.a" is fine up to index 3; the 4th character starts ".." and is refused.
    with pytest.raises(ValueError, match="at character 4"):
        parse_path("$.a..b")


@pytest.mark.parametrize("text", ["", "a..b", ".a", "a."])
def test_dotted_path_with_an_empty_part_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="empty part"):
        parse_path(text)


# ---------------------------------------------------------------- lookup


def test_lookup_follows_keys_and_indexes() -> None:
    assert lookup(DATA, parse_path("a.b.1.c")) == "deep"
    assert lookup(DATA, parse_path("$.a.b[1].c")) == "deep"
    assert lookup(DATA, parse_path("$.a.b[-2]")) == 10
    assert lookup(DATA, parse_path("$['a b']")) == 1
    assert lookup(DATA, parse_path("$['k.dot']")) == 2


def test_empty_path_is_the_whole_value() -> None:
    assert lookup(DATA, parse_path("$")) is DATA


def test_an_integer_step_on_an_object_is_a_key() -> None:
    assert lookup(DATA, parse_path("7")) == "seven"
    assert lookup(DATA, parse_path("$[7]")) == "seven"


def test_missing_key_reports_its_depth_and_the_keys_there() -> None:
    with pytest.raises(PathNotFound) as caught:
        lookup(DATA, parse_path("a.x.y"))
    # "a" was followed (depth 1); "x" is the failing step.
    assert caught.value.depth == 1
    assert caught.value.reason == "no key 'x'; keys there: 'b'"
    assert str(caught.value) == "at step 2: no key 'x'; keys there: 'b'"
    assert isinstance(caught.value, LookupError)


def test_missing_key_at_the_top_has_depth_zero() -> None:
    with pytest.raises(PathNotFound) as caught:
        lookup({}, ("x",))
    assert caught.value.depth == 0
    assert caught.value.reason == "no key 'x'; keys there: none"


def test_long_key_lists_are_cut() -> None:
    wide = {f"k{i}": i for i in range(25)}
    with pytest.raises(PathNotFound) as caught:
        lookup(wide, ("x",))
    assert caught.value.reason.endswith("'k19' …")
    assert "'k20'" not in caught.value.reason


def test_index_out_of_range() -> None:
    with pytest.raises(PathNotFound) as caught:
        lookup(DATA, parse_path("$.a.b[2]"))
    assert caught.value.depth == 2
    assert caught.value.reason == "no index 2: the list has 2 item(s)"
    with pytest.raises(PathNotFound, match="no index -3"):
        lookup(DATA, parse_path("$.a.b[-3]"))
    with pytest.raises(PathNotFound, match="no index 0: the list has 0 item"):
        lookup(DATA, parse_path("items.0"))


@pytest.mark.parametrize(
    ("path", "depth", "reason"),
    [
        ("a.b.0.x", 3, "cannot take 'x' of a number"),
        ("a.b.1.c.0", 4, "cannot take 0 of a string"),
        ("a.b.key", 2, "cannot take 'key' of a list"),
    ],
)
def test_stepping_into_a_scalar_or_a_list_by_name(path: str, depth: int, reason: str) -> None:
    with pytest.raises(PathNotFound) as caught:
        lookup(DATA, parse_path(path))
    assert (caught.value.depth, caught.value.reason) == (depth, reason)


@pytest.mark.parametrize(
    ("value", "kind"), [(None, "null"), (True, "a boolean"), (1.5, "a number")]
)
def test_failure_names_the_kind_of_value(value: Any, kind: str) -> None:
    with pytest.raises(PathNotFound, match=f"cannot take 0 of {kind}$"):
        lookup({"v": value}, ("v", 0))


def test_render_path_uses_the_notation_of_the_spec() -> None:
    assert render_path(("a", 0, "b c"), "$.a[0]['b c'].d") == "$.a[0]['b c']"
    assert render_path(("a", 0), "a.0.b") == "a.0"
    assert render_path((), "$") == "$"


# ---------------------------------------------------------------- parse_json, find_json


def test_parse_json_allows_surrounding_whitespace() -> None:
    assert parse_json(' \n {"a": [1, 2.5, null, true]} \t') == {"a": [1, 2.5, None, True]}
    assert parse_json("42") == 42


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_parse_json_refuses_python_only_constants(text: str) -> None:
    with pytest.raises(ValueError, match="is not JSON"):
        parse_json(text)


@pytest.mark.parametrize("text", ["", "{'a': 1}", '{"a": 1} trailing', "```json\n{}\n```"])
def test_parse_json_refuses_what_json_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_json(text)


def test_parse_json_too_deep_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_json("[" * 100_000 + "]" * 100_000)


def test_find_json_finds_outermost_objects_and_arrays_in_prose() -> None:
    text = 'Here: {"a": {"b": 1}} and [1, [2]] then {bad} and ```json\n{"c": 2}\n```'
    assert find_json(text) == [{"a": {"b": 1}}, [1, [2]], {"c": 2}]


def test_find_json_skips_broken_openers_and_scalars() -> None:
    # The "{" never closes, so the scan moves on and finds the array inside it.
    assert find_json('{"unclosed": [1, 2] and "x"') == [[1, 2]]
    assert find_json("no json, just 42 and true") == []
    assert find_json("{ [NaN] [3] }") == [[3]]


# ---------------------------------------------------------------- json_equal


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"x": 1, "y": 2}, {"y": 2, "x": 1}),
        (75, 75.0),
        (0, -0.0),
        ([1, {"a": None}], [1.0, {"a": None}]),
        ("5", "5"),
        (None, None),
        (True, True),
    ],
)
def test_json_equal(a: Any, b: Any) -> None:
    assert json_equal(a, b)
    assert json_equal(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("5", 5),
        (True, 1),
        (False, 0),
        (1.0, True),
        (None, 0),
        (None, ""),
        ({"a": None}, {}),
        ([1, 2], [2, 1]),
        ([1], [1, 1]),
        ({"a": 1}, [["a", 1]]),
        (2**53 + 1, float(2**53)),
    ],
)
def test_json_unequal(a: Any, b: Any) -> None:
    assert not json_equal(a, b)
    assert not json_equal(b, a)
