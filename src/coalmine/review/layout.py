"""The layout of review evals (seed 003): ``evals/review/<name>/`` and the pipeline they share.

Each eval is a folder with an ``eval.json`` (the reviewer's framing ``prompt``, the
``assertions`` only the grader sees, an optional ``trap`` and ``description`` that no role sees)
and a ``test-files/`` tree, the fixture staged as a git diff. ``evals/review/pipeline.yaml``
declares the roles in order, the agent each role calls and the inputs its prompt is built
from; without it the seed's three roles apply::

    roles:
      resolver: {agent: resolver, inputs: [diff, worktree]}
      reviewer: {agent: reviewer, inputs: [diff, resolver, spec]}
      grader:   {agent: grader, inputs: [resolver, reviewer, assertions]}

The inputs are checked here, before anything runs: the rubric (``assertions``) reaches the
grader only, ``trap`` and ``description`` reach no role, and the grader never sees the fixture
(``diff``, ``file_list``, ``worktree``). A broken eval is a problem with file:line and the
other evals load; a broken pipeline stops everything (``SpecError``).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from coalmine._source import Document, Loc, SourceError, did_you_mean, load_yaml, read_json
from coalmine._source import validation_problems as _validation_problems
from coalmine._util.locations import OutsideProject, inside_root
from coalmine.errors import SpecError, UsageError
from coalmine.review.fixtures import StagingError, check_fixture

REVIEW_DIR = Path("evals") / "review"
"""Where review evals live, relative to the project root."""
EVAL_FILE = "eval.json"
TEST_FILES = "test-files"
PIPELINE_FILE = "pipeline.yaml"

FIXTURE_INPUTS = frozenset({"diff", "file_list", "worktree"})
"""Inputs that show the fixture: never given to the grader."""
CONTEXT_INPUTS = frozenset({"prompt", "spec"})
"""The eval's framing prompt and its optional spec context."""
GRADER_INPUTS = frozenset({"assertions"})
"""The rubric: given to the grader only."""
HIDDEN_FIELDS = frozenset({"trap", "description"})
"""Eval fields no role receives: they stay in the eval's record."""
BUILTIN_INPUTS = FIXTURE_INPUTS | CONTEXT_INPUTS | GRADER_INPUTS
"""Every input name that is not a role's output."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_Issues = list[tuple[Loc, str]]


def _report(issues: _Issues, info: ValidationInfo) -> None:
    """Raise the issues found after validation, or hand them to the loader that maps lines.

    A loader passes ``context={"issues": []}`` and turns each ``(loc, message)`` into a
    problem at the line of ``loc``; built in code, a model raises its first issue.
    """
    if not issues:
        return
    sink = info.context.get("issues") if isinstance(info.context, dict) else None
    if isinstance(sink, list):
        sink.extend(issues)
        return
    raise ValueError("; ".join(message for _, message in issues))


class Assertion(BaseModel):
    """One thing the grader checks, against the resolver's or the reviewer's output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")
    """Stable and unique within the eval (e.g. ``1.3``)."""
    text: str
    """The rubric sentence the grader judges; never shown to another role."""
    target: Literal["resolver", "reviewer", "both"] = "reviewer"
    """Whose output the assertion is graded against."""

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class EvalFile(BaseModel):
    """The content of ``eval.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: str
    """Natural framing of the change, given to the reviewer only as context."""
    assertions: list[Assertion] = Field(min_length=1)
    """What the grader checks; no other role sees them."""
    trap: str | None = None
    """What the eval tries to catch the reviewer out on; no role sees it."""
    description: str | None = None
    """What the eval is about, for people; no role sees it."""
    spec: str | None = None
    """Optional spec or task-scope context, for the roles that take the ``spec`` input."""

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @model_validator(mode="after")
    def _unique_ids(self, info: ValidationInfo) -> EvalFile:
        issues: _Issues = []
        first: dict[str, int] = {}
        for i, assertion in enumerate(self.assertions):
            if assertion.id in first:
                message = (
                    f"duplicate assertion id {assertion.id!r} "
                    f"(first at assertions[{first[assertion.id]}])"
                )
                issues.append((("assertions", i, "id"), message))
            else:
                first[assertion.id] = i
        _report(issues, info)
        return self


class ReviewEval(EvalFile):
    """A loaded eval: the content of its ``eval.json``, its name and where its fixture is."""

    name: str
    """The eval's folder name."""
    path: Path
    """The ``eval.json`` file."""
    test_files: Path
    """The ``test-files/`` folder: the fixture tree, staged as an added diff."""

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if value in ("", ".", "..") or "/" in value or "\\" in value or "\0" in value:
            raise ValueError(f"{value!r} is not a folder name")
        return value


class Role(BaseModel):
    """One step of the pipeline: the agent it calls and what its prompt is built from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = Field(min_length=1)
    """A config agent's name."""
    inputs: list[str] = []
    """Built-in inputs (diff, file_list, worktree, prompt, spec, assertions) or the name of an
    earlier role (its output)."""
    grader: bool = False
    """This role grades the assertions. When no role says, the last role is the grader."""


class Pipeline(BaseModel):
    """The roles of a review pipeline, in the order they run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    roles: dict[str, Role] = Field(min_length=1)
    """Role name → role, in order: a role may take the output of any earlier role."""

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> Pipeline:
        if self.roles and not any("grader" in r.model_fields_set for r in self.roles.values()):
            last = list(self.roles)[-1]
            roles = dict(self.roles)
            roles[last] = roles[last].model_copy(update={"grader": True})
            object.__setattr__(self, "roles", roles)  # frozen: set once, while validating
        _report(_pipeline_issues(self.roles), info)
        return self

    @property
    def grader(self) -> str:
        """The name of the grading role."""
        return next(name for name, role in self.roles.items() if role.grader)


def _pipeline_issues(roles: dict[str, Role]) -> _Issues:
    issues: _Issues = []
    order = list(roles)
    graders = [name for name, role in roles.items() if role.grader]
    for name in order:
        if not _NAME.match(name):
            issues.append((("roles", name), f"role name {name!r}: use letters, digits, - and _"))
        elif name in BUILTIN_INPUTS or name in HIDDEN_FIELDS:
            issues.append((("roles", name), f"role name {name!r} is taken by an input"))
    if not graders:
        issues.append((("roles",), "no grader: mark one role 'grader: true'"))
    for extra in graders[1:]:
        message = f"role {extra!r}: only one role can be the grader (already {graders[0]!r})"
        issues.append((("roles", extra, "grader"), message))
    for position, (name, role) in enumerate(roles.items()):
        seen: set[str] = set()
        for i, item in enumerate(role.inputs):
            loc: Loc = ("roles", name, "inputs", i)
            problem = _input_problem(name, role, item, order[:position], order, graders)
            if problem is None and item in seen:
                problem = f"role {name!r}: input {item!r} is given twice"
            if problem is not None:
                issues.append((loc, problem))
            seen.add(item)
        if role.grader and "assertions" not in role.inputs:
            message = f"role {name!r} is the grader and must take 'assertions'"
            issues.append((("roles", name, "inputs"), message))
    return issues


def _input_problem(
    name: str, role: Role, item: str, earlier: list[str], order: list[str], graders: list[str]
) -> str | None:
    if item in HIDDEN_FIELDS:
        return (
            f"role {name!r}: {item!r} is never an input; it stays in the eval's record"
            if role.grader
            else f"role {name!r}: {item!r} would leak the rubric; no role but the grader's "
            "record sees it"
        )
    if item in GRADER_INPUTS and not role.grader:
        return (
            f"role {name!r} is not the grader and cannot take {item!r}: only the grader "
            "sees the rubric"
        )
    if item in FIXTURE_INPUTS and role.grader:
        return (
            f"role {name!r} is the grader and cannot take {item!r}: the grader judges the "
            "roles' outputs, never the fixture or the worktree"
        )
    if item in BUILTIN_INPUTS:
        return None
    if item == name:
        return f"role {name!r} cannot take its own output"
    if item in earlier:
        if item in graders:
            return (
                f"role {name!r} cannot take the output of the grader {item!r}: it is "
                "built from the assertions"
            )
        return None
    if item in order:
        return f"role {name!r} cannot take {item!r}: that role runs later"
    choices = sorted(BUILTIN_INPUTS | set(earlier))
    return (
        f"role {name!r}: unknown input {item!r}{did_you_mean(item, choices)}; "
        f"valid inputs: {', '.join(choices)}"
    )


DEFAULT_PIPELINE = Pipeline(
    roles={
        "resolver": Role(agent="resolver", inputs=["diff", "worktree"]),
        "reviewer": Role(agent="reviewer", inputs=["diff", "resolver", "spec"]),
        "grader": Role(agent="grader", inputs=["resolver", "reviewer", "assertions"]),
    }
)
"""The seed's pipeline, used when ``pipeline.yaml`` is absent."""


@dataclass(frozen=True)
class ReviewProblem:
    """Something wrong with one eval: it cannot run, the others can."""

    eval_name: str
    path: Path
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class ReviewSet:
    """The selected evals that loaded, the pipeline, and the problems of those that did not."""

    evals: list[ReviewEval]
    pipeline: Pipeline
    problems: list[ReviewProblem] = field(default_factory=list)
    pipeline_path: Path | None = None
    """The ``pipeline.yaml`` read, or ``None`` for the default pipeline."""


def load_pipeline(path: Path) -> Pipeline:
    """Read ``pipeline.yaml``; an absent file gives the default pipeline.

    Raises:
        SpecError: the file is unreadable or invalid; it names the file and the line.
    """
    if not path.exists():
        return DEFAULT_PIPELINE
    try:
        doc = load_yaml(path)
    except SourceError as exc:
        raise SpecError(exc.message, path=path, line=exc.line) from None
    if not isinstance(doc.data, dict):
        raise SpecError("a pipeline must be a mapping with a 'roles' key", path=path, line=1)
    issues: _Issues = []
    try:
        pipeline = Pipeline.model_validate(doc.data, context={"issues": issues})
    except ValidationError as exc:
        first = _validation_problems(exc, doc, Pipeline)[0]
        raise SpecError(first.message, path=path, line=first.line) from None
    if issues:
        loc, message = issues[0]
        raise SpecError(message, path=path, line=doc.line_of(loc))
    return pipeline


def load_review_evals(root: Path, names: Sequence[str] = ()) -> ReviewSet:
    """Load the pipeline and every ``evals/review/*/eval.json`` (or those ``names`` give).

    A broken eval becomes a problem naming its file and line; the others load.

    Raises:
        UsageError: a name matches no eval, or there are no evals.
        SpecError: ``pipeline.yaml`` is invalid.
    """
    folder = root / REVIEW_DIR
    found = sorted(p.parent.name for p in folder.glob(f"*/{EVAL_FILE}") if p.is_file())
    found = [name for name in found if not name.startswith(".")]
    if not found:
        raise UsageError(
            f"no review evals in {folder}; add a folder per eval with an {EVAL_FILE} "
            f"(prompt, assertions) and a {TEST_FILES}/ tree, e.g. {REVIEW_DIR}/sql/{EVAL_FILE}"
        )
    selected: list[str] = []
    for name in names:
        if name not in found:
            raise UsageError(
                f"no review eval {name!r}{did_you_mean(name, found)} "
                f"(evals in {folder}: {', '.join(found)})"
            )
        if name not in selected:
            selected.append(name)
    pipeline_path = folder / PIPELINE_FILE
    pipeline = load_pipeline(pipeline_path)
    evals: list[ReviewEval] = []
    problems: list[ReviewProblem] = []
    for name in selected or found:
        loaded = load_review_eval(folder / name, root=root)
        if isinstance(loaded, ReviewEval):
            evals.append(loaded)
        else:
            problems.extend(loaded)
    present = pipeline_path if pipeline_path.exists() else None
    return ReviewSet(evals, pipeline, problems, present)


def load_review_eval(folder: Path, *, root: Path | None = None) -> ReviewEval | list[ReviewProblem]:
    """Load the eval in ``folder``: the eval, or every problem found in it.

    With ``root`` (the project), a folder that resolves outside it is refused; the fixture is
    checked as staging will check it, so a refused fixture is this eval's problem.
    """
    name = folder.name
    path = folder / EVAL_FILE

    def problem(line: int | None, message: str) -> list[ReviewProblem]:
        return [ReviewProblem(name, path, line, message)]

    if root is not None:
        try:
            inside_root(folder, base=root, root=root, what="the eval folder")
        except OutsideProject as exc:
            return [ReviewProblem(name, folder, None, str(exc))]

    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return problem(None, f"not valid UTF-8 ({exc.reason})")
    except OSError as exc:
        return problem(None, f"cannot read: {exc.strerror}")
    try:
        data = read_json(text)
    except json.JSONDecodeError as exc:
        return problem(exc.lineno, f"not valid JSON ({exc.msg}, column {exc.colno})")
    if not isinstance(data, dict):
        return problem(1, "an eval must be a JSON object")
    try:
        lines, duplicates = _json_lines(text)
    except (ValueError, IndexError):  # pragma: no cover - json.loads accepted the text
        lines, duplicates = {}, []
    if duplicates:
        return [ReviewProblem(name, path, line, message) for line, message in duplicates]
    doc = Document(path, data, lines, 1)
    problems: list[ReviewProblem] = []
    issues: _Issues = []
    content: EvalFile | None = None
    try:
        content = EvalFile.model_validate(data, context={"issues": issues})
    except ValidationError as exc:
        found = _validation_problems(exc, doc, EvalFile)
        problems.extend(ReviewProblem(name, path, p.line, p.message) for p in found)
    problems.extend(ReviewProblem(name, path, doc.line_of(loc), m) for loc, m in issues)
    test_files = folder / TEST_FILES
    if test_files.is_symlink() or not test_files.is_dir():
        message = f"no {TEST_FILES}/ folder beside {EVAL_FILE}: add the fixture tree there"
        problems.append(ReviewProblem(name, path, None, message))
    else:
        try:
            check_fixture(name, test_files)
        except StagingError as exc:
            problems.append(ReviewProblem(name, folder, None, exc.reason))
    if problems or content is None:
        return problems
    fields = {key: getattr(content, key) for key in EvalFile.model_fields}
    return ReviewEval.model_validate(
        {**fields, "name": name, "path": path, "test_files": test_files}
    )


_SPACE = re.compile(r"[ \t\n\r]*")


def _json_lines(text: str) -> tuple[dict[Loc, int], list[tuple[int, str]]]:
    """The line of every key and list item of a valid JSON text, and its duplicate keys."""
    newlines = [i for i, char in enumerate(text) if char == "\n"]
    decoder = json.JSONDecoder()
    lines: dict[Loc, int] = {}
    duplicates: list[tuple[int, str]] = []

    def line(position: int) -> int:
        return bisect.bisect_left(newlines, position) + 1

    def skip(position: int) -> int:
        match = _SPACE.match(text, position)
        return match.end() if match else position

    def value(position: int, loc: Loc) -> int:
        position = skip(position)
        opener = text[position]
        if opener not in "{[":
            end: int = decoder.raw_decode(text, position)[1]
            return end
        closer = "}" if opener == "{" else "]"
        position = skip(position + 1)
        if text[position] == closer:
            return position + 1
        keys: dict[str, int] = {}
        index = 0
        while True:
            position = skip(position)
            here = line(position)
            item: str | int
            if opener == "{":
                key: Any
                key, position = decoder.raw_decode(text, position)
                item = str(key)
                if item in keys:
                    message = f"duplicate key {item!r} (first given at line {keys[item]})"
                    duplicates.append((here, message))
                keys[item] = here
                position = skip(position) + 1  # the colon
            else:
                item = index
                index += 1
            lines[(*loc, item)] = here
            position = skip(value(position, (*loc, item)))
            if text[position] == closer:
                return position + 1
            position += 1  # the comma

    value(0, ())
    return lines, duplicates
