"""Make a row's prompt as promptfoo 0.121.20's ``renderPrompt`` does, running the config's code.

:func:`make_prompt` takes the row's template, its vars and the prompt's :class:`PromptCode`,
and gives the rendered prompt:

1. **Vars.** Each ``file://`` value, in the vars' order (a loader sees the vars loaded before
   it), becomes what promptfoo makes of it: a ``.py`` file's ``get_var(var_name, prompt, vars)``
   must answer ``{"output": <string>}`` (trimmed); a JavaScript or TypeScript file's function
   is called as ``(var_name, prompt, vars, provider)`` and must answer ``{"output": …}`` (any
   value); ``{"error": …}``, or no output, is an ERROR. Other files are read
   (:func:`~coalmine.promptfoo.matrix.filerefs.load_var_file`). ``prompt`` is the raw prompt.
2. **Prompt functions** make the text that is rendered, from ``{vars, provider: {id, label},
   config}`` (the prompt's ``config``, ``{}`` if none): ``file://p.py:name`` calls ``name`` in
   ``python3``; ``file://p.py`` runs the file with that context as JSON in its first argument
   and takes what it prints; ``file://p.js[:name]`` (or ``.mjs``, ``.ts`` …) calls the module
   (or its export) in Node.js; ``exec:command`` runs the command (no shell; quotes group words)
   with the context as its last argument, in the config's folder (or the prompt config's
   ``basePath``), for ``timeout`` ms (60 s), and takes its stdout, trimmed, without ANSI
   escapes (stderr with no stdout is an ERROR). A string answer is the template; an object
   with ``prompt`` gives that (a non-string as JSON); any other object is written as JSON;
   anything else is an ERROR, as in promptfoo.
3. **Rendering** is Nunjucks (:func:`~coalmine.promptfoo.nunjucks.render_prompt`), with the
   config's ``nunjucksFilters``: each is the JavaScript function its file exports, called in
   Node.js with the values as JSON.

The code is the config author's, trusted as promptfoo trusts it: it runs with coalmine's
environment. Its files must be inside the project (``reading_inside``).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from coalmine.promptfoo.checking import RowError, unsupported_js
from coalmine.promptfoo.matrix.filerefs import load_var_file
from coalmine.promptfoo.matrix.prepared import PromptCode
from coalmine.promptfoo.matrix.prompt_refs import split_command
from coalmine.promptfoo.matrix.sources import (
    ReadError,
    is_code_file,
    js_stringify,
    require_inside,
    split_file_url,
)
from coalmine.promptfoo.node import JsError, JsUnsupported, NodeRuntime
from coalmine.promptfoo.nunjucks import (
    UNDEFINED,
    RenderedPrompt,
    TemplateError,
    js_json_parse,
    js_json_stringify,
    js_truthy,
    render_prompt,
)
from coalmine.promptfoo.python_calls import PythonScriptError, python_executable, run_python

__all__ = ["PromptCode", "make_prompt", "runtime_vars"]

EXEC_TIMEOUT_MS = 60_000
"""How long an ``exec:`` prompt may run unless its config says ``timeout``."""
_ANSI = re.compile(r"\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")


def runtime_vars(
    *, eval_id: str | None, test_idx: int, prompt_idx: int, repeat_index: int
) -> dict[str, Any]:
    """The vars promptfoo adds to each row's while it makes the prompt (``getEvalRuntimeVars``)."""
    found: dict[str, Any] = {"__evalId": eval_id} if eval_id else {}
    step = f"test-{test_idx}-prompt-{prompt_idx}-repeat-{repeat_index}"
    return {**found, "__evalStepId": step, "__repeatIndex": repeat_index}


async def make_prompt(
    template: str,
    variables: Mapping[str, Any],
    code: PromptCode,
    *,
    provider: Mapping[str, Any],
    base_dir: Path,
    node: NodeRuntime,
    env: Mapping[str, str],
    runtime: Mapping[str, Any] | None = None,
) -> RenderedPrompt:
    """Load the vars, run the prompt function if any, and render the prompt.

    Args:
        template: The row's prompt (the test's prefix, the prompt, its suffix).
        variables: The test's vars, as written.
        code: The prompt's kind and the filters.
        provider: ``{"id", "label", "config"}`` of the row's provider.
        base_dir: The config's folder (files and commands start there).
        node: Runs the JavaScript.
        env: What ``{{ env.NAME }}`` reads.
        runtime: :func:`runtime_vars`: seen by the code and the templates, not kept in the
            vars the result holds.

    Raises:
        RowError: promptfoo would make the row an ERROR (the message says why).
    """
    extra = dict(runtime or {})
    loaded = await _load_vars(
        template, {**variables, **extra}, provider=provider, base_dir=base_dir, node=node
    )
    if code.kind != "template":
        template = await _run_prompt(code, loaded, provider=provider, base_dir=base_dir, node=node)
    render = partial(render_prompt, template, loaded, env=env)
    try:
        if not code.filters:
            rendered = render()
        else:
            # a filter answers from Node.js, which this event loop runs: render in a thread
            filters = _js_filters(code.filters, base_dir=base_dir, node=node)
            rendered = await anyio.to_thread.run_sync(partial(render, filters=filters))
    except TemplateError as exc:
        raise RowError(str(exc)) from None
    except ReadError as exc:
        raise RowError(f"nunjucksFilters: {exc.message}") from None
    kept = {k: v for k, v in rendered.vars.items() if k not in extra}
    return RenderedPrompt(rendered.text, kept)


# --- vars -------------------------------------------------------------------------------------


async def _load_vars(
    prompt: str,
    variables: Mapping[str, Any],
    *,
    provider: Mapping[str, Any],
    base_dir: Path,
    node: NodeRuntime,
) -> dict[str, Any]:
    loaded = dict(variables)
    for name, value in list(loaded.items()):
        if not (isinstance(value, str) and value.startswith("file://")):
            continue
        file = base_dir / value.removeprefix("file://")
        try:
            if is_code_file(str(file)) and not file.name.endswith(".py"):
                loaded[name] = await _js_var(name, file, prompt, loaded, provider, base_dir, node)
            elif file.name.endswith(".py"):
                loaded[name] = await _python_var(name, file, prompt, loaded, base_dir)
            else:
                loaded[name] = load_var_file(value, base_dir=base_dir)
        except ReadError as exc:
            raise RowError(f"var {name!r} ({value}): {exc.message}") from None
    return loaded


async def _python_var(
    name: str, file: Path, prompt: str, variables: dict[str, Any], base_dir: Path
) -> str:
    """``get_var(var_name, prompt, vars)``: its ``output`` string, trimmed."""
    try:
        answer = await run_python(
            require_inside(file), "get_var", [name, prompt, variables], cwd=base_dir
        )
    except PythonScriptError as exc:
        raise ReadError(f"Error running Python script {file}: {exc}") from None
    answer = answer if isinstance(answer, dict) else {}
    if js_truthy(answer.get("error")):
        raise ReadError(f"Error running Python script {file}: {answer['error']}")
    output = answer.get("output")
    if not js_truthy(output):
        raise ReadError(f"Python script {file} did not return any output")
    if not isinstance(output, str):
        raise ReadError(f"the output of Python script {file} must be a string, not {output!r}")
    return output.strip()


async def _js_var(
    name: str,
    file: Path,
    prompt: str,
    variables: dict[str, Any],
    provider: Mapping[str, Any],
    base_dir: Path,
    node: NodeRuntime,
) -> Any:
    """The module's function, called as ``(var_name, prompt, vars, provider)``: its ``output``."""
    answer = await _node(
        node, "var", base_dir, f"the var loader {file.name}", file=str(require_inside(file)),
        varName=name, prompt=prompt, vars=variables, provider=dict(provider),
    )  # fmt: skip
    answer = answer if isinstance(answer, dict) else {}
    if js_truthy(answer.get("error")):
        raise ReadError(f"Error running {file}: {answer['error']}")
    if not js_truthy(answer.get("output")):
        raise ReadError(f"Expected {file} to return {{ output: string }}")
    return answer["output"]


# --- prompt functions -------------------------------------------------------------------------


async def _run_prompt(
    code: PromptCode,
    variables: dict[str, Any],
    *,
    provider: Mapping[str, Any],
    base_dir: Path,
    node: NodeRuntime,
) -> str:
    """The template a prompt function or an executable prompt answers."""
    ref = code.ref or ""
    config = dict(code.config or {})
    context = {
        "vars": variables,
        "provider": {"id": provider.get("id"), "label": provider.get("label") or ""},
        "config": config,
    }
    if code.kind == "exec":
        return await _run_executable(ref, context, base_dir=base_dir)
    path, function = split_file_url(ref)
    try:
        file = require_inside(base_dir / path)
    except ReadError as exc:
        raise RowError(f"prompt {ref}: {exc.message}") from None
    if path.endswith(".py"):
        if function is None:
            return await _run_python_file(file, context, base_dir=base_dir)
        try:
            answer = await run_python(file, function, [context], cwd=base_dir)
        except PythonScriptError as exc:
            raise RowError(f"Error running Python script {file}: {exc}") from None
    else:
        answer = await _node(
            node, "prompt", base_dir, f"the prompt function {path}", file=str(file),
            functionName=function, promptContext=context,
        )  # fmt: skip
    return _prompt_text(answer)


def _prompt_text(answer: Any) -> str:
    """What ``renderPrompt`` makes of a prompt function's answer."""
    if isinstance(answer, str):
        return answer
    if isinstance(answer, dict):
        if "prompt" in answer:
            prompt = answer["prompt"]
            return prompt if isinstance(prompt, str) else js_stringify(prompt)
        return js_stringify(answer)
    if isinstance(answer, list):
        return js_stringify(answer)
    kind = "undefined" if answer is None else type(answer).__name__
    raise RowError(f"Prompt function must return a string or object, got {kind}")


async def _run_python_file(file: Path, context: dict[str, Any], *, base_dir: Path) -> str:
    """A ``.py`` prompt without a function: run with the context as JSON, what it prints."""
    command = [python_executable(), str(file), js_stringify(context)]
    done = await _run_command(command, cwd=base_dir, timeout=None, what=f"prompt {file.name}")
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise RowError(f"Error running {file}: {lines[-1] if lines else done.returncode}")
    text = done.stdout.decode("utf-8", errors="replace")
    return text[:-1] if text.endswith("\n") else text


async def _run_executable(command: str, context: dict[str, Any], *, base_dir: Path) -> str:
    """An ``exec:`` prompt: the command's stdout, trimmed (``executablePromptFunction``)."""
    parts = split_command(command)
    if not parts:
        raise RowError("No command found in script path")
    config = context["config"]
    cwd = base_dir / str(config["basePath"]) if config.get("basePath") else base_dir
    timeout = config.get("timeout") or EXEC_TIMEOUT_MS
    seconds = float(timeout) / 1000 if isinstance(timeout, int | float) else 60.0
    argv = [*parts, js_stringify(context)]
    done = await _run_command(argv, cwd=cwd, timeout=seconds, what=f"prompt {command}")
    stdout = _ANSI.sub("", done.stdout.decode("utf-8", errors="replace").strip())
    stderr = _ANSI.sub("", done.stderr.decode("utf-8", errors="replace").strip())
    if done.returncode != 0:
        shown = f": {stderr}" if stderr else ""
        raise RowError(f"Command failed: {' '.join(argv[:-1])} (exit {done.returncode}){shown}")
    if stderr and not stdout:
        raise RowError(stderr)
    return stdout


async def _run_command(
    argv: list[str], *, cwd: Path, timeout: float | None, what: str
) -> subprocess.CompletedProcess[bytes]:
    try:
        with anyio.fail_after(timeout):
            return await anyio.run_process(
                argv, cwd=cwd, check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
    except TimeoutError:
        raise RowError(f"{what} did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise RowError(f"{what}: cannot run {argv[0]}: {exc.strerror or exc}") from None


# --- JavaScript -------------------------------------------------------------------------------


async def _node(node: NodeRuntime, op: Any, base_dir: Path, what: str, **fields: Any) -> Any:
    try:
        return await node.call(op, base_dir=base_dir, **fields)
    except JsError as exc:
        raise RowError(
            unsupported_js(exc, what) if isinstance(exc, JsUnsupported) else str(exc)
        ) from None


def _js_filters(
    filters: Mapping[str, str], *, base_dir: Path, node: NodeRuntime
) -> dict[str, Callable[..., Any]]:
    """Each filter as a Python callable that calls its JavaScript from a worker thread."""

    def bridge(file: Path) -> Callable[..., Any]:
        def call(value: Any, *args: Any, **keywords: Any) -> Any:
            values = [value, *args]
            if keywords:  # Nunjucks passes keyword arguments as a last object, so marked
                values.append({**keywords, "__keywords": True})
            sent = [js_json_stringify(v) for v in values]
            answer = anyio.from_thread.run(
                partial(node.call, "filter", base_dir=base_dir, file=str(file), args=sent)
            )
            if not isinstance(answer, dict) or answer.get("json") is None:
                return UNDEFINED
            return js_json_parse(answer["json"])

        return call

    return {name: bridge(require_inside(base_dir / path)) for name, path in filters.items()}
