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

Where this differs from promptfoo: ``process.mainModule.require`` resolves from the config's
folder (promptfoo's from its own install, so its bundled packages are not there); what the
code prints goes to a temporary file, shown only when the worker dies; TypeScript and
Python/Ruby files (Python ones run in Python instead: :mod:`coalmine.promptfoo.scripts`), and a
transform that returns a function, raise ``JsUnsupported``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from coalmine.errors import CoalmineError

__all__ = [
    "DEFAULT_TIMEOUT",
    "INSTALL_HINT",
    "JsAssertionResult",
    "JsError",
    "JsLoadError",
    "JsTimeout",
    "JsUnsupported",
    "NodeRuntime",
    "NodeUnavailable",
    "assertion_context",
    "node_available",
    "transform_context",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds one assertion or transform may run."""
MIN_NODE_MAJOR = 18
INSTALL_HINT = "javascript assertions and transforms need Node.js >= 18 on PATH: https://nodejs.org"
WORKER_RESOURCE = "node_worker.js"
_MAX_LINE = 1 << 30  # one answer (an output a transform returned) may be this large
_STDERR_TAIL = 4000


class JsError(CoalmineError):
    """A config's JavaScript failed in a way promptfoo reports as a row ERROR.

    ``str(error)`` is what JavaScript's ``String(error)`` gives (``Error: …``), which is how
    promptfoo's row error begins; ``stack`` is the whole stack.
    """

    def __init__(self, message: str, *, name: str = "Error", stack: str | None = None):
        self.name = name
        self.message = message
        text = f"{name}: {message}" if name and message else name or message
        self.stack = stack or text
        super().__init__(text)


class JsUnsupported(JsError):
    """The code uses something this runtime does not run (a TypeScript or Python file …)."""


class JsLoadError(JsError):
    """A file of the config's code did not load or does not export the function named."""


class JsTimeout(JsError):
    """The code ran past its timeout; the worker was killed (the next call starts another)."""


class NodeUnavailable(JsError):
    """Node.js (>= 18) is not on PATH; ``hint`` says how to install it."""

    def __init__(self, message: str):
        super().__init__(message, name="")
        self.hint = message


@dataclass(frozen=True)
class JsAssertionResult:
    """A ``javascript`` / ``not-javascript`` assertion's verdict, as promptfoo gives it."""

    passed: bool
    score: float
    reason: str
    extra: Mapping[str, Any] = field(default_factory=dict)
    """The other keys of a GradingResult the code returned (``namedScores``, ``metadata``,
    ``componentResults``, ``tokensUsed``, ``comment`` …); empty for a boolean or a number."""


def node_available(node: str = "node") -> str | None:
    """None when ``node`` (>= 18) runs, else the hint that says how to get it."""
    path = shutil.which(node)
    if path is None:
        return INSTALL_HINT
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{INSTALL_HINT} ({path} did not run: {exc})"
    version = done.stdout.strip()
    major = re.match(r"v(\d+)\.", version)
    if major is None or int(major.group(1)) < MIN_NODE_MAJOR:
        return f"{INSTALL_HINT} (found {version or 'a node that printed no version'} at {path})"
    return None


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
        """Run one of promptfoo's markup or SQL assertions (``node_checks.cjs``) in Node.js.

        ``check`` is ``{baseType, inverse, renderedValue, outputString}``; the npm packages it
        needs are looked for from ``base_dir``, then from each of ``package_dirs``.

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
        request = {
            **request,
            "id": self._next_id,
            "output": output,
            "context": context,
            "baseDir": str(Path(base_dir).resolve()),
        }
        try:
            line = json.dumps(request, ensure_ascii=True, allow_nan=False).encode() + b"\n"
        except (TypeError, ValueError) as exc:
            raise JsError(f"the output or context cannot be passed to JavaScript: {exc}") from None
        limit = self.timeout if timeout is None else timeout
        async with self._lock:
            worker = await self._ensure(request["baseDir"])
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
        if reply.get("ok"):
            return reply.get("result")
        error = reply.get("error") or {}
        kinds = {"unsupported": JsUnsupported, "load": JsLoadError}
        kind = kinds.get(str(error.get("kind")), JsError)
        raise kind(
            str(error.get("message", "")), name=str(error.get("name", "")), stack=error.get("stack")
        )

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
        script = files(__package__ or "coalmine.promptfoo").joinpath(WORKER_RESOURCE)
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
    stderr.seek(max(0, size - _STDERR_TAIL))
    return stderr.read().decode("utf-8", errors="replace").strip()
