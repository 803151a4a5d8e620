"""Calibrate a judge against human labels: judge every labelled item, summarise, store.

Every item goes to the judge's grader (``llm-judge`` for items with criteria, ``llm-rubric`` for
items with a rubric) ``reruns`` times, and once to each judge of the quorum. Judge calls go
through the judge's own caller (its limits, retries and the response cache: each rerun has its
own cache entry), so an interrupted calibration run again answers what it already asked from
the cache. The record names exactly what was calibrated: the judge's identity (provider, model,
temperature, system prompt), the prompt template's and the rubrics' sha256, the labels file's
sha256 and the held-out items; it keeps every raw judge reply as an artifact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio

from coalmine._util.hashing import hash_text
from coalmine.config import AgentConfig, Config
from coalmine.engine.call import Caller
from coalmine.engine.grading import judge_fn_for
from coalmine.engine.wiring import Wiring, secret_values
from coalmine.errors import ConfigError, GradeError
from coalmine.graders.base import GradeContext
from coalmine.graders.base import registry as graders
from coalmine.graders.judged import judge_prompt_identity
from coalmine.graders.llm_judge import JudgeGrade
from coalmine.judge.calibration import JudgedItem, disagreements, summarize
from coalmine.judge.labels import LabelledItem, LabelSet
from coalmine.judge.lessons import retain_calibration_lessons
from coalmine.providers.base import CallContext
from coalmine.store.cache import ResponseCache
from coalmine.store.runs import Store

PADDING = (
    "\n\nTo restate the answer above in other words, for completeness: the answer above is "
    "the answer, as written, and this paragraph adds nothing to it. " * 3
).rstrip()
"""Filler that adds length and nothing else (the verbosity check)."""

OUTPUT_SCHEMAS = {"llm-judge": "llm-judge/criteria-v1", "llm-rubric": "llm-rubric/pass-score-v1"}


@dataclass(frozen=True)
class CalibrationOutcome:
    """The stored record and its id."""

    record: dict[str, Any]
    calibration_id: int
    lessons: tuple[int, ...] = ()
    """Ids of the lessons its disagreements with the humans were retained as."""


def _agent(config: Config, name: str | None) -> AgentConfig:
    if name is None:
        if config.judge is None:
            raise ConfigError(
                "no judge to calibrate: configure 'judge:' or pass --judge AGENT",
                path=config.path,
            )
        return config.judge
    agent = config.agents.get(name)
    if agent is None:
        raise ConfigError(
            f"no agent {name!r} to calibrate (agents: {', '.join(config.agents) or 'none'})",
            path=config.path,
        )
    return agent


async def calibrate(
    config: Config,
    labels: LabelSet,
    *,
    store: Store,
    judge: str | None = None,
    reruns: int = 3,
    quorum: Sequence[str] = (),
    concurrency: int = 8,
    cache: bool = True,
    verbosity: bool = True,
) -> CalibrationOutcome:
    """Judge every labelled item, compute the calibration, store its record.

    Raises:
        ConfigError: no judge, an unknown agent, or a set that mixes criteria and rubrics.
    """
    kinds = {item.grader for item in labels.items}
    if len(kinds) != 1:
        raise ConfigError(
            f"{labels.path}: a calibration set calibrates one kind of judge grader; this one "
            f"has {', '.join(sorted(kinds)) or 'no valid items'} (criteria or a rubric, not both)",
            path=labels.path,
        )
    (kind,) = kinds
    primary = _agent(config, judge)
    others = [_agent(config, name) for name in quorum]
    wiring = Wiring(
        ResponseCache(store) if cache else None, tuple(secret_values(config)), None, None
    )
    callers = {a.name: wiring.caller(a) for a in [primary, *others]}
    timeout = config.defaults.judge_timeout_seconds
    replies: dict[str, list[str]] = {}
    limiter = anyio.CapacityLimiter(concurrency)

    async def grade(
        item: LabelledItem, caller: Caller, repeat: int, output: str | None = None
    ) -> float | None:
        ctx = GradeContext(
            case_id=item.id,
            prompt=item.prompt,
            judge=judge_fn_for(
                caller,
                CallContext(item.id, caller.agent.name, "calibrate"),
                timeout,
                repeat=repeat,
            ),  # fmt: skip
            inputs={"context": item.context} if item.context is not None else {},
        )
        grader = graders.get(kind)
        async with limiter:
            try:
                grade = await grader.grade(
                    grader.config.model_validate(item.grader_config),
                    item.output if output is None else output,
                    ctx,
                )
            except GradeError as exc:
                texts = [getattr(c, "reply", None) for c in exc.judge_calls]
                replies.setdefault(item.id, []).extend(t for t in texts if t)
                return None
        if isinstance(grade, JudgeGrade):
            replies.setdefault(item.id, []).extend(c.reply for c in grade.calls if c.reply)
        return grade.score

    judged = [JudgedItem(item, [None] * reruns) for item in labels.items]

    async def judge_item(j: JudgedItem) -> None:
        for repeat in range(reruns):
            j.scores[repeat] = await grade(j.item, callers[primary.name], repeat)
        for other in others:
            j.quorum[other.name] = await grade(j.item, callers[other.name], 0)
        if verbosity and j.item.assigned_split == "heldout":
            j.padded = await grade(j.item, callers[primary.name], 0, j.item.output + PADDING)

    try:
        async with anyio.create_task_group() as tg:
            for j in judged:
                tg.start_soon(judge_item, j)
    finally:
        with anyio.CancelScope(shield=True):
            for caller in callers.values():
                await caller.provider.aclose()
    record = summarize(
        judged,
        default_threshold=graders.get(kind).threshold,
        limits=config.judge_calibration,
        quorum_names=[a.name for a in others],
    )
    caller = callers[primary.name]
    identities = {
        found
        for item in labels.items
        if (found := judge_prompt_identity(kind, item.grader_config)) is not None
    }
    templates = {i.template_sha256 for i in identities}
    heldout = sorted(j.item.id for j in judged if j.item.assigned_split == "heldout")
    settings = primary.settings
    record.update(
        {
            "created_at": datetime.now(UTC).isoformat(),
            "grader": kind,
            "judge": {
                "agent": primary.name,
                "provider": primary.provider,
                "model": getattr(settings, "model", None),
                "temperature": getattr(settings, "temperature", None),
                "identity_key": caller.identity_key(),
            },
            "judge_prompt_sha256": next(iter(templates)) if len(templates) == 1 else None,
            "output_schema": OUTPUT_SCHEMAS[kind],
            "rubric_sha256s": sorted(i.rubric_sha256 for i in identities),
            "rubric_source": str(labels.path),
            "calibration_set": {
                "id": labels.set_id,
                "path": str(labels.path),
                "sha256": labels.sha256,
                "items": len(labels.items),
                "bad_lines": len(labels.bad),
            },
            "heldout_set": {
                "id": f"{labels.set_id}#heldout",
                "sha256": hash_text("\n".join(heldout)),
                "items": len(heldout),
            },
        }
    )
    calibration_id = store.record_calibration(
        caller.identity_key(), may_block=bool(record["may_block"]), record=record, replies=replies
    )
    lessons = retain_calibration_lessons(
        store,
        disagreements(judged, threshold=record["threshold"]),
        judge=primary.name,
        judge_key=caller.identity_key(),
        labels=labels,
        root=config.root,
    )
    return CalibrationOutcome(record, calibration_id, tuple(lessons))
