"""The one exception tree of coalmine.

Every error coalmine raises on purpose is a ``CoalmineError``; the CLI maps each branch to one
exit code (``cli.main``), and anything else keeps its traceback::

    CoalmineError
     ├── UsageError          bad command-line use: unknown or ambiguous selector   (exit 2)
     ├── ConfigError         coalmine.yaml / [tool.coalmine] is wrong              (exit 2)
     ├── SpecError           a spec file is wrong (path, line, spec_id)            (exit 2)
     ├── PluginError         a plugin is malformed or unknown                      (exit 2)
     ├── ProviderError       an agent call failed (agent, provider, attempt)
     │    └── AgentTimeout   ... because it ran past its timeout
     ├── GradeError          a grader could not grade (e.g. the judge failed)
     ├── StoreError          the run store cannot be used, or results cannot be written (exit 2)
 ├── RunError            a run stopped on an unexpected error (run_id, kind)   (exit 1)
     └── Interrupted         the run was stopped (Ctrl-C); what finished is kept    (exit 3)

Errors carry their context as attributes, so a caller never parses a message. Messages say
what is wrong, where, and what to do next; they never mention CLI flags (the CLI adds those).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

__all__ = [
    "AgentTimeout",
    "FailureKind",
    "CoalmineError",
    "ConfigError",
    "GradeError",
    "INFRASTRUCTURE_FAILURES",
    "Interrupted",
    "PluginError",
    "ProviderError",
    "RunError",
    "first_error",
    "SpecError",
    "StoreError",
    "UsageError",
]


class CoalmineError(Exception):
    """The root of every error coalmine raises on purpose."""

    exit_code: int = 1
    hint: str | None = None
    """What to do next, in the caller's terms (the CLI adds flag names here)."""


class UsageError(CoalmineError):
    """The command was used wrongly (an unknown selector, conflicting options)."""

    exit_code = 2


class ConfigError(CoalmineError):
    """The project configuration is invalid; ``path`` and ``line`` say where when known."""

    exit_code = 2

    def __init__(self, message: str, *, path: Path | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = message
        super().__init__(_locate(message, path, line))


class SpecError(CoalmineError):
    """A spec file is invalid; it names the file, the line and (when known) the spec id."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: Path,
        line: int | None = None,
        spec_id: str | None = None,
    ):
        self.path = path
        self.line = line
        self.spec_id = spec_id
        self.reason = message
        super().__init__(_locate(message, path, line))


class PluginError(CoalmineError):
    """A plugin is unknown, registered twice, or has the wrong shape."""

    exit_code = 2


FailureKind = Literal[
    "timeout", "rate_limited", "http_error", "connection", "crash", "bad_output", "config"
]
"""What kind of failure an agent call met (recorded on the case, counted per run)."""

INFRASTRUCTURE_FAILURES: frozenset[str] = frozenset(
    {"config", "connection", "rate_limited", "http_error"}
)
"""Failures of what surrounds the agent, not of the agent: a cassette without the answer, a key
not set, an agent that cannot start (``config``), a refused connection, a rate limit, a server's
error. A case that fails so is no regression of the agent."""

_RETRYABLE: dict[str, bool] = {
    "timeout": True,
    "rate_limited": True,
    "connection": True,
    "http_error": False,  # 5xx sets retryable=True explicitly; other 4xx are the caller's fault
    "crash": False,
    "bad_output": False,
    "config": False,  # e.g. the API key variable is not set: a retry cannot help
}


class ProviderError(CoalmineError):
    """Calling an agent failed: a non-zero exit, a crash, an HTTP error, bad output.

    ``kind`` classifies the failure; ``retryable`` says whether trying again may help (429,
    5xx, timeouts and dropped connections may; other 4xx and invalid output will not), and
    ``retry_after`` carries the server's ``Retry-After`` in seconds.
    """

    def __init__(
        self,
        message: str,
        *,
        agent: str,
        provider: str,
        kind: FailureKind = "crash",
        retryable: bool | None = None,
        retry_after: float | None = None,
        attempt: int = 1,
        exit_code: int | None = None,
        stderr_tail: str | None = None,
    ):
        self.agent = agent
        self.provider = provider
        self.kind: FailureKind = kind
        self.retryable = _RETRYABLE[kind] if retryable is None else retryable
        self.retry_after = retry_after
        self.attempt = attempt
        self.process_exit_code = exit_code
        self.stderr_tail = stderr_tail
        self.reason = message
        self.failures: tuple[str, ...] = ()
        """``kind: message`` of the attempts that failed before this one (set by the caller)."""
        super().__init__(f"agent {agent!r} ({provider}): {message}")


class AgentTimeout(ProviderError):
    """The agent did not answer within its timeout; its process group was killed."""

    def __init__(self, *, agent: str, provider: str, timeout: float, attempt: int = 1):
        self.timeout = timeout
        super().__init__(
            f"timed out after {timeout:g}s",
            agent=agent,
            provider=provider,
            kind="timeout",
            attempt=attempt,
        )


class GradeError(CoalmineError):
    """A grader could not produce a grade (for llm-judge: the judge failed)."""

    def __init__(self, message: str, *, grader: str, config: bool = False):
        self.grader = grader
        self.reason = message
        self.config = config
        """True when the case or grader config is at fault (a missing input, a bad schema),
        not the output: the case is an ERROR of kind ``config``, named in the message."""
        self.judge_calls: list[object] = []
        """For a judge failure: each attempt, kept for the run store."""
        self.prompt_sha256: str | None = None
        super().__init__(f"{grader}: {message}")


class StoreError(CoalmineError):
    """The run store cannot be used, or results could not be written; it names the file.

    The store may be missing, not a database, unreadable or newer than this coalmine.
    """

    exit_code = 2


class RunError(CoalmineError):
    """A run stopped on an error coalmine did not expect (a bug, here or in a plugin).

    The run is ended in the store with the error and its traceback; what finished is kept, and
    the run can be resumed. The message names the run and the error, in one line.
    """

    def __init__(self, message: str, *, run_id: str | None, kind: str):
        self.run_id = run_id
        self.kind = kind
        super().__init__(message)


class WorkerError(CoalmineError):
    """A worker of a sharded run failed: its engine could not open, or it met an error.

    The message is the worker's own, scrubbed of the run's secrets.
    """


class Interrupted(CoalmineError):
    """The run was interrupted; the results that finished were written."""

    exit_code = 3

    def __init__(self, message: str, *, results_path: Path | None = None):
        self.results_path = results_path
        super().__init__(message)


def first_error(exc: BaseException) -> BaseException:
    """The error that stands for ``exc``, which may be a (nested) exception group.

    In a group: its first ``CoalmineError`` (workers that met one broken agent each raise it),
    else its first exception; otherwise ``exc`` itself.
    """
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves: list[BaseException] = []
    groups: list[BaseExceptionGroup[BaseException]] = [exc]
    while groups:
        for inner in groups.pop(0).exceptions:
            if isinstance(inner, BaseExceptionGroup):
                groups.append(inner)
            else:
                leaves.append(inner)
    ours = [e for e in leaves if isinstance(e, CoalmineError)]
    return ours[0] if ours else leaves[0] if leaves else exc


def _locate(message: str, path: Path | None, line: int | None) -> str:
    if path is None:
        return message
    where = f"{path}:{line}" if line is not None else str(path)
    return f"{where}: {message}"
