"""What every kind of run shares: how agents are called, the secrets to scrub, the judge it reports.

:class:`Wiring` builds each agent's :class:`~coalmine.runner.case.Caller` with the run's
response cache, the secret values to scrub and the cassettes to record to or replay from;
:func:`secret_values` lists those values; :func:`describe_judge` says which judge a run uses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from coalmine.config import AgentConfig, Config
from coalmine.providers.base import build_provider, default_retries
from coalmine.providers.replay import Cassette, ReplayProvider
from coalmine.results import JudgeInfo
from coalmine.runner.case import Caller
from coalmine.store.cache import ResponseCache

__all__ = ["Wiring", "coalmine_version", "describe_judge", "secret_values"]


@dataclass(frozen=True)
class Wiring:
    """What every caller of a run shares: the cache, the secrets, the cassettes."""

    cache: ResponseCache | None
    secrets: tuple[str, ...]
    recorder: Cassette | None
    replay: Cassette | None

    def caller(self, agent: AgentConfig) -> Caller:
        """A caller of ``agent`` through the cache, the scrubbing and the cassettes."""
        provider = build_provider(agent)
        if self.replay is not None:
            # Replayed answers stand in for the real provider, which is never called.
            identity = getattr(provider, "cache_identity", lambda: None)()
            provider = ReplayProvider.standing_in(agent.name, self.replay, identity)
        return Caller.for_agent(
            provider,
            agent,
            cache=self.cache,
            secrets=self.secrets,
            retries=0 if self.replay is not None else default_retries(agent),
            recorder=self.recorder,
        )


def describe_judge(config: Config, no_judge: bool) -> JudgeInfo:
    """What the run reports of its judge: none, unset, disabled, or the agent that judges."""
    if no_judge:
        return JudgeInfo(mode="disabled")
    if config.judge is not None:
        model = getattr(config.judge.settings, "model", None)
        return JudgeInfo(
            mode="agent",
            agent=config.judge.name,
            provider=config.judge.provider,
            model=model,
            description=config.judge.description,
            inline=config.agents.get(config.judge.name) is not config.judge or None,
        )
    return JudgeInfo(mode="none" if config.judge_mode == "none" else "unset")


def secret_values(config: Config) -> list[str]:
    """Values of every variable that holds a secret (``api_key_env``, env-sourced headers …).

    They are never written anywhere: results, the store, the cache and reports are scrubbed.
    """
    agents = [*config.agents.values(), *([config.judge] if config.judge else [])]
    names: set[str] = set()
    for agent in agents:
        name = getattr(agent.settings, "api_key_env", None)
        if name:
            names.add(name)
        more = getattr(agent.settings, "secret_env_names", None)
        if more is not None:
            names.update(more())
    return [os.environ[n] for n in sorted(names) if os.environ.get(n)]


def coalmine_version() -> str | None:
    """The installed coalmine's version (``None`` from a bare source tree)."""
    try:
        return version("coalmine")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return None
