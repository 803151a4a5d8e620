"""Run a promptfoo config's JavaScript in Node.js, as promptfoo 0.121.20 runs it.

A promptfoo config holds the author's own code: ``javascript`` / ``not-javascript`` assertions
and transforms (a provider's ``transform``, a test's ``options.transform``, an assertion's
``transform``). That code is trusted, as promptfoo trusts it: it runs with the full
environment, ``cwd`` the config's folder, and can ``process.mainModule.require`` anything.

One ``node`` process serves a whole run (``node_worker.js``, started on first use): a request
is a JSON line on its stdin, the answer a JSON line on its stdout, so a thousand assertions
pay for one process start. Requests go one at a time; a call that runs past its timeout kills
the worker (a ``while (true) {}`` cannot be stopped any other way) and the next call starts a
fresh one. Values cross as JSON, so a string comes back exactly as it went (unicode, newlines,
lone surrogates); ``NaN`` and infinite scores are carried by name.

What the code sees and what its answer means is promptfoo's (``src/assertions/javascript.ts``,
``src/util/transform.ts``, ``runAssertion`` in ``src/assertions/index.ts``):

* Inline assertion code is trimmed at the end; one line becomes ``return <line>`` (trailing
  ``;`` dropped; after a leading ``const``/``let``/``var`` the ``return`` goes before the last
  statement), several lines are a function body that must ``return``. It is called as
  ``(output, context, process)``. A function expression such as ``(output) => …`` is
  therefore returned, not called, and fails the assertion: promptfoo's behaviour.
* ``file://path.js`` and ``file://path.js:name`` (relative to the config's folder) call the
  file's function, its named export, or its default export with ``(output, context)``.
  promptfoo picks ``name`` from the default export when there is one, so a named function
  beside a default export of an ES module is not found: that is an ERROR, as in promptfoo.
* The same ``file://`` function as the value of another type (``equals``, ``contains-all``
  …) gives that value (:meth:`NodeRuntime.script_value`): whatever it answers, ``undefined``
  and functions told apart; one that throws or does not load raises ``JsError``.
* The answer: ``true``/``false`` scores 1/0; a number is the score and passes when it is
  ``> 0``, or ``>= threshold`` when the assertion has one; an object with boolean ``pass``,
  number ``score`` and string ``reason`` is taken as is. ``not-javascript`` inverts ``pass``
  (never the score, which is 1/0 from the inverted pass for a boolean). A failing reason is
  ``Custom function returned false`` plus a newline and the code.
* Inline code that throws, or answers anything else (a string, ``undefined``, an object
  without a ``reason``), fails the assertion with score 0 and ``Custom function threw error:
  …``, even under ``not-``. A ``file://`` function that throws or does not load raises
  ``JsError``: promptfoo makes that row an ERROR.
* A transform is ``return <code>`` when the code is one line, else a body (so a YAML ``|``
  block, which ends in a newline, must ``return``: promptfoo does not trim it). It is called
  as ``(output, context, process)`` (``vars`` instead of ``output`` for ``transformVars``).
  It raises ``JsError`` when it throws (``Transform failed (<label>): …``), does not compile,
  or returns ``null``/``undefined`` (``Transform function did not return a value``).
* A function a config names (an ``assertScoringFunction``, ``file://x.js[:name]``) is found
  as promptfoo's ``loadFunction`` finds it and called with the arguments given; one that does
  not load or is not exported raises ``JsLoadError``, one that throws ``JsError``.

Inline assertion code reaches this module already rendered with the test's vars (promptfoo
renders it with Nunjucks first; ``file://`` values are not rendered).

The other code a config names (prompt functions, var loaders, test generators, Nunjucks
filters) goes through :meth:`NodeRuntime.call`, or :func:`call_node_once` while the config is
read. Its files are imported as promptfoo's ``importModule`` imports them, TypeScript
(``.ts``, ``.cts``, ``.mts``) through the ``tsx`` package, as promptfoo does: resolved from the
config's folder (a project that installs promptfoo has it), else from the promptfoo installs on
``PATH`` (:func:`typescript_loader_dirs`); without it a TypeScript file raises
``JsUnsupported`` saying how to install it.

Where this differs from promptfoo: ``process.mainModule.require`` resolves from the config's
folder (promptfoo's from its own install, so its bundled packages are not there); what the
code prints goes to a temporary file, shown only when the worker dies; Python/Ruby files
(Python ones run in Python instead: :mod:`coalmine.promptfoo.scripts`), and a transform that
returns a function, raise ``JsUnsupported``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from coalmine.promptfoo.node_wire import (
    DEFAULT_TIMEOUT,
    INSTALL_HINT,
    STDERR_TAIL,
    CodeOp,
    JsError,
    JsLoadError,
    JsTimeout,
    JsUnsupported,
    NodeUnavailable,
    call_node_once,
    node_available,
    reply_result,
    request_line,
    typescript_loader_dirs,
    worker_script,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "INSTALL_HINT",
    "CodeOp",
    "JsAssertionResult",
    "JsError",
    "JsLoadError",
    "JsScriptValue",
    "JsTimeout",
    "JsUnsupported",
    "NodeRuntime",
    "NodeUnavailable",
    "assertion_context",
    "call_node_once",
    "node_available",
    "transform_context",
    "typescript_loader_dirs",
]

_MAX_LINE = 1 << 30  # one answer (an output a transform returned) may be this large


@dataclass(frozen=True)
class JsScriptValue:
    """What a ``file://x.js[:name]`` value's function answered for a type that is not a script."""

    value: Any = None
    undefined: bool = False
    """It answered ``undefined``: promptfoo keeps the value as written."""
    function: bool = False
    """It answered a function, which promptfoo rejects for such a type."""


@dataclass(frozen=True)
class JsAssertionResult:
    """A ``javascript`` / ``not-javascript`` assertion's verdict, as promptfoo gives it."""

    passed: bool
    score: float
    reason: str
    extra: Mapping[str, Any] = field(default_factory=dict)
    """The other keys of a GradingResult the code returned (``namedScores``, ``metadata``,
    ``componentResults``, ``tokensUsed``, ``comment`` …); empty for a boolean or a number."""


def assertion_context(
    *,
    prompt: str,
    variables: Mapping[str, Any],
    test: Mapping[str, Any],
    provider: Mapping[str, Any] | None,
    provider_response: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``context`` a ``javascript`` assertion receives (promptfoo's ``runAssertion``).

    Args:
        prompt: the rendered prompt sent to the provider.
        variables: the test's vars.
        test: the test case as promptfoo holds it (``description``, ``vars``, ``assert``,
            ``options``, ``metadata`` …).
        provider: ``{"id": …, "label": …, "config": …}``; the worker turns ``id`` into the
            method promptfoo's provider object has, so ``context.provider.id()`` works.
        provider_response: ``output``, ``raw``, ``tokenUsage``, ``cached``, ``metadata`` …
            and ``providerTransformedOutput`` (the output after the provider's transform).
        config: the assertion's ``config``.
    """
    context: dict[str, Any] = {
        "prompt": prompt,
        "vars": dict(variables),
        "test": dict(test),
        "provider": dict(provider) if provider is not None else None,
        "providerResponse": dict(provider_response),
    }
    if config is not None:
        context["config"] = dict(config)
    metadata = provider_response.get("metadata")
    if metadata is not None:
        context["metadata"] = metadata
    return context


def transform_context(
    *,
    variables: Mapping[str, Any],
    prompt: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``context`` a transform receives; promptfoo gives each transform a different one.

    * a provider's ``transform``: the prompt object (``raw``, ``label``, ``template`` …), no
      metadata;
    * a test's ``options.transform``: the prompt object and the provider's response metadata;
    * an assertion's ``transform``: ``{"label": <the rendered prompt>}`` as the prompt (so
      ``context.prompt.label`` is the rendered text) and the response metadata.
    """
    context: dict[str, Any] = {"vars": dict(variables), "prompt": dict(prompt)}
    if metadata is not None:
        context["metadata"] = dict(metadata)
    return context


@dataclass
class _Worker:
    process: Process
    replies: BufferedByteReceiveStream
    stderr: IO[bytes]


class NodeRuntime:
    """One run's Node.js worker: started on first use, ended by ``aclose()``.

    Every call raises ``NodeUnavailable`` (with the install hint) when Node.js is missing.
    Usable as ``async with NodeRuntime() as js: …``.
    """

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        node: str = "node",
        env: Mapping[str, str] | None = None,
    ):
        self.timeout = timeout
        self.node = node
        self.env = dict(env) if env is not None else None
        """The worker's environment; None passes coalmine's own, as promptfoo does."""
        self._lock = anyio.Lock()
        self._worker: _Worker | None = None
        self._checked = False
        self._missing: str | None = None
        self._next_id = 0

    async def __aenter__(self) -> NodeRuntime:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def evaluate_assertion(
        self,
        code: object,
        *,
        output: Any,
        context: Mapping[str, Any],
        base_dir: Path,
        inverse: bool = False,
        threshold: float | None = None,
        timeout: float | None = None,
    ) -> JsAssertionResult:
        """Grade ``output`` with a ``javascript`` assertion's (rendered) value ``code``.

        ``code`` is a string; any other value (a YAML number, no value at all) fails the
        assertion, as it does in promptfoo.

        Raises:
            JsError: where promptfoo makes the row an ERROR (a ``file://`` function threw or
                did not load), or the call timed out (``JsTimeout``).
        """
        request = {"op": "assert", "code": code, "inverse": inverse, "threshold": threshold}
        answer = await self._call(request, output, context, base_dir, timeout)
        score = answer["score"]
        return JsAssertionResult(
            passed=bool(answer["pass"]),
            score=float(score),  # a number, or "NaN" / "Infinity" / "-Infinity"
            reason=str(answer["reason"]),
            extra=answer.get("extra") or {},
        )

    async def script_value(
        self,
        reference: str,
        *,
        output: Any,
        context: Mapping[str, Any],
        base_dir: Path,
        timeout: float | None = None,
    ) -> JsScriptValue:
        """Call the function a ``file://path.js[:name]`` value names with ``(output, context)``.

        The function is found as promptfoo's ``loadFromJavaScriptFile`` finds it (as for a
        ``javascript`` assertion's file) and its answer awaited.

        Raises:
            JsError: the file did not load, the function threw, or the call timed out.
        """
        request = {"op": "value", "code": reference}
        answer = await self._call(request, output, context, base_dir, timeout)
        return JsScriptValue(
            value=answer.get("value"),
            undefined=bool(answer.get("undefined")),
            function=bool(answer.get("function")),
        )

    async def transform(
        self,
        code: str,
        *,
        output: Any,
        context: Mapping[str, Any],
        base_dir: Path,
        input_name: Literal["output", "vars"] = "output",
        timeout: float | None = None,
    ) -> Any:
        """Apply a transform (inline code or ``file://path.js[:name]``) to ``output``.

        Raises:
            JsError: the transform threw, did not compile or load, or returned nothing.
        """
        request = {"op": "transform", "code": code, "inputName": input_name}
        return await self._call(request, output, context, base_dir, timeout)

    async def check(
        self, check: Mapping[str, Any], *, base_dir: Path, package_dirs: Sequence[Path] = ()
    ) -> dict[str, Any]:
        """Grade one assertion with promptfoo's own code (``node_checks.cjs``) in Node.js.

        ``check`` is ``{assertion, output, response, provider, vars, latencyMs, prompt}``
        (:class:`coalmine.promptfoo.own_code.OwnCodeCheck`); promptfoo is looked for from
        ``base_dir``, then from each of ``package_dirs``.

        Raises:
            JsUnsupported: a package it needs is not installed (the message says what to run).
            JsError: promptfoo's handler threw (the row is an ERROR).
        """
        dirs = [str(d) for d in package_dirs]
        request = {"op": "check", "check": dict(check), "packageDirs": dirs}
        answer: dict[str, Any] = await self._call(request, None, {}, base_dir, None)
        return answer

    async def call_function(
        self,
        reference: str,
        *,
        args: list[Any],
        base_dir: Path,
        timeout: float | None = None,
    ) -> Any:
        """Call the function ``file://path.js[:name]`` names with ``args``; await its answer.

        The function is found as promptfoo's ``loadFunction`` finds it (an
        ``assertScoringFunction``): the named export, else the module's function, its default
        export or its ``func``.

        Raises:
            JsLoadError: the file did not load or does not export the function.
            JsError: the function threw (or the call timed out).
        """
        request = {"op": "call", "code": reference, "args": args}
        return await self._call(request, None, {}, base_dir, timeout)

    async def call(
        self, op: CodeOp, *, base_dir: Path, timeout: float | None = None, **fields: Any
    ) -> Any:
        """Run a prompt function, a var loader, a test generator or a Nunjucks filter.

        ``op`` says which (:data:`CodeOp`); the fields are the worker's
        (:mod:`coalmine.promptfoo.prompt_code` sends them).

        Raises:
            JsError: the code threw, did not load, or timed out (``JsTimeout``).
        """
        return await self._call({"op": op, **fields}, None, {}, base_dir, timeout)

    async def aclose(self) -> None:
        """End the worker (a later call starts a new one)."""
        async with self._lock:
            await self._stop()

    async def _call(
        self,
        request: dict[str, Any],
        output: Any,
        context: Mapping[str, Any],
        base_dir: Path,
        timeout: float | None,
    ) -> Any:
        self._next_id += 1
        request = {**request, "id": self._next_id, "output": output, "context": context}
        line = request_line(request, base_dir)
        limit = self.timeout if timeout is None else timeout
        async with self._lock:
            worker = await self._ensure(str(Path(base_dir).resolve()))
            with anyio.move_on_after(limit) as scope:
                try:
                    reply = await self._exchange(worker, line, request["id"])
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await self._stop()
                    raise
            if scope.cancelled_caught:
                with anyio.CancelScope(shield=True):
                    await self._stop()
                raise JsTimeout(
                    f"the code did not finish within {limit:g} s (the Node.js worker was "
                    "restarted)",
                    name="TimeoutError",
                )
        return reply_result(reply)

    async def _exchange(self, worker: _Worker, line: bytes, request_id: int) -> dict[str, Any]:
        assert worker.process.stdin is not None
        try:
            await worker.process.stdin.send(line)
            while True:
                raw = await worker.replies.receive_until(b"\n", _MAX_LINE)
                reply: dict[str, Any] = json.loads(raw)
                if reply.get("id") in (request_id, None):  # None: the worker could not read it
                    return reply
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
            code = await worker.process.wait()
            raise JsError(
                f"the Node.js worker stopped (exit code {code}) while running the code: "
                f"{_tail(worker.stderr) or 'it printed nothing'}"
            ) from None
        except anyio.DelimiterNotFound:
            raise JsError(f"the answer is larger than {_MAX_LINE} bytes") from None

    async def _ensure(self, cwd: str) -> _Worker:
        if self._worker is not None and self._worker.process.returncode is None:
            return self._worker
        await self._stop()
        if not self._checked:
            self._missing = await anyio.to_thread.run_sync(node_available, self.node)
            self._checked = True
        if self._missing is not None:
            raise NodeUnavailable(self._missing)
        script = worker_script()
        stderr = tempfile.TemporaryFile()  # open for the worker's life, closed by _stop
        try:
            process = await anyio.open_process(
                [self.node, str(script)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            stderr.close()
            raise NodeUnavailable(f"{INSTALL_HINT} (cannot start {self.node}: {exc})") from None
        assert process.stdout is not None
        self._worker = _Worker(process, BufferedByteReceiveStream(process.stdout), stderr)
        return self._worker

    async def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is None:
            return
        try:
            os.killpg(worker.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        await worker.process.wait()
        await worker.process.aclose()
        worker.stderr.close()


def _tail(stderr: IO[bytes]) -> str:
    """The end of what the worker wrote on stderr (the config's console output, a crash)."""
    stderr.flush()
    size = stderr.seek(0, os.SEEK_END)
    stderr.seek(max(0, size - STDERR_TAIL))
    return stderr.read().decode("utf-8", errors="replace").strip()
