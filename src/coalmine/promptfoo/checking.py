"""Grade one row's promptfoo assertions, as promptfoo 0.121.20's ``runAssertion`` grades them.

Each assertion goes through the same steps as in promptfoo: its own ``transform`` (JavaScript,
or a Python file, on the output: :mod:`coalmine.promptfoo.scripts`), its ``value`` rendered
with the row's vars, then its grader. A ``file://`` value (``runAssertion``): a JavaScript or
Python file's function is called with ``(output, context)`` and its answer is the value (a
boolean, a GradingResult or a function is an ERROR for a type that is not a script; JavaScript's
``undefined`` leaves the value as written); a ``.json``/``.yaml``/``.yml`` file is parsed, a
``.txt`` file's text trimmed, any other file is an ERROR (``Unsupported file type``); the
``file://`` items of a list value are read the same way. A tests file's values were read whole
when the file was (untrimmed, any type), as promptfoo reads them.
Which grader is :mod:`coalmine.promptfoo.assertions`' mapping: a coalmine grader from the
registry (the rendered value in its config, validated by the grader's config model), Node.js
for ``javascript``, a Python process for ``python``, the project's judge for the judge graders.
An ``assert-set`` grades its children the same way.

What promptfoo makes a row ERROR (``RowError`` here) and what it merely fails:

- ERROR: the transform throws; the value fails to render or to load; the type is unknown
  (``Unknown assertion type: …``) or one coalmine cannot grade (said so, with the reason);
  the grader's config is invalid (promptfoo's handlers throw on a missing or wrong value:
  ``regex`` without a value, ``contains`` of an empty string, ``latency`` without a threshold
  …); the grader cannot grade (a skipped ``latency``/``cost``, a judge that fails); a judge
  grader with no judge configured in coalmine.yaml (promptfoo would call its default grading
  provider; coalmine calls nothing it was not given); JavaScript that throws from a file or
  Node.js missing (said so, with the install hint).
- FAIL: a ``regex`` that V8 refuses (``Invalid regex pattern: …``; the pattern is read with
  JavaScript's syntax and meaning by :mod:`coalmine.promptfoo.handlers`),
  a ``python`` assertion whose script raises or answers nonsense, inline JavaScript that throws.

Values are coerced as promptfoo's handlers coerce them: a numeric string for ``word-count`` is
the number. The types :mod:`coalmine.promptfoo.handlers` grades (``equals``, the ``contains``
family, ``levenshtein``, ``is-json``, ``is-xml`` …) get the rendered value as it is, as
promptfoo's handlers do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from coalmine.errors import GradeError
from coalmine.graders.base import GradeContext, JudgeFn
from coalmine.graders.base import registry as graders
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.assertions import UNSUPPORTED, MappedAssertion, map_assertion
from coalmine.promptfoo.handlers import HandlerCall, handle
from coalmine.promptfoo.matrix.sources import (
    ReadError,
    is_code_file,
    load_yaml_text,
    read_text,
    require_inside,
)
from coalmine.promptfoo.node import (
    JsError,
    JsUnsupported,
    NodeRuntime,
    NodeUnavailable,
    assertion_context,
    transform_context,
)
from coalmine.promptfoo.nunjucks import (
    TemplateError,
    js_json_stringify,
    render_assertion_value,
    to_js,
)
from coalmine.promptfoo.nunjucks._js import js_trim
from coalmine.promptfoo.python_calls import (
    DEFAULT_FUNCTION,
    PythonScriptError,
    run_inline,
    run_python,
    script_verdict,
)
from coalmine.promptfoo.scoring import AssertionOutcome, AssertSetOutcome
from coalmine.promptfoo.script_results import numbers, script_components
from coalmine.promptfoo.scripts import RowError, run_transform, unsupported_js
from coalmine.promptfoo.verdicts import HandlerError

__all__ = ["AssertionScope", "RowError", "grade_assertions", "output_text", "unsupported_js"]

PASSED = "Assertion passed"
CONCURRENCY = 3
"""Assertions of one row graded at once (promptfoo's default)."""
NO_JUDGE = (
    "needs a judge, and coalmine.yaml configures none (promptfoo would call its default "
    "grading provider): add 'judge:' to coalmine.yaml"
)
PROMPTFOO_TYPES = frozenset(
    {"agent-rubric", "answer-relevance", "bleu", "classifier", "contains", "contains-all",
     "contains-any", "contains-html", "contains-json", "contains-sql", "contains-xml",
     "context-faithfulness", "context-recall", "context-relevance", "conversation-relevance",
     "cost", "equals", "factuality", "finish-reason", "g-eval", "gleu", "guardrails", "icontains",
     "icontains-all", "icontains-any", "is-html", "is-json", "is-refusal", "is-sql",
     "is-valid-function-call", "is-valid-openai-function-call", "is-valid-openai-tools-call",
     "is-xml", "javascript", "latency", "levenshtein", "llm-rubric", "meteor",
     "model-graded-closedqa", "model-graded-factuality", "moderation", "perplexity",
     "perplexity-score", "pi", "python", "regex", "ruby", "rouge-n", "search-rubric",
     "skill-used", "similar", "similar:cosine", "similar:dot", "similar:euclidean", "starts-with",
     "tool-call-f1", "trajectory:goal-success", "trajectory:tool-args-match",
     "trajectory:step-count", "trajectory:tool-sequence", "trajectory:tool-used",
     "trace-error-spans", "trace-span-count", "trace-span-duration", "webhook", "word-count",
     "select-best", "max-score"}
)  # fmt: skip
"""Every type promptfoo 0.121.20 grades: another is ``Unknown assertion type``."""


@dataclass(frozen=True, kw_only=True)
class AssertionScope:
    """Everything one row's assertions are graded with."""

    output: Any
    """The output after the provider's and the test's transforms."""
    prompt: str
    """The rendered prompt."""
    variables: Mapping[str, Any]
    """The vars as promptfoo passes them to assertions (after rendering the prompt)."""
    test: Mapping[str, Any]
    """The test case as promptfoo holds it (the ``context.test`` of JavaScript)."""
    provider: Mapping[str, Any]
    """``{"id", "label", "config"}`` of the row's provider."""
    provider_response: Mapping[str, Any]
    latency_ms: int
    cost: float | None
    base_dir: Path
    env: Mapping[str, str]
    node: NodeRuntime
    judge: JudgeFn | None = None
    case_id: str = ""


def output_text(output: Any) -> str:
    """The output as promptfoo's graders read it: a string as is, else ``JSON.stringify``."""
    if isinstance(output, str):
        return output
    return js_json_stringify(to_js(output)) or ""


async def grade_assertions(
    assertions: tuple[Assertion, ...], scope: AssertionScope
) -> list[AssertionOutcome | AssertSetOutcome]:
    """Grade each assertion (an ``assert-set`` as its children), in the test's order.

    Up to :data:`CONCURRENCY` assertions run at once, as in promptfoo (whose
    ``PROMPTFOO_ASSERTIONS_MAX_CONCURRENCY`` is 3); a script assertion waits on its process.

    Raises:
        RowError: where promptfoo throws (the row is an ERROR); the first assertion's, in the
            test's order, when several throw.
    """
    flat: list[Assertion] = []
    for assertion in assertions:
        if assertion.type != "assert-set":
            flat.append(assertion)
        elif assertion.children is None:
            raise RowError("TypeError: an assert-set needs 'assert:', a list of assertions")
        else:
            flat.extend(assertion.children)
    graded: list[AssertionOutcome | RowError | None] = [None] * len(flat)
    limiter = anyio.CapacityLimiter(CONCURRENCY)

    async def one(index: int) -> None:
        async with limiter:
            try:
                graded[index] = await grade_one(flat[index], scope)
            except RowError as exc:
                graded[index] = exc

    async with anyio.create_task_group() as group:
        for index in range(len(flat)):
            group.start_soon(one, index)
    done: list[AssertionOutcome] = []
    for item in graded:
        if isinstance(item, RowError):
            raise item
        assert item is not None
        done.append(item)
    taken = iter(done)
    outcomes: list[AssertionOutcome | AssertSetOutcome] = []
    for assertion in assertions:
        if assertion.type == "assert-set":
            children = tuple(next(taken) for _ in assertion.children or ())
            outcomes.append(AssertSetOutcome(assertion, children))
        else:
            outcomes.append(next(taken))
    return outcomes


async def grade_one(assertion: Assertion, scope: AssertionScope) -> AssertionOutcome:
    """Grade one assertion (never an ``assert-set``: inside a set, that is an unknown type)."""
    mapped = map_assertion(assertion)
    if mapped.runtime in ("unsupported", "assert-set"):
        raise RowError(_unsupported(assertion, mapped))
    if mapped.runtime == "compared":  # graded across the test's rows afterwards, as promptfoo does
        return AssertionOutcome(assertion, True, 0.0, "")
    output = scope.output
    if assertion.transform:
        output = await _transform(assertion.transform, output, scope)
    value, from_script = await _value(assertion, output, scope)
    if isinstance(value, _Failed):
        return AssertionOutcome(assertion, False, 0.0, value.reason, early=True)
    if mapped.runtime == "javascript":
        return await _javascript(assertion, value, output, scope)
    if mapped.runtime == "python":
        return await _python(assertion, value, output, scope, from_script=from_script)
    if mapped.runtime == "promptfoo":
        return await _handled(assertion, value, output, scope)
    return await _grader(mapped, value, output, scope)


async def _handled(
    assertion: Assertion, value: Any, output: Any, scope: AssertionScope
) -> AssertionOutcome:
    call = HandlerCall(
        assertion=assertion,
        value=value,
        output=output,
        text=output_text(output),
        provider=scope.provider,
        provider_response=scope.provider_response,
        prompt=scope.prompt,
        variables=scope.variables,
        latency_ms=scope.latency_ms,
        cost=scope.cost,
        base_dir=scope.base_dir,
        node=scope.node,
        env=scope.env,
    )
    try:
        result = await handle(call)
    except HandlerError as exc:
        raise RowError(exc.message) from None
    return AssertionOutcome(
        assertion, result.passed, result.score, result.reason, rendered_value=value
    )


def _unsupported(assertion: Assertion, mapped: MappedAssertion) -> str:
    base = assertion.base_type
    if base not in PROMPTFOO_TYPES or (assertion.negated and base in ("select-best", "max-score")):
        return f"Error: Unknown assertion type: {assertion.type}"
    reason = UNSUPPORTED.get(base) or (mapped.problem or "not supported").split(": ", 1)[-1]
    return f"unsupported: coalmine cannot grade promptfoo's {assertion.type!r} assertion ({reason})"


@dataclass(frozen=True)
class _Failed:
    """A value that failed to load from a script: promptfoo fails the assertion with this."""

    reason: str


async def _transform(code: Any, output: Any, scope: AssertionScope) -> Any:
    metadata = scope.provider_response.get("metadata")
    context = transform_context(
        variables=scope.variables,
        prompt={"label": scope.prompt},
        metadata=metadata if isinstance(metadata, Mapping) else None,
    )
    return await run_transform(
        code,
        output,
        context=context,
        node=scope.node,
        base_dir=scope.base_dir,
        what="an assertion's transform",
    )


async def _value(assertion: Assertion, output: Any, scope: AssertionScope) -> tuple[Any, bool]:
    """The value as the grader sees it, and whether a script gave it."""
    value = assertion.value
    if isinstance(value, str) and value.startswith("file://"):
        return await _file_value(assertion, output, scope)
    if isinstance(value, str) and value.startswith("package:"):
        raise RowError(f"unsupported: a package value ({value}) runs code from a node package")
    if not _templated(value):
        return value, False  # Nunjucks prints a text without a tag as it is
    try:
        rendered = render_assertion_value(value, scope.variables, env=scope.env)
    except TemplateError as exc:
        raise RowError(str(exc)) from None
    if isinstance(rendered, list):
        rendered = [
            _file_content(v, scope.base_dir)
            if isinstance(v, str) and v.startswith("file://")
            else v
            for v in rendered
        ]
    return rendered, False


async def _file_value(assertion: Assertion, output: Any, scope: AssertionScope) -> tuple[Any, bool]:
    """A ``file://`` value: a script's answer to ``(output, context)``, or the file's content.

    promptfoo cuts ``path:function`` at the first colon; a ``.js`` (``.cjs``, ``.mjs``, ``.ts``
    …) or ``.py`` file is called (``get_assert`` the default Python function) and its answer is
    the value, for every type (``javascript`` runs its own file in Node.js). Any other file is
    read whole (:func:`_file_content`).
    """
    value = assertion.value
    assert isinstance(value, str)
    path, _, function = value.removeprefix("file://").partition(":")
    base = assertion.base_type
    if path.endswith(".py"):
        args = [output, _context(assertion, scope)]
        try:
            script = require_inside(scope.base_dir / path)
        except ReadError as exc:
            raise RowError(exc.message) from None
        try:
            result = await run_python(
                script, function or DEFAULT_FUNCTION, args, cwd=scope.base_dir
            )
        except PythonScriptError as exc:
            return _Failed(f"Error running Python script: {exc}"), True
        if base != "python":
            _check_script_value(assertion, result)
        return result, True
    if is_code_file(path):
        if base == "javascript":
            return value, False  # Node.js loads it
        return await _js_value(assertion, output, scope)
    if path.endswith(".rb"):
        raise RowError(f"unsupported: a Ruby file as the value of a {assertion.type!r} assertion")
    return _file_content(value, scope.base_dir), False


async def _js_value(assertion: Assertion, output: Any, scope: AssertionScope) -> tuple[Any, bool]:
    """What a JavaScript file's function answers, as the value (``undefined`` leaves it be)."""
    try:
        answer = await scope.node.script_value(
            str(assertion.value),
            output=output,
            context=_context(assertion, scope),
            base_dir=scope.base_dir,
        )
    except (NodeUnavailable, JsUnsupported) as exc:
        raise RowError(unsupported_js(exc, f"the {assertion.type!r} assertion's value")) from None
    except JsError as exc:
        raise RowError(str(exc)) from None
    if answer.undefined:
        return assertion.value, False
    if answer.function:
        raise RowError(_script_returned(assertion, "a function", "functions"))
    if assertion.base_type != "python":
        _check_script_value(assertion, answer.value)
    return answer.value, True


def _file_content(reference: str, base_dir: Path) -> Any:
    """A file's content as the value (promptfoo's ``processFileReference``).

    A ``.json``/``.yaml``/``.yml`` file is parsed (as YAML, as promptfoo does), a ``.txt``
    file's text trimmed, any other file is an ERROR. The whole reference is the path
    (``file://a.txt:x`` has the extension ``.txt:x``). A value a tests file holds was read by
    then, whole and untrimmed, as promptfoo reads it.
    """
    path = base_dir / reference.removeprefix("file://")
    try:
        text = read_text(path)  # read first: a missing file is that error, whatever its type
        if path.suffix in (".json", ".yaml", ".yml"):
            return load_yaml_text(text, path=path).data
    except ReadError as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else str(path)
        message = exc.message if str(path) in exc.message else f"{where}: {exc.message}"
        raise RowError(message) from None
    if path.suffix == ".txt":
        return js_trim(text)
    raise RowError(f"Error: Unsupported file type: {path}")


def _templated(value: Any) -> bool:
    """Whether rendering could change ``value`` (a string, or a list's, holding a ``{``)."""
    if isinstance(value, str):
        return "{" in value
    if isinstance(value, list):
        return any(isinstance(v, str) and ("{" in v or v.startswith("file://")) for v in value)
    return False


def _check_script_value(assertion: Assertion, value: Any) -> None:
    """Reject what promptfoo rejects as a script's value for a type that is not a script."""
    if isinstance(value, bool):
        raise RowError(_script_returned(assertion, "a boolean", "boolean values"))
    if isinstance(value, dict) and "pass" in value:
        raise RowError(_script_returned(assertion, "a GradingResult", "GradingResult objects"))


def _script_returned(assertion: Assertion, what: str, plural: str) -> str:
    return (
        f'Error: Script for "{assertion.type}" assertion returned {what}. Only '
        f"javascript/python/ruby assertion types can return {plural}. For other assertion "
        "types, return the expected value (string, number, array, or object)."
    )


def _context(assertion: Assertion, scope: AssertionScope) -> dict[str, Any]:
    return assertion_context(
        prompt=scope.prompt,
        variables=scope.variables,
        test=scope.test,
        provider=scope.provider,
        provider_response=scope.provider_response,
        config=assertion.config if "config" in assertion.model_fields_set else None,
    )


async def _javascript(
    assertion: Assertion, code: Any, output: Any, scope: AssertionScope
) -> AssertionOutcome:
    try:
        result = await scope.node.evaluate_assertion(
            code,
            output=output,
            context=_context(assertion, scope),
            base_dir=scope.base_dir,
            inverse=assertion.negated,
            threshold=assertion.threshold,
        )
    except (NodeUnavailable, JsUnsupported) as exc:
        raise RowError(unsupported_js(exc, f"the {assertion.type!r} assertion")) from None
    except JsError as exc:
        raise RowError(str(exc)) from None
    return _scripted(assertion, result.passed, result.score, result.reason, result.extra, code)


def _scripted(
    assertion: Assertion,
    passed: bool,
    score: float,
    reason: str,
    extra: Mapping[str, Any],
    rendered: Any,
) -> AssertionOutcome:
    """A script's verdict, with what else its GradingResult holds (its own components …)."""
    metadata = extra.get("metadata")
    return AssertionOutcome(
        assertion,
        passed,
        score,
        reason,
        named_scores=numbers(extra.get("namedScores")),
        named_score_weights=numbers(extra.get("namedScoreWeights")),
        components=script_components(extra.get("componentResults"), assertion),
        extra={k: v for k, v in extra.items() if k not in _READ_KEYS},
        metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
        rendered_value=rendered,
    )


_READ_KEYS = frozenset({"namedScores", "namedScoreWeights", "componentResults", "metadata"})


async def _python(
    assertion: Assertion, value: Any, output: Any, scope: AssertionScope, *, from_script: bool
) -> AssertionOutcome:
    rendered = None if from_script else value
    try:
        if not from_script:
            if not isinstance(value, str):
                raise RowError("python assertion must have a string value")
            value = await run_inline(
                value, [output, _context(assertion, scope)], cwd=scope.base_dir
            )
        suffix = assertion.value if isinstance(assertion.value, str) else None
        verdict = script_verdict(
            value, threshold=assertion.threshold, inverse=assertion.negated, suffix=suffix
        )
    except PythonScriptError as exc:
        reason = f"Python code execution failed: {exc}"
        return AssertionOutcome(assertion, False, 0.0, reason, rendered_value=rendered)
    return _scripted(
        assertion, verdict.passed, verdict.score, verdict.reason, verdict.extra, rendered
    )


def coerce_value(base_type: str, value: Any) -> Any:
    """The value as promptfoo's handler for ``base_type`` reads it (see the module docstring)."""
    if base_type == "word-count" and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() else number
    return value


async def _grader(
    mapped: MappedAssertion, value: Any, output: Any, scope: AssertionScope
) -> AssertionOutcome:
    assertion, spec = mapped.assertion, mapped.grader
    assert spec is not None  # the mapping gives a grader with this runtime
    if not isinstance(output, str):
        found = _object_output(assertion)
        if found is not None:
            return found
    grader = graders.get(spec.type)
    if grader.needs_judge and scope.judge is None:
        raise RowError(f"{assertion.type} {NO_JUDGE}")
    base = assertion.base_type
    config = dict(spec.config)
    coerced = coerce_value(base, value)
    if coerced is None:
        config.pop("value", None)
    else:
        config["value"] = coerced
    try:
        validated = grader.config.model_validate(config)
    except ValidationError as exc:
        problem = "; ".join(
            dict.fromkeys(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        )
        raise RowError(f"invalid {assertion.type!r} assertion: {problem}") from None
    ctx = GradeContext(
        case_id=scope.case_id,
        prompt=scope.prompt,
        judge=scope.judge,
        latency_seconds=scope.latency_ms / 1000,
        cost=scope.cost,
        inputs=_inputs(scope.variables),
    )
    try:
        grade = await grader.grade(validated, output_text(output), ctx)
    except GradeError as exc:
        raise RowError(f"{assertion.type}: {exc.reason}") from None
    if grade.score is None:
        raise RowError(f"{assertion.type}: {grade.reason or 'the grader could not grade'}")
    passed = bool(grade.passed)
    explained = grade.explain()
    reason = PASSED if passed else f"{assertion.type}: {explained}" if explained else "failed"
    if not passed and not explained:
        reason = f"{assertion.type} failed"
    return AssertionOutcome(assertion, passed, grade.score, reason, rendered_value=value)


def _object_output(assertion: Assertion) -> AssertionOutcome | None:
    """What promptfoo's handlers that read the output itself (not its JSON) make of an object.

    The others grade the output's ``JSON.stringify``, as :func:`output_text` gives it.
    """
    base = assertion.base_type
    if base == "is-refusal":  # no text to refuse with: "assumed to be a refusal", score 0
        passed = not assertion.negated
        reason = "No value provided, assumed to be a refusal"
        return AssertionOutcome(
            assertion, passed, 0.0, reason if passed else "Expected output to not be a refusal"
        )
    if base == "context-faithfulness":
        raise RowError(
            "Error: Invariant failed: context-faithfulness assertion requires string output "
            "from the provider"
        )
    return None


def _inputs(variables: Mapping[str, Any]) -> dict[str, Any]:
    """What coalmine's graders read besides the output: the vars, and ``context`` (RAG)."""
    inputs: dict[str, Any] = {"vars": dict(variables)}
    if variables.get("context") is not None:
        inputs["context"] = variables["context"]
    return inputs
