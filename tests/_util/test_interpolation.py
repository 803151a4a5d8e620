"""``${VAR}`` expansion keeps what came from the environment, and what is missing, by place."""

from __future__ import annotations

from coalmine._util.interpolation import FromEnv, UnsetVar, expand


def test_expansion_remembers_where_each_value_came_from() -> None:
    data = {
        "a": "x-${ONE}-y",
        "b": ["${TWO:-fallback}", "${THREE:-fallback}", "$${LITERAL}"],
        "c": {"d": "${MISSING}", "e": 7},
    }
    expanded = expand(data, {"ONE": "1", "THREE": "3", "EMPTY": ""})
    assert expanded.data == {
        "a": "x-1-y",
        "b": ["fallback", "3", "${LITERAL}"],
        "c": {"d": "", "e": 7},
    }
    assert expanded.from_env == (FromEnv(("a",), "ONE", "1"), FromEnv(("b", 1), "THREE", "3"))
    assert expanded.unset == (UnsetVar(("c", "d"), "MISSING"),)
    assert expanded.under(("c",)).unset == (UnsetVar(("d",), "MISSING"),)
    assert expanded.under(("b",)).from_env == (FromEnv((1,), "THREE", "3"),)


def test_an_empty_variable_takes_the_default_as_the_shell_does() -> None:
    assert expand("${EMPTY:-d}/${EMPTY}", {"EMPTY": ""}).data == "d/"
