"""What every kind of run shares: how agents are called, the secrets to scrub, the run record.

:class:`Wiring` builds each agent's :class:`~coalmine.engine.call.Caller` with the run's
response cache, the secret values to scrub and the cassettes to record to or replay from;
:func:`secret_values` lists those values; :func:`describe_judge` says which judge a run uses;
:func:`start_run_record` records a new run of any kind in the store, and :func:`ending_run`
ends it there whatever stops it.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version

import anyio

from coalmine._util.clock import Clock
from coalmine._util.git import read_git_state
from coalmine._util.hashing import hash_bytes
from coalmine.config import AgentConfig, Config
from coalmine.engine.call import Caller
from coalmine.errors import CoalmineError, Interrupted, RunError, first_error
from coalmine.providers.base import build_provider, default_retries, redact
from coalmine.providers.replay import Cassette, ReplayProvider
from coalmine.results import JudgeInfo
from coalmine.store.cache import ResponseCache
from coalmine.store.runs import NewRun, RunStatus, Store

__all__ = [
    "Wiring",
    "coalmine_version",
    "describe_judge",
    "ending_run",
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
