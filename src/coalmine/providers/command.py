"""The ``command`` provider: run a program, the prompt on stdin, its stdout is the response.

The argv list is run without a shell, in its own session (process group), with the config
file's folder as working directory. The prompt is written to stdin as UTF-8 bytes, exactly,
then stdin is closed. stdin, stdout and stderr are pumped concurrently, so a large prompt and a
large answer cannot deadlock. The answer ends when the agent exits, even if a helper it started
still holds stdout open; then, and on a crash, a timeout or a cancellation, the whole process
group is killed (helpers the agent started die with it). Should coalmine itself be killed, the
group is ended by the watchdog or by the run's resume (:mod:`coalmine.providers.agent_groups`).

Trajectories: each call creates an empty file in a private temporary folder and passes its path
in ``COALMINE_TRAJECTORY``. An agent may append JSON lines to it, e.g.
``{"type": "tool_call", "name": "read_file", "arguments": {"path": "a.py"}, "id": "t1"}``;
after a successful exit its ``tool_call`` lines become ``AgentOutput.tool_calls``, in order.
``message`` lines and unknown types are skipped; a line that cannot be read is a warning, not an
error. The folder is removed after every call, whatever its end; one that a killed run could not
remove is swept by a later run (:mod:`coalmine._util.scratch`).

``convention: promptfoo`` runs the program as promptfoo's ``exec:`` provider does (0.121.20):
three more arguments after ``argv`` (the prompt, the ``options`` as JSON, the call context
``{"vars": …}`` as JSON), stdin closed without a byte, and the answer is stdout trimmed, then
stripped of ANSI escapes. Output on stderr with an empty answer is a failure whose message is
that stderr (promptfoo's rule); stderr beside an answer is kept as a tail, as always.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.abc import ByteReceiveStream, Process
from pydantic import BaseModel, ConfigDict, Field, model_validator

from coalmine._util.scratch import make_scratch
from coalmine.errors import FailureKind, ProviderError
from coalmine.providers._promptfoo import call_context, call_options, exec_output, js_json
from coalmine.providers.agent_groups import agent_groups
from coalmine.providers.base import AgentRequest, provider
from coalmine.results import AgentOutput, ToolCall

STDERR_TAIL_BYTES = 4096
DRAIN_SECONDS = 0.2
"""After the agent exits, how long its pipes are still read (its helpers may hold them open)."""
TRAJECTORY_ENV = "COALMINE_TRAJECTORY"
TRAJECTORY_WARNINGS = 10
"""Line warnings kept per trajectory; the rest are counted in one more warning."""


class CommandSettings(BaseModel):
    """Settings of a ``command`` agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: list[str] = Field(min_length=1)
    """Program and arguments, e.g. ``["python3", "agents/analyst.py"]`` (never a shell string)."""
    env: dict[str, str] = {}
    """Extra environment variables for the program (added to coalmine's environment)."""
    cwd: str | None = None
    """Working directory, relative to the config file's folder (default: that folder)."""
    max_output_bytes: int = Field(16 * 1024 * 1024, gt=0)
    """stdout (and the trajectory file) beyond this many bytes is dropped, with a warning."""
    convention: Literal["coalmine", "promptfoo"] = "coalmine"
    """``promptfoo``: called as promptfoo's ``exec:`` provider (prompt, options and context as
    arguments, empty stdin, stdout trimmed and stripped of ANSI escapes)."""
    options: dict[str, Any] = {}
    """With ``convention: promptfoo``: the provider options, sent as the second argument
    (``{id?, config: {…, basePath}, env}``; a relative ``basePath`` is the config's folder)."""

    @model_validator(mode="after")
    def _options_need_promptfoo(self) -> CommandSettings:
        if self.options and self.convention != "promptfoo":
            raise ValueError("options are sent only with convention: promptfoo")
        return self


@provider("command", settings=CommandSettings)
class CommandProvider:
    """Runs one program per call."""

    def __init__(self, *, agent: str, settings: BaseModel, base_dir: Path):
        assert isinstance(settings, CommandSettings)
        self.agent = agent
        self.settings = settings
        self.cwd = (base_dir / settings.cwd) if settings.cwd else base_dir
        self.promptfoo = settings.convention == "promptfoo"
        self.options = call_options(settings.options, base_dir) if self.promptfoo else {}
        program = settings.argv[0]
        # A relative program path ("./agents/run.sh") means the config folder, not coalmine's cwd.
        if os.sep in program and not os.path.isabs(program):
            program = str((base_dir / program).resolve())
        self.argv = [program, *settings.argv[1:]]

    async def call(self, request: AgentRequest) -> AgentOutput:
        """Run the program once with the prompt on stdin; read its trajectory file after."""
        folder = make_scratch("trajectory")  # mode 0700: private
        try:
            trajectory = folder / "trajectory.jsonl"
            os.close(os.open(trajectory, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            output = await self._run(request, trajectory)
            calls, warnings = await _load_trajectory(trajectory, self.settings.max_output_bytes)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if not calls and not warnings:
            return output
        return output.model_copy(
            update={"tool_calls": calls, "warnings": [*output.warnings, *warnings]}
        )

    async def _run(self, request: AgentRequest, trajectory: Path) -> AgentOutput:
        env = {**os.environ, **self.settings.env, TRAJECTORY_ENV: str(trajectory)}
        argv, stdin = self.argv, request.prompt.encode("utf-8")
        if self.promptfoo:
            context = js_json(call_context(request.context))
            argv, stdin = [*argv, request.prompt, js_json(self.options), context], b""
        try:
            process = await anyio.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            message = f"cannot start {self.argv[0]!r}: {exc.strerror or exc}"
            raise self._error(message, kind="config") from None
        groups = agent_groups()
        stdout = bytearray()
        stderr = bytearray()
        dropped = 0
        try:
            groups.started(process.pid)  # so it dies with coalmine, however coalmine dies

            async def feed() -> None:
                assert process.stdin is not None
                try:
                    if stdin:
                        await process.stdin.send(stdin)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass  # the agent exited without reading all of its input; its exit says why
                finally:
                    await process.stdin.aclose()

            async def drain_stdout(stream: ByteReceiveStream) -> None:
                nonlocal dropped
                async for chunk in stream:
                    room = self.settings.max_output_bytes - len(stdout)
                    stdout.extend(chunk[: max(room, 0)])
                    dropped += max(len(chunk) - max(room, 0), 0)

            async def drain_stderr(stream: ByteReceiveStream) -> None:
                async for chunk in stream:
                    stderr.extend(chunk)
                    del stderr[:-STDERR_TAIL_BYTES]

            assert process.stdout is not None and process.stderr is not None
            drained = [anyio.Event(), anyio.Event()]

            async def drain(
                pump: Callable[[ByteReceiveStream], Awaitable[None]],
                stream: ByteReceiveStream,
                done: anyio.Event,
            ) -> None:
                await pump(stream)
                done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(feed)
                tg.start_soon(drain, drain_stdout, process.stdout, drained[0])
                tg.start_soon(drain, drain_stderr, process.stderr, drained[1])
                returncode = await process.wait()
                # The answer ends when the agent exits: a helper it left holding stdout open
                # must not turn the answer into a timeout. What is in the pipes is read (a
                # short drain), then the reading stops; the group is killed below.
                with anyio.move_on_after(DRAIN_SECONDS):
                    for done in drained:
                        await done.wait()
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await _kill_group(process)
            groups.ended(process.pid)
        tail = stderr.decode("utf-8", errors="replace").strip() or None
        if returncode != 0:
            raise self._error(_describe_exit(returncode), exit_code=returncode, stderr_tail=tail)
        text, warnings = _decode(bytes(stdout))
        if self.promptfoo:
            text = exec_output(text)
            if not text and tail and exec_output(tail):
                raise self._error(exec_output(tail), exit_code=0, stderr_tail=tail)
        if dropped:
            limit = self.settings.max_output_bytes
            warnings.append(f"stdout was cut at {limit} bytes ({dropped} bytes dropped)")
        return AgentOutput(text=text, warnings=warnings, exit_code=0, stderr_tail=tail)

    def cache_identity(self) -> dict[str, Any]:
        """What shapes this agent's answer besides the prompt (for the response cache)."""
        s = self.settings
        identity = {"provider": "command", "argv": s.argv, "env": s.env, "cwd": s.cwd}
        if self.promptfoo:
            identity |= {"convention": s.convention, "options": s.options}
        return identity

    async def aclose(self) -> None:
        """Nothing stays open between calls."""

    def _error(
        self,
        message: str,
        *,
        exit_code: int | None = None,
        stderr_tail: str | None = None,
        kind: FailureKind = "crash",
    ) -> ProviderError:
        return ProviderError(
            message,
            agent=self.agent,
            provider="command",
            kind=kind,
            exit_code=exit_code,
            stderr_tail=stderr_tail,
        )


async def _kill_group(process: Process) -> None:
    """Kill the agent's process group (it leads its own session) and reap the leader."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    await process.wait()
    await process.aclose()


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"crashed (killed by {name})"
    return f"exited with code {returncode}"


def _decode(data: bytes) -> tuple[str, list[str]]:
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        bad = text.count("\ufffd") - data.decode("utf-8", errors="ignore").count("\ufffd")
        return text, [f"stdout was not valid UTF-8: {bad} invalid byte sequence(s) replaced"]


async def _load_trajectory(path: Path, limit: int) -> tuple[list[ToolCall], list[str]]:
    """Read at most ``limit`` bytes of the trajectory file: its tool calls and its warnings."""
    try:
        async with await anyio.open_file(path, "rb") as file:
            data = await file.read(limit + 1)
    except OSError as exc:  # the agent removed or replaced the file
        return [], [f"trajectory file could not be read: {exc.strerror or exc}"]
    calls, warnings = _read_trajectory(data[:limit])
    if len(data) > limit:  # the last line may be cut: it warns like any bad line
        warnings.append(f"trajectory cut at {limit} bytes (max_output_bytes)")
    return calls, warnings


def _read_trajectory(data: bytes) -> tuple[list[ToolCall], list[str]]:
    """The ``tool_call`` lines of a JSON-lines trajectory, and a warning per unreadable line."""
    calls: list[ToolCall] = []
    warnings: list[str] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        problem = None
        try:
            entry = json.loads(line)
        except ValueError:
            problem = f"not JSON, skipped: {line[:80].decode('utf-8', 'replace')!r}"
        else:
            if not isinstance(entry, dict):
                problem = "not a JSON object, skipped"
            elif entry.get("type") == "tool_call":
                call, problem = _tool_call(entry)
                calls += [call] if call is not None else []
        if problem is not None:
            warnings.append(f"trajectory line {number}: {problem}")
    if len(warnings) > TRAJECTORY_WARNINGS:
        more = len(warnings) - TRAJECTORY_WARNINGS
        warnings = [*warnings[:TRAJECTORY_WARNINGS], f"trajectory: {more} more bad line(s)"]
    return calls, warnings


def _tool_call(entry: dict[str, Any]) -> tuple[ToolCall | None, str | None]:
    """The call of a ``tool_call`` line, and what was wrong with it (if anything)."""
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        return None, "a tool_call without a name, skipped"
    arguments = entry.get("arguments")
    problem = None
    if isinstance(arguments, str):  # OpenAI's form, copied as it came: a JSON string
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            pass
    if arguments is None:
        arguments = {}
    elif not isinstance(arguments, dict):
        problem = f"the arguments of tool_call {name!r} are not an object; kept as _raw"
        arguments = {"_raw": entry["arguments"]}
    call_id = entry.get("id")
    call = ToolCall(name=name, arguments=arguments, id=str(call_id) if call_id else None)
    return call, problem
