"""The provider protocol, the request a provider receives, and the ``@provider`` registry.

A provider turns one prompt into one ``AgentOutput``, exactly as production calls the agent.
Providers are async; the runner enforces timeouts by cancelling ``call``, so every provider
must clean up on cancellation (the command provider kills its process group).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from coalmine._util.registry import Projection, Registry
from coalmine.config import AgentConfig
from coalmine.errors import PluginError
from coalmine.results import AgentOutput

_FINISH_REASONS = {
    "function_call": "tool_calls",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def finish_reason(raw: object) -> str | None:
    """A model's finish or stop reason in OpenAI's names, as promptfoo maps it.

    Anthropic's ``end_turn`` is ``stop``, ``max_tokens`` is ``length`` …; another reason passes
    through lower-cased; no reason (or a blank one) is ``None``.
    """
    if not isinstance(raw, str) or not raw.strip():
        return None
    key = raw.strip().lower()
    return _FINISH_REASONS.get(key, key)


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
    promptfoo: Mapping[str, Any] | None = None
    """The rest of promptfoo's call context when the call is a promptfoo row's: its ``prompt``
    (``raw``, ``label`` …), ``test`` and ``repeatIndex``, given to promptfoo-convention agents."""


@dataclass(frozen=True)
class AgentRequest:
    """One call of an agent."""

    prompt: str
    context: CallContext
    timeout: float | None = None
    """The runner's deadline, for providers that pass it on (e.g. an HTTP read timeout)."""
    conversation: tuple[tuple[str, str], ...] = ()
    """``(role, content)`` of each earlier turn and then the last user message, when the case
    is a conversation: the chat providers send it as messages. ``prompt`` is then its
    transcript, which every other provider sends (and every cache keys on)."""

    def messages(self) -> list[dict[str, str]]:
        """The chat messages of this call: the conversation, or the prompt as one user turn."""
        if self.conversation:
            return [{"role": role, "content": content} for role, content in self.conversation]
        return [{"role": "user", "content": self.prompt}]


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


_BUILTINS = ("anthropic", "command", "echo", "http", "javascript", "openai", "python", "replay")
"""Each built-in provider, registered by the module of its name."""

registry: Registry[ProviderType] = Registry(
    "provider",
    builtins=tuple(f"coalmine.providers.{name}" for name in _BUILTINS),
    check=_check,
    locate={name: f"coalmine.providers.{name}" for name in _BUILTINS},
)

F = TypeVar("F", bound=Callable[..., Provider])


def provider(name: str, *, settings: type[BaseModel], retries: int = 0) -> Callable[[F], F]:
    """Register a provider class (or factory) under ``name`` with its settings model."""

    def decorate(factory: F) -> F:
        registry.register(name, ProviderType(name, settings, factory, retries))
        return factory

    return decorate


def provider_settings() -> Mapping[str, type[BaseModel]]:
    """Provider name → settings model, for validating ``coalmine.yaml`` (imported as looked up)."""
    return Projection(registry, "settings", provider_settings)


def default_retries(agent: AgentConfig) -> int:
    """The agent's retries: its own ``retries:``, or its provider's default."""
    if agent.policy.retries is not None:
        return agent.policy.retries
    return registry.get(agent.provider).retries


def build_provider(agent: AgentConfig) -> Provider:
    """Return a ready provider for a configured agent."""
    item = registry.get(agent.provider)
    return item.factory(agent=agent.name, settings=agent.settings, base_dir=agent.base_dir)
