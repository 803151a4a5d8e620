"""A failure's reason keeps its start and the end of the agent's stderr."""

from __future__ import annotations

from coalmine.evals.summary import STDERR_MARK, failure_reason


def test_a_short_reason_is_kept_whole() -> None:
    assert failure_reason("contains failed: missing 'yes'") == "contains failed: missing 'yes'"
    assert failure_reason("x" * 800) == "x" * 700  # head 300 + tail 400, without stderr


def test_the_end_of_a_long_stderr_is_what_is_kept() -> None:
    stderr = "".join(f"line {n}\n" for n in range(200)) + "RuntimeError: boom\n"
    reason = failure_reason("agent 'Bot' exited 1" + STDERR_MARK + stderr, tail=30)
    assert reason == "agent 'Bot' exited 1" + STDERR_MARK + "…" + stderr[-30:]
    assert reason.endswith("line 199\nRuntimeError: boom\n")
