"""Eval suites (seed 001): ``harness/evals/<suite>.jsonl``, one case a line.

An optional ``<suite>.yaml`` beside it holds the suite's defaults.
A case has a stable ``id`` and either a ``prompt`` or ``vars`` rendered through the suite's
``prompt_template`` (Jinja2, undefined variables are errors). Suite graders apply before each
case's own. A bad line is reported with file:line, counted, and the rest of the suite loads.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal, NamedTuple

import jinja2
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from coalmine._source import MAX_DEPTH, Document, Problem, SourceError, load_yaml, read_json
from coalmine._source import validation_problems as _validation_problems
from coalmine._util.collector import collector_paused
from coalmine._util.compact import CompactStrings, SeenIds
from coalmine.specs.compat import Compat, PromptfooCase, PromptfooSuite
from coalmine.specs.loader import check_graders
from coalmine.specs.models import GraderSpec
from coalmine.specs.template import PromptTemplate

SUITES_DIR = Path("harness") / "evals"
KEEP_BYTES = 1024 * 1024
"""A suite file up to this size keeps the cases its scan parsed (``SuiteIndex.kept``); at
5,000 cases of three graders (0.7 MB) that saves the run 44 µs a case and costs 18 MB."""


class SuiteMeta(BaseModel):
    """``<suite>.yaml``: defaults for every case of the suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str | None = None
    agent: str | None = None
    """The agent every case goes to, unless a case names its own."""
    prompt_template: str | None = None
    """Jinja2 template rendered with a case's ``vars`` (undefined variables are errors)."""
    graders: list[GraderSpec] = Field(default_factory=list)
    """Applied to every case, before the case's own graders."""
    threshold: float | None = Field(None, ge=0, le=1)
    """A case passes when its weighted score reaches this (default: every grader passes)."""
    repeats: int = Field(1, ge=1)
    """How many times each case runs."""
    min_score: float | None = Field(None, ge=0, le=1)
    """The suite passes when its score reaches this (default: when every case passes)."""
    min_pass_hat_k: float | None = Field(None, ge=0, le=1)
    """The suite passes only when its pass^k (k = its repeats; the chance that every one of a
    case's k runs passes, averaged over the cases, as tau-bench defines it) reaches this too."""
    timeout_seconds: float | None = Field(None, gt=0)
    """How long the agent may take on one case, retries included (default: the config's
    ``timeout_seconds``)."""
    blocking: bool = True
    """False makes the whole suite advisory."""
    compat: Compat | None = None
    """``promptfoo``: an imported suite, whose lines are promptfoo tests, rendered with Nunjucks
    and scored by promptfoo's rules (see :mod:`coalmine.specs.compat`)."""
    promptfoo: PromptfooSuite | None = None
    """A ``compat: promptfoo`` suite's prompt and provider, and where it came from."""

    @model_validator(mode="after")
    def _compat(self) -> SuiteMeta:
        if (self.compat == "promptfoo") != (self.promptfoo is not None):
            raise ValueError("'compat: promptfoo' and 'promptfoo:' go together")
        if self.compat is not None and self.graders:
            raise ValueError(
                f"a compat: {self.compat} suite grades its lines' own 'assert'; "
                "it takes no 'graders'"
            )
        return self


class Turn(BaseModel):
    """One earlier message of a conversation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant"]
    content: str


def transcript(turns: Sequence[Turn], prompt: str) -> str:
    """The conversation as one message, for an agent that takes one: each turn, then the prompt.

    It is also what the run store and the caches key the call on, so two conversations that
    differ in an earlier turn are two calls.
    """
    lines = ["Conversation so far:"]
    lines += [f"{'User' if t.role == 'user' else 'Assistant'}: {t.content}" for t in turns]
    return "\n".join([*lines, f"User: {prompt}"])


class EvalCase(BaseModel):
    """One line of a suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")
    """Stable and unique within the suite."""
    prompt: str | None = None
    vars: dict[str, Any] | None = None
    """Rendered through the suite's ``prompt_template``."""
    agent: str | None = None
    graders: list[GraderSpec] = Field(default_factory=list)
    threshold: float | None = Field(None, ge=0, le=1)
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    expected: Any = None
    """What graders compare the output with (``equals``, ``levenshtein`` …)."""
    relevant: dict[str, int] | list[str] | None = None
    """Retrieval judgements: doc id → grade, or the relevant ids."""
    expected_tool_calls: list[dict[str, Any]] | None = None
    forbidden_tools: list[str] | None = None
    context: list[str] | str | None = None
    """Retrieved context for RAG graders."""
    turns: list[Turn] | None = Field(None, min_length=1)
    """Earlier turns of a conversation, oldest first, before the case's prompt (the last user
    message): ``{"role": "user" | "assistant", "content": …}``, starting with a user turn and
    alternating. The chat providers (``openai``, ``anthropic``) send them as messages; every
    other agent gets the conversation as a transcript ending in the prompt (:func:`transcript`)."""

    @field_validator("turns")
    @classmethod
    def _alternating(cls, turns: list[Turn] | None) -> list[Turn] | None:
        for i, turn in enumerate(turns or ()):
            wanted = "user" if i % 2 == 0 else "assistant"
            if turn.role != wanted:
                raise ValueError(
                    f"turn {i + 1} is {turn.role!r}: turns start with a user turn and alternate,"
                    " ending with an assistant turn (the prompt is the last user message)"
                )
        if turns and len(turns) % 2:
            raise ValueError("the last turn must be the assistant's: the prompt comes after it")
        return turns

    def grader_inputs(self) -> dict[str, Any]:
        """What graders may read of the case (``GradeContext.inputs``): the keys it gave."""
        found = {
            "expected": self.expected,
            "relevant": self.relevant,
            "expected_tool_calls": self.expected_tool_calls,
            "forbidden_tools": self.forbidden_tools,
            "context": self.context,
            "vars": self.vars,
        }
        inputs = {k: v for k, v in found.items() if v is not None}
        if self.metadata:
            inputs["metadata"] = self.metadata
        return inputs

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
    promptfoo: PromptfooCase | None = None
    """The promptfoo test a compat suite's line holds (then ``graders`` is empty)."""
    conversation: tuple[tuple[str, str], ...] = ()
    """``(role, content)`` of each turn and then the last user message, when the case has
    ``turns`` (``prompt`` is then their transcript); empty otherwise."""

    @property
    def compat(self) -> Compat | None:
        """The compat kind whose rules grade this line (``None``: coalmine's graders)."""
        return "promptfoo" if self.promptfoo is not None else None


@dataclass(frozen=True)
class BadLine:
    """A line that could not be used, and why."""

    path: Path
    line: int
    message: str
    case_id: str | None = None

    def __str__(self) -> str:
        case = f"case {self.case_id!r}: " if self.case_id else ""
        return f"{self.path}:{self.line}: {case}{self.message}"


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its name, defaults, valid cases and bad lines."""

    name: str
    path: Path
    meta: SuiteMeta
    cases: list[SuiteCase] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)


@dataclass
class SuiteIndex:
    """A scanned suite: every line checked, but only where each selected case starts is kept.

    A suite of 100,000 cases would take hundreds of megabytes as models; the index keeps a
    line number, a byte offset and the id of each selected case (about 100 bytes a case), and
    ``read`` parses a case again when it runs.
    """

    name: str
    path: Path
    meta: SuiteMeta
    template: PromptTemplate | None
    grader_configs: Mapping[str, type[BaseModel]]
    ids: CompactStrings = field(default_factory=CompactStrings)
    lines: array[int] = field(default_factory=lambda: array("q"))
    offsets: array[int] = field(default_factory=lambda: array("q"))
    bad: list[BadLine] = field(default_factory=list)
    valid: int = 0
    """Valid cases in the file, selected or not."""
    kept: list[SuiteCase] | None = None
    """The selected cases as the scan parsed them, for a file of at most ``KEEP_BYTES``: a
    small suite's lines are parsed once; a large one's are read again as they run, so memory
    stays flat at any size."""

    def __len__(self) -> int:
        return len(self.ids)

    def keep_only(self, positions: Iterable[int]) -> None:
        """Keep the selected cases at ``positions`` (in that order): a limit, a shuffle."""
        chosen = list(positions)
        self.ids = CompactStrings(self.ids[i] for i in chosen)
        self.lines = array("q", (self.lines[i] for i in chosen))
        self.offsets = array("q", (self.offsets[i] for i in chosen))
        if self.kept is not None:
            self.kept = [self.kept[i] for i in chosen]

    def read(self, position: int, handle: BinaryIO | None = None) -> SuiteCase:
        """Parse the case at ``position`` again (``handle``: the suite file, open for reading).

        Raises:
            SourceError: the line no longer holds that case (the file changed under the run).
        """
        if self.kept is not None:
            return self.kept[position]
        if handle is None:
            with self.path.open("rb") as own:
                return self.read(position, own)
        return self.parse(self.raw(position, handle), self.lines[position], self.ids[position])

    def raw(self, position: int, handle: BinaryIO) -> str:
        """The text of the line of the case at ``position``, as the file holds it now."""
        handle.seek(self.offsets[position])
        return handle.readline().decode("utf-8", errors="replace")

    def parse(self, raw: str, line: int, case_id: str) -> SuiteCase:
        """The case ``case_id`` from its line's text (already checked by a scan).

        Raises:
            SourceError: the line no longer holds that case (the file changed under the run).
        """
        found = _load_line(
            raw, line, self.path, self.meta, self.template, self.grader_configs, check=False
        )
        if isinstance(found, BadLine) or found.case.id != case_id:
            raise SourceError(
                f"the suite changed while it ran: case {case_id!r} is gone",
                path=self.path,
                line=line,
            )
        return found


def open_suite_index(path: Path, *, grader_configs: Mapping[str, type[BaseModel]]) -> SuiteIndex:
    """A suite's defaults alone, to parse lines another process scanned (no line is read).

    Raises:
        SourceError: the suite's YAML is unreadable or invalid.
    """
    meta, template = _load_meta(path.with_suffix(".yaml"), grader_configs)
    return SuiteIndex(path.stem, path, meta, template, grader_configs)


def load_suite(path: Path, *, grader_configs: Mapping[str, type[BaseModel]]) -> Suite:
    """Load ``<suite>.jsonl`` and its optional ``<suite>.yaml`` whole (for small suites).

    Raises:
        SourceError: the suite's YAML is unreadable or invalid (the whole suite cannot run).
    """
    index = scan_suite(path, grader_configs=grader_configs)
    with path.open("rb") as handle:
        cases = [index.read(i, handle) for i in range(len(index))]
    return Suite(index.name, path, index.meta, cases, index.bad)


def scan_suite(
    path: Path,
    *,
    grader_configs: Mapping[str, type[BaseModel]],
    select: Callable[[EvalCase], bool] | None = None,
    check: Callable[[SuiteCase], str | None] | None = None,
) -> SuiteIndex:
    """Check every line of a suite; index the valid cases that ``select`` keeps.

    ``check`` may find a problem the suite alone cannot see (an agent the config lacks); its
    message makes the line a bad line.

    Raises:
        SourceError: the suite's YAML is unreadable or invalid, or the suite cannot be read.
    """
    meta, template = _load_meta(path.with_suffix(".yaml"), grader_configs)
    index = SuiteIndex(path.stem, path, meta, template, grader_configs)
    try:
        handle = path.open("rb")
        if os.fstat(handle.fileno()).st_size <= KEEP_BYTES:
            index.kept = []
    except OSError as exc:
        raise SourceError(f"cannot read the suite: {exc}", path=path) from None
    again: list[BinaryIO] = []  # a second handle, opened when an id's fingerprint is met again

    def id_at(offset: int) -> str | None:
        if not again:
            again.append(path.open("rb"))
        again[0].seek(offset)
        raw = again[0].readline().decode("utf-8", errors="replace")
        found = _load_line(raw, 0, path, meta, template, grader_configs, check=False)
        return None if isinstance(found, BadLine) else found.case.id

    seen = SeenIds(id_at)
    offset = 0
    # the collector paused: a scan makes objects that live (the kept cases, the index) or die
    # by their reference count, never cycles worth a collection, and the collections its
    # allocations would trigger walked every object the process holds (a quarter of the scan)
    with handle, collector_paused():
        for number, data in enumerate(handle, 1):
            start, offset = offset, offset + len(data)
            try:
                raw = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                index.bad.append(BadLine(path, number, f"not UTF-8 ({exc.reason})"))
                continue
            if not raw.strip():
                continue
            result = _load_line(raw, number, path, meta, template, grader_configs)
            if isinstance(result, BadLine):
                index.bad.append(result)
                continue
            case_id = result.case.id
            problem = check(result) if check is not None else None
            if problem is not None:
                index.bad.append(BadLine(path, number, problem, case_id))
                continue
            try:
                first = seen.first(case_id, number, start)
            except ValueError as exc:
                raise SourceError(f"the suite is too large to index: {exc}", path=path) from None
            if first is not None:
                message = f"duplicate id {case_id!r} (first on line {first})"
                index.bad.append(BadLine(path, number, message, case_id))
                continue
            index.valid += 1
            if select is None or select(result.case):
                index.ids.append(case_id)
                index.lines.append(number)
                index.offsets.append(start)
                if index.kept is not None:
                    index.kept.append(result)
    for extra in again:
        extra.close()
    if not index.valid and not index.bad:
        raise SourceError(
            "the suite has no cases (it is empty, or every line is blank): add one JSON object "
            "a line, or remove the file",
            path=path,
        )
    return index


def _load_line(
    raw: str,
    number: int,
    path: Path,
    meta: SuiteMeta,
    template: PromptTemplate | None,
    grader_configs: Mapping[str, type[BaseModel]],
    *,
    check: bool = True,
) -> SuiteCase | BadLine:
    """Parse one line; ``check=False`` skips the grader checks a scan already made."""
    case = _valid_case(raw) if meta.compat is None else None
    if case is None:
        found = _parse_case(raw, number, path, meta)
        if not isinstance(found, EvalCase):
            return found
        case = found
    graders = [*meta.graders, *case.graders]
    if check:
        if not graders:
            message = "no graders: give the case 'graders' (or the suite)"
            return BadLine(path, number, message, case.id)
        doc = Document(path, {"graders": graders}, {}, number)
        given = case.grader_inputs()
        problems = check_graders(graders, doc, grader_configs, at=("graders",), inputs=given)
        if problems:
            return BadLine(path, number, "; ".join(p.message for p in problems), case.id)
    if case.prompt is not None:
        prompt = case.prompt
    elif template is None:
        return BadLine(path, number, "'vars' needs a prompt_template in the suite's YAML", case.id)
    else:
        try:
            prompt = template.render(case.vars or {})
        except jinja2.TemplateError as exc:
            return BadLine(path, number, f"prompt_template: {exc}", case.id)
    threshold = case.threshold if case.threshold is not None else meta.threshold
    if case.turns:
        said = (*((t.role, t.content) for t in case.turns), ("user", prompt))
        return SuiteCase(
            case, transcript(case.turns, prompt), graders, threshold, case.agent or meta.agent,
            number, conversation=said,
        )  # fmt: skip
    return SuiteCase(case, prompt, graders, threshold, case.agent or meta.agent, number)


def _valid_case(raw: str) -> EvalCase | None:
    """The case on a line that is a valid case, parsed and checked in one pass; else None.

    pydantic reads the JSON itself (half the time of ``json.loads`` and then validating the
    dict). A line it refuses, or one whose brackets could nest past ``MAX_DEPTH``, goes the
    long way (:func:`_parse_case`), which says what is wrong in coalmine's words.
    """
    if raw.count("{") + raw.count("[") > MAX_DEPTH:
        return None
    try:
        return EvalCase.model_validate_json(raw)
    except ValidationError:
        return None


def _parse_case(
    raw: str, number: int, path: Path, meta: SuiteMeta
) -> EvalCase | SuiteCase | BadLine:
    """A line read as JSON and then validated: a case, a compat suite's line, or what is wrong."""
    try:
        data = read_json(raw)
    except json.JSONDecodeError as exc:
        return BadLine(path, number, f"not valid JSON ({exc.msg}, column {exc.colno})")
    if not isinstance(data, dict):
        return BadLine(path, number, "a case must be a JSON object")
    case_id = data.get("id") if isinstance(data.get("id"), str) else None
    if meta.compat == "promptfoo":
        return _load_promptfoo_line(data, number, path, meta, case_id)
    try:
        return EvalCase.model_validate(data)
    except ValidationError as exc:
        doc = Document(path, data, {}, number)
        found = _validation_problems(exc, doc, EvalCase)
        return BadLine(path, number, "; ".join(p.message for p in found), case_id)


def _load_promptfoo_line(
    data: dict[str, Any], number: int, path: Path, meta: SuiteMeta, case_id: str | None
) -> SuiteCase | BadLine:
    """A compat suite's line: the promptfoo test, and the case coalmine selects and stores it as.

    The prompt is left as written (Nunjucks renders it when the line runs, with its
    ``file://`` vars read then), so ``SuiteCase.prompt`` is the template.
    """
    try:
        test = PromptfooCase.model_validate(data)
    except ValidationError as exc:
        doc = Document(path, data, {}, number)
        found = _validation_problems(exc, doc, PromptfooCase)
        return BadLine(path, number, "; ".join(p.message for p in found), case_id)
    template = f"{test.template_prefix}{meta.prompt_template or ''}{test.template_suffix}"
    case = EvalCase(id=test.id, prompt=template, tags=test.tags, metadata=test.metadata, vars=None)
    return SuiteCase(case, template, [], test.threshold, meta.agent, number, test)


class _Meta(NamedTuple):
    meta: SuiteMeta
    template: PromptTemplate | None


def _load_meta(path: Path, grader_configs: Mapping[str, type[BaseModel]]) -> _Meta:
    """The suite's defaults and its compiled template; every problem names path:line."""
    if not path.exists():
        return _Meta(SuiteMeta(), None)
    doc = load_yaml(path)
    if doc.data is not None and not isinstance(doc.data, dict):
        kind = type(doc.data).__name__
        message = f"a suite's YAML must be a mapping of keys (agent:, graders: …), not a {kind}"
        raise SourceError(message, path=path, line=doc.first_line)
    try:
        meta = SuiteMeta.model_validate(doc.data or {})
    except ValidationError as exc:
        first: Problem = _validation_problems(exc, doc, SuiteMeta)[0]
        raise SourceError(first.message, path=path, line=first.line) from None
    problems = check_graders(meta.graders, doc, grader_configs, at=("graders",))
    if problems:
        raise SourceError(problems[0].message, path=path, line=problems[0].line)
    if meta.compat or meta.prompt_template is None:
        return _Meta(meta, None)
    try:
        return _Meta(meta, PromptTemplate(meta.prompt_template))
    except jinja2.TemplateSyntaxError as exc:
        line = doc.line_of(("prompt_template",))
        raise SourceError(f"prompt_template: {exc.message}", path=path, line=line) from None
