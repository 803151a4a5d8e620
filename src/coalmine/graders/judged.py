"""What a judge grader asks, as hashes: the prompt template's and the rubric's.

A calibration record holds for one judge asked one thing. ``judge_prompt_identity`` names that
thing for a grader spec: the sha256 of its prompt template (the instructions around the fenced
task and response, with placeholders) and of its rubric (the criteria, or the rubric text).
Editing the rubric changes the second; changing the judge prompt in coalmine changes the first;
either one makes an old calibration record stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from coalmine._util.hashing import canonical_json, hash_text
from coalmine.graders.llm_judge import JudgeConfig, build_judge_prompt
from coalmine.graders.rubric import RubricConfig, build_rubric_prompt

CALIBRATABLE = ("llm-judge", "llm-rubric")
"""The judge graders a calibration set can calibrate (its items carry criteria or a rubric)."""


class PromptIdentity(NamedTuple):
    """The hashes that say what a judge grader asks."""

    template_sha256: str
    rubric_sha256: str


_TEMPLATES = {
    "llm-judge": hash_text(
        build_judge_prompt("⟨task⟩", "⟨response⟩", {"⟨criterion⟩": "⟨description⟩"})
    ),
    "llm-rubric": hash_text(build_rubric_prompt("⟨task⟩", "⟨response⟩", "⟨rubric⟩", None)),
}


def judge_prompt_identity(grader: str, config: Mapping[str, Any]) -> PromptIdentity | None:
    """The identity of what ``grader`` with ``config`` asks; ``None`` if it is not calibratable."""
    if grader == "llm-judge":
        criteria = JudgeConfig.model_validate(config).criteria_map()
        return PromptIdentity(_TEMPLATES[grader], hash_text(canonical_json({"criteria": criteria})))
    if grader == "llm-rubric":
        rubric = RubricConfig.model_validate(config).value
        return PromptIdentity(_TEMPLATES[grader], hash_text(canonical_json({"rubric": rubric})))
    return None
