"""The MCP server: each tool of :mod:`coalmine.mcp.tools`, over stdio, with the MCP SDK.

The only module that imports the SDK (``pip install 'coalmine[mcp]'``). A tool answers with
its structured content and the markdown a person reads; a coalmine error (an unknown canary, a
run that is not there, a config that does not load) is the tool's error, in coalmine's words.
A long run reports progress when the client asks for it; a call the client cancels stops its
run as Ctrl-C does: what finished is kept, and the run is resumable (``--resume``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from coalmine._version import __version__
from coalmine.errors import CoalmineError
from coalmine.mcp.tools import Answer, Desk

INSTRUCTIONS = """coalmine runs this repository's evaluations of its AI agents: canaries (known
prompts for the phase agents of the delivery pipeline, graded) and eval suites (JSONL cases).
When the user says "run canary tests", "canary mode", "run canaries", "test the harness" or
"validate phase agents", call run_canaries (with a canary id, e.g. "qa-001", to run one), then
report the results table, each failure with the grader that failed, and the result file.
Use list_runs, show_run, explain_failure and compare_runs to read what ran before."""

_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_RUN = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)


def build_server(root: Path, *, store_path: Path | None = None) -> MCPServer:
    """The server for the project at ``root`` (every tool works on it, and on nothing else)."""
    desk = Desk(root, store_path=store_path)
    server: MCPServer = MCPServer(
        "coalmine", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )

    @server.tool(
        description="List the SDLC canaries (known prompts for the phase agents) of this "
        "project: id, phase, agent, graders, and every invalid spec. Use it before "
        '"run canary <id>" to find the id.',
        annotations=_READ,
    )
    async def list_canaries() -> CallToolResult:
        return await _read(desk.list_canaries)

    @server.tool(
        description='Canary mode. Use when the user says "run canary tests", "canary mode", '
        '"run canaries", "test the harness" or "validate phase agents": runs every canary, or '
        'only those selectors name ("run canary qa-001" → selectors ["qa-001"]; an id prefix '
        "runs the canaries it starts). Returns the results table, each failure with the grader "
        "that failed, and the result file; the run is stored (show_run, compare_runs). "
        "no_judge skips llm-judge graders.",
        annotations=_RUN,
    )
    async def run_canaries(
        ctx: Context, selectors: list[str] | None = None, no_judge: bool = False
    ) -> CallToolResult:
        return await _answer(
            lambda: desk.run_canaries(
                selectors or (), no_judge=no_judge, progress=_progress(ctx)
            )  # fmt: skip
        )

    @server.tool(
        description="List the eval suites (harness/evals/*.jsonl): cases, bad lines, repeats, "
        "default agent, and whether a suite blocks.",
        annotations=_READ,
    )
    async def list_suites() -> CallToolResult:
        return await _read(desk.list_suites)

    @server.tool(
        description='Run the eval suites ("run the evals", "run the smoke suite"): all, or the '
        "suites named; filters are case-id globs or tag:NAME; limit caps the cases of each "
        "suite. Returns each suite's score, 95% interval, gate verdict and failures; the run "
        "is stored. A cancelled call stops the run, keeps what finished, and leaves it "
        "resumable.",
        annotations=_RUN,
    )
    async def run_evals(
        ctx: Context,
        suites: list[str] | None = None,
        filters: list[str] | None = None,
        limit: int | None = None,
        no_judge: bool = False,
    ) -> CallToolResult:
        return await _answer(
            lambda: desk.run_evals(
                suites or (),
                filters=filters or (),
                limit=limit,
                no_judge=no_judge,
                progress=_progress(ctx),
            )  # fmt: skip
        )

    @server.tool(
        description="List the newest runs in the run store: id, kind, status, passed of "
        "total, score.",
        annotations=_READ,
    )
    async def list_runs(limit: int = 20) -> CallToolResult:
        return await _read(lambda: desk.list_runs(limit))

    @server.tool(
        description="Show a stored run as it was reported (run: 'latest', an id, an id "
        "prefix or a label).",
        annotations=_READ,
    )
    async def show_run(run: str) -> CallToolResult:
        return await _read(lambda: desk.show_run(run))

    @server.tool(
        description="Explain why one case of a run failed: its verdict, each grader's score "
        "and what cost points, what was expected, and the agent's output (case: a canary id, "
        "or an eval case as 'suite/case' or just 'case').",
        annotations=_READ,
    )
    async def explain_failure(run: str, case: str) -> CallToolResult:
        return await _read(lambda: desk.explain_failure(run, case))

    @server.tool(
        description="Compare two runs (ids, labels, 'latest', 'previous', or result files): "
        "regressions, fixes and score deltas, case by case.",
        annotations=_READ,
    )
    async def compare_runs(base: str, new: str) -> CallToolResult:
        return await _read(lambda: desk.compare_runs(base, new))

    @server.tool(
        description="How the harness drifted since its template kits were adopted: kits, owned "
        "files edited or missing, and what to run again.",
        annotations=_READ,
    )
    async def kits_status() -> CallToolResult:
        return await _read(desk.kits_status)

    @server.tool(
        description="A run's red-team findings (run: 'latest', an id, a prefix or a label): "
        "attack cases that got through, by severity, OWASP LLM Top 10 (2025) id, surface, "
        "category and strategy, flagged control cases first.",
        annotations=_READ,
    )
    async def redteam_report(run: str = "latest") -> CallToolResult:
        return await _read(lambda: desk.redteam_report(run))

    return server


async def _read(work: Callable[[], Answer]) -> CallToolResult:
    """A reading tool's result, read in a worker thread (the server keeps answering pings)."""
    return await _answer(lambda: anyio.to_thread.run_sync(work))


async def _answer(work: Callable[[], Awaitable[Answer]]) -> CallToolResult:
    """The tool's result; a coalmine error becomes the tool's error, with its hint."""
    try:
        answer = await work()
    except CoalmineError as exc:
        hint = getattr(exc, "hint", None)
        raise ToolError(f"{exc}" + (f" ({hint})" if hint else "")) from None
    return CallToolResult(
        content=[TextContent(type="text", text=answer.markdown)],
        structured_content=answer.data,
    )


def _progress(ctx: Context) -> Callable[[float, float | None, str], Awaitable[None]]:
    async def report(done: float, total: float | None, message: str) -> None:
        await ctx.report_progress(done, total, message)

    return report


def serve(root: Path, *, store_path: Path | None = None, **_: Any) -> None:
    """Serve the project at ``root`` over stdin and stdout until the client goes."""
    build_server(root, store_path=store_path).run("stdio")
