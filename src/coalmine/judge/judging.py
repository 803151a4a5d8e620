"""How a labelled item is judged in a calibration: every rerun, the quorum, the padded output.

Used in the calibrating process and in each shard of a sharded calibration
(:mod:`coalmine.judge.shard`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import anyio

from coalmine.config import AgentConfig, Config
from coalmine.engine.call import Caller
from coalmine.engine.grading import judge_fn_for
from coalmine.engine.wiring import Wiring, secret_values
from coalmine.errors import ConfigError, GradeError
from coalmine.graders.base import GradeContext
from coalmine.graders.base import registry as graders
from coalmine.graders.llm_judge import JudgeGrade
from coalmine.judge.labels import LabelledItem
from coalmine.providers.base import CallContext

PADDING = (
    "\n\nTo restate the answer above in other words, for completeness: the answer above is "
    "the answer, as written, and this paragraph adds nothing to it. " * 3
).rstrip()
"""Filler that adds length and nothing else (the verbosity check)."""


@dataclass(frozen=True)
class ItemVerdict:
    """What the judges said of one labelled item."""

    scores: tuple[float | None, ...]
    """The primary judge's score on each rerun (None: it could not grade)."""
    quorum: dict[str, float | None]
    padded: float | None
    """Its score of the output padded with filler (held-out items, with the verbosity check)."""
    replies: tuple[str, ...]
    """Every raw reply, in call order."""
    models: tuple[str, ...] = ()
    """The models that answered the primary judge, as their replies name them, sorted."""


@dataclass
class Judging:
    """How every labelled item is judged: the callers, the grader kind, the reruns, the quorum."""

    callers: dict[str, Caller]
    kind: str
    timeout: float
    reruns: int
    primary: str
    others: list[str]
    verbosity: bool
    limiter: anyio.CapacityLimiter | None = None
    """Judge calls in flight at once (None: the caller's engine limits the items)."""

    async def judge(self, item: LabelledItem) -> ItemVerdict:
        """Ask every judge about ``item`` (the primary ``reruns`` times)."""
        replies: list[str] = []
        models: set[str] = set()
        scores = [
            await self._grade(item, self.primary, repeat, replies, models=models)
            for repeat in range(self.reruns)
        ]
        quorum = {name: await self._grade(item, name, 0, replies) for name in self.others}
        padded = None
        if self.verbosity and item.assigned_split == "heldout":
            padded = await self._grade(
                item, self.primary, 0, replies, item.output + PADDING, models=models
            )
        return ItemVerdict(tuple(scores), quorum, padded, tuple(replies), tuple(sorted(models)))

    async def _grade(
        self,
        item: LabelledItem,
        agent: str,
        repeat: int,
        replies: list[str],
        output: str | None = None,
        *,
        models: set[str] | None = None,
    ) -> float | None:
        caller = self.callers[agent]
        ctx = GradeContext(
            case_id=item.id,
            prompt=item.prompt,
            judge=judge_fn_for(
                caller,
                CallContext(item.id, caller.agent.name, "calibrate"),
                self.timeout,
                repeat=repeat,
            ),  # fmt: skip
            inputs={"context": item.context} if item.context is not None else {},
        )
        grader = graders.get(self.kind)
        async with self.limiter or nullcontext():
            try:
                grade = await grader.grade(
                    grader.config.model_validate(item.grader_config),
                    item.output if output is None else output,
                    ctx,
                )
            except GradeError as exc:
                texts = [getattr(c, "reply", None) for c in exc.judge_calls]
                replies.extend(t for t in texts if t)
                _add_models(models, exc.judge_calls)
                return None
        if isinstance(grade, JudgeGrade):
            replies.extend(c.reply for c in grade.calls if c.reply)
            _add_models(models, grade.calls)
        return grade.score


def _add_models(models: set[str] | None, calls: Sequence[object]) -> None:
    """Add the models named by the judge ``calls`` that got a reply."""
    if models is not None:
        models.update(
            m
            for c in calls
            if getattr(c, "reply", None) and isinstance(m := getattr(c, "model", None), str)
        )


def identity_key_of(config: Config, agent: AgentConfig) -> str:
    """The judge's identity key, as its caller computes it (no call is made)."""
    return Wiring(None, tuple(secret_values(config)), None, None).caller(agent).identity_key()


def calibrated_agent(config: Config, name: str | None) -> AgentConfig:
    """The agent a calibration judges with: ``name``, or the config's judge."""
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
