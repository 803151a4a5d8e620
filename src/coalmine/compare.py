"""Compare two runs: what regressed, what was fixed, and whether the change is more than chance.

Pure: it takes two ``CanaryRun`` records and returns a ``Comparison``. Over the cases both runs
share it tests pass/fail flips with an exact McNemar test and composite scores with a Wilcoxon
signed-rank test, and says the result in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coalmine._util.stats import TestResult, describe_p, mcnemar_exact, wilcoxon_signed_rank
from coalmine.results import CanaryRun, CaseResult


@dataclass(frozen=True)
class CaseChange:
    """One case present in both runs."""

    case_id: str
    base_verdict: str
    new_verdict: str
    base_composite: float | None
    new_composite: float | None
    grader_deltas: dict[str, float] = field(default_factory=dict)
    """Grader key → new score − base score, for graders scored in both runs."""

    @property
    def composite_delta(self) -> float | None:
        """New composite − base composite, when both exist."""
        if self.base_composite is None or self.new_composite is None:
            return None
        return self.new_composite - self.base_composite


@dataclass(frozen=True)
class Comparison:
    """What changed between a base run and a new run."""

    base_id: str
    new_id: str
    shared: list[CaseChange]
    new_cases: list[str]
    removed_cases: list[str]
    flips: TestResult
    scores: TestResult

    @property
    def regressions(self) -> list[CaseChange]:
        """Cases that passed in the base run and do not pass now."""
        return [c for c in self.shared if c.base_verdict == "PASS" and c.new_verdict != "PASS"]

    @property
    def fixes(self) -> list[CaseChange]:
        """Cases that did not pass in the base run and pass now."""
        return [c for c in self.shared if c.base_verdict != "PASS" and c.new_verdict == "PASS"]

    def verdict_sentence(self) -> str:
        """The pass/fail test in words."""
        return verdict_sentence(
            len(self.regressions), len(self.fixes), len(self.shared), self.flips
        )

    def score_sentence(self) -> str:
        """The composite-score test in words."""
        deltas = [c.composite_delta for c in self.shared if c.composite_delta is not None]
        return score_sentence(deltas, self.scores)


def verdict_sentence(regressions: int, fixes: int, shared: int, flips: TestResult) -> str:
    """The pass/fail flips of ``shared`` cases and their exact McNemar test, in words."""
    b, c = regressions, fixes
    if b + c == 0:
        return f"No case changed between PASS and not-PASS over {shared} shared cases."
    return (
        f"{b} case{_s(b)} went from PASS to not-PASS and {c} the other way; with "
        f"{b + c} discordant case{_s(b + c)}, an exact McNemar test gives "
        f"p = {flips.p_value:.4g}: {describe_p(flips.p_value)}."
    )


def score_sentence(deltas: list[float], scores: TestResult, *, noun: str = "Composite") -> str:
    """The score deltas of the comparable cases and their Wilcoxon test, in words."""
    if scores.n == 0:
        return f"{noun} scores are identical on all {len(deltas)} comparable cases."
    mean = sum(deltas) / len(deltas)
    if abs(mean) < 5e-4:
        movement = "did not move on average"
    else:
        movement = f"moved {'up' if mean > 0 else 'down'} by {abs(mean):.3f} on average"
    return (
        f"{noun} scores {movement} over {len(deltas)} comparable case{_s(len(deltas))} "
        f"({scores.n} changed); a Wilcoxon signed-rank test ({scores.method}) "
        f"gives p = {scores.p_value:.4g}: {describe_p(scores.p_value)}."
    )


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def compare_runs(base: CanaryRun, new: CanaryRun) -> Comparison:
    """Compare ``new`` against ``base`` case by case."""
    before = {r.id: r for r in base.results}
    after = {r.id: r for r in new.results}
    shared = [_change(before[i], after[i]) for i in after if i in before]
    regressions = sum(c.base_verdict == "PASS" and c.new_verdict != "PASS" for c in shared)
    fixes = sum(c.base_verdict != "PASS" and c.new_verdict == "PASS" for c in shared)
    deltas = [c.composite_delta for c in shared if c.composite_delta is not None]
    return Comparison(
        base_id=base.run_id,
        new_id=new.run_id,
        shared=shared,
        new_cases=[i for i in after if i not in before],
        removed_cases=[i for i in before if i not in after],
        flips=mcnemar_exact(regressions, fixes),
        scores=wilcoxon_signed_rank(deltas),
    )


def _change(base: CaseResult, new: CaseResult) -> CaseChange:
    deltas = {}
    for key, grade in new.grader_scores.items():
        old = base.grader_scores.get(key)
        if old is not None and old.score is not None and grade.score is not None:
            deltas[key] = grade.score - old.score
    return CaseChange(
        case_id=new.id,
        base_verdict=base.verdict,
        new_verdict=new.verdict,
        base_composite=base.composite_score,
        new_composite=new.composite_score,
        grader_deltas=deltas,
    )
