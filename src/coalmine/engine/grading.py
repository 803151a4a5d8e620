"""Grading shared by every kind of run: asking the judge, its policy, reruns, grade keys.

A judge grader asks through :func:`judge_fn_for`; :func:`judge_gate` reads the judge's
calibrations from the store so the policy can say which judge graders may block.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import anyio

from coalmine._util.target import TargetError, load_target
from coalmine.config import Config
from coalmine.engine.call import Caller
from coalmine.engine.policy import (
    Calibration,
    JudgeGate,
    grader_policy,
    model_mismatch,
    withdrawn_reason,
)
from coalmine.errors import ConfigError
from coalmine.graders.base import GradeContext, GraderType, JudgeFn, JudgeReply
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.results import (
    Grade,
    JudgeInfo,
)
from coalmine.store.runs import Store


def rerunnable_judge(
    judge: Caller, context: CallContext, timeout: float
) -> Callable[[int], JudgeFn]:
    """Return ``repeat → judge fn`` for the case of ``context`` (rerun 0 is the usual ask)."""
    return lambda repeat: judge_fn_for(judge, context, timeout, repeat=repeat)


def judge_fn_for(
    judge: Caller, context: CallContext, timeout: float, *, repeat: int = 0
) -> JudgeFn:
    """Return the callable judge graders use to ask ``judge`` (for the case of ``context``).

    ``repeat`` numbers reruns of the same judge prompt: each has its own cache entry.
    """

    async def ask(prompt: str) -> JudgeReply:
        request = AgentRequest(prompt, context, timeout)
        output = (await judge.call(request, timeout, repeat=repeat)).output
        model = output.model or getattr(judge.agent.settings, "model", None)
        name = model or f"{judge.agent.provider}:{judge.agent.name}"
        return JudgeReply(output.text, name, output.usage)

    return ask


def load_python_graders(config: Config) -> dict[str, Any]:
    """Load the functions ``python_graders:`` enables.

    Raises:
        ConfigError: one cannot be loaded, or is not callable.
    """
    loaded = {}
    for name, target in config.python_graders.items():
        try:
            function = load_target(target, config.base_dir)
        except TargetError as exc:
            raise ConfigError(f"python_graders: {name}: {exc}", path=config.path) from None
        if not callable(function):
            raise ConfigError(f"python_graders: {name}: {target!r} is not callable",
                              path=config.path)  # fmt: skip
        loaded[name] = function
    return loaded


def judge_gate(store: Store | None, judge: Caller, *, configured_blocking: bool) -> JudgeGate:
    """The judge's calibrations from the store, ready to say which judge graders may block."""
    # here: the judge graders' modules cost 20 ms a start, and a run without a judge needs none
    from coalmine.graders.judged import judge_prompt_identity

    model = getattr(judge.agent.resolved, "model", None)
    rows = store.calibrations(judge.identity_key()) if store is not None else []
    calibrations = [
        Calibration(i, may_block, record, withdrawn_reason(record, model))
        for i, may_block, record, _ in rows
    ]
    if not calibrations and store is not None and model is not None:
        calibrations = _other_model(store, judge.agent.name, model)
    return JudgeGate(
        calibrations, configured_blocking=configured_blocking, identify=judge_prompt_identity
    )


def _other_model(store: Store, agent: str, model: str) -> list[Calibration]:
    """The newest calibration of the agent ``agent`` made with another model, withdrawn.

    The judge's identity holds its model, so a new model finds no calibration of its own; this
    one lets the run say which model was calibrated instead of "not calibrated".
    """
    for i, record in store.newest_calibrations():
        judge = record.get("judge")
        if not isinstance(judge, Mapping) or judge.get("agent") != agent:
            continue
        why = model_mismatch(record, model)
        if why is not None:
            return [Calibration(i, False, record, why)]
    return []


def summarize_gate(gate: JudgeGate, info: JudgeInfo) -> JudgeInfo:
    """``info`` with the run's judge policy (blocking, uncalibrated, why)."""
    policy = gate.summary()
    if policy is None:
        policy = grader_policy(
            gate.calibrations, None, configured_blocking=gate.configured_blocking
        )
    return info.model_copy(
        update={
            "blocking": policy.blocking,
            "uncalibrated": policy.uncalibrated or None,
            "calibration": policy.reason,
        }
    )


async def grade_with_reruns(
    grader: GraderType,
    config: Any,
    text: str,
    ctx: GradeContext,
    *,
    reruns: int,
    judge_for: Callable[[int], JudgeFn] | None,
) -> Grade:
    """Grade once, or, for a judge grader with ``reruns`` > 1, ask the judge that many times.

    The reruns (each its own cache entry) vote: the grade passes when most reruns pass (a tie
    fails). Its score is the lower median of the reruns' scores, so an even split scores on
    the failing side; ``reruns`` lists the scores and ``spread`` their range. Reruns that
    straddle the threshold make the grade ``unstable``: flagged, never silently flipped.
    """
    if reruns <= 1 or not grader.needs_judge or judge_for is None:
        return await grader.grade(config, text, ctx)
    grades: list[Grade | None] = [None] * reruns

    async def one(repeat: int) -> None:
        grades[repeat] = await grader.grade(config, text, replace(ctx, judge=judge_for(repeat)))

    async with anyio.create_task_group() as tg:
        for repeat in range(reruns):
            tg.start_soon(one, repeat)
    done = [g for g in grades if g is not None]
    scores = [g.score for g in done if g.score is not None]
    if len(scores) < len(done) or not scores:
        return done[0]  # a skipped grade: nothing to vote on
    passes = sum(bool(g.passed) for g in done)
    median = sorted(done, key=lambda g: g.score or 0.0)[(len(done) - 1) // 2]
    return median.model_copy(
        update={
            "passed": 2 * passes > len(done),
            "reruns": scores,
            "spread": round(max(scores) - min(scores), 6),
            "unstable": (0 < passes < len(done)) or None,
        }
    )


def unstable_warnings(grades: Mapping[str, Grade]) -> list[str]:
    """One warning for each judge grade whose reruns straddled its threshold."""
    return [
        f"unstable: {key} reruns straddle the threshold (scores "
        f"{', '.join(f'{s:g}' for s in g.flag('reruns') or [])})"
        for key, g in grades.items()
        if g.flag("unstable")
    ]


def grade_key(name: str, taken: Mapping[str, Grade]) -> str:
    """``name``, or ``name#2``, ``#3`` … when a grader of that name already graded."""
    if name not in taken:
        return name
    n = 2
    while f"{name}#{n}" in taken:
        n += 1
    return f"{name}#{n}"
