"""Compare two runs: what regressed, what was fixed, and whether the change is more than chance.

Pure: it takes two ``CanaryRun`` records and returns a ``Comparison``. Over the cases both runs
share it tests pass/fail flips with an exact McNemar test and composite scores with a Wilcoxon
signed-rank test, and says the result in words.

It also says what the comparison could have seen: the minimum detectable difference in pass
rate at 80% power for its number of paired cases, from the share of them that flipped
(McNemar's power, Connor 1987: :func:`coalmine._util.power.minimum_detectable_change`; a change
larger than that share would flip more cases, and is sized with the flips it needs).
When nothing flipped that share is 0 and says nothing, so Wilson's 95% upper bound on it is
used and the figure is marked assumed. When the runs hold several groups (an eval run's suites,
a canary run's phases), each group's flips are tested too and the p-values are adjusted for the
number of groups by Holm's step-down method, so "one of eight suites moved" is not read as
a finding at 0.05 when one in eight would move by chance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coalmine._util.power import holm, minimum_detectable_change, planning_discordance
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
    group: str | None = None
    """The suite (eval runs) or phase (canary runs) the case belongs to."""

    @property
    def composite_delta(self) -> float | None:
        """New composite − base composite, when both exist."""
        if self.base_composite is None or self.new_composite is None:
            return None
        return self.new_composite - self.base_composite


POWER = 0.8
ALPHA = 0.05


@dataclass(frozen=True)
class Detectable:
    """The smallest change in pass rate a paired comparison of ``cases`` detects (80% power)."""

    cases: int
    flips: int
    discordance: float
    """The share of paired cases that flipped; Wilson's upper bound when none did."""
    assumed: bool
    """Whether ``discordance`` is the upper bound (nothing flipped), not the observed share."""
    difference: float | None
    """``None``: too few cases to detect any change with that power."""

    def sentence(self) -> str:
        """The figure in words."""
        source = (
            f"no case flipped, so at most {self.discordance:.1%} would (Wilson's 95% bound)"
            if self.assumed
            else f"{self.flips} of them ({self.discordance:.1%}) flipped"
        )
        if self.difference is None:
            return (
                f"With {self.cases} paired cases ({source}), no change in pass rate can be "
                f"detected with {POWER:.0%} power (McNemar, alpha {ALPHA:g})."
            )
        return (
            f"With {self.cases} paired cases ({source}), this comparison detects a change in "
            f"pass rate of {self.difference * 100:.1f} points or more with {POWER:.0%} power "
            f"(McNemar, alpha {ALPHA:g}); a smaller one can pass unseen."
        )


def detectable(cases: int, flips: int) -> Detectable | None:
    """What ``cases`` paired cases with ``flips`` of them flipped can detect (None: no case)."""
    if cases < 1:
        return None
    planned = planning_discordance(flips, cases)
    share = planned.value if planned.value is not None else planned.upper
    mde = minimum_detectable_change(cases, discordance=share, alpha=ALPHA, power=POWER)
    return Detectable(cases, flips, share, planned.value is None, mde)


@dataclass(frozen=True)
class GroupTest:
    """One group's flips (a suite's, a phase's), its McNemar test and its Holm-adjusted p."""

    name: str
    shared: int
    regressions: int
    fixes: int
    flips: TestResult
    adjusted_p: float
    """Holm's adjustment over every group of the comparison."""


def group_tests(rows: list[tuple[str, int, int, int]]) -> list[GroupTest]:
    """``(name, shared, regressions, fixes)`` of each group → its test, Holm-adjusted."""
    tests = [mcnemar_exact(b, c) for _, _, b, c in rows]
    adjusted = holm([t.p_value for t in tests]) if tests else []
    return [
        GroupTest(name, shared, b, c, test, p)
        for (name, shared, b, c), test, p in zip(rows, tests, adjusted, strict=True)
    ]


def groups_sentence(groups: list[GroupTest]) -> str | None:
    """The groups that moved beyond chance once adjusted for their number (None: one group)."""
    if len(groups) < 2:
        return None
    moved = [g for g in groups if g.adjusted_p < ALPHA]
    head = (
        f"Over {len(groups)} groups, each group's McNemar p is adjusted for their number (Holm): "
    )
    if not moved:
        return head + f"none changed beyond chance (every adjusted p ≥ {ALPHA:g})."
    listed = ", ".join(f"{g.name} (adjusted p = {g.adjusted_p:.4g})" for g in moved)
    return head + f"{listed} changed beyond chance."


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
    detectable: Detectable | None = None
    groups: list[GroupTest] = field(default_factory=list)
    """Each group's test, when the runs hold more than one group."""

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
    by_group: dict[str, list[int]] = {}
    for c in shared:
        row = by_group.setdefault(c.group or "", [0, 0, 0])
        row[0] += 1
        row[1] += c.base_verdict == "PASS" and c.new_verdict != "PASS"
        row[2] += c.base_verdict != "PASS" and c.new_verdict == "PASS"
    rows = [(name, n, b, f) for name, (n, b, f) in sorted(by_group.items())]
    return Comparison(
        base_id=base.run_id,
        new_id=new.run_id,
        shared=shared,
        new_cases=[i for i in after if i not in before],
        removed_cases=[i for i in before if i not in after],
        flips=mcnemar_exact(regressions, fixes),
        scores=wilcoxon_signed_rank(deltas),
        detectable=detectable(len(shared), regressions + fixes),
        groups=group_tests(rows) if len(rows) > 1 else [],
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
        group=new.phase or None,
    )
