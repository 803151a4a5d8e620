"""``--dry-run``: a canary run described before it is made, with what it would cost.

How many calls each agent and the judge would get, and their input tokens from the prompt sizes
(about four characters a token; the judge's prompt is counted without the answer it will quote,
so its estimate is a floor).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from coalmine.canary.plan import CanaryPlan
from coalmine.config import Price
from coalmine.graders.base import registry as graders
from coalmine.graders.llm_judge import JudgeConfig, build_judge_prompt

CHARS_PER_TOKEN = 4


@dataclass
class PlannedCalls:
    """What one agent (or the judge) would be asked in a run."""

    name: str
    model: str | None
    calls: int = 0
    input_tokens: int = 0
    max_output_tokens: int | None = None
    price: Price | None = None

    @property
    def input_cost(self) -> float | None:
        """The input side of the cost, when the model has a price."""
        return None if self.price is None else self.input_tokens * self.price.input / 1e6


@dataclass
class DryRun:
    """A run described before it is made."""

    agents: list[PlannedCalls] = field(default_factory=list)
    judge: PlannedCalls | None = None
    invalid: int = 0


def estimate(plan: CanaryPlan, *, no_judge: bool) -> DryRun:
    """Count the calls of a run and estimate their input tokens; nothing is called."""
    config = plan.config
    by_agent: dict[str, PlannedCalls] = {}
    judge_agent = None if no_judge else config.judge
    judge = None
    if judge_agent is not None:
        judge = _planned(judge_agent.name, judge_agent.resolved, config.pricing)
    for canary in plan.canaries:
        agent = canary.agent
        entry = by_agent.setdefault(
            agent.name, _planned(agent.name, agent.resolved, config.pricing)
        )
        spec = canary.loaded.spec
        entry.calls += 1
        entry.input_tokens += _tokens(spec.prompt)
        if judge is None:
            continue
        for grader_spec in spec.expected.graders:
            if graders.get(grader_spec.type).needs_judge:
                criteria = JudgeConfig.model_validate(grader_spec.config).criteria_map()
                judge.calls += 1
                judge.input_tokens += _tokens(build_judge_prompt(spec.prompt, "", criteria))
    return DryRun(list(by_agent.values()), judge, len(plan.invalid))


def _planned(name: str, settings: object, pricing: Mapping[str, Price]) -> PlannedCalls:
    model = getattr(settings, "model", None)
    return PlannedCalls(
        name, model, max_output_tokens=getattr(settings, "max_tokens", None),
        price=pricing.get(model or ""),
    )  # fmt: skip


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def cost_limit_warning(plan: CanaryPlan, *, no_judge: bool) -> str | None:
    """What a cost limit cannot count in this run: the calls whose model has no price.

    A call is counted at its provider's reported cost, else at its model's ``pricing:`` entry;
    without either it costs nothing, so a limit over unpriced agents limits nothing.
    """
    planned = estimate(plan, no_judge=no_judge)
    calls = [*planned.agents, *([planned.judge] if planned.judge is not None else [])]
    unpriced = [c for c in calls if c.price is None]
    if not unpriced:
        return None
    named = ", ".join(f"{c.name} ({c.model or 'no model'})" for c in unpriced)
    nothing = ", so it may limit nothing" if len(unpriced) == len(calls) else ""
    return (
        "--max-cost counts a call at the cost its provider reports, else at its model's price "
        f"under 'pricing:'; there is no price for {named}{nothing}"
    )
