"""Evaluate one promptfoo row (a test, on a prompt, by a provider) as promptfoo 0.121.20 does.

This is the reusable unit: :func:`evaluate_row` takes a :class:`PromptfooRow` (what the row
is, however it was produced: a promptfoo config read by :mod:`coalmine.promptfoo.matrix`, or
an imported suite's line), a :class:`RowAgent` (who answers) and :class:`RowTools` (what a run
shares: Node.js, the judge, the environment), and returns promptfoo's verdict for the row.

The steps are promptfoo's ``runEval``: the test's ``options.transformVars`` changes its vars;
the ``file://`` vars are loaded (Python and JavaScript loaders run), a prompt function is run
and the prompt rendered (Nunjucks, with the config's filters: see
:mod:`coalmine.promptfoo.prompt_code`); the output is the test's ``providerOutput`` when it has
one, else the agent's answer (an object stays an object), after which the provider's ``delay``
is waited; the provider's ``transform`` and then the test's ``options.transform`` (or
``postprocess``) run (:mod:`coalmine.promptfoo.scripts`: JavaScript in Node.js, Python files in
Python); the assertions are graded (:mod:`coalmine.promptfoo.checking`), the row scored by
:mod:`coalmine.promptfoo.scoring` and, with an ``assertScoringFunction``, by that function
(:mod:`coalmine.promptfoo.script_results`).

A row is an ERROR (``failureReason`` 2, score 0) when promptfoo's would be: the prompt does not
render, the provider fails (coalmine's providers raise both for an ``error`` promptfoo's
provider returns and for one it throws), a transform throws or returns nothing, an assertion
is invalid or unknown. It is also an ERROR, saying ``unsupported`` and why, where coalmine
cannot do what promptfoo would: a provider with no coalmine agent, a test that names its own
provider, JavaScript without Node.js. A provider that answers no output (``None``) gives
promptfoo's ``No output`` failure, whose ``failureReason`` stays 0.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from coalmine._util.clock import Clock, SystemClock
from coalmine.config import Price
from coalmine.engine.call import Caller
from coalmine.engine.costs import agent_usage
from coalmine.errors import ProviderError
from coalmine.graders.base import JudgeFn
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.checking import AssertionScope, grade_assertions
from coalmine.promptfoo.grading import grading_result
from coalmine.promptfoo.matrix.prepared import PromptCode
from coalmine.promptfoo.node import NodeRuntime
from coalmine.promptfoo.node import transform_context as js_transform_context
from coalmine.promptfoo.nunjucks import js_truthy
from coalmine.promptfoo.prompt_code import make_prompt, runtime_vars
from coalmine.promptfoo.scoring import (
    RowOutcome,
    RowScore,
    empty_output_row,
    error_row,
    graded_row,
    score_row,
)
from coalmine.promptfoo.script_results import (
    apply_scoring_result,
    scoring_context,
    scoring_failed,
)
from coalmine.promptfoo.scripts import RowError, ScriptFailed, run_scoring_function, run_transform
from coalmine.providers.base import AgentRequest, CallContext

__all__ = ["PromptfooRow", "RowAgent", "RowResult", "RowTools", "evaluate_row"]

NO_OUTPUT = "No output"
DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True, kw_only=True)
class PromptfooRow:
    """What one row is: everything promptfoo's ``runEval`` reads of the test and the prompt."""

    test_idx: int
    prompt_idx: int
    template: str
    """The prompt to render: the test's ``prefix``, the prompt, its ``suffix``."""
    prompt: Mapping[str, Any]
    """The prompt as promptfoo holds it (``raw``, ``label``, ``id``?, ``config``?): what a
    provider's and a test's transform see as ``context.prompt``."""
    vars: Mapping[str, Any]
    """The test's vars, as written (a ``file://`` value is loaded here)."""
    assertions: tuple[Assertion, ...] = ()
    threshold: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    provider_output: Any = None
    """A fixed output: the provider is not called (when it is JavaScript-truthy)."""
    test_case: Mapping[str, Any] = field(default_factory=dict)
    """The test as promptfoo holds it (``context.test`` of a ``javascript`` assertion)."""
    scoring_function: Any = None
    """The test's ``assertScoringFunction`` (``file://x.js[:name]`` or ``file://x.py[:name]``)."""
    base_dir: Path
    """The promptfoo config's folder: ``file://`` paths and JavaScript start here."""
    code: PromptCode = field(default_factory=PromptCode)
    """What of the prompt runs code (a prompt function, the config's Nunjucks filters)."""
    unsupported: str | None = None
    """Why coalmine cannot run this row (a test's own provider …): the row is an ERROR."""
    case_id: str | None = None
    """How the agent's call names the row (default: ``test N, prompt M``)."""
    phase: str | None = None
    """The suite the row belongs to, when it is an imported suite's line."""
    repeat: int = 0
    """Which repeat of the row this is (each has its own cache and cassette entry)."""
    repeat_index: int = 0
    """promptfoo's ``repeatIndex`` of the test (``evaluateOptions.repeat``)."""

    @property
    def name(self) -> str:
        """How calls and messages name the row."""
        return self.case_id or f"test {self.test_idx}, prompt {self.prompt_idx}"


@dataclass(frozen=True, kw_only=True)
class RowAgent:
    """Who answers a row: a coalmine agent's caller, with promptfoo's provider options."""

    id: str
    """The provider's promptfoo id."""
    label: str | None = None
    caller: Caller | None = None
    problem: str | None = None
    """Why no coalmine agent runs this provider (then ``caller`` is ``None``)."""
    transform: Any = None
    """The provider's ``transform`` (JavaScript text, or ``file://`` JavaScript or Python)."""
    delay_ms: float = 0.0
    """Waited after each row's answer (promptfoo's ``delay``)."""
    config: Mapping[str, Any] | None = None
    """The provider's ``config`` (``context.provider.config`` of JavaScript)."""


@dataclass(frozen=True, kw_only=True)
class RowTools:
    """What every row of a run shares."""

    node: NodeRuntime
    judge: JudgeFn | None = None
    """The project's judge, for ``llm-rubric`` and the context graders; ``None`` when none."""
    env: Mapping[str, str] = field(default_factory=dict)
    """What ``{{ env.NAME }}`` reads in templates."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds an agent may take for one row."""
    pricing: Mapping[str, Price] = field(default_factory=dict)
    """coalmine.yaml's ``pricing:``: what an agent's tokens cost (``cost`` assertions)."""
    clock: Clock = field(default_factory=SystemClock)
    eval_id: str | None = None
    """The run's id in promptfoo's form (what code sees as the var ``__evalId``)."""


@dataclass(frozen=True, kw_only=True)
class RowResult:
    """promptfoo's verdict on one row, with what its result file shows of the row."""

    outcome: RowOutcome
    rendered_prompt: str = ""
    """What the provider was sent; ``""`` when the prompt did not render."""
    vars: Mapping[str, Any] = field(default_factory=dict)
    """The vars after rendering (what providers and assertions saw)."""
    output: Any = None
    """The graded output (after transforms)."""
    latency_ms: int = 0
    token_usage: Mapping[str, Any] | None = None
    """The agent's tokens in promptfoo's keys (``total``, ``prompt``, ``completion`` …)."""
    cost: float | None = None
    """What the call cost: 0 for a fixed output and ``echo``, else by coalmine.yaml's prices."""
    called: bool = False
    """Whether a provider answered (False for a fixed output and for errors)."""
    test_case: Mapping[str, Any] | None = None
    """The test as promptfoo holds it once ``options.transformVars`` changed its vars
    (``None``: the row's own ``test_case``)."""


async def evaluate_row(row: PromptfooRow, agent: RowAgent, tools: RowTools) -> RowResult:
    """Run, transform, grade and score one row; never raises for what goes wrong in the row."""
    state = _State(dict(row.vars))
    try:
        return await _evaluate(row, agent, tools, state)
    except RowError as exc:
        return RowResult(
            outcome=error_row(exc.message),
            rendered_prompt=state.rendered,
            vars=state.vars,
            latency_ms=state.latency_ms,
        )


@dataclass
class _State:
    """How far a row got (an ERROR row reports what it had)."""

    vars: dict[str, Any]
    rendered: str = ""
    latency_ms: int = 0


async def _evaluate(
    row: PromptfooRow, agent: RowAgent, tools: RowTools, state: _State
) -> RowResult:
    if row.unsupported:
        raise RowError(f"unsupported: {row.unsupported}")
    prepared = await _transform_vars(row, tools)
    test_case = row.test_case if prepared is None else prepared
    state.vars = dict(row.vars if prepared is None else prepared["vars"])
    provider = {"id": agent.id, "label": agent.label, "config": dict(agent.config or {})}
    runtime = runtime_vars(
        eval_id=tools.eval_id, test_idx=row.test_idx, prompt_idx=row.prompt_idx,
        repeat_index=row.repeat_index,
    )  # fmt: skip
    rendered = await make_prompt(
        row.template, state.vars, row.code, provider=provider, base_dir=row.base_dir,
        node=tools.node, env=tools.env, runtime=runtime,
    )  # fmt: skip
    state.rendered, state.vars = rendered.text, rendered.vars
    fixed = js_truthy(row.provider_output)
    started = tools.clock.monotonic()
    usage: dict[str, Any] | None = None
    cost: float | None = 0.0
    stopped: str | None = None
    fields: Mapping[str, Any] = {}
    if fixed:
        output: Any = row.provider_output
    else:
        answer = await _call(row, agent, tools, rendered.text, rendered.vars)
        output, usage, cost, stopped, fields = answer
    state.latency_ms = round((tools.clock.monotonic() - started) * 1000)
    if agent.delay_ms > 0:  # promptfoo waits after a fixed output too (it is never cached)
        await anyio.sleep(agent.delay_ms / 1000)
    result = RowResult(
        outcome=empty_output_row(),
        rendered_prompt=rendered.text,
        vars=rendered.vars,
        latency_ms=state.latency_ms,
        token_usage=usage,
        cost=cost,
        called=not fixed,
        test_case=prepared,
    )
    if output is None:
        return result
    response: dict[str, Any] = {**fields, "output": output, "cached": False}
    if usage is not None:
        response["tokenUsage"] = usage
    if stopped is not None:
        response["finishReason"] = stopped
    if agent.transform:  # promptfoo gives a provider's transform no response metadata
        context = js_transform_context(variables=rendered.vars, prompt=row.prompt)
        output = await _transform(agent.transform, output, row, tools, context, "provider")
    transformed = output
    test_transform = row.options.get("transform") or row.options.get("postprocess")
    if js_truthy(test_transform):
        metadata = fields.get("metadata")
        context = js_transform_context(
            variables=rendered.vars,
            prompt=row.prompt,
            metadata=metadata if isinstance(metadata, Mapping) else None,
        )
        output = await _transform(test_transform, output, row, tools, context, "test")
    scope = AssertionScope(
        output=output,
        prompt=rendered.text,
        variables=rendered.vars,
        test=test_case,
        provider=provider,
        provider_response={**response, "output": output, "providerTransformedOutput": transformed},
        latency_ms=state.latency_ms,
        cost=cost,
        base_dir=row.base_dir,
        env=tools.env,
        node=tools.node,
        judge=tools.judge,
        case_id=row.name,
    )
    outcomes = await grade_assertions(row.assertions, scope)
    grading = score_row(outcomes, threshold=row.threshold, variables=rendered.vars)
    if row.scoring_function is not None and grading.has_assertions:
        grading = await _score_with(row.scoring_function, grading, row, tools)
    return replace(result, outcome=graded_row(grading), output=output)


async def _transform_vars(row: PromptfooRow, tools: RowTools) -> Mapping[str, Any] | None:
    """The test once ``options.transformVars`` (its own, else ``defaultTest``'s) ran on its vars.

    As in promptfoo's ``prepareTestVariables``: before the vars are loaded and rendered, with
    ``{prompt: {}, uuid}`` as the context; what it answers is laid over the vars. ``None``
    when the test has none.
    """
    code = row.options.get("transformVars")
    if not js_truthy(code):
        return None
    context = {"prompt": {}, "uuid": str(uuid.uuid4())}
    answer = await run_transform(
        code,
        dict(row.vars),
        context=context,
        node=tools.node,
        base_dir=row.base_dir,
        what="options.transformVars",
        input_name="vars",
    )
    if isinstance(answer, list):  # JavaScript spreads an array as its indices
        answer = {str(i): v for i, v in enumerate(answer)}
    if not isinstance(answer, dict):
        raise RowError("Error: Invariant failed: Transform function did not return a valid object")
    return {**row.test_case, "vars": {**row.vars, **answer}}


async def _score_with(
    reference: Any, grading: RowScore, row: PromptfooRow, tools: RowTools
) -> RowScore:
    """The row's result as its ``assertScoringFunction`` makes it."""
    context = scoring_context(row.threshold, grading_result(grading))
    try:
        answer = await run_scoring_function(
            reference, grading.named_scores, context, node=tools.node, base_dir=row.base_dir
        )
    except ScriptFailed as exc:
        return scoring_failed(grading, str(exc))
    return apply_scoring_result(grading, answer)


async def _call(
    row: PromptfooRow,
    agent: RowAgent,
    tools: RowTools,
    prompt: str,
    variables: Mapping[str, Any],
) -> tuple[Any, dict[str, Any] | None, float | None, str | None, Mapping[str, Any]]:
    """The answer (``None`` for "No output"), tokens, cost, finish reason, other fields."""
    if agent.caller is None:
        raise RowError(f"unsupported: provider {agent.id!r}: {agent.problem or 'no agent'}")
    extra = {"prompt": dict(row.prompt), "test": dict(row.test_case), "repeatIndex": row.repeat}
    context = CallContext(
        row.name, agent.caller.agent.name, row.phase, vars=variables, promptfoo=extra
    )
    try:
        called = await agent.caller.call(
            AgentRequest(prompt, context, tools.timeout), tools.timeout, repeat=row.repeat
        )
    except ProviderError as exc:
        if exc.kind == "bad_output" and exc.reason == NO_OUTPUT:
            return None, None, None, None, {}
        message = exc.reason
        if exc.stderr_tail:
            message += "\nstderr (tail):\n" + exc.stderr_tail[-1000:]
        raise RowError(message) from None
    output = called.output
    # what promptfoo's provider would have answered: an object stays an object
    answer = output.text if output.data is None else output.data
    if agent.caller.agent.provider == "echo":
        return answer, _usage(output.usage), 0.0, None, {}
    used = agent_usage(output, agent.caller.agent, tools.pricing)
    cost = used.cost if used is not None else None
    fields = output.response_fields or {}
    return answer, _usage(output.usage), cost, output.finish_reason, fields


_TOKENS = (
    ("total", "total_tokens"),
    ("prompt", "prompt_tokens"),
    ("completion", "completion_tokens"),
    ("cached", "cached_tokens"),
)


def _usage(usage: Mapping[str, int] | None) -> dict[str, Any] | None:
    """The agent's token counts in promptfoo's keys, one request."""
    if not usage:
        return None
    found: dict[str, Any] = {ours: usage[theirs] for ours, theirs in _TOKENS if theirs in usage}
    return {**found, "numRequests": 1}


async def _transform(
    code: Any,
    output: Any,
    row: PromptfooRow,
    tools: RowTools,
    context: Mapping[str, Any],
    which: str,
) -> Any:
    """Apply the provider's or the test's transform (each with promptfoo's context)."""
    what = "the provider's transform" if which == "provider" else "the test's options.transform"
    return await run_transform(
        code, output, context=context, node=tools.node, base_dir=row.base_dir, what=what
    )
