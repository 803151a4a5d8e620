"""The provider protocol, the request a provider receives, and the ``@provider`` registry.

A provider turns one prompt into one ``AgentOutput``, exactly as production calls the agent.
Providers are async; the runner enforces timeouts by cancelling ``call``, so every provider
must clean up on cancellation (the command provider kills its process group).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from coalmine._util.registry import Registry
from coalmine.config import AgentConfig
from coalmine.errors import PluginError
from coalmine.results import AgentOutput


@dataclass(frozen=True)
class CallContext:
    """What an agent may know about the call besides the prompt (never added to the prompt)."""

    case_id: str
    agent: str
    phase: str | None = None
    attempt: int = 1
    vars: Mapping[str, Any] | None = None
    """The case's variables, when it has them (agents called with promptfoo's conventions
    receive them as ``context["vars"]``)."""


@dataclass(frozen=True)
class AgentRequest:
    """One call of an agent."""

    prompt: str
    context: CallContext
    timeout: float | None = None
    """The runner's deadline, for providers that pass it on (e.g. an HTTP read timeout)."""


class Provider(Protocol):
    """A configured agent, ready to be called."""

    agent: str

    async def call(self, request: AgentRequest) -> AgentOutput:
        """Send ``request.prompt`` to the agent and return its response."""
        ...

    async def aclose(self) -> None:
        """Release connections and processes."""
        ...


class CacheableProvider(Provider, Protocol):
    """A provider that can say what, besides the prompt, shapes its answers.

    Only such providers are cached; the identity must never hold a secret.
    """

    def cache_identity(self) -> dict[str, Any]:
        """Return the provider name, model, endpoint, system prompt hash and sampling."""
        ...


class ProviderFactory(Protocol):
    """Builds a provider from validated settings (a provider class is one)."""

    def __call__(self, *, agent: str, settings: BaseModel, base_dir: Path) -> Provider:
        """Return the provider of one agent."""
        ...


@dataclass(frozen=True)
class ProviderType:
    """A registered provider: its name, settings model and factory."""

    name: str
    settings: type[BaseModel]
    factory: ProviderFactory
    retries: int = 0
    """Default extra attempts on a retryable failure (an agent's ``retries:`` overrides it)."""


def _check(name: str, item: ProviderType) -> None:
    call = getattr(item.factory, "call", None)
    if call is not None and not inspect.iscoroutinefunction(call):
        raise PluginError(f"provider {name!r}: call() must be 'async def'")


registry: Registry[ProviderType] = Registry(
    "provider",
    builtins=(
        "coalmine.providers.anthropic",
        "coalmine.providers.command",
        "coalmine.providers.echo",
        "coalmine.providers.http",
        "coalmine.providers.openai",
        "coalmine.providers.python",
        "coalmine.providers.replay",
    ),
    check=_check,
)

F = TypeVar("F", bound=Callable[..., Provider])


def provider(name: str, *, settings: type[BaseModel], retries: int = 0) -> Callable[[F], F]:
    """Register a provider class (or factory) under ``name`` with its settings model."""

    def decorate(factory: F) -> F:
        registry.register(name, ProviderType(name, settings, factory, retries))
        return factory

    return decorate


def provider_settings() -> dict[str, type[BaseModel]]:
    """Return provider name → settings model, for validating ``coalmine.yaml``."""
    return {name: item.settings for name, item in registry}


def default_retries(agent: AgentConfig) -> int:
    """The agent's retries: its own ``retries:``, or its provider's default."""
    if agent.policy.retries is not None:
        return agent.policy.retries
    return registry.get(agent.provider).retries


def build_provider(agent: AgentConfig) -> Provider:
    """Return a ready provider for a configured agent."""
    item = registry.get(agent.provider)
    return item.factory(agent=agent.name, settings=agent.settings, base_dir=agent.base_dir)


M = TypeVar("M", bound=BaseModel)


def redact_model(model: M, secrets: list[str]) -> M:
    """Scrub every secret from every string of a pydantic value (its JSON escapes included)."""
    if not secrets:
        return model
    text = model.model_dump_json()
    escaped = [json.dumps(s, ensure_ascii=False)[1:-1] for s in secrets]
    clean = redact(text, [*secrets, *escaped])
    return model if clean == text else type(model).model_validate_json(clean)


CUT = "…"
"""Where an excerpt was cut (a grade's reason quotes the texts it compared around a point)."""


def redact(text: str, secrets: list[str]) -> str:
    """Replace every secret in ``text`` with ``***`` (secrets shorter than 4 chars are kept).

    A secret that an excerpt cut in two is caught too: 4 characters or more of its start just
    before a ``…``, or of its end just after one, become ``***``. Only the text beside each
    ``…`` is looked at, so an output full of ellipses costs no more than one pass.
    """
    for secret in secrets:
        if len(secret) < 4:
            continue
        text = text.replace(secret, "***")
        if CUT in text and (secret[:4] in text or secret[-4:] in text):  # else nothing to mask
            parts = text.split(CUT)
            for i in range(len(parts) - 1):
                parts[i] = _mask_start_at_end(parts[i], secret)
                parts[i + 1] = _mask_end_at_start(parts[i + 1], secret)
            text = CUT.join(parts)
    return text


def _mask_start_at_end(part: str, secret: str) -> str:
    """``part`` with the longest start of ``secret`` (4 characters or more) it ends in masked."""
    for k in range(min(len(secret) - 1, len(part)), 3, -1):
        if part.endswith(secret[:k]):
            return part[:-k] + "***"
    return part


def _mask_end_at_start(part: str, secret: str) -> str:
    """``part`` with the longest end of ``secret`` (4 characters or more) it starts with masked."""
    for k in range(min(len(secret) - 1, len(part)), 3, -1):
        if part.startswith(secret[-k:]):
            return "***" + part[k:]
    return part
