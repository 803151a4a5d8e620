"""The result contract shared by the runner, the reports and (later) the store.

``CanaryRun`` is exactly the seed's ``canary-run-DATE.json`` shape, plus fields the seed allows
us to add (``errored``, ``reason``, ``error``, ``failures``, judge model and prompt hash,
``invalid_specs``). Graders return subclasses of ``Grade`` with their own fields; reading a file
back parses every grade as a plain ``Grade`` that keeps the extra fields.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny
from pydantic.alias_generators import to_camel

from coalmine._util.words import counted

SCHEMA_VERSION = 1


def _extra(description: str = "") -> Any:
    """An optional field we add to the seed's shape: written only when it has a value."""
    return Field(None, exclude_if=lambda v: v is None, description=description or None)


Verdict = Literal["PASS", "FAIL", "ERROR"]
"""PASS/FAIL judge the agent; ERROR means coalmine could not judge it (e.g. the judge failed)."""


def case_verdict(statuses: Iterable[str]) -> Verdict:
    """An eval case's verdict over its repeats' statuses (``pass``, ``fail``, ``error``).

    PASS when every repeat passed, FAIL when one failed, else ERROR (the store's SQL that
    reduces attempts per case, ``store.browse._PER_CASE``, applies the same rule).
    """
    seen = set(statuses)
    return "PASS" if seen == {"pass"} else "FAIL" if "fail" in seen else "ERROR"


FailureReason = Literal["agent_error", "judge_error", "grader_error", "no_graders"]


class ToolCall(BaseModel):
    """One tool call an agent made (from its trajectory or its API answer)."""

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any] = {}
    id: str | None = _extra()


class AgentOutput(BaseModel):
    """What an agent returned for one prompt."""

    model_config = ConfigDict(frozen=True)

    text: str
    """The response text (stdout of a command agent, the message of a model)."""
    model: str | None = _extra("The model that answered, when the provider reports one.")
    warnings: list[str] = []
    """Things worth knowing that did not stop grading (e.g. invalid UTF-8 was replaced)."""
    exit_code: int | None = _extra()
    stderr_tail: str | None = _extra()
    usage: dict[str, int] | None = _extra("Token counts when the provider reports them.")
    cost: float | None = _extra(
        "What the call cost, when the provider reports it (a promptfoo-convention script's "
        "`cost`); otherwise coalmine prices the tokens from `pricing:`."
    )
    tool_calls: list[ToolCall] = Field(default=[], exclude_if=lambda v: not v)
    """The tool calls the agent made, in order (its trajectory)."""
    finish_reason: str | None = _extra(
        "Why the model stopped, when the provider says: `stop`, `length`, `tool_calls`, "
        "`content_filter` … (OpenAI's names; other providers' are mapped onto them)."
    )
    data: Any = _extra(
        "The answer as a JSON value, when the agent gave more than text: the object a "
        "promptfoo-convention function answered, the parsed reply to a JSON-schema request, a "
        "message of tool calls. `text` then holds its JSON text, or the message's text."
    )
    response_fields: dict[str, Any] | None = _extra(
        "What a promptfoo-convention function answered beside its output (`guardrails`, "
        "`logProbs`, `metadata`, `sessionId` …), as it came: promptfoo's graders read them."
    )


class Grade(BaseModel):
    """One grader's result. Subclasses add the grader's own fields."""

    model_config = ConfigDict(extra="allow")

    score: float | None = None
    """0..1; ``None`` when the grader was skipped."""
    passed: bool | None = None
    """Whether the score reached the grader's own threshold; ``None`` when skipped."""
    weight: float = 1.0
    """The weight the spec gave this grader (before normalisation)."""
    skipped: bool | None = _extra()
    reason: str | None = _extra("Why the grader was skipped.")
    detail: str | None = _extra("What cost points, in words (kept so a stored run can say it).")

    def explain(self) -> str:
        """Say what cost points (missing keywords, sections, weak criteria); empty if nothing."""
        return self.detail or ""

    def flag(self, name: str) -> Any:
        """A field or extra of this grade (``gate``, ``unstable``, ``reruns``), or ``None``.

        Cheaper than ``getattr(grade, name, None)``, which raises and catches inside pydantic
        for every name the grade lacks (the case loop asks each grade several times).
        """
        found = self.__dict__.get(name)
        if found is None and self.__pydantic_extra__:
            found = self.__pydantic_extra__.get(name)
        return found


class Usage(BaseModel):
    """Tokens one role (the agent, or the judge) used for a case, and what they cost."""

    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens served from the provider's prompt cache (part of ``prompt_tokens``)."""
    cost: float | None = None
    """From the config's ``pricing:``; ``None`` when the model has no price."""


class CaseResult(BaseModel):
    """The result of one canary."""

    id: str
    phase: str
    title: str
    agent: str
    verdict: Verdict
    composite_score: float | None
    """Σ weight·score over the graders that ran, weights normalised; 0 on an agent error."""
    grader_scores: dict[str, SerializeAsAny[Grade]] = {}
    duration_seconds: float
    reason: FailureReason | None = _extra()
    error: str | None = _extra()
    failures: list[str] = []
    """Why the canary failed, one line per cause (grader, keyword, section or criterion)."""
    advisory: bool | None = _extra("True for a FAIL or ERROR that does not fail the run.")
    prompt: str | None = _extra("The prompt the agent received.")
    output: str | None = _extra(
        "The agent's response, cut at OUTPUT_LIMIT characters (the run store keeps it whole)."
    )
    output_truncated: bool | None = _extra()
    warnings: list[str] = []
    cache: str | None = _extra("With the response cache on: 'hit', or 'miss: <why>'.")
    error_kind: str | None = _extra(
        "For an agent error: timeout, rate_limited, http_error, connection, crash or bad_output."
    )
    attempts: int | None = _extra("Calls made to the agent, when more than one.")
    call_failures: list[str] = Field(default=[], exclude_if=lambda v: not v)
    """``kind: message`` of every failed call, retried ones included (never dropped)."""
    usage: dict[str, Usage] = Field(default={}, exclude_if=lambda v: not v)
    """Tokens and cost by role: ``agent`` and ``judge``."""
    tool_calls: list[ToolCall] = Field(default=[], exclude_if=lambda v: not v)
    """The agent's tool calls, in order (its trajectory)."""
    spec_path: str | None = _extra()
    expected: Any = _extra("What the graders compared the output with (an eval case's).")
    expected_tool_calls: list[dict[str, Any]] | None = _extra()
    judge_replies: dict[str, list[str]] | None = _extra(
        "Each judge grader's raw replies, word for word (an eval case's)."
    )
    repeats: list[CaseResult] = Field(default=[], exclude_if=lambda v: not v)
    """Every repeat of an eval case run more than once, each as its own result."""


class InvalidSpecRecord(BaseModel):
    """A spec that could not be run, and why."""

    path: str
    line: int | None
    id: str | None
    reason: str


class RunTotals(BaseModel):
    """The summary block of a run."""

    total: int
    passed: int
    failed: int
    composite_score: float | None
    """Mean of the canaries' composites (canaries in ERROR have none and are left out)."""
    errored: int = 0
    invalid: int = 0
    call_failures: dict[str, int] = Field(default={}, exclude_if=lambda v: not v)
    """Failed agent calls by kind (``timeout``, ``rate_limited`` …), retried ones included."""
    tokens: dict[str, dict[str, int]] = Field(default={}, exclude_if=lambda v: not v)
    """Tokens by role (``agent``, ``judge``): prompt, completion, cached."""
    by_agent: dict[str, dict[str, float]] = Field(default={}, exclude_if=lambda v: not v)
    """Tokens and cost by agent name (the judge as ``judge``)."""
    cost: float | None = _extra("Summed over the priced calls.")
    unpriced_models: list[str] = Field(default=[], exclude_if=lambda v: not v)
    """Models that used tokens but have no ``pricing:`` entry (their cost is unknown)."""

    @classmethod
    def of(cls, results: list[CaseResult], *, invalid: int) -> RunTotals:
        """Count ``results``; the composite is the mean over the cases that have one."""
        composites = [r.composite_score for r in results if r.composite_score is not None]
        return cls(
            total=len(results),
            passed=sum(r.verdict == "PASS" for r in results),
            failed=sum(r.verdict == "FAIL" for r in results),
            errored=sum(r.verdict == "ERROR" for r in results),
            invalid=invalid,
            composite_score=round(sum(composites) / len(composites), 6) if composites else None,
            call_failures=dict(
                Counter(f.partition(":")[0] for r in results for f in r.call_failures)
            ),
            **_spend(results),
        )


class JudgeInfo(BaseModel):
    """Which judge graded the run."""

    mode: Literal["agent", "none", "disabled", "unset"]
    agent: str | None = _extra()
    provider: str | None = _extra()
    model: str | None = _extra()
    description: str | None = _extra()
    blocking: bool | None = _extra("Whether llm-judge grades may fail the run.")
    uncalibrated: bool | None = _extra("Blocking only because the config says so.")
    calibration: str | None = _extra("Why the judge may or may not block (its calibration).")
    inline: bool | None = _extra("True when the judge is written inline, not one of the agents.")

    def describe(self) -> str | None:
        """``name (provider, model)`` of the judge, or ``None`` when there is none."""
        if self.agent is None:
            return None
        detail = ", ".join(p for p in (self.provider, self.model) if p)
        if self.inline:
            return detail
        return f"{self.agent} ({detail})" if detail else self.agent


class RecalledLesson(BaseModel):
    """A lesson of the memory recalled for a run before it called anything."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    kind: str
    text: str
    score: float = Field(description="The recall score (words, paths, feedback), to 3 decimals.")


class CanaryRun(BaseModel):
    """A whole canary run: the content of ``bench/results/canary-run-DATE.json``."""

    run_id: str
    timestamp: str
    summary: RunTotals
    results: list[CaseResult]
    invalid_specs: list[InvalidSpecRecord] = []
    interrupted: bool = False
    judge: JudgeInfo | None = _extra()
    duration_seconds: float = 0.0
    coalmine_version: str | None = _extra()
    store_run_id: str | None = _extra("The run's id in the run store (a ULID).")
    kind: Literal["eval"] | None = _extra(
        "'eval' when an eval run is read as a run record (each case as 'suite/case')."
    )
    stopped: str | None = _extra("Why an interrupted run stopped early: 'max_cost'.")
    suites: list[EvalSuiteResult] = Field(
        default=[],
        exclude_if=lambda v: not v,
        description="An eval run's suites: each one's score, gate and verdict.",
    )
    lessons: list[RecalledLesson] = Field(
        default=[],
        exclude_if=lambda v: not v,
        description="Lessons of the memory recalled for the run before it started, best first.",
    )
    schema_version: int = Field(SCHEMA_VERSION)


OUTPUT_LIMIT = 65536


def _spend(results: list[CaseResult]) -> dict[str, Any]:
    tokens: dict[str, Counter[str]] = {}
    costs = [u.cost for r in results for u in r.usage.values() if u.cost is not None]
    unpriced = sorted(
        {u.model or "?" for r in results for u in r.usage.values()
         if u.cost is None and (u.prompt_tokens or u.completion_tokens)}
    )  # fmt: skip
    by_agent: dict[str, dict[str, float]] = {}
    for r in results:
        for role, u in r.usage.items():
            counts = tokens.setdefault(role, Counter())
            counts.update(
                prompt_tokens=u.prompt_tokens,
                completion_tokens=u.completion_tokens,
                cached_tokens=u.cached_tokens,
            )
            mine = by_agent.setdefault(r.agent if role == "agent" else role, {})
            mine["prompt_tokens"] = mine.get("prompt_tokens", 0) + u.prompt_tokens
            mine["completion_tokens"] = mine.get("completion_tokens", 0) + u.completion_tokens
            if u.cost is not None:
                mine["cost"] = mine.get("cost", 0.0) + u.cost
    return {
        "by_agent": {name: {k: round(v, 8) for k, v in c.items()} for name, c in by_agent.items()},
        "tokens": {role: dict(c) for role, c in tokens.items()},
        "cost": round(sum(costs), 6) if costs else None,
        "unpriced_models": unpriced,
    }


def sum_usage(usages: Iterable[Mapping[str, int] | None]) -> dict[str, int] | None:
    """Add token counts key by key; ``None`` when no call reported any."""
    total: Counter[str] = Counter()
    seen = False
    for usage in usages:
        if usage:
            seen = True
            total.update(usage)
    return dict(total) if seen else None


def format_score(score: float) -> str:
    """Show a score with two decimals, rounded down (after 1e-9 of float slack).

    Rounding down keeps what is shown on the right side of every threshold: 0.699 shows as
    0.69, never as a failing "0.70", while 0.1+0.2+0.4 (0.69999…) still shows as 0.70.
    """
    return f"{math.floor((score + 1e-9) * 100) / 100:.2f}"


# -- eval suites ------------------------------------------------------------------------------


class _Camel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class GraderMean(_Camel):
    """A grader's mean score over a suite's runs."""

    mean: float | None
    """The mean over the runs it scored (``None`` when it scored none)."""
    n: int
    """Runs it scored."""
    skipped: int = 0
    """Runs where it was skipped or undefined (no judge; no relevant documents)."""


class EvalTokens(_Camel):
    """Tokens of a suite run, the agent's and the judge's together."""

    prompt: int = 0
    completion: int = 0


class EvalFailure(_Camel):
    """A case that failed or errored, and why (the first few of a suite are listed)."""

    id: str
    status: Literal["fail", "error"]
    reason: str
    advisory: bool = False
    """Only graders that may not block failed it."""


class EvalGate(_Camel):
    """Whether the suite holds, and by which rule."""

    passed: bool
    rule: str
    """``every case passes`` or ``score >= <min_score>``, over the graders that may block."""
    blocking_failures: int
    """Cases that fail (or error) on graders that may block."""

    def in_words(self, suite: str) -> str:
        """The verdict as a sentence that states the rule and the count that broke it."""
        n = self.blocking_failures
        failed = f"{counted(n, 'case', 'cases')} failed or errored on graders that may block"
        if self.rule == EVERY_CASE:
            if self.passed:
                return f"{suite} holds its gate (no case may fail on a grader that may block)"
            return f"{suite} fails its gate (no case may fail on a grader that may block): {failed}"
        verdict = "holds" if self.passed else "fails"
        return (
            f"{suite} {verdict} its gate ({self.rule}, over the graders that may block); {failed}"
        )


EVERY_CASE = "every case passes"
"""The gate rule of a suite without ``min_score``."""


class EvalFlaky(_Camel):
    """A case whose repeats disagree and do not say which side of 0.5 its pass rate is on."""

    id: str
    passes: int
    runs: int = Field(description="Its runs that did not error.")
    ci95: tuple[float, float] = Field(description="Wilson's 95% interval of its pass rate.")


class EvalClustered(_Camel):
    """The score's standard error when cases that share a tag are not independent."""

    by: Literal["tag"] = Field(description="A case's group:NAME tag, else its first tag.")
    clusters: int = Field(description="Clusters; a case with no tag is one of its own.")
    stderr: float = Field(description="Cluster-robust (CR1) standard error of score.")
    ci95: tuple[float, float] = Field(description="score ± 1.96 × stderr, within [0, 1].")


class EvalJudgeRate(_Camel):
    """The share of cases a judge grader passed, raw and corrected by human labels (PPI)."""

    grader: str = Field(description="The judge grader's key (the first with a verdict).")
    raw: float = Field(description="The judge's pass rate over the cases it judged.")
    cases: int
    labelled: int = Field(description="Of them, cases people labelled on this run's output.")
    corrected: float | None = Field(
        description="The prediction-powered estimate; null below two labelled cases."
    )
    ci95: tuple[float, float] | None = Field(
        description="Its 95% interval, which carries the judge's error."
    )
    labels_only_ci95: tuple[float, float] | None = Field(
        description="Wilson's interval from the labelled cases alone, for comparison."
    )
    note: str


class EvalDetectable(_Camel):
    """What a comparison with the suite's previous run can detect (McNemar's power, 80%)."""

    against: str = Field(description="The previous finished run of the suite.")
    cases: int = Field(description="Cases both runs have.")
    flips: int = Field(description="Of them, cases that went between PASS and not-PASS.")
    discordance: float = Field(description="flips / cases; Wilson's upper bound when none.")
    assumed: bool = Field(description="Whether discordance is that bound (nothing flipped).")
    difference: float | None = Field(
        description="The smallest change in pass rate detected with 80% power; null: none."
    )


class EvalSequential(_Camel):
    """How ``eval run --sequential`` decided a suite's gate, and what stopping early saved."""

    alpha: float = Field(description="The level: a wrong decision has at most this chance.")
    seed: int | None = Field(description="The seed of the random order the cases were drawn in.")
    rule: str = Field(description="The question the gate answered.")
    decision: Literal["pass", "fail"] | None = Field(
        description="What was decided before the end; null when every case had to run."
    )
    stopped_early: bool = Field(description="Whether cases were left unrun once decided.")
    decided_after: int | None = Field(description="Cases drawn when the gate was decided.")
    cases_total: int = Field(description="Cases the suite's selection has.")
    cases_run: int
    cases_skipped: int = Field(description="Cases not run because the gate was decided.")
    calls_saved: int = Field(description="Agent calls not made: cases skipped × repeats.")
    cost_saved: float | None = Field(
        description="calls saved × the run's mean cost a call; null when nothing was priced."
    )
    baseline_run: str | None = Field(description="With --baseline: the run compared with.")
    margin: float | None = Field(
        description="With --baseline: the drop in pass rate that still counts as no worse."
    )


class EvalSuiteResult(_Camel):
    """``coalmine.eval.result.v1``: one suite of an eval run.

    The fields of seed 001's eval runner contract (``schema`` … ``reportPath``; times are Unix
    milliseconds), then what coalmine adds. The JSON Schema of this shape ships with the package
    (``coalmine/schemas/eval-result.v1.json``).
    """

    schema_: Literal["coalmine.eval.result.v1"] = Field("coalmine.eval.result.v1", alias="schema")
    suite_id: str
    run_id: str
    profile_id: str | None = Field(
        None, description="The harness profile the run used; null until the project has one."
    )
    started_at: int
    ended_at: int
    cases: int = Field(description="Cases run: passed + failed + errored.")
    passed: int
    failed: int
    score: float = Field(description="The mean of the case values (see reducer), 0..1.")
    blocking: bool = Field(description="Whether this suite may fail the run (its YAML's blocking).")
    judge_prompt_hash: str | None = Field(
        description="sha256 of the suite's judge graders (type and config); null when none judged."
    )
    provider: str = Field(description="provider:model of the agents that answered, comma-joined.")
    report_path: str = Field(description="This file, relative to the project root.")
    errored: int = Field(description="Cases no run of which could be graded.")
    stderr: float | None = Field(description="Standard error of score; null below two cases.")
    ci95: tuple[float, float] | None = Field(
        description="95% interval of score: Wilson's for pass rates, normal otherwise."
    )
    verdict: Literal["pass", "fail"]
    gate: EvalGate
    repeats: int
    reducer: str
    graders: dict[str, GraderMean]
    tokens: EvalTokens
    cost: float | None = Field(description="From the config's pricing; null when nothing priced.")
    latency_seconds: float | None = Field(description="Mean agent latency of uncached calls.")
    bad_lines: int = Field(description="Lines of the suite that could not be used.")
    bad_line_examples: list[str] = []
    failures: list[EvalFailure] = []
    interrupted: bool = False
    coalmine_version: str | None = None
    unstable: int = Field(0, description="Case runs whose judge reruns straddled the threshold.")
    lessons: list[RecalledLesson] = Field(
        [],
        description="Lessons of the memory recalled for this suite before the run, best first "
        "(stale ones left out); empty when none is relevant.",
    )
    sequential: EvalSequential | None = Field(
        None, description="With --sequential: how the gate was decided; null otherwise."
    )
    pass_hat_k: float | None = Field(
        None,
        description="With repeats: pass^k for k = repeats, the chance that all k runs of a case "
        "pass, averaged over the cases (tau-bench); null with one run a case.",
    )
    flaky: int = Field(0, description="Cases whose repeats straddle 0.5 (see flakyCases).")
    flaky_cases: list[EvalFlaky] = Field([], description="The first flaky cases (up to 20).")
    clustered: EvalClustered | None = Field(
        None, description="With cases that share tags: the clustered error; null otherwise."
    )
    detectable: EvalDetectable | None = Field(
        None,
        description="Paired with the suite's previous finished run: the smallest change in pass "
        "rate a comparison detects; null when there is no such run.",
    )
    judge_rate: EvalJudgeRate | None = Field(
        None, description="With a judge grader: its pass rate, raw and corrected by labels."
    )


def eval_result_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``coalmine.eval.result.v1`` (shipped as schemas/eval-result.v1.json).

    Every field is required (an absent value is written as ``null``), so a reader can rely on
    the shape; ``schema`` is the constant that names it.
    """
    schema = EvalSuiteResult.model_json_schema(by_alias=True, mode="serialization")
    properties = schema["properties"]
    schema["required"] = list(properties)
    for definition in schema.get("$defs", {}).values():
        definition["required"] = list(definition["properties"])
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "coalmine.eval.result.v1",
        **schema,
    }


CanaryRun.model_rebuild()  # its suites are EvalSuiteResult, defined below it
