"""May this judge block a gate? Advisory until calibrated (PRODUCT.md principle 1).

A judge blocks when its latest calibration record says it may, or when the user sets
``judge.blocking: true`` explicitly; the second case is flagged as uncalibrated wherever the
run is reported. A spec can make a judge's grader advisory, but never make an advisory judge
block. A record that no longer holds is *withdrawn* (:func:`withdrawn_reason`): the judge drifted
since it was calibrated (``coalmine judge check`` stored a record with ``drifted``), or the run's
judge is configured with another model than the one calibrated; the judge then advises, and the
reason says why, until a new calibration is stored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BLOCKING_GATE_ENV = "COALMINE_BLOCKING_GATE"
"""Set by ``gates run`` to the gate's id while a gate the manifest calls blocking runs: the runs
it starts block on every suite and spec, whatever their own ``blocking: false`` says (a gate
the manifest calls blocking must fail when its suite fails)."""


def gate_overrides(what: str, name: str, gate: str) -> str:
    """The note a run prints when the blocking gate ``gate`` makes ``what`` ``name`` block."""
    return (
        f"{what} {name} says blocking: false, but the blocking gate {gate} runs it "
        "(harness/manifest.json): it blocks"
    )


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


@dataclass(frozen=True)
class Calibration:
    """A stored calibration record, as the policy reads it."""

    id: int
    may_block: bool
    record: Mapping[str, Any]
    """Holds ``judge_prompt_sha256`` and ``rubric_sha256s``: what the judge was asked."""
    withdrawn: str | None = None
    """Why the record no longer lets the judge block, whatever ``may_block`` says."""


def withdrawn_reason(record: Mapping[str, Any], model: str | None) -> str | None:
    """Why a calibration record no longer holds for a judge configured with ``model``, if so.

    A drift check's record says so under ``drifted.reason``; otherwise see
    :func:`model_mismatch`.
    """
    drifted = record.get("drifted")
    if isinstance(drifted, Mapping) and drifted.get("reason"):
        return str(drifted["reason"])
    return model_mismatch(record, model)


def model_mismatch(record: Mapping[str, Any], model: str | None) -> str | None:
    """Why a record made with another model than ``model`` does not hold (``None``: it does).

    Only when both the record's ``judge.model`` and ``model`` are known and differ.
    """
    judge = record.get("judge")
    calibrated = judge.get("model") if isinstance(judge, Mapping) else None
    if calibrated and model and calibrated != model:
        return f"calibrated on model {calibrated}, this run's judge is {model}"
    return None


def grader_policy(
    calibrations: Sequence[Calibration],
    asks: tuple[str, str] | None,
    *,
    configured_blocking: bool,
) -> JudgePolicy:
    """The policy for one judge grader, from its judge's calibrations (newest first).

    ``asks`` is ``(template sha256, rubric sha256)`` of the grader (``None``: no calibration
    can cover it). A record covers the grader when it was made with the same prompt template
    and the grader's rubric is among those it calibrated; a judge calibrated only for another
    rubric, or before the prompt changed, is uncalibrated for this one, and the reason says so.
    """
    if asks is None:
        return judge_policy(calibrated_may_block=None, configured_blocking=configured_blocking)
    template, rubric = asks
    for calibration in calibrations:
        record = calibration.record
        if record.get("judge_prompt_sha256") == template and rubric in record.get(
            "rubric_sha256s", ()
        ):
            if calibration.withdrawn is not None:
                why = f"{calibration.withdrawn} (#{calibration.id})"
                if configured_blocking:
                    return JudgePolicy(True, True, f"judge.blocking is set, but {why}")
                return JudgePolicy(False, False, f"advisory: {why}")
            policy = judge_policy(
                calibrated_may_block=calibration.may_block,
                configured_blocking=configured_blocking,
            )
            return JudgePolicy(
                policy.blocking, policy.uncalibrated, f"{policy.reason} (#{calibration.id})"
            )
    if not calibrations:
        return judge_policy(calibrated_may_block=None, configured_blocking=configured_blocking)
    newest = calibrations[0]
    changed = (
        "the judge prompt" if newest.record.get("judge_prompt_sha256") != template else "the rubric"
    )
    why = (
        f"{changed} changed since its calibration (#{newest.id}): the hashes differ, so "
        "the record no longer holds"
    )
    return JudgePolicy(configured_blocking, configured_blocking, why)


class JudgeGate:
    """Whether each judge grader of a run may block, decided once per rubric."""

    def __init__(
        self,
        calibrations: Sequence[Calibration],
        *,
        configured_blocking: bool,
        identify: Callable[[str, Mapping[str, Any]], tuple[str, str] | None],
    ):
        self.calibrations = list(calibrations)
        self.configured_blocking = configured_blocking
        self.identify = identify
        self._seen: dict[str, JudgePolicy] = {}

    def policy(self, grader: str, config: Mapping[str, Any]) -> JudgePolicy:
        """The policy of a judge grader with this config."""
        key = grader + "\0" + json.dumps(config, sort_keys=True, default=str)
        found = self._seen.get(key)
        if found is None:
            asks = self.identify(grader, config)
            found = self._seen[key] = grader_policy(
                self.calibrations, asks, configured_blocking=self.configured_blocking
            )
        return found

    def blocks(self, grader: str, config: Mapping[str, Any]) -> bool:
        """Whether that grader's failures may fail the run."""
        return self.policy(grader, config).blocking

    def summary(self) -> JudgePolicy | None:
        """One policy for the run's report: blocking only if every judge grader may block."""
        if not self._seen:
            return None
        policies = list(self._seen.values())
        blocking = all(p.blocking for p in policies)
        uncalibrated = any(p.uncalibrated for p in policies)
        reasons = sorted({p.reason for p in policies})
        return JudgePolicy(blocking, uncalibrated, "; ".join(reasons))
