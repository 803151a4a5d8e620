"""``coalmine mcp``: serve the project to coding agents over the Model Context Protocol."""

from __future__ import annotations

from pathlib import Path

import click

from coalmine.cli.options import root_option, store_option
from coalmine.engine.history import require_project_config
from coalmine.errors import UsageError

INSTALL = "pip install 'coalmine[mcp]'"


@click.command("mcp")
@root_option
@store_option
def mcp_command(root: Path, store_path: Path | None) -> int:
    """Serve this project to coding agents over MCP (stdio): canaries, evals, runs, compare.

    An MCP client (Claude Code, Codex, Cursor …) starts it as `coalmine mcp --root PATH` and
    calls its tools: list_canaries, run_canaries, list_suites, run_evals, list_runs, show_run,
    explain_failure, compare_runs, kits_status. Every tool works on this project alone and runs
    only what its coalmine.yaml declares. Needs the MCP SDK: pip install 'coalmine[mcp]'.
    """
    try:
        from coalmine.mcp.server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types"):
            raise
        raise UsageError(f"coalmine mcp needs the MCP SDK: {INSTALL}") from None
    require_project_config(root)  # a project that does not load says so now, in coalmine's words
    serve(root, store_path=store_path)
    return 0
