"""A suite's judge pass rate beside the same rate corrected by human labels (PPI).

A judge grader's pass rate over a suite is the judge's claim, with the judge's mistakes in it.
When people labelled some of the run's cases (``coalmine judge label RUN`` writes them to a
calibration set, by ``suite/case`` id), prediction-powered inference
(:func:`coalmine._util.ppi.ppi_mean`) uses those cases to measure the judge's bias and remove
it: the corrected rate and an interval that carries the judge's error. A label counts only when
it is about the output this run gave (the same text); a case labelled "unsure", or labelled on
another output, counts as unlabelled. With no label the result says so: the rate is the judge's,
uncorrected.

Each case counts once: its first run's first judge grade that gave a verdict (``passed``).
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from coalmine._util.ppi import ppi_mean
from coalmine.results import EvalJudgeRate

Labels = Mapping[str, tuple[str, float]]
"""``suite/case`` → (the output the people labelled, their verdict: 1 pass, 0 fail)."""


def judge_verdict(record: Mapping[str, Any]) -> tuple[str, float] | None:
    """The first judge grade of a stored case run with a verdict: (its key, 1 or 0)."""
    grades = record.get("grades")
    if not isinstance(grades, Mapping):
        return None
    for key, grade in grades.items():
        if isinstance(grade, Mapping) and "prompt_sha256" in grade:
            passed = grade.get("passed")
            if isinstance(passed, bool):
                return str(key), 1.0 if passed else 0.0
    return None


@dataclass
class JudgeRates:
    """The judge's verdicts of one suite's cases, split by whether people labelled them."""

    suite: str
    labels: Labels
    grader: str | None = None
    unlabelled: array[float] = field(default_factory=lambda: array("d"))
    labelled: list[tuple[float, float]] = field(default_factory=list)
    """(human, judge) of each labelled case."""

    def add(self, case_id: str, record: Mapping[str, Any]) -> None:
        """Count one case's judge verdict (from its first run's record)."""
        found = judge_verdict(record)
        if found is None:
            return
        key, verdict = found
        self.grader = self.grader or key
        label = self.labels.get(f"{self.suite}/{case_id}")
        if label is not None and label[0] == record.get("output"):
            self.labelled.append((label[1], verdict))
        else:
            self.unlabelled.append(verdict)

    def result(self) -> EvalJudgeRate | None:
        """The raw and the corrected rate; ``None`` when no case had a judge verdict."""
        if self.grader is None:
            return None
        est = ppi_mean(self.unlabelled, self.labelled)
        n, big_n = len(self.labelled), len(self.unlabelled)
        if est.estimate is None:
            note = (
                "the judge's rate, uncorrected: no case of this run has a human label"
                if n == 0
                else f"the judge's rate, uncorrected: {est.reason}"
            )
        else:
            note = (
                f"corrected by {n} labelled case{'s' if n != 1 else ''} (prediction-powered "
                f"inference); its interval carries the judge's error"
            )
        return EvalJudgeRate(
            grader=self.grader,
            raw=round(est.raw_judge_rate or 0.0, 4),
            cases=n + big_n,
            labelled=n,
            corrected=None if est.estimate is None else round(est.estimate, 4),
            ci95=None if est.ci95 is None else (round(est.ci95[0], 4), round(est.ci95[1], 4)),
            labels_only_ci95=None
            if est.classical_ci95 is None or n == 0
            else (round(est.classical_ci95[0], 4), round(est.classical_ci95[1], 4)),
            note=note,
        )
