"""Eval suites (seed 001): ``harness/evals/<suite>.jsonl``, one case a line.

An optional ``<suite>.yaml`` beside it holds the suite's defaults.
A case has a stable ``id`` and either a ``prompt`` or ``vars`` rendered through the suite's
``prompt_template`` (Jinja2, undefined variables are errors). Suite graders apply before each
case's own. A bad line is reported with file:line, counted, and the rest of the suite loads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from coalmine._source import Document, Problem, SourceError, load_yaml
from coalmine._source import validation_problems as _validation_problems
from coalmine.specs.loader import check_graders
from coalmine.specs.models import GraderSpec

SUITES_DIR = Path("harness") / "evals"


class SuiteMeta(BaseModel):
    """``<suite>.yaml``: defaults for every case of the suite."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    description: str | None = None
    agent: str | None = None
    """The agent every case goes to, unless a case names its own."""
    prompt_template: str | None = None
    """Jinja2 template rendered with a case's ``vars`` (undefined variables are errors)."""
    graders: list[GraderSpec] = []
    """Applied to every case, before the case's own graders."""
    threshold: float | None = Field(None, ge=0, le=1)
    """A case passes when its weighted score reaches this (default: every grader passes)."""
    repeats: int = Field(1, ge=1)
    """How many times each case runs."""
    blocking: bool = True
    """False makes the whole suite advisory."""


class EvalCase(BaseModel):
    """One line of a suite."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")
    """Stable and unique within the suite."""
    prompt: str | None = None
    vars: dict[str, Any] | None = None
    """Rendered through the suite's ``prompt_template``."""
    agent: str | None = None
    graders: list[GraderSpec] = []
    threshold: float | None = Field(None, ge=0, le=1)
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    expected: Any = None
    """What graders compare the output with (``equals``, ``levenshtein`` …)."""
    relevant: dict[str, int] | list[str] | None = None
    """Retrieval judgements: doc id → grade, or the relevant ids."""
    expected_tool_calls: list[dict[str, Any]] | None = None
    forbidden_tools: list[str] | None = None
    context: list[str] | str | None = None
    """Retrieved context for RAG graders."""

    @model_validator(mode="after")
    def _prompt_or_vars(self) -> EvalCase:
        if (self.prompt is None) == (self.vars is None):
            raise ValueError("give either 'prompt' or 'vars' (with a prompt_template)")
        return self


@dataclass(frozen=True)
class SuiteCase:
    """A valid case with its rendered prompt and effective settings."""

    case: EvalCase
    prompt: str
    graders: list[GraderSpec]
    threshold: float | None
    agent: str | None
    line: int


@dataclass(frozen=True)
class BadLine:
    """A line that could not be used, and why."""

    path: Path
    line: int
    message: str
    case_id: str | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its name, defaults, valid cases and bad lines."""

    name: str
    path: Path
    meta: SuiteMeta
    cases: list[SuiteCase] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)


def load_suite(path: Path, *, grader_configs: Mapping[str, type[BaseModel]]) -> Suite:
    """Load ``<suite>.jsonl`` and its optional ``<suite>.yaml``.

    Raises:
        SourceError: the suite's YAML is unreadable or invalid (the whole suite cannot run).
    """
    meta = _load_meta(path.with_suffix(".yaml"), grader_configs)
    suite = Suite(path.stem, path, meta)
    template = _template(meta.prompt_template, path)
    seen: dict[str, int] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read the suite: {exc}", path=path) from None
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        result = _load_line(raw, number, path, meta, template, grader_configs)
        if isinstance(result, BadLine):
            suite.bad.append(result)
            continue
        if result.case.id in seen:
            message = f"duplicate id {result.case.id!r} (first on line {seen[result.case.id]})"
            suite.bad.append(BadLine(path, number, message, result.case.id))
            continue
        seen[result.case.id] = number
        suite.cases.append(result)
    return suite


def _load_line(
    raw: str,
    number: int,
    path: Path,
    meta: SuiteMeta,
    template: jinja2.Template | None,
    grader_configs: Mapping[str, type[BaseModel]],
) -> SuiteCase | BadLine:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return BadLine(path, number, f"not valid JSON ({exc.msg}, column {exc.colno})")
    if not isinstance(data, dict):
        return BadLine(path, number, "a case must be a JSON object")
    case_id = data.get("id") if isinstance(data.get("id"), str) else None
    try:
        case = EvalCase.model_validate(data)
    except ValidationError as exc:
        doc = Document(path, data, {}, number)
        found = _validation_problems(exc, doc, EvalCase)
        return BadLine(path, number, "; ".join(p.message for p in found), case_id)
    graders = [*meta.graders, *case.graders]
    doc = Document(path, {"graders": graders}, {}, number)
    problems = check_graders(graders, doc, grader_configs, at=("graders",))
    if problems:
        return BadLine(path, number, "; ".join(p.message for p in problems), case.id)
    if case.prompt is not None:
        prompt = case.prompt
    elif template is None:
        return BadLine(path, number, "'vars' needs a prompt_template in the suite's YAML", case.id)
    else:
        try:
            prompt = template.render(**(case.vars or {}))
        except jinja2.TemplateError as exc:
            return BadLine(path, number, f"prompt_template: {exc}", case.id)
    threshold = case.threshold if case.threshold is not None else meta.threshold
    return SuiteCase(case, prompt, graders, threshold, case.agent or meta.agent, number)


def _load_meta(path: Path, grader_configs: Mapping[str, type[BaseModel]]) -> SuiteMeta:
    if not path.exists():
        return SuiteMeta()
    doc = load_yaml(path)
    try:
        meta = SuiteMeta.model_validate(doc.data or {})
    except ValidationError as exc:
        first: Problem = _validation_problems(exc, doc, SuiteMeta)[0]
        raise SourceError(first.message, path=path, line=first.line) from None
    problems = check_graders(meta.graders, doc, grader_configs, at=("graders",))
    if problems:
        raise SourceError(problems[0].message, path=path, line=problems[0].line)
    return meta


def _template(source: str | None, path: Path) -> jinja2.Template | None:
    if source is None:
        return None
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)  # noqa: S701 - prompts are text, not HTML
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise SourceError(
            f"prompt_template: {exc.message}", path=path.with_suffix(".yaml")
        ) from None
