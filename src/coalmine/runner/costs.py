"""What calls cost: tokens by role, priced from the config (never a built-in price list).

``--dry-run`` estimates a run before it is made: how many calls each agent and the judge would
get, and their input tokens from the prompt sizes (about four characters a token; the judge's
prompt is counted without the answer it will quote, so its estimate is a floor).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from coalmine.config import AgentConfig, Price
from coalmine.graders.base import registry as graders
from coalmine.graders.llm_judge import JudgeConfig, build_judge_prompt
from coalmine.results import AgentOutput, Usage
from coalmine.runner.plan import CanaryPlan

CHARS_PER_TOKEN = 4


def priced(
    usage: Mapping[str, int] | None,
    model: str | None,
    pricing: Mapping[str, Price],
    *,
    configured: str | None = None,
) -> Usage | None:
    """The ``Usage`` of one role from a provider's token counts; ``None`` when none came.

    The price is looked up by the model that answered, then by the configured model name
    (servers often answer with a dated name, e.g. ``gpt-4o-mini-2024-07-18``).
    """
    if not usage:
        return None
    prompt = usage.get("prompt_tokens", usage.get("input_tokens", 0))
    completion = usage.get("completion_tokens", usage.get("output_tokens", 0))
    cached = usage.get("cached_tokens", usage.get("cache_read_input_tokens", 0))
    price = pricing.get(model or "") or pricing.get(configured or "")
    model = model if model in pricing or configured not in pricing else configured
    cost = None
    if price is not None:
        cached_price = price.input if price.cached_input is None else price.cached_input
        cost = (
            (prompt - cached) * price.input + cached * cached_price + completion * price.output
        ) / 1e6
    return Usage(
        model=model,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached,
        cost=round(cost, 8) if cost is not None else None,
    )


def agent_usage(
    output: AgentOutput, agent: AgentConfig, pricing: Mapping[str, Price]
) -> Usage | None:
    """The tokens and cost of one agent call.

    The cost is what its provider reported (a promptfoo-convention script's ``cost``), else
    its tokens priced by ``pricing``.
    """
    configured = getattr(agent.settings, "model", None)
    usage = priced(output.usage, output.model or configured, pricing, configured=configured)
    if output.cost is None:
        return usage
    return (usage or Usage(model=output.model or configured)).model_copy(
        update={"cost": output.cost}
    )


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
        judge = _planned(judge_agent.name, judge_agent.settings, config.pricing)
    for canary in plan.canaries:
        agent = canary.agent
        entry = by_agent.setdefault(
            agent.name, _planned(agent.name, agent.settings, config.pricing)
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
