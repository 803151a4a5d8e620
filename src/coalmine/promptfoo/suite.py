"""Run a line of a ``compat: promptfoo`` suite: promptfoo's verdict, stored as a coalmine attempt.

The eval engine (:mod:`coalmine.evals.run`) knows promptfoo only as the compat kind registered
here (:data:`PROMPTFOO`, through :mod:`coalmine.evals.compat`): it hands each line of an
imported suite to its runner (:class:`_LineRunner`). The line is evaluated by
the same :func:`~coalmine.promptfoo.row.evaluate_row` as ``eval run --promptfoo`` (Nunjucks
rendering, ``providerOutput``, transforms, assertions, promptfoo's scoring), and its verdict
becomes an :class:`~coalmine.store.evals.Attempt`, so imported suites get the store, resume,
comparisons and reports as any suite does:

- status: promptfoo's (``pass``, ``fail``; ``error`` for promptfoo's ERROR rows, which coalmine
  counts as errors: not scored, and failing the suite);
- score: promptfoo's weighted score (``None`` for an ERROR, as for any coalmine error);
- scores: each top-level assertion's score, keyed by its type (``contains#2`` for a second);
- the record keeps the rendered prompt, the output, each assertion's grade and, under
  ``promptfoo``, the row as promptfoo's result file writes it (``testIdx``, ``promptIdx``,
  ``success``, ``score``, ``failureReason``, ``gradingResult`` …), so the run can be shown in
  promptfoo's own shape from the store.

A line whose test has a ``max-score`` is held back until every line of the run ran: its test's
other columns are lines of the other suites imported from the same config, and the rows of
the run with the same config, ``testIdx`` and repeat are compared then
(:mod:`coalmine.promptfoo.comparison`), as promptfoo compares a test's rows last. A run of
only some of those suites compares the columns it ran (as promptfoo run with
``--filter-providers`` does); with only one, the line is an ERROR that says so.

promptfoo's verdict is kept whole: a failing ``llm-rubric`` fails the row as it does in
promptfoo (the judge is the project's, from coalmine.yaml). What that failure does to the
suite is coalmine's judge policy: until the judge is calibrated (``coalmine judge calibrate``)
a row that failed only on model-graded assertions is advisory, as a judge grader's failure is
in any suite.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coalmine._util.clock import Clock
from coalmine._util.locations import root_for
from coalmine.config import Price
from coalmine.engine.call import Caller
from coalmine.evals.compat import CompatRunner, compat_kind
from coalmine.graders.base import JudgeFn
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.assertions import JUDGED, map_assertion
from coalmine.promptfoo.checking import output_text
from coalmine.promptfoo.comparison import Compared, compare_tests, max_score_of
from coalmine.promptfoo.grading import grading_result
from coalmine.promptfoo.matrix.prepared import PromptCode, as_test_case, unsupported_reason
from coalmine.promptfoo.matrix.sources import reading_inside
from coalmine.promptfoo.node import NodeRuntime
from coalmine.promptfoo.report import eval_id
from coalmine.promptfoo.row import PromptfooRow, RowAgent, RowResult, RowTools, evaluate_row
from coalmine.promptfoo.scoring import ComponentResult
from coalmine.results import OUTPUT_LIMIT
from coalmine.specs.compat import PromptfooCase, PromptfooSuite
from coalmine.specs.models import GraderSpec
from coalmine.specs.suite import SuiteCase, SuiteMeta
from coalmine.store.evals import Attempt

__all__ = [
    "PROMPTFOO",
    "check_promptfoo_line",
    "line_graders",
    "line_needs_judge",
    "line_test_case",
    "suite_base_dir",
]


def check_promptfoo_line(case: SuiteCase) -> str | None:
    """Why a compat line's assertions cannot be read (a bad line), or ``None``."""
    line = case.promptfoo
    if line is None:
        return None
    for position, data in enumerate(line.assertions):
        try:
            Assertion.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            return f"assert[{position}]{'.' + where if where else ''}: {first['msg']}"
    return None


def line_needs_judge(case: SuiteCase) -> bool:
    """Whether a compat line has a model-graded assertion (the project's judge grades it)."""
    return any(spec.type in JUDGED for spec in line_graders(case))


def line_graders(case: SuiteCase) -> list[GraderSpec]:
    """The coalmine graders a compat line's assertions map to, in the test's order.

    An assert-set's children are included; values are as written (templates not rendered):
    that is what the judge policy and ``judge label`` know a rubric by.
    """
    line = case.promptfoo
    if line is None:
        return []
    found: list[GraderSpec] = []
    pending = [Assertion.model_validate(a) for a in reversed(line.assertions)]
    while pending:
        assertion = pending.pop()
        pending.extend(reversed(assertion.children or ()))
        mapped = map_assertion(assertion)
        if mapped.grader is not None:
            found.append(mapped.grader)
    return found


def suite_base_dir(meta: SuiteMeta, suite_path: Path) -> Path:
    """The promptfoo config's folder, where the lines' ``file://`` paths start."""
    assert meta.promptfoo is not None
    return (suite_path.parent / meta.promptfoo.base_dir).resolve()


@dataclass(frozen=True, kw_only=True)
class _Evaluated:
    """A line's row, evaluated: what its attempt is made of."""

    case: SuiteCase
    rep: int
    suite: str
    config: Path
    """The promptfoo config the suite was imported from (its lines' columns share it)."""
    row: PromptfooRow
    result: RowResult
    caller: Caller | None
    judge_blocks: Callable[[str, Mapping[str, Any]], bool] | None

    def attempt(self) -> Attempt:
        result, judge_blocks = self.result, self.judge_blocks
        attempt = _attempt(self.suite, self.case, self.rep, result, self.caller, self.row)
        if (
            attempt.status == "fail"
            and judge_blocks is not None
            and _judged_only(result, judge_blocks)
        ):
            attempt.record["advisory"] = True
            return attempt._replace(blocks=False)
        return attempt


async def _evaluate_line(
    case: SuiteCase,
    rep: int,
    *,
    suite: str,
    suite_path: Path,
    meta: SuiteMeta,
    caller: Caller | None,
    tools: RowTools,
    judge: JudgeFn | None,
    judge_blocks: Callable[[str, Mapping[str, Any]], bool] | None,
) -> _Evaluated:
    """Evaluate one line of a compat suite; its attempt's record is scrubbed by the engine.

    ``judge_blocks(type, config)`` says whether a judge grader may fail the suite (coalmine's
    calibration policy): a row that failed on such assertions only is kept as promptfoo's
    FAIL, but advisory. A ``max-score`` is not compared here (see :class:`_LineRunner`).
    """
    line, source = case.promptfoo, meta.promptfoo
    assert line is not None and source is not None
    row = _row(case, line, source, meta, suite, suite_path, rep)
    agent = _agent(source, caller)
    timeout = meta.timeout_seconds or tools.timeout
    env = {**tools.env, **source.env}
    result = await evaluate_row(row, agent, replace(tools, judge=judge, env=env, timeout=timeout))
    return _Evaluated(
        case=case, rep=rep, suite=suite, config=(suite_path.parent / source.config).resolve(),
        row=row, result=result, caller=caller, judge_blocks=judge_blocks,
    )  # fmt: skip


def _compare_held(held: list[_Evaluated]) -> list[Attempt]:
    """The attempts of lines held for their test's ``max-score``, each test's columns compared.

    A test is its config's ``testIdx`` in one repeat; its columns are compared by ``promptIdx``.
    """
    outcomes = compare_tests([
        Compared((e.config, e.row.test_idx, e.rep), e.row.prompt_idx, e.row.assertions,
                 e.result.outcome)
        for e in held
    ])  # fmt: skip
    return [
        replace(e, result=replace(e.result, outcome=outcome)).attempt()
        for e, outcome in zip(held, outcomes, strict=True)
    ]


class _LineRunner:
    """One run's promptfoo lines: one Node.js worker, the environment the run started with."""

    def __init__(self, *, timeout: float, pricing: Mapping[str, Price], clock: Clock, root: Path):
        self._root = root
        self._held: list[_Evaluated] = []
        """Lines whose test has a max-score: compared with their test's other columns last."""
        self._node = NodeRuntime()
        self._tools = RowTools(
            node=self._node, env=dict(os.environ), timeout=timeout, pricing=pricing, clock=clock,
            eval_id=eval_id(clock.now()),
        )  # fmt: skip

    async def run(
        self,
        case: SuiteCase,
        rep: int,
        *,
        suite: str,
        suite_path: Path,
        meta: SuiteMeta,
        caller: Caller | None,
        judge: JudgeFn | None,
        judge_blocks: Callable[[str, Mapping[str, Any]], bool] | None,
    ) -> Attempt | None:
        # the files of the project, and those of the config it was imported from (named by
        # the user who imported it: its folder, or the repository that holds it)
        roots = [root_for(suite_path, root=self._root)]
        if meta.promptfoo is not None:
            config = suite_path.parent / meta.promptfoo.config
            roots.append(root_for(config, root=self._root))
        with reading_inside(*roots):
            evaluated = await _evaluate_line(
                case, rep, suite=suite, suite_path=suite_path, meta=meta, caller=caller,
                tools=self._tools, judge=judge, judge_blocks=judge_blocks,
            )  # fmt: skip
        if max_score_of(evaluated.row.assertions) is not None:
            self._held.append(evaluated)
            return None
        return evaluated.attempt()

    async def finish(self) -> list[Attempt]:
        held, self._held = self._held, []
        return _compare_held(held)

    async def aclose(self) -> None:
        await self._node.aclose()


class _Promptfoo:
    """``compat: promptfoo``: lines are promptfoo tests, graded by promptfoo's rules."""

    def check(self, case: SuiteCase) -> str | None:
        return check_promptfoo_line(case)

    def graders(self, case: SuiteCase) -> list[GraderSpec]:
        return line_graders(case)

    def needs_judge(self, case: SuiteCase) -> bool:
        return line_needs_judge(case)

    def runner(
        self, *, timeout: float, pricing: Mapping[str, Price], clock: Clock, root: Path
    ) -> CompatRunner:
        return _LineRunner(timeout=timeout, pricing=pricing, clock=clock, root=root)


PROMPTFOO = compat_kind("promptfoo")(_Promptfoo())
"""The built-in compat kind (registered when the eval engine first looks one up)."""


def _row(
    case: SuiteCase,
    line: PromptfooCase,
    source: PromptfooSuite,
    meta: SuiteMeta,
    suite: str,
    suite_path: Path,
    rep: int,
) -> PromptfooRow:
    prompt: dict[str, Any] = {"raw": meta.prompt_template or "", "label": source.prompt.label}
    if source.prompt.id is not None:
        prompt["id"] = source.prompt.id
    if source.prompt.config is not None:
        prompt["config"] = dict(source.prompt.config)
    assertions = tuple(Assertion.model_validate(a) for a in line.assertions)
    return PromptfooRow(
        test_idx=line.test_idx,
        prompt_idx=source.prompt_idx,
        template=case.prompt,
        prompt=prompt,
        vars=line.vars,
        assertions=assertions,
        threshold=line.threshold,
        options=line.options,
        provider_output=line.provider_output,
        test_case=line_test_case(line),
        base_dir=suite_base_dir(meta, suite_path),
        code=PromptCode(
            kind=source.prompt.kind,
            ref=source.prompt.function,
            config=source.prompt.config,
            filters=source.nunjucks_filters,
        ),
        unsupported=unsupported_reason(
            test_provider=line.provider,
        ),
        scoring_function=line.assert_scoring_function,
        case_id=line.id,
        phase=suite,
        repeat=rep,
        repeat_index=line.repeat_index,
    )


def _judged_only(result: RowResult, judge_blocks: Callable[[str, Mapping[str, Any]], bool]) -> bool:
    """Whether every failing assertion of the row is a judge grader that may not block."""
    grading = result.outcome.grading
    if grading is None:
        return False
    failed = [c for c in grading.component_results if not c.passed and c.assertion is not None]
    if not failed:
        return False
    for entry in failed:
        assert entry.assertion is not None
        mapped = map_assertion(entry.assertion)
        spec = mapped.grader
        if spec is None or spec.type not in JUDGED or judge_blocks(spec.type, spec.config):
            return False
    return True


def line_test_case(line: PromptfooCase) -> dict[str, Any]:
    """The test as promptfoo holds it (``context.test``; ``testCase`` of its result file)."""
    return as_test_case(
        description=line.description,
        variables=line.vars,
        provider_output=line.provider_output,
        threshold=line.threshold,
        assertions=line.assertions,
        options=line.options,
        metadata=line.metadata,
    )


def _agent(source: PromptfooSuite, caller: Caller | None) -> RowAgent:
    provider = source.provider
    problem = provider.problem
    if caller is None and problem is None:
        problem = "the suite names no agent"
    return RowAgent(
        id=provider.id,
        label=provider.label,
        caller=caller,
        problem=problem,
        transform=provider.transform,
        delay_ms=provider.delay or 0.0,
        config=provider.config,
    )


def _attempt(
    suite: str,
    case: SuiteCase,
    rep: int,
    result: RowResult,
    caller: Caller | None,
    row: PromptfooRow,
) -> Attempt:
    outcome = result.outcome
    status = outcome.status
    components = outcome.grading.component_results if outcome.grading else ()
    grades = _grades(components)
    scores = {k: g["score"] for k, g in grades.items()}
    usage = result.token_usage or {}
    record: dict[str, Any] = {"prompt": result.rendered_prompt}
    if caller is not None:
        record["agent"] = caller.agent.name
    text = _text(result.output)
    if text is not None:
        record["output"] = text[:OUTPUT_LIMIT]
        if len(text) > OUTPUT_LIMIT:
            record["output_truncated"] = True
    record["grades"] = grades
    reason = (outcome.error or "").strip()
    if status == "error":
        record["error"] = f"case {case.case.id!r}: {reason}"
    elif status == "fail":
        record["why"] = reason[:1000]
    record["promptfoo"] = _promptfoo_row(result, row)
    return Attempt(
        suite,
        case.case.id,
        rep,
        status,
        status != "pass",
        None if status == "error" else round(outcome.score, 6),
        scores,
        result.latency_ms / 1000 if result.called else None,
        usage.get("prompt"),
        usage.get("completion"),
        result.cost if result.called else None,
        "promptfoo" if status == "error" else None,
        record,
    )


def _grades(components: tuple[ComponentResult, ...]) -> dict[str, dict[str, Any]]:
    """Each top-level assertion's grade (an assert-set's children are inside its entry)."""
    inner = {id(child) for c in components for child in c.children}
    grades: dict[str, dict[str, Any]] = {}
    for entry in components:
        if id(entry) in inner:
            continue
        kind = "assert-set" if "assertionSet" in entry.metadata else None
        if kind is None:
            kind = entry.assertion.type if entry.assertion is not None else "assertion"
        key = kind
        n = 2
        while key in grades:
            key, n = f"{kind}#{n}", n + 1
        weight = entry.assertion.weight if entry.assertion is not None else 1.0
        grades[key] = {
            "score": entry.score,
            "passed": entry.passed,
            "weight": weight,
            "detail": entry.reason,
        }
    return grades


def _text(output: Any) -> str | None:
    """The output as the string graders read it (an object's ``JSON.stringify``)."""
    return None if output is None else output_text(output)


def _promptfoo_row(result: RowResult, row: PromptfooRow) -> dict[str, Any]:
    """The row as promptfoo's result file holds it (what ``--format promptfoo`` writes back)."""
    outcome = result.outcome
    found: dict[str, Any] = {
        "testIdx": row.test_idx,
        "promptIdx": row.prompt_idx,
        "success": outcome.success,
        "score": outcome.score,
        "failureReason": int(outcome.failure_reason),
        "namedScores": dict(outcome.named_scores),
        "latencyMs": result.latency_ms,
        "cost": result.cost or 0.0,
        "vars": dict(result.vars),
    }
    if outcome.error is not None:
        found["error"] = outcome.error
    if outcome.grading is not None:
        found["gradingResult"] = grading_result(outcome.grading)
    if result.token_usage:
        found["tokenUsage"] = dict(result.token_usage)
    if not isinstance(result.output, str | type(None)):
        found["output"] = result.output
    if result.test_case is not None:  # options.transformVars changed the test's vars
        found["testCase"] = dict(result.test_case)
    return found
