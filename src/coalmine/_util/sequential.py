"""Decide a suite's gate before every case has run, and stay right under continuous monitoring.

The question: is the suite's pass rate (the mean of its cases' values in [0, 1], over the whole
suite) at least ``threshold``? Its cases are drawn one at a time in a random order, without
replacement, and after each one two bettors update their wealth (testing by betting,
Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting", JRSS-B 2024):

- the *pass* bettor bets against "the rate is below the threshold", and wins when the values
  drawn run above what that would leave for the rest; its wealth reaching ``2 / alpha`` decides
  the gate *passes*;
- the *fail* bettor bets against "the rate is at least the threshold"; its wealth reaching
  ``2 / alpha`` decides the gate *fails*.

Under its null each wealth is a nonnegative supermartingale that starts at 1, so by Ville's
inequality it ever reaches ``2 / alpha`` with probability at most ``alpha / 2``, whenever one
looks; a wrong decision, of either kind, has probability at most ``alpha``. The draws are from a
finite suite, so each bet is against the mean the rest of the suite would need (``m_t``, the
paper's sampling-without-replacement form, Section 6): after all of the suite is drawn that
mean is known, and the gate is decided exactly. The bet sizes are the paper's predictable
plug-in (its equation for ``λ^PrPl``), each using only the values before it, truncated so that
no bet can lose more than half the wealth.

A case that turns out to have no value (its every repeat errored) is not a draw: the caller
says so with :meth:`GateSequence.remove_one`, and the population is one case smaller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

Decision = Literal["pass", "fail"]

TRUNCATION = 0.5
"""The largest share of its wealth a bettor may lose on one draw (the paper's ``c``)."""


@dataclass
class GateSequence:
    """The two bettors of one suite's gate over ``size`` cases; feed it values in draw order."""

    threshold: float
    size: int
    """How many cases the suite has (the population the draws come from)."""
    alpha: float = 0.05
    drawn: int = 0
    total: float = 0.0
    decision: Decision | None = None
    decided_at: int | None = None
    """How many values had been drawn when it was decided."""
    log_pass: float = 0.0
    """log of the pass bettor's wealth."""
    log_fail: float = 0.0
    _mean: float = 0.5
    _square_sum: float = 0.25
    _bar: float = field(init=False)

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, not {self.alpha}")
        if self.size < 1:
            raise ValueError("a suite of no case has no gate to decide")
        self._bar = math.log(2 / self.alpha)
        self._decide_by_counting()

    def add(self, value: float) -> Decision | None:
        """Draw one case's value in [0, 1]; the decision once there is one (it never changes)."""
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"a case's value is in [0, 1], not {value}")
        if self.drawn >= self.size:
            raise ValueError(f"more draws than the suite's {self.size} cases")
        if self.decision is not None:
            self._take(value)
            return self.decision
        m = self._needed()
        lam = self._bet_size()
        if 0.0 < m < 1.0:
            up = min(lam, TRUNCATION / m)
            down = min(lam, TRUNCATION / (1.0 - m))
            self.log_pass += math.log1p(up * (value - m))
            self.log_fail += math.log1p(-down * (value - m))
        self._take(value)
        if self.log_pass >= self._bar:
            self._settle("pass")
        elif self.log_fail >= self._bar:
            self._settle("fail")
        else:
            self._decide_by_counting()
        return self.decision

    def remove_one(self) -> Decision | None:
        """One undrawn case turned out to have no value: the suite is one case smaller.

        The draws so far were from the smaller suite as much as from the larger (the order is
        random), so the bets stay fair; what is left may now decide by counting.
        """
        if self.size - self.drawn < 1 or self.size == 1:
            raise ValueError("no undrawn case to remove")
        self.size -= 1
        self._decide_by_counting()
        return self.decision

    def _needed(self) -> float:
        """The mean the undrawn cases need for the suite's rate to be exactly the threshold."""
        left = self.size - self.drawn
        return (self.threshold * self.size - self.total) / left

    def _bet_size(self) -> float:
        """The predictable plug-in bet, from the values before this draw only."""
        t = self.drawn + 1
        variance = self._square_sum / t  # (1/4 + Σ_{i<t} (x_i - μ̂_i)²) / t: the paper's σ̂²_{t-1}
        return math.sqrt(2 * self._bar / (variance * t * math.log(t + 1)))

    def _take(self, value: float) -> None:
        self.drawn += 1
        self.total += value
        self._mean = (0.5 + self.total) / (self.drawn + 1)  # μ̂_t, with this value
        self._square_sum += (value - self._mean) ** 2

    def _decide_by_counting(self) -> None:
        """Decide when what is left cannot change the answer (every case drawn, say)."""
        if self.decision is not None:
            return
        left = self.size - self.drawn
        best = (self.total + left) / self.size
        worst = self.total / self.size
        if worst >= self.threshold:
            self._settle("pass")
        elif best < self.threshold:
            self._settle("fail")

    def _settle(self, decision: Decision) -> None:
        self.decision = decision
        self.decided_at = self.drawn
