"""What crosses between coalmine and its Node.js worker (``node_worker.js``).

The errors a config's JavaScript gives (:class:`JsError` and its kinds), the check that Node.js
is there, how a request is written and an answer read, where the worker looks for promptfoo's
TypeScript loader, and :func:`call_node_once`, a request answered by a worker of its own.
:mod:`coalmine.promptfoo.node` keeps one worker for a whole run.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from collections.abc import Mapping
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

from coalmine.errors import CoalmineError
from coalmine.promptfoo.where import js_frame

__all__ = [
    "DEFAULT_TIMEOUT",
    "INSTALL_HINT",
    "CodeOp",
    "JsError",
    "JsTimeout",
    "JsUnsupported",
    "NodeUnavailable",
    "call_node_once",
    "node_available",
    "reply_result",
    "request_line",
    "typescript_loader_dirs",
    "worker_script",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds one call may run."""
MIN_NODE_MAJOR = 18
INSTALL_HINT = "javascript assertions and transforms need Node.js >= 18 on PATH: https://nodejs.org"
WORKER_RESOURCE = "node_worker.js"
STDERR_TAIL = 4000
"""How much of the worker's stderr an error shows."""
CodeOp = Literal["prompt", "var", "tests", "filter"]
"""The config's other code the worker runs: a prompt function, a var loader, a test generator,
a Nunjucks filter."""


def worker_script() -> Traversable:
    """The worker's script, shipped beside this module."""
    return files(__package__ or "coalmine.promptfoo").joinpath(WORKER_RESOURCE)


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
        self.where = js_frame(self.stack, skip=Path(str(worker_script())).parent)
        """``file:line:column`` of the config's own code where it failed, if the stack has it."""
        super().__init__(f"{text}\n    at {self.where}" if self.where else text)


class JsUnsupported(JsError):
    """The code uses something this runtime does not run (a Python file, TypeScript, no tsx …)."""


class JsLoadError(JsError):
    """A file of the config's code did not load or does not export the function named."""


class JsTimeout(JsError):
    """The code ran past its timeout; the worker was killed (the next call starts another)."""


class NodeUnavailable(JsError):
    """Node.js (>= 18) is not on PATH; ``hint`` says how to install it."""

    def __init__(self, message: str):
        super().__init__(message, name="")
        self.hint = message


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


def request_line(request: dict[str, Any], base_dir: Path) -> bytes:
    """A request as the JSON line the worker reads (its folder and where tsx may be added)."""
    request = {
        **request,
        "baseDir": str(Path(base_dir).resolve()),
        "loaderDirs": [str(d) for d in typescript_loader_dirs()],
    }
    try:
        return json.dumps(request, ensure_ascii=True, allow_nan=False).encode() + b"\n"
    except (TypeError, ValueError) as exc:
        raise JsError(f"the output or context cannot be passed to JavaScript: {exc}") from None


def reply_result(reply: Mapping[str, Any]) -> Any:
    """The worker's answer, or the error it reports raised as a :class:`JsError`."""
    if reply.get("ok"):
        return reply.get("result")
    error = reply.get("error") or {}
    kinds: dict[str, type[JsError]] = {"unsupported": JsUnsupported, "load": JsLoadError}
    kind = kinds.get(str(error.get("kind")), JsError)
    raise kind(
        str(error.get("message", "")), name=str(error.get("name", "")), stack=error.get("stack")
    )


@functools.cache
def typescript_loader_dirs() -> tuple[Path, ...]:
    """The promptfoo installs on ``PATH``: where the worker looks for tsx after the config's folder.

    promptfoo loads TypeScript through the ``tsx`` package it depends on, so its install has one.
    """
    found: dict[Path, None] = {}
    for name in ("promptfoo", "pf"):
        executable = shutil.which(name)
        if executable is None:
            continue
        for folder in Path(executable).resolve().parents:
            if folder.name == "promptfoo" and (folder / "package.json").is_file():
                found.setdefault(folder)
                break
    return tuple(found)


def call_node_once(
    op: CodeOp,
    *,
    base_dir: Path,
    node: str = "node",
    timeout: float = DEFAULT_TIMEOUT,
    **fields: Any,
) -> Any:
    """One request to a worker of its own, waited for (the code a config runs while it is read).

    The request is what ``NodeRuntime.call`` sends; the worker ends once it has answered.

    Raises:
        JsError: the code threw, did not load, or timed out (``JsTimeout``);
            ``NodeUnavailable`` without Node.js.
    """
    missing = node_available(node)
    if missing is not None:
        raise NodeUnavailable(missing)
    line = request_line({"op": op, "id": 1, **fields}, base_dir)
    script = worker_script()
    try:
        done = subprocess.run(
            [node, str(script)], input=line, capture_output=True, cwd=base_dir,
            timeout=timeout, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise JsTimeout(
            f"the code did not finish within {timeout:g} s", name="TimeoutError"
        ) from None
    except OSError as exc:
        raise NodeUnavailable(f"{INSTALL_HINT} (cannot start {node}: {exc})") from None
    for raw in done.stdout.splitlines():
        reply = json.loads(raw)
        if reply.get("id") in (1, None):
            return reply_result(reply)
    tail = done.stderr.decode("utf-8", errors="replace").strip()[-STDERR_TAIL:]
    raise JsError(
        f"the Node.js worker stopped (exit code {done.returncode}) while running the code: "
        f"{tail or 'it printed nothing'}"
    )
