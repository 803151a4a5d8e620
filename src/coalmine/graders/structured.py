"""Structured-output and reference graders, named and meant as promptfoo's assertions.

``is-json``, ``contains-json``, ``json-path``, ``latency`` and ``cost``, each also as
``not-<name>`` (``rouge-n`` and ``bleu`` are in ``overlap.py``). Where promptfoo's behaviour
is a trap, coalmine differs:

- JSON is parsed strictly, as ``JSON.parse`` does: ``NaN`` and ``Infinity`` are not JSON.
  Schemas are JSON Schema Draft 2020-12 unless their ``$schema`` names another; ``format`` is
  not checked; ``$ref`` is resolved inside the schema only, never fetched. An invalid schema
  is a config error when the suite loads (promptfoo fails each case instead).
- ``contains-json`` finds arrays as well as objects (promptfoo only looks at ``{``), so
  ``[{"id": 1}]`` counts; so does a citation like ``[1]``: give a schema (``type: object``)
  when that matters. Only outermost values are tried; any one fitting the schema passes.
  (A ``compat: promptfoo`` suite gets promptfoo's verdict: :mod:`coalmine.promptfoo.json_compat`.)
- ``latency`` (``threshold`` in ms) and ``cost`` (in currency units) are skipped, not failed,
  when the value is unknown: a cached answer, an unpriced model (promptfoo raises).
- ``json-path`` with neither ``equals`` nor ``matches`` compares the value at the path with an
  eval suite case's ``expected`` (a config error of the case when it has none).
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    field_validator,
    model_validator,
)

from coalmine._util.jsonpath import (
    PathNotFound,
    find_json,
    json_equal,
    lookup,
    parse_json,
    parse_path,
    render_path,
)
from coalmine.errors import GradeError
from coalmine.graders.base import CaseInputs, GradeContext, grader, value_or_expected
from coalmine.results import Grade

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

_SHOWN = 200
_CONFIG = ConfigDict(extra="forbid", frozen=True)
Text = Annotated[str, Field(pattern=r"\S")]


# ---------------------------------------------------------------- JSON


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Validator:
    """The validator of a schema (as canonical JSON); ``ValueError`` for an invalid schema."""
    # jsonschema is imported when a schema is first checked: every run loads the built-in
    # graders, and most never check one (~25 ms of each start-up)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    schema = json.loads(schema_text)
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"invalid JSON Schema at {exc.json_path}: {exc.message}") from None
    return cls(schema)


def _schema_problem(schema: dict[str, Any] | bool, value: Any, grader_name: str) -> str | None:
    """Why ``value`` does not fit ``schema`` (the most relevant error), or ``None`` if it does."""
    from jsonschema.exceptions import best_match
    from referencing.exceptions import Unresolvable

    try:
        error = best_match(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value))
    except Unresolvable as exc:
        message = f"the schema's $ref cannot be resolved ({exc}); only refs inside it work"
        raise GradeError(message, grader=grader_name) from None
    return None if error is None else f"{error.json_path}: {_shorten(error.message)}"


class SchemaConfig(BaseModel):
    """Config of ``is-json`` and ``contains-json``."""

    model_config = _CONFIG

    value: dict[str, JsonValue] | StrictBool | None = None
    """A JSON Schema the JSON must fit (Draft 2020-12 unless its ``$schema`` says otherwise)."""

    @field_validator("value")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any] | bool | None) -> dict[str, Any] | bool | None:
        if value is not None:
            _validator(json.dumps(value, sort_keys=True))
        return value


class JsonGrade(Grade):
    """Result of ``is-json``, ``contains-json`` and ``json-path``."""

    found: int
    """How many JSON values were found (at the path, for ``json-path``)."""
    value: JsonValue = None
    """The value at the path (``json-path``)."""
    problem: str | None = None
    """Why it failed: not JSON, a schema error, a missing path or a different value."""

    def explain(self) -> str:
        """Say why the output is not the JSON asked for."""
        return self.problem or ""


def _json_grade(problem: str | None, found: int, value: JsonValue = None) -> JsonGrade:
    ok = problem is None
    return JsonGrade(score=float(ok), passed=ok, found=found, value=value, problem=problem)


@grader("is-json", config=SchemaConfig, threshold=1.0, negatable=True)
async def is_json(config: SchemaConfig, output: str, ctx: GradeContext) -> Grade:
    """Pass when the whole output is JSON (and fits the schema, if one is given)."""
    try:
        value = parse_json(output)
    except ValueError as exc:
        return _json_grade(f"the output is not JSON: {_shorten(str(exc))}", 0)
    if config.value is None:
        return _json_grade(None, 1)
    problem = _schema_problem(config.value, value, "is-json")
    return _json_grade(problem and f"the JSON does not fit the schema: {problem}", 1)


@grader("contains-json", config=SchemaConfig, threshold=1.0, negatable=True)
async def contains_json(config: SchemaConfig, output: str, ctx: GradeContext) -> Grade:
    """Pass when a JSON object or array in the output (that fits the schema) is found."""
    values = find_json(output)
    if not values:
        return _json_grade("the output holds no JSON object or array", 0)
    if config.value is None:
        return _json_grade(None, len(values))
    problems = [_schema_problem(config.value, value, "contains-json") for value in values]
    if None in problems:
        return _json_grade(None, len(values))
    if len(values) == 1:
        return _json_grade(f"the JSON does not fit the schema: {problems[0]}", 1)
    none = f"none of the {len(values)} JSON values fits the schema; first: {problems[0]}"
    return _json_grade(none, len(values))


class JsonPathConfig(BaseModel):
    """Config of ``json-path``: give ``path`` and one of ``equals`` or ``matches``.

    With neither, the value must equal the eval suite case's ``expected``.
    """

    model_config = _CONFIG
    case_inputs: ClassVar[CaseInputs] = {"expected": ("equals", "matches")}

    path: str = Field(min_length=1)
    """Dotted (``result.items.0.id``) or ``$`` JSONPath (``$.result.items[0]['id']``)."""
    equals: JsonValue = None
    """The value must equal this as JSON (key order ignored, ``75 == 75.0``, ``"5" != 5``).
    Left out, with no ``matches``: the case's ``expected``."""
    matches: str | None = None
    """A regex searched in the value: a string as is, anything else as compact JSON."""

    @field_validator("path")
    @classmethod
    def _valid_path(cls, value: str) -> str:
        parse_path(value)
        return value

    @field_validator("matches")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"invalid regex {value!r}: {exc}") from None
        return value

    @model_validator(mode="after")
    def _one_test(self) -> JsonPathConfig:
        if "equals" in self.model_fields_set and self.matches is not None:
            raise ValueError("give one of 'equals' and 'matches', not both")
        return self


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@grader("json-path", config=JsonPathConfig, threshold=1.0, negatable=True)
async def json_path(config: JsonPathConfig, output: str, ctx: GradeContext) -> Grade:
    """Pass when the value at ``path`` of the output's JSON equals or matches the config's."""
    if config.matches is None:
        config = value_or_expected(config, ctx, "json-path", field="equals")
    spec = config.path
    try:
        data = parse_json(output)
    except ValueError as exc:
        return _json_grade(f"the output is not JSON: {_shorten(str(exc))}", 0)
    steps = parse_path(spec)
    try:
        value = lookup(data, steps)
    except PathNotFound as miss:
        at = repr(render_path(steps[: miss.depth], spec)) if miss.depth else "the top level"
        return _json_grade(f"path {spec!r} not found: at {at}, {miss.reason}", 0)
    if config.matches is None:
        ok, shown = json_equal(value, config.equals), _compact(value)
        want = f"equal {_shorten(_compact(config.equals))}"
    else:  # the regex sees a string as it is, any other value as compact JSON
        shown = value if isinstance(value, str) else _compact(value)
        ok, want = re.search(config.matches, shown) is not None, f"match /{config.matches}/"
    problem = None if ok else f"{spec} is {_shorten(shown)}, which does not {want}"
    return _json_grade(problem, 1, value)


# ---------------------------------------------------------------- budgets


class BudgetConfig(BaseModel):
    """Config of ``latency`` and ``cost``."""

    model_config = _CONFIG

    threshold: float = Field(ge=0)
    """The most it may take: milliseconds for ``latency``, currency units for ``cost``."""


class BudgetGrade(Grade):
    """Result of ``latency`` and ``cost``."""

    measured: float | None
    """Milliseconds or cost; ``None`` when unknown (the grade is skipped)."""
    threshold: float
    unit: str

    def explain(self) -> str:
        """Compare the measured value with the threshold."""
        if self.measured is None or self.measured <= self.threshold:
            return ""
        return f"{self.measured:g}{self.unit} > {self.threshold:g}{self.unit}"


def _budget(measured: float | None, limit: float, unit: str, unknown: str) -> BudgetGrade:
    if measured is None:
        return BudgetGrade(skipped=True, reason=unknown, measured=None, threshold=limit, unit=unit)
    ok = measured <= limit
    return BudgetGrade(score=float(ok), passed=ok, measured=measured, threshold=limit, unit=unit)


@grader("latency", config=BudgetConfig, threshold=1.0, negatable=True)
async def latency(config: BudgetConfig, output: str, ctx: GradeContext) -> Grade:
    """Pass when the agent answered within ``threshold`` milliseconds."""
    ms = None if ctx.latency_seconds is None else ctx.latency_seconds * 1000
    return _budget(ms, config.threshold, " ms", "latency unknown (a cached answer)")


@grader("cost", config=BudgetConfig, threshold=1.0, negatable=True)
async def cost(config: BudgetConfig, output: str, ctx: GradeContext) -> Grade:
    """Pass when the agent's call cost at most ``threshold``."""
    return _budget(ctx.cost, config.threshold, "", "cost unknown (the model has no price)")
