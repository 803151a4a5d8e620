"""May this judge block a gate? Advisory until calibrated (PRODUCT.md principle 1).

A judge blocks when its latest calibration record says it may, or when the user sets
``judge.blocking: true`` explicitly; the second case is flagged as uncalibrated wherever the
run is reported. A spec can make a judge's grader advisory, but never make an advisory judge
block.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JudgePolicy:
    """Whether llm-judge grades may fail the run, and why."""

    blocking: bool
    uncalibrated: bool
    reason: str


def judge_policy(*, calibrated_may_block: bool | None, configured_blocking: bool) -> JudgePolicy:
    """Decide from the calibration record (``None``: there is none) and the config."""
    if calibrated_may_block:
        return JudgePolicy(True, False, "its calibration record allows it to block")
    if configured_blocking:
        why = (
            "judge.blocking is set, but its calibration record does not allow blocking"
            if calibrated_may_block is False
            else "judge.blocking is set without a calibration record"
        )
        return JudgePolicy(True, True, why)
    if calibrated_may_block is False:
        return JudgePolicy(False, False, "its calibration record does not allow it to block")
    return JudgePolicy(False, False, "it is not calibrated, so it only advises")
