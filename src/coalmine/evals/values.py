"""One case's values over its repeats: what a suite's summary and its gate count (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from coalmine._util.estimate import reduce_repeats
from coalmine.engine.verdict import EPSILON
from coalmine.results import case_verdict
from coalmine.store.evals import Attempt


@dataclass(frozen=True)
class CaseValues:
    """One case's values over its repeats, as the summary and the gate count them."""

    verdict: str
    """``PASS``, ``FAIL`` or ``ERROR`` (:func:`~coalmine.results.case_verdict`)."""
    value: float | None
    """Its runs that did not error reduced to one value; ``None`` when every run errored."""
    blocking_value: float | None
    """The same over the graders that may block (a fail that does not block counts as pass)."""
    blocking_error: bool
    """Every run errored and one of the errors may block."""
    runs: int = 0
    """Its runs that did not error."""
    passes: int = 0
    """Of those, the runs that passed."""
    blocking_passes: int = 0
    """Of those, the runs that passed on what may block (an advisory fail counts as pass)."""

    @property
    def blocks(self) -> bool:
        """Whether this case fails the suite's gate on what may block."""
        if self.blocking_value is None:
            return self.blocking_error
        return self.blocking_value < 0.5 - EPSILON


def case_values(runs: list[Attempt], reducer: str, repeats: int) -> CaseValues:
    """A case's values from its runs: what both the summary and ``--sequential`` count."""
    verdict = case_verdict(a.status for a in runs)
    scored = [a for a in runs if a.status != "error"]
    if not scored:
        return CaseValues(verdict, None, None, any(a.blocks for a in runs))
    n = len(scored)
    c = sum(a.status == "pass" for a in scored)
    cb = sum(a.status == "pass" or not a.blocks for a in scored)
    return CaseValues(
        verdict,
        reduce_repeats(reducer, n, c, repeats),
        reduce_repeats(reducer, n, cb, repeats),
        False,
        n,
        c,
        cb,
    )
