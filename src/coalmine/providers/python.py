"""The ``python`` provider: call ``module:function(prompt, context)`` in-process.

The module is imported with the config file's folder first on ``sys.path`` (so
``agents.impl:run`` finds ``agents/impl.py`` beside coalmine.yaml). An async function is awaited;
a sync one runs in a daemon thread so a timeout can still be enforced (the thread is abandoned,
since Python cannot kill a thread: use the ``command`` provider for agents that may hang hard).

The function returns the answer's text, or ``{"output": text, "tool_calls": [...]}`` where each
call is ``{"name", "arguments", "id"?}`` or an object with those attributes (its trajectory).

``convention: promptfoo`` calls the function as promptfoo's Python provider does (0.121.20):
``function(prompt, options, context)`` with JSON values (``options`` is the agent's
``options``; ``context`` is ``{"vars": …}``), and reads ``{"output", "error", "tokenUsage"}``:
a truthy ``error`` fails the call with that message, a missing or null ``output`` fails it as
"No output", an ``output`` that is not text is kept as the answer's ``data`` (and its JSON text
is the text). The code is named by ``target`` or, as promptfoo names it, by ``file`` (a path,
loaded under the file's name with its folder first on ``sys.path``) and ``function``
(``call_api`` unless given; ``Class.method`` allowed). It runs in coalmine's own interpreter
and working directory (promptfoo runs it in a worker process of ``python3`` from its own
working directory).
"""

from __future__ import annotations

import inspect
import threading
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.lowlevel
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from coalmine._util.locations import ProjectFile
from coalmine._util.target import TargetError, load_target
from coalmine.errors import FailureKind, ProviderError
from coalmine.providers._promptfoo import (
    DEFAULT_FUNCTION,
    ConventionError,
    call_arguments,
    call_context,
    call_options,
    load_function,
    read_answer,
)
from coalmine.providers.base import AgentRequest, provider
from coalmine.results import AgentOutput, ToolCall

EXPECTED = "expected str or {'output': …, 'tool_calls': […]}"


class PythonSettings(BaseModel):
    """Settings of a ``python`` agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str | None = Field(None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    """``module:function``; the function takes ``(prompt)`` or ``(prompt, context)``."""
    convention: Literal["coalmine", "promptfoo"] = "coalmine"
    """``promptfoo``: called as promptfoo's Python provider, ``(prompt, options, context)``,
    answering ``{"output": …, "error": …, "tokenUsage": …}``."""
    file: ProjectFile | None = Field(None, min_length=1)
    """With ``convention: promptfoo``, instead of ``target``: the Python file, relative to the
    config file's folder (e.g. ``providers/my-provider.py``)."""
    function: str | None = Field(None, pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$")
    """With ``file``: the function to call (default ``call_api``), or ``Class.method``."""
    options: dict[str, Any] = {}
    """With ``convention: promptfoo``: the provider options, the second argument (``{id?,
    config: {…, basePath}, env}``; a relative ``basePath`` is the config file's folder)."""

    @model_validator(mode="after")
    def _one_way_to_name_the_code(self) -> PythonSettings:
        if self.convention == "coalmine":
            extra = [k for k in ("file", "function", "options") if getattr(self, k)]
            if extra:
                raise ValueError(f"{' and '.join(extra)} need convention: promptfoo")
            if self.target is None:
                raise ValueError("target is required (module:function)")
            return self
        if (self.target is None) == (self.file is None):
            raise ValueError("give either target (module:function) or file (a .py path)")
        if self.function is not None and self.file is None:
            raise ValueError("function goes with file; a target names its function itself")
        return self


@provider("python", settings=PythonSettings)
class PythonProvider:
    """Calls a Python function of the project."""

    def __init__(self, *, agent: str, settings: BaseModel, base_dir: Path):
        assert isinstance(settings, PythonSettings)
        self.agent = agent
        self.settings = settings
        self.target = settings.target or f"{settings.file}:{settings.function or DEFAULT_FUNCTION}"
        self.base_dir = base_dir
        self._function: Callable[..., Any] | None = None
        self._wants_context = True
        self.promptfoo = settings.convention == "promptfoo"
        self.options = call_options(settings.options, base_dir) if self.promptfoo else {}

    async def call(self, request: AgentRequest) -> AgentOutput:
        """Call the function with the prompt (and the call context)."""
        function = self._load()
        args: tuple[Any, ...] = (request.prompt, request.context)
        if self.promptfoo:
            context = call_context(request.context)
            try:
                args = tuple(call_arguments(request.prompt, self.options, context))
            except ConventionError as exc:
                raise self._error(str(exc), kind=exc.kind) from None
        elif not self._wants_context:
            args = (request.prompt,)
        try:
            if _is_async(function):
                result = await function(*args)
            else:
                result = await _run_in_daemon_thread(partial(function, *args), self.agent)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the agent's failure is recorded
            tail = "".join(traceback.format_exception(exc)[-6:]).strip()
            said = f"raised {type(exc).__name__}: {exc}"
            raise self._error(
                f"Python error: {exc}" if self.promptfoo else said, stderr_tail=tail
            ) from None
        if self.promptfoo:
            try:
                answer = read_answer(result, self.target.rpartition(":")[2])
            except ConventionError as exc:
                raise self._error(str(exc), kind=exc.kind) from None
            return AgentOutput(
                text=answer.text,
                usage=answer.usage,
                cost=answer.cost,
                finish_reason=answer.finish_reason,
                data=answer.data,
                response_fields=answer.fields,
            )
        if isinstance(result, str):
            return AgentOutput(text=result)
        text, calls = self._read_result(result)
        return AgentOutput(text=text, tool_calls=calls)

    def cache_identity(self) -> dict[str, Any]:
        """What shapes this agent's answer besides the prompt (for the response cache)."""
        if self.promptfoo:
            s = self.settings
            return {"provider": "python", "target": self.target, "options": s.options}
        return {"provider": "python", "target": self.target}

    async def aclose(self) -> None:
        """Nothing to release."""

    def _load(self) -> Callable[..., Any]:
        if self._function is not None:
            return self._function
        if self.settings.file is not None:
            try:
                path = self.base_dir / self.settings.file
                self._function = load_function(path, self.settings.function or DEFAULT_FUNCTION)
            except ConventionError as exc:
                raise self._error(str(exc), kind=exc.kind) from None
            return self._function
        try:
            obj = load_target(self.target, self.base_dir)
        except TargetError as exc:
            raise self._error(str(exc)) from None
        if not callable(obj):
            raise self._error(f"{self.target!r} is not callable")
        function: Callable[..., Any] = obj
        self._wants_context = _accepts_two_args(function)
        self._function = function
        return function

    def _read_result(self, result: Any) -> tuple[str, list[ToolCall]]:
        """The text and tool calls of a ``{"output", "tool_calls"}`` answer."""
        if not isinstance(result, dict):
            raise self._error(f"returned {type(result).__name__}, {EXPECTED}", kind="bad_output")
        unknown = sorted(str(k) for k in result if k not in ("output", "tool_calls"))
        if unknown:
            keys = ", ".join(repr(k) for k in unknown)
            raise self._error(f"returned a dict with key(s) {keys}, {EXPECTED}", kind="bad_output")
        text = result.get("output")
        if not isinstance(text, str):
            raise self._error(
                f"returned 'output' of type {type(text).__name__}, {EXPECTED}", kind="bad_output"
            )
        items = result.get("tool_calls") or []
        if not isinstance(items, list | tuple):
            raise self._error(
                f"returned 'tool_calls' of type {type(items).__name__}, {EXPECTED}",
                kind="bad_output",
            )
        calls = []
        for index, item in enumerate(items):
            try:
                calls.append(ToolCall.model_validate(item, from_attributes=True))
            except ValidationError as exc:
                problem = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'item'}: {e['msg']}" for e in exc.errors()
                )
                raise self._error(
                    f"returned tool_calls[{index}] that is not a tool call ({problem}); "
                    "expected {'name': str, 'arguments': dict, 'id'?: str}",
                    kind="bad_output",
                ) from None
        return text, calls

    def _error(
        self, message: str, *, stderr_tail: str | None = None, kind: FailureKind = "crash"
    ) -> ProviderError:
        return ProviderError(
            message, agent=self.agent, provider="python", stderr_tail=stderr_tail, kind=kind
        )


async def _run_in_daemon_thread(function: Callable[[], Any], agent: str) -> Any:
    """Run a blocking call in a daemon thread and await its result.

    A daemon thread, because a call abandoned at its timeout must not keep the process alive
    after the run (``anyio.to_thread`` workers are joined at exit).
    """
    done = anyio.Event()
    box: dict[str, Any] = {}
    token = anyio.lowlevel.current_token()

    def target() -> None:
        try:
            box["value"] = function()
        except BaseException as exc:  # noqa: BLE001 - handed back to the awaiting task
            box["error"] = exc
        try:
            anyio.from_thread.run_sync(done.set, token=token)
        except RuntimeError:
            pass  # the run is over (the call was abandoned): nobody waits for the answer

    threading.Thread(target=target, name=f"coalmine-agent-{agent}", daemon=True).start()
    await done.wait()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _is_async(function: Callable[..., Any]) -> bool:
    """True for an ``async def`` function and for an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__
    )


def _accepts_two_args(function: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return len(positional) >= 2 or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
