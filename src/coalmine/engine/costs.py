"""What calls cost: tokens by role, priced from the config (never a built-in price list)."""

from __future__ import annotations

from collections.abc import Mapping

from coalmine.config import AgentConfig, Price
from coalmine.results import AgentOutput, Usage


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
