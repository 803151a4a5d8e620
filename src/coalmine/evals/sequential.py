"""``eval run --sequential``: stop calling agents on a suite once its gate is decided.

Each suite's cases are drawn in a seeded random order (the run's ``--shuffle`` seed, recorded
with the run), and as each case is done its value goes to the suite's
:class:`~coalmine._util.sequential.GateSequence`, which says when the gate is decided at level
``alpha``, whenever one looks. The values go in *draw order*, not in the order the cases finish:
with many cases in flight a slow case (a timeout, say) finishes late, and letting the order
depend on the values would bias the test. A value that finished early waits for those drawn
before it.

What a suite's gate asks, and so what a case's value is:

- ``min_score`` set: is the suite's score over the graders that may block at least
  ``min_score``? The value is the case's blocking value
  (:attr:`~coalmine.evals.values.CaseValues.blocking_value`). A case whose every run errored on
  what may block fails the gate for certain (the gate wants no such case), so that decides at
  once; one that errored on advisory graders only has no value, and the suite the test is about
  is one case smaller.
- no ``min_score``: may any case fail on what may block? The first that does decides "fail"
  for certain; "pass" needs every case, so such a suite stops early only when it fails.
- ``--baseline RUN``: is the suite no worse than RUN on the cases both have, by more than
  ``margin``? A shared case's difference ``d = new - base`` is its pass (1) or not (0) now
  minus then, in [-1, 1]; the test is on ``(d + 1) / 2`` against ``(1 - margin) / 2``, so
  "pass" says the pass rate fell by less than ``margin`` (or rose) and "fail" that it fell by
  more. A case the baseline lacks runs to the end and counts in the result, not in this gate.

A decided suite's remaining cases are not started (the ones in flight finish and are kept), the
run still finishes (it is not interrupted), and its result says so: after how many cases, how
many were not run, and the calls and cost that saved (at the run's mean cost a call).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

from coalmine._util.sequential import Decision, GateSequence
from coalmine.evals.plan import PlannedSuite
from coalmine.evals.values import CaseValues, case_values
from coalmine.results import EVERY_CASE, EvalGate, EvalSequential
from coalmine.store.evals import Attempt, KeptVerdicts

DEFAULT_ALPHA = 0.05
DEFAULT_MARGIN = 0.05

Rule = Literal["score", "every", "baseline"]


@dataclass(frozen=True)
class Stopping:
    """What ``--sequential`` was asked (recorded with the run, so a resume asks the same)."""

    alpha: float = DEFAULT_ALPHA
    baseline: str | None = None
    """The run whose shared cases the gate compares with (its id)."""
    margin: float = DEFAULT_MARGIN
    """With a baseline: the drop in pass rate that still counts as "no worse"."""

    def options(self) -> dict[str, object]:
        """As the run's recorded options."""
        return {"alpha": self.alpha, "baseline": self.baseline, "margin": self.margin}

    @classmethod
    def of(cls, options: object) -> Stopping | None:
        """From a run's recorded options (``None``: the run was not sequential)."""
        if not isinstance(options, dict):
            return None
        return cls(
            float(options.get("alpha", DEFAULT_ALPHA)),
            options.get("baseline"),
            float(options.get("margin", DEFAULT_MARGIN)),
        )


@dataclass
class SuiteSequence:
    """One suite's gate, fed each case's value in draw order."""

    suite: PlannedSuite
    rule: Rule
    alpha: float
    base: dict[str, int] | None = None
    """With a baseline: a shared case's id → 1 when it passed there, else 0."""
    margin: float = DEFAULT_MARGIN
    baseline_id: str | None = None
    gate: GateSequence | None = None
    decision: Decision | None = None
    decided_after: int | None = None
    """Cases drawn (with a value) when the gate was decided."""
    drawn: int = 0
    _positions: dict[str, int] = field(default_factory=dict)
    _runs: dict[int, list[Attempt]] = field(default_factory=lambda: defaultdict(list))
    _ready: dict[int, CaseValues] = field(default_factory=dict)
    _next: int = 0

    def __post_init__(self) -> None:
        ids = self.suite.index.ids
        self._positions = {case_id: at for at, case_id in enumerate(ids)}
        size = len(ids) if self.base is None else sum(i in self.base for i in ids)
        if self.rule == "every" or size == 0:
            return
        threshold = (
            (1.0 - self.margin) / 2
            if self.rule == "baseline"
            else float(self.suite.index.meta.min_score or 0.0)
        )
        self.gate = GateSequence(threshold=threshold, size=size, alpha=self.alpha)

    @property
    def decided(self) -> bool:
        """Whether the gate is decided: no more of its cases need to run."""
        return self.decision is not None

    def wants(self, case_id: str) -> bool:
        """Whether case ``case_id`` is still to run (a case the baseline lacks always is)."""
        return not self.decided or (self.base is not None and case_id not in self.base)

    def add(self, attempt: Attempt) -> None:
        """Take one finished case run; a case's value counts once all its repeats are in."""
        at = self._positions.get(attempt.case_id)
        if at is None or self.decided:
            return
        runs = self._runs[at]
        runs.append(attempt)
        if len(runs) < self.suite.repeats:
            return
        del self._runs[at]
        self._ready[at] = case_values(runs, self.suite.reducer, self.suite.repeats)
        while self._next in self._ready and not self.decided:
            self._draw(self._next, self._ready.pop(self._next))
            self._next += 1

    def _draw(self, at: int, values: CaseValues) -> None:
        case_id = self.suite.index.ids[at]
        if self.rule == "baseline":
            if self.base is None or case_id not in self.base:
                return  # a case the baseline lacks is not part of this gate
            now = 1 if values.verdict == "PASS" else 0
            self._feed((now - self.base[case_id] + 1) / 2)
            return
        if values.blocks and (self.rule == "every" or values.blocking_value is None):
            self.drawn += 1  # certain: the gate wants no such case
            self._settle("fail")
            return
        if self.rule == "every":
            self.drawn += 1
            return
        if values.blocking_value is None:  # errored on advisory graders: no value, one fewer
            assert self.gate is not None
            if self.gate.size == 1:
                self.gate = None  # no case left to decide on: the suite's own rule decides
            elif (decision := self.gate.remove_one()) is not None:
                self._settle(decision)
            return
        self._feed(values.blocking_value)

    def _feed(self, value: float) -> None:
        assert self.gate is not None
        self.drawn += 1
        decision = self.gate.add(value)
        if decision is not None:
            self._settle(decision)

    def _settle(self, decision: Decision) -> None:
        self.decision = decision
        self.decided_after = self.drawn

    def outcome(
        self, *, seed: int | None, cases_run: int, calls: int, cost: float | None
    ) -> EvalSequential:
        """What the result says: the decision, and what stopping early saved."""
        total = len(self.suite.index)
        skipped = max(0, total - cases_run)
        saved_calls = skipped * self.suite.repeats
        return EvalSequential(
            alpha=self.alpha,
            seed=seed,
            rule=self.describe(),
            decision=self.decision,
            stopped_early=self.decided and skipped > 0,
            decided_after=self.decided_after,
            cases_total=total,
            cases_run=cases_run,
            cases_skipped=skipped,
            calls_saved=saved_calls,
            cost_saved=round(cost / calls * saved_calls, 6) if cost is not None and calls else None,
            baseline_run=None if self.rule != "baseline" else self.baseline_id,
            margin=self.margin if self.rule == "baseline" else None,
        )

    def describe(self) -> str:
        """The question this suite's sequential gate answers."""
        if self.rule == "baseline":
            return (
                f"no worse than run {self.baseline_id} on the shared cases by more than "
                f"{self.margin:g} in pass rate"
            )
        if self.rule == "every":
            return EVERY_CASE
        return f"score >= {self.suite.index.meta.min_score:g}"

    def gate_for(self, gate: EvalGate) -> EvalGate:
        """The suite's gate once decided (or, with a baseline, the comparison's at the end)."""
        decision = self.decision
        if decision is None:
            if self.rule != "baseline":
                return gate
            decision = "pass"  # no shared case: nothing got worse
        rule = f"{self.describe()}, decided at alpha {self.alpha:g}"
        if self.decided_after is not None:
            rule += f" after {self.decided_after} case{'s' if self.decided_after != 1 else ''}"
        return EvalGate(
            passed=decision == "pass", rule=rule, blocking_failures=gate.blocking_failures
        )


def sequences_for(
    suites: list[PlannedSuite],
    stopping: Stopping,
    baseline: dict[str, KeptVerdicts] | None = None,
) -> list[SuiteSequence]:
    """Each suite's sequence, in the plan's order."""
    out = []
    for suite in suites:
        if stopping.baseline is not None:
            kept = (baseline or {}).get(suite.name)
            base = (
                {}
                if kept is None
                else {i: int(v == "P") for i, v in zip(kept.ids, kept.verdicts, strict=True)}
            )
            seq = SuiteSequence(
                suite, "baseline", stopping.alpha, base, stopping.margin, stopping.baseline
            )
        else:
            rule: Rule = "every" if suite.index.meta.min_score is None else "score"
            seq = SuiteSequence(suite, rule, stopping.alpha)
        out.append(seq)
    return out
