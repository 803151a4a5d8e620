"""Run the CLI in-process, as the ``coalmine`` script does, and capture what it prints."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from coalmine.cli.main import main


def run_main(*args: str) -> tuple[int, str]:
    """``coalmine ARGS``: the exit code, and stdout followed by stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue() + err.getvalue()
