"""The canary gate: composite score, PASS/FAIL, the reasons for a FAIL, and the exit code.

Blocking and advisory: deterministic graders block by default, model judges advise until their
calibration (or the user, explicitly) lets them block. A FAIL blocks only when the same rule,
applied to the blocking graders alone, still fails; otherwise it is an advisory failure, shown
but not failing CI. A spec may be advisory as a whole.

``composite = Σ w·score / Σ w`` over the graders that ran (weights normalised; a skipped grader
drops out and the others are renormalised). **PASS iff composite ≥ 0.7 and no grader score
< 0.5.** Comparisons allow 1e-9 of floating-point error, so 0.1+0.2+0.4 counts as 0.7.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from coalmine.results import CanaryRun, Grade, format_score

PASS_COMPOSITE = 0.7
GRADER_FLOOR = 0.5
EPSILON = 1e-9


@dataclass(frozen=True)
class GateDecision:
    """The verdict of one canary and why."""

    verdict: Literal["PASS", "FAIL"]
    composite: float
    failures: list[str]
    advisory: bool = False
    """A FAIL caused only by advisory graders: shown, but it does not fail the run."""


def composite_score(weighted: Sequence[tuple[float, float]]) -> float:
    """Return ``Σ w·s / Σ w`` for ``(weight, score)`` pairs; raises on an empty or zero sum."""
    total = sum(w for w, _ in weighted)
    if total <= 0:
        raise ValueError("weights must sum to more than 0")
    return sum(w * s for w, s in weighted) / total


def _holds(grades: Mapping[str, Grade]) -> tuple[bool, float, set[str]]:
    """The seed's rule over ``grades``: (passed, composite, keys below the floor)."""
    composite = composite_score(
        [(g.weight, g.score) for g in grades.values() if g.score is not None]
    )
    below_floor = {k for k, g in grades.items() if (g.score or 0.0) < GRADER_FLOOR - EPSILON}
    return composite >= PASS_COMPOSITE - EPSILON and not below_floor, composite, below_floor


def decide(
    grades: Mapping[str, Grade],
    thresholds: Mapping[str, float],
    blocking: Mapping[str, bool] | None = None,
) -> GateDecision:
    """Decide PASS/FAIL from the grades that ran (``score is not None``).

    Args:
        grades: key in ``grader_scores`` → grade.
        thresholds: the same keys → the grader's own pass threshold, used to explain a FAIL.
        blocking: the same keys → whether the grader may block (default: all block).
    """
    ran = {k: g for k, g in grades.items() if g.score is not None}
    passed, composite, below_floor = _holds(ran)
    if passed:
        return GateDecision("PASS", composite, [])
    blockers = {k: g for k, g in ran.items() if blocking is None or blocking.get(k, True)}
    advisory = not blockers or _holds(blockers)[0]
    failures = []
    if composite < PASS_COMPOSITE - EPSILON:
        failures.append(f"composite {format_score(composite)} < {PASS_COMPOSITE:.2f}")
    for key, grade in ran.items():
        score = grade.score or 0.0
        detail = grade.explain()
        suffix = f": {detail}" if detail else ""
        if key in below_floor:
            failures.append(
                f"{key} scored {format_score(score)}, below the {GRADER_FLOOR:.2f} floor "
                f"every grader must reach{suffix}"
            )
        elif score < thresholds.get(key, 0.0) - EPSILON:
            failures.append(f"{key} {format_score(score)} < {thresholds[key]:.2f}{suffix}")
    if advisory:
        failures.append("advisory: the blocking graders alone pass, so this does not fail the run")
    return GateDecision("FAIL", composite, failures, advisory)


def exit_code(run: CanaryRun) -> int:
    """0 when every blocking gate held, 1 when one failed, 2 on an invalid spec, 3 interrupted."""
    if run.interrupted:
        return 3
    if run.invalid_specs:
        return 2
    if any(r.verdict != "PASS" and not r.advisory for r in run.results) or not run.results:
        return 1
    return 0
