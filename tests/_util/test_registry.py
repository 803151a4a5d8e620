"""The generic plugin registry and the ``@grader`` decorator's registration-time checks."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from coalmine._util.registry import Registry
from coalmine.errors import PluginError
from coalmine.graders import base
from coalmine.graders.base import GradeContext, GraderType, grader
from coalmine.results import Grade


class NoConfig(BaseModel):
    pass


def test_register_get_find_names() -> None:
    things: Registry[int] = Registry("thing")
    assert things.register("beta", 2) == 2
    things.register("alpha", 1)
    things.register("with-hyphen", 3)
    assert things.get("alpha") == 1
    assert things.find("beta") == 2
    assert things.find("gamma") is None
    assert things.names() == ["alpha", "beta", "with-hyphen"]
    assert list(things) == [("alpha", 1), ("beta", 2), ("with-hyphen", 3)]


def test_duplicate_name_is_a_plugin_error() -> None:
    things: Registry[int] = Registry("thing")
    things.register("alpha", 1)
    with pytest.raises(PluginError, match="thing 'alpha' is registered twice"):
        things.register("alpha", 2)
    assert things.get("alpha") == 1


@pytest.mark.parametrize("name", ["Alpha", "LLM-JUDGE", "two words", ""])
def test_bad_names_are_rejected(name: str) -> None:
    things: Registry[int] = Registry("thing")
    with pytest.raises(PluginError, match="must be lowercase, without spaces"):
        things.register(name, 1)
    assert things.names() == []


def test_unknown_name_lists_known_ones() -> None:
    things: Registry[int] = Registry("thing")
    things.register("beta", 2)
    things.register("alpha", 1)
    with pytest.raises(PluginError) as info:
        things.get("gamma")
    assert str(info.value) == "unknown thing 'gamma'; known: alpha, beta"
    assert info.value.exit_code == 2


def test_unknown_name_in_empty_registry() -> None:
    with pytest.raises(PluginError, match="unknown thing 'x'; known: none"):
        Registry[int]("thing").get("x")


def test_check_runs_at_registration() -> None:
    def only_even(name: str, item: int) -> None:
        if item % 2:
            raise PluginError(f"thing {name!r}: {item} is odd")

    things: Registry[int] = Registry("thing", check=only_even)
    things.register("two", 2)
    with pytest.raises(PluginError, match="thing 'three': 3 is odd"):
        things.register("three", 3)
    assert things.names() == ["two"]


def test_builtin_graders_are_registered() -> None:
    assert {"keyword", "structural", "llm-judge"} <= set(base.registry.names())
    assert set(base.grader_configs()) >= {"keyword", "structural", "llm-judge"}


def test_grader_decorator_rejects_a_sync_function() -> None:
    def sync_grade(config: NoConfig, output: str, ctx: GradeContext) -> Grade:
        return Grade(score=1.0)

    decorate = grader("test-sync-grader", config=NoConfig, threshold=0.5)
    with pytest.raises(PluginError, match="grader 'test-sync-grader': .* must be 'async def'"):
        decorate(sync_grade)  # type: ignore[type-var]
    assert base.registry.find("test-sync-grader") is None


@pytest.mark.parametrize("threshold", [-0.1, 1.01, 2.0])
def test_grader_decorator_rejects_threshold_outside_0_1(threshold: float) -> None:
    async def grade(config: NoConfig, output: str, ctx: GradeContext) -> Grade:
        return Grade(score=1.0)

    decorate = grader("test-bad-threshold", config=NoConfig, threshold=threshold)
    with pytest.raises(PluginError, match=f"threshold {threshold} is outside 0..1"):
        decorate(grade)
    assert base.registry.find("test-bad-threshold") is None


@pytest.mark.parametrize("threshold", [0.0, 1.0])
def test_grader_decorator_registers_an_async_function(threshold: float) -> None:
    async def grade(config: NoConfig, output: str, ctx: GradeContext) -> Grade:
        return Grade(score=1.0)

    try:
        returned = grader("test-ok-grader", config=NoConfig, threshold=threshold)(grade)
        assert returned is grade
        item = base.registry.get("test-ok-grader")
        assert item == GraderType("test-ok-grader", NoConfig, grade, threshold, False)
        with pytest.raises(PluginError, match="registered twice"):
            grader("test-ok-grader", config=NoConfig, threshold=threshold)(grade)
    finally:
        base.registry._items.pop("test-ok-grader", None)
    assert base.registry.find("test-ok-grader") is None
