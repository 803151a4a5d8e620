"""What every kind of run shares: how agents are called, the secrets to scrub, the run record.

:class:`Wiring` builds each agent's :class:`~coalmine.engine.call.Caller` with the run's
response cache, the secret values to scrub and the cassettes to record to or replay from;
:func:`secret_values` lists those values; :func:`require_variables` stops a run before its first
call when an agent it uses lacks an environment variable; :func:`describe_judge` says which
judge a run uses; :func:`start_run_record` records a new run of any kind in the store, and
:func:`ending_run` ends it there whatever stops it; :func:`recording_run_agents` keeps its live
command agents on record, so that its resume ends what a kill left running.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio

from coalmine._source import Problem
from coalmine._util.clock import Clock
from coalmine._util.git import read_git_state
from coalmine._util.hashing import hash_bytes
from coalmine._util.secrets import conceal, redact
from coalmine.config import AgentConfig, Config, config_error
from coalmine.engine.call import Caller
from coalmine.errors import CoalmineError, Interrupted, RunError, first_error
from coalmine.providers.agent_groups import recording_agents
from coalmine.providers.base import Provider, build_provider, default_retries
from coalmine.providers.replay import Cassette, ReplayProvider
from coalmine.results import JudgeInfo
from coalmine.store.cache import ResponseCache
from coalmine.store.runs import NewRun, RunStatus, Store

__all__ = [
    "Wiring",
    "coalmine_version",
    "describe_judge",
    "ending_run",
    "recording_run_agents",
    "require_variables",
    "secret_values",
    "start_run_record",
]


@dataclass(frozen=True)
class Wiring:
    """What every caller of a run shares: the cache, the secrets, the cassettes."""

    cache: ResponseCache | None
    secrets: tuple[str, ...]
    recorder: Cassette | None
    replay: Cassette | None

    def caller(self, agent: AgentConfig) -> Caller:
        """A caller of ``agent`` through the cache, the scrubbing and the cassettes.

        Raises:
            ConfigError: the agent lacks an environment variable (a replay needs none).
        """
        if self.replay is not None:
            # Replayed answers stand in for the real provider, which is never called.
            provider: Provider = ReplayProvider.standing_in(
                agent.name, self.replay, self._identity(agent)
            )
        else:
            require_variables([agent])
            provider = build_provider(agent)
        return Caller.for_agent(
            provider,
            agent,
            cache=self.cache,
            secrets=self.secrets,
            retries=0 if self.replay is not None else default_retries(agent),
            recorder=self.recorder,
        )

    def _identity(self, agent: AgentConfig) -> dict[str, Any] | None:
        """What shapes the agent's answers, to compare with the cassette's (secrets hidden)."""
        if agent.resolved is None:
            return None  # a variable is unset: a replay needs none, and compares nothing
        declared = getattr(build_provider(agent), "cache_identity", None)
        return conceal(declared(), self.secrets) if declared is not None else None


def describe_judge(config: Config, no_judge: bool) -> JudgeInfo:
    """What the run reports of its judge: none, unset, disabled, or the agent that judges."""
    if no_judge:
        return JudgeInfo(mode="disabled")
    if config.judge is not None:
        model = getattr(config.judge.resolved, "model", None)
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
    """Every secret of the config's agents and judge, longest first.

    The values of their settings that are secrets (``${…}`` headers and ``env:`` entries,
    credential headers, URL passwords and queries: :attr:`AgentConfig.secrets`) and the keys
    their providers read at call time (``api_key_env``, a header's ``{env: NAME}``). They are
    never written anywhere: results, the store, the cache, cassettes and reports are scrubbed.
    """
    agents = [*config.agents.values(), *([config.judge] if config.judge else [])]
    found = {s for agent in agents for s in agent.secrets}
    for agent in agents:
        found.update(os.environ[n] for n, _ in _key_variables(agent) if os.environ.get(n))
    return sorted(found, key=lambda s: (-len(s), s))


def require_variables(
    agents: Iterable[AgentConfig | None], *, environ: Mapping[str, str] | None = None
) -> None:
    """Stop before any call when an agent of ``agents`` lacks an environment variable.

    Each ``${VAR}`` of its entry without a default, and each key its provider reads at call
    time (``api_key_env``, a header's ``{env: NAME}``), must be set. Agents a run does not
    use are not checked: they may lack theirs.

    Raises:
        ConfigError: naming each missing variable, its agent and its line of the config.
    """
    env = os.environ if environ is None else environ
    problems: list[Problem] = []
    path = None
    for agent in {id(a): a for a in agents if a is not None}.values():
        path = path or agent.path
        if agent.unset:
            problems += agent.unset_problems()
            continue
        problems += [
            Problem(
                agent.line,
                f"agent {agent.name!r} ({setting}): the environment variable {name} is not set; "
                f"export {name}=<value> and run again",
            )
            for name, setting in _key_variables(agent)
            if not env.get(name)
        ]
    if problems:
        raise config_error(problems, path)


def _key_variables(agent: AgentConfig) -> list[tuple[str, str]]:
    """``(variable, setting)`` of each key the agent's provider reads at call time."""
    settings = agent.resolved
    found: list[tuple[str, str]] = []
    key = getattr(settings, "api_key_env", None)
    if isinstance(key, str) and key:
        found.append((key, "api_key_env"))
    more = getattr(settings, "secret_env_names", None)
    if callable(more):
        found += [(name, "headers") for name in more()]
    return found


def coalmine_version() -> str | None:
    """The installed coalmine's version (``None`` from a bare source tree)."""
    try:
        return version("coalmine")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return None


def start_run_record(
    store: Store,
    kind: str,
    config: Config,
    started: datetime,
    command_line: Sequence[str],
    selectors: Sequence[str],
    options: dict[str, object],
    judge: JudgeInfo | None = None,
) -> str:
    """Record a new run of ``kind`` with what identifies it (git state, config hash, options)."""
    git = read_git_state(config.root)
    return store.start_run(
        NewRun(
            kind=kind,
            root=str(config.root),
            started_at=started,
            git_commit=git.commit,
            git_dirty=git.dirty,
            coalmine_version=coalmine_version(),
            config_hash=hash_bytes(config.path.read_bytes()) if config.path else None,
            command_line=list(command_line),
            selectors=list(selectors),
            options=options,
            judge=judge,
        )
    )


def recording_run_agents(store: Store | None, run_id: str | None) -> AbstractContextManager[None]:
    """While a run runs, its live command agents on record (``.coalmine/agents/<run id>.live``).

    Entering it ends what a killed process of the same run left running (a resume).
    """
    if store is None or run_id is None:
        return nullcontext()
    return recording_agents(store.path.parent / "agents" / f"{run_id}.live")


@contextmanager
def ending_run(
    store: Store | None,
    run_id: str | None,
    *,
    kind: str,
    clock: Clock,
    secrets: Sequence[str] = (),
) -> Iterator[None]:
    """Whatever escapes the block ends the run in the store, and reaches the caller as one error.

    Ctrl-C and cancellation mark the run interrupted and go on as they are. A
    ``CoalmineError`` (a damaged cassette met mid-run …) marks it ``error`` and goes on, the
    first of a group of them alone (every worker meets the same broken agent); anything else
    marks it ``error`` with its traceback and becomes a :class:`RunError` naming the run, so
    the user reads one line and the traceback stays with the run. What finished is kept, and
    the run can be resumed. A run that ended before the error is left as it ended.
    """
    try:
        yield
    except BaseException as raised:
        exc = first_error(raised)
        interrupt = (KeyboardInterrupt, Interrupted, anyio.get_cancelled_exc_class())
        if not isinstance(exc, Exception) or isinstance(exc, interrupt):
            _stop(store, run_id, clock, "interrupted", None)
            raise
        if isinstance(exc, CoalmineError):
            _stop(store, run_id, clock, "error", redact(str(exc), list(secrets)))
            if exc is raised:
                raise
            raise exc from None
        what = redact(f"{type(exc).__name__}: {exc}", list(secrets))
        shown = f"the {kind} run {run_id}" if run_id else f"the {kind} run"
        message = f"{shown} stopped on an unexpected {what}; what finished is kept"
        trace = "".join(traceback.format_exception(raised))
        _stop(store, run_id, clock, "error", redact(f"{message}\n\n{trace}", list(secrets)))
        raise RunError(message, run_id=run_id, kind=kind) from None


def _stop(
    store: Store | None, run_id: str | None, clock: Clock, status: RunStatus, error: str | None
) -> None:
    if store is None or run_id is None:
        return
    try:
        store.stop_run(run_id, status=status, ended_at=clock.now(), error=error)
    except CoalmineError:  # a store that cannot be written: the first error is the one to tell
        pass
