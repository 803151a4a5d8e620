"""The grader contract, the context a grader gets, and the ``@grader`` registry.

A grader is an ``async def`` taking ``(config, output, ctx)`` and returning a ``Grade``. Graders
never import providers: a grader that needs a model judge calls ``ctx.judge``, which the runner
wires to the configured judge. ``needs_judge`` graders are skipped when there is no judge.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import AfterValidator, BaseModel, ValidationError

from coalmine._util.registry import Projection, Registry
from coalmine.errors import GradeError, PluginError
from coalmine.results import Grade, ToolCall


@dataclass(frozen=True)
class JudgeReply:
    """The judge's raw reply to one judge prompt."""

    text: str
    model: str
    usage: dict[str, int] | None = None
    """Token counts of the call, when the judge's provider reports them."""


JudgeFn = Callable[[str], Awaitable[JudgeReply]]
"""Send a judge prompt to the configured judge and return its reply."""


@dataclass(frozen=True)
class GradeContext:
    """What a grader may know besides the output."""

    case_id: str
    prompt: str
    """The task prompt the agent received."""
    judge: JudgeFn | None = None
    latency_seconds: float | None = None
    """How long the agent took to answer (``None`` for a cached answer)."""
    cost: float | None = None
    """What the agent's call cost, when its model has a price."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The agent's tool calls, in order."""
    inputs: Mapping[str, Any] = field(default_factory=dict)
    """The case's grader inputs (an eval suite line's ``expected``, ``relevant``,
    ``expected_tool_calls``, ``forbidden_tools``, ``context``, ``metadata``, ``vars``); only
    the keys the case gave are present. Empty for a canary."""
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """The project's ``python_graders``, loaded: name → function (for the ``python`` grader)."""


GradeFn = Callable[[Any, str, GradeContext], Awaitable[Grade]]


@dataclass(frozen=True)
class GraderType:
    """A registered grader."""

    name: str
    config: type[BaseModel]
    grade: GradeFn
    threshold: float
    """The score at which this grader passes."""
    needs_judge: bool = False


def _check(name: str, item: GraderType) -> None:
    if not inspect.iscoroutinefunction(item.grade):
        raise PluginError(f"grader {name!r}: the grading function must be 'async def'")
    if not 0.0 <= item.threshold <= 1.0:
        raise PluginError(f"grader {name!r}: threshold {item.threshold} is outside 0..1")


_BUILTINS: dict[str, tuple[str, ...]] = {
    "keyword": ("keyword",),
    "structural": ("structural",),
    "llm_judge": ("llm-judge",),
    "overlap": (
        "bleu", "contains", "contains-all", "contains-any", "equals", "gleu", "icontains",
        "icontains-all", "icontains-any", "is-refusal", "levenshtein", "regex", "rouge-n",
        "starts-with", "word-count",
    ),
    "structured": ("contains-json", "cost", "is-json", "json-path", "latency"),
    "text": (),
    "markup": ("contains-html", "contains-xml", "is-html", "is-xml"),
    "retrieval": (
        "hit_rate@k", "map", "map@k", "mrr", "mrr@k", "ndcg@k", "ndcg_exp@k", "precision@k",
        "recall@k",
    ),
    "tools": ("forbidden-tool-args", "forbidden-tools", "tool-args-match", "tool-call-exact",
              "tool-call-f1", "tool-sequence"),
    "rubric": ("context-faithfulness", "context-recall", "llm-rubric"),
    "python": ("python",),
}  # fmt: skip
"""Each built-in grader module and the graders it registers (with their ``not-`` forms);
tests/graders/test_registry_locate.py checks it against what the modules register."""

registry: Registry[GraderType] = Registry(
    "grader",
    builtins=tuple(f"coalmine.graders.{module}" for module in _BUILTINS),
    check=_check,
    locate={
        alias: f"coalmine.graders.{module}"
        for module, names in _BUILTINS.items()
        for name in names
        for alias in (name, f"not-{name}")
    },
)

G = TypeVar("G", bound=GradeFn)


def grader(
    name: str,
    *,
    config: type[BaseModel],
    threshold: float,
    needs_judge: bool = False,
    negatable: bool = False,
) -> Callable[[G], G]:
    """Register an async grading function under ``name``.

    With ``negatable`` a ``not-<name>`` grader is registered too, as promptfoo's ``not-``
    prefix works: it passes when the grader fails, and its score is ``1 - score``.
    """

    def decorate(function: G) -> G:
        registry.register(name, GraderType(name, config, function, threshold, needs_judge))
        if negatable:
            registry.register(
                f"not-{name}",
                GraderType(f"not-{name}", config, _negated(function), threshold, needs_judge),
            )
        return function

    return decorate


def _negated(function: GradeFn) -> GradeFn:
    async def negated(config: Any, output: str, ctx: GradeContext) -> Grade:
        grade = await function(config, output, ctx)
        if grade.score is None:
            return grade
        inverted = 1.0 - grade.score
        return grade.model_copy(update={"score": inverted, "passed": not grade.passed})

    negated.__name__ = f"not_{getattr(function, '__name__', 'grader')}"
    summary = (function.__doc__ or "").strip().splitlines()
    negated.__doc__ = "The opposite: " + (summary[0] if summary else "the grader fails.")
    return negated


def grader_configs() -> Mapping[str, type[BaseModel]]:
    """Grader name → config model, for validating specs (each imported as it is looked up)."""
    return Projection(registry, "config", grader_configs)


CaseInputs = Mapping[str, tuple[str, ...]]
"""A grader config's ``case_inputs`` (a ``ClassVar``): each case input the grader reads, with
the config fields that stand in for it (``{"expected": ("value",)}``: the case's ``expected``
unless the config sets ``value``; ``()``: always the case's). Specs are checked against it when
they load, so a grader with nothing to compare with is an error at its line, not mid-run."""

_C = TypeVar("_C", bound=BaseModel)
_V = TypeVar("_V")


def _not_null(value: _V | None) -> _V:
    if value is None:
        raise ValueError("null is not a value; leave 'value' out to use the case's 'expected'")
    return value


NotNull = AfterValidator(_not_null)
"""Rejects an explicit ``null``; a ``value`` left out (``None``) means the case's ``expected``."""


def value_or_expected(config: _C, ctx: GradeContext, grader_name: str, field: str = "value") -> _C:
    """Return ``config`` with ``field`` set: from the case's ``expected`` if the config lacks it.

    An eval suite case's ``expected`` is its reference answer, so a grader that compares the
    output with a value falls back to it. It is checked by the config's own rules (the model is
    built again with it), so it may take any form the config's field accepts.

    Raises:
        GradeError: (a config error) neither the config nor the case gives a value, or the
            case's ``expected`` is not valid for the field.
    """
    if field in config.model_fields_set:
        return config
    if "expected" not in ctx.inputs:
        article = "an" if field[:1] in "aeiou" else "a"
        message = f"no value: give the grader {article} {field!r} or the case an 'expected'"
        raise GradeError(message, grader=grader_name, config=True)
    data = {**config.model_dump(exclude_unset=True), field: ctx.inputs["expected"]}
    try:
        return type(config).model_validate(data)
    except ValidationError as exc:
        reasons = dict.fromkeys(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        message = f"the case's 'expected' is not a valid value for {grader_name}: "
        raise GradeError(message + "; ".join(reasons), grader=grader_name, config=True) from None
