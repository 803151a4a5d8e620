"""May a judge block? Advisory until calibrated, or until the config says so (flagged)."""

from __future__ import annotations

import pytest

from coalmine.engine.policy import judge_policy


@pytest.mark.parametrize(
    ("calibrated", "configured", "blocking", "uncalibrated"),
    [
        (None, False, False, False),  # never calibrated: advises
        (True, False, True, False),  # the calibration allows it
        (True, True, True, False),  # both: calibrated, not flagged
        (False, False, False, False),  # the calibration refuses it
        (None, True, True, True),  # the config alone: blocks, flagged
        (False, True, True, True),  # the config overrides a refusal: blocks, flagged
    ],
)
def test_policy(
    calibrated: bool | None, configured: bool, blocking: bool, uncalibrated: bool
) -> None:
    policy = judge_policy(calibrated_may_block=calibrated, configured_blocking=configured)
    assert (policy.blocking, policy.uncalibrated) == (blocking, uncalibrated)
    assert policy.reason
