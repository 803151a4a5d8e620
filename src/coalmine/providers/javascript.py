"""The ``javascript`` provider: a promptfoo JavaScript provider module, run in Node.js.

``convention: promptfoo`` (the only one) loads and calls the module as promptfoo 0.121.20 loads
a ``file://provider.js`` provider: the file (``.js``, ``.cjs``, ``.mjs``; ``.ts``, ``.cts``,
``.mts`` through the ``tsx`` package, found from the file's folder up) is imported, its default
export (else the module itself) is constructed with ``new`` and the provider ``options``
(``{id, config: {…, basePath}, env}``), and the instance gets ``label`` unless it set its own.
Each call is ``await instance.callApi(prompt, context, {abortSignal})``, where ``context`` holds
``vars`` and, for a promptfoo row, its ``prompt``, ``test`` and ``repeatIndex``, as well as
``originalProvider`` (the instance), ``logger``, ``getCache`` and ``filters``.

The answer is read as promptfoo's evaluator reads it: a truthy ``error`` fails the call with
that text; a missing or null ``output`` is promptfoo's "No output"; an ``output`` that is not a
string is kept as a JSON value (``AgentOutput.data``; its JSON is the text); ``tokenUsage``, a
numeric ``cost`` and a string ``finishReason`` are kept. A call that throws fails with what was
thrown and its stack (the row error promptfoo writes); so does a response that is not an object.

One Node.js process per agent runs the module (:mod:`coalmine.providers._node`), started at the
first call and kept until ``aclose()``: calls run in it concurrently, as promptfoo runs them. It
runs in the folder ``options.config.basePath`` names (the promptfoo config's folder, from which
promptfoo is run; by default the config file's folder), with coalmine's environment. A
module that cannot be loaded (a missing file, an error at import, no constructor, a constructor
that throws) fails every call of the agent with that error, where promptfoo would stop the
whole eval. A call abandoned at its timeout is aborted through its ``abortSignal``; a process
stuck in a loop is killed, and the next call loads the module again in a fresh one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator

from coalmine._util.locations import ProjectFile
from coalmine.errors import FailureKind, ProviderError
from coalmine.providers._node import NodeGone, NodeProcess
from coalmine.providers._promptfoo import (
    NO_OUTPUT,
    ConventionError,
    call_arguments,
    call_context,
    call_options,
    token_usage,
)
from coalmine.providers.base import AgentRequest, provider
from coalmine.results import AgentOutput

__all__ = ["INSTALL_HINT", "JavaScriptProvider", "JavaScriptSettings"]

WORKER = Path(__file__).with_name("javascript_worker.js")
INSTALL_HINT = (
    "JavaScript agents need Node.js >= 18 on PATH (or node: its path): https://nodejs.org"
)
SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")


class JavaScriptSettings(BaseModel):
    """Settings of a ``javascript`` agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: ProjectFile = Field(min_length=1)
    """The module, relative to the config file's folder (e.g. ``providers/agent.js``)."""
    convention: Literal["promptfoo"] = "promptfoo"
    """How the module is loaded and called: as promptfoo calls a ``file://….js`` provider."""
    options: dict[str, Any] = {}
    """What the constructor receives: ``{id, config: {…, basePath}, env}`` (``id`` defaults to
    ``file://<file>``, ``config.basePath`` to the config file's folder, ``env`` to ``{}``)."""
    label: str | None = None
    """Set as the instance's ``label`` after construction, unless it set its own."""
    node: str = "node"
    """The Node.js program (>= 18) that runs the module."""

    @field_validator("file")
    @classmethod
    def _a_javascript_file(cls, value: str) -> str:
        if not value.lower().endswith(SUFFIXES):
            raise ValueError(f"{value!r} is not a JavaScript file ({', '.join(SUFFIXES)})")
        return value


@provider("javascript", settings=JavaScriptSettings)
class JavaScriptProvider:
    """Calls a promptfoo JavaScript provider module in a Node.js process of its own."""

    def __init__(self, *, agent: str, settings: BaseModel, base_dir: Path):
        assert isinstance(settings, JavaScriptSettings)
        self.agent = agent
        self.settings = settings
        self.base_dir = base_dir
        self.path = (base_dir / settings.file).resolve()
        given = settings.options
        written = given.get("config")
        config: dict[str, Any] = written if isinstance(written, dict) else {}
        options = {"id": f"file://{settings.file}", **given, "env": given.get("env", {})}
        options["config"] = {**config, "basePath": config.get("basePath", ".")}
        self.options = call_options(options, base_dir)
        # promptfoo is run from its config's folder, which it passes as basePath
        self.cwd = Path(self.options["config"]["basePath"])
        self._process: NodeProcess | None = None
        self._broken: ProviderError | None = None
        self._starting = anyio.Lock()

    async def call(self, request: AgentRequest) -> AgentOutput:
        """Call the instance's ``callApi`` with the prompt and promptfoo's context."""
        process = await self._loaded()
        try:
            prompt, _, context = call_arguments(request.prompt, {}, call_context(request.context))
        except ConventionError as exc:
            raise self._error(str(exc), kind=exc.kind) from None
        message = {"op": "call", "prompt": prompt, "context": context}
        try:
            reply = await process.request(message)
        except NodeGone as exc:
            raise self._error(f"the Node.js process stopped during the call: {exc}") from None
        return self._read(reply)

    def cache_identity(self) -> dict[str, Any]:
        """What shapes this agent's answer besides the prompt (for the response cache)."""
        s = self.settings
        return {"provider": "javascript", "file": s.file, "options": s.options, "label": s.label}

    async def aclose(self) -> None:
        """End the agent's Node.js process (a later call starts another)."""
        process, self._process = self._process, None
        if process is not None:
            await process.stop()

    async def _loaded(self) -> NodeProcess:
        """The running process with the module loaded: started and loaded on first use."""
        async with self._starting:
            if self._broken is not None:
                raise self._broken
            if self._process is not None and self._process.alive:
                return self._process
            if self._process is not None:
                await self._process.stop()
            self._process = None
            try:
                _, options, _ = call_arguments("", self.options, {})
            except ConventionError as exc:
                raise self._error(f"options: {exc}", kind=exc.kind) from None
            process = await self._start()
            try:
                reply = await process.request(
                    {"op": "load", "file": str(self.path), "options": options,
                     "label": self.settings.label or ""}
                )  # fmt: skip
            except NodeGone as exc:
                self._broken = self._error(f"the Node.js process stopped loading it: {exc}")
                raise self._broken from None
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await process.stop()
                raise
            if not reply.get("ok"):
                await process.stop()
                self._broken = self._load_error(reply.get("error") or {})
                raise self._broken
            self._process = process
            return process

    async def _start(self) -> NodeProcess:
        if not self.cwd.is_dir():
            raise self._error(f"options.config.basePath is no folder: {self.cwd}", kind="config")
        try:
            return await NodeProcess.start(self.settings.node, WORKER, cwd=self.cwd)
        except OSError as exc:
            cannot = f"cannot start {self.settings.node!r}: {exc.strerror or exc}"
            raise self._error(f"{INSTALL_HINT} ({cannot})", kind="config") from None

    def _load_error(self, error: dict[str, Any]) -> ProviderError:
        if error.get("kind") == "config":  # a missing file, no tsx, an old Node.js
            return self._error(str(error.get("message", "")), kind="config")
        return self._error(f"cannot load the provider {self.settings.file}: {_thrown(error)}")

    def _read(self, reply: dict[str, Any]) -> AgentOutput:
        """The agent's output from the worker's reading of the response."""
        if not reply.get("ok"):
            raise self._error(_thrown(reply.get("error") or {}))
        result: dict[str, Any] = reply.get("result") or {}
        if "error" in result:
            raise self._error(str(result["error"]))
        if result.get("noOutput"):
            raise self._error(NO_OUTPUT, kind="bad_output")
        cost = result.get("cost")
        return AgentOutput(
            text=str(result.get("text", "")),
            data=result.get("data"),
            finish_reason=result.get("finishReason"),
            response_fields=result.get("fields") or None,
            usage=token_usage(result.get("tokenUsage")),
            cost=float(cost) if isinstance(cost, int | float) else None,
        )

    def _error(self, message: str, *, kind: FailureKind = "crash") -> ProviderError:
        return ProviderError(message, agent=self.agent, provider="javascript", kind=kind)


def _thrown(error: dict[str, Any]) -> str:
    """What was thrown, as promptfoo writes a row's error: ``String(error)`` and the stack."""
    text = str(error.get("text") or error.get("message") or "it failed")
    stack = str(error.get("stack") or "")
    if not stack or stack == text:
        return text
    return stack if stack.startswith(text) else f"{text}\n\n{stack}"
