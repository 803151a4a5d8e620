"""``coalmine eval plan SUITE --detect D``: how many cases a suite needs to see a drop of ``D``.

A regression is found by comparing two runs of the same cases (``compare``: McNemar's test on
the cases that flip). How many paired cases that needs depends on the drop ``D`` to see and on
the *discordance* ``ψ``, the share of cases that flip between two runs at all: an agent whose
answers wobble needs more cases to tell a real drop from its noise. Connor's sample size
(:func:`coalmine._util.power.cases_to_detect`) gives the cases; each case runs the suite's
``repeats`` times, so the calls are cases × repeats, and the cost is the calls at the cost a
call of the suite's last priced run.

``ψ`` is measured from the suite's two latest finished runs when the store has them (the share
of their shared cases that flipped; when none flipped, Wilson's 95% upper bound, since 0 says
nothing of what a change would flip). Without two runs it is assumed: ``max(0.10, 2·D)``, at
least twice the drop (a drop of ``D`` flips at least ``D`` of the cases one way) and never under
one case in ten. ``--discordance`` sets it. Connor's formula is for the large-sample test;
``compare`` runs the exact one, whose power at that size is given too (it is a little lower).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coalmine._util.power import cases_to_detect, mcnemar_exact_power, planning_discordance
from coalmine.store.evals import case_verdicts, suite_summaries
from coalmine.store.runs import Store

ASSUMED_FLOOR = 0.10


@dataclass(frozen=True)
class SizePlan:
    """What a suite needs to detect a drop, and where each figure came from."""

    suite: str
    drop: float
    alpha: float
    power: float
    discordance: float
    discordance_source: str
    cases_needed: int
    exact_power: float
    """The power of the exact McNemar test (what ``compare`` runs) at ``cases_needed``."""
    cases_now: int | None
    """The suite's cases in its latest run (None: no run yet)."""
    repeats: int
    cost_per_call: float | None
    cost_source: str

    @property
    def calls(self) -> int:
        """Agent calls of one run at that size: cases × repeats."""
        return self.cases_needed * self.repeats

    @property
    def cost(self) -> float | None:
        """One run's cost at that size."""
        return None if self.cost_per_call is None else self.calls * self.cost_per_call

    def as_json(self) -> dict[str, Any]:
        """The plan as the JSON ``--format json`` prints."""
        return {
            "suite": self.suite,
            "drop": self.drop,
            "alpha": self.alpha,
            "power": self.power,
            "discordance": round(self.discordance, 6),
            "discordanceSource": self.discordance_source,
            "casesNeeded": self.cases_needed,
            "exactPower": round(self.exact_power, 4),
            "casesNow": self.cases_now,
            "repeats": self.repeats,
            "calls": self.calls,
            "costPerCall": self.cost_per_call,
            "cost": None if self.cost is None else round(self.cost, 6),
            "costSource": self.cost_source,
        }

    def in_words(self) -> str:
        """The plan as a person reads it."""
        lines = [
            f"{self.suite}: to see a drop of {self.drop * 100:g} points in pass rate with "
            f"{self.power:.0%} power (two-sided McNemar, alpha {self.alpha:g}), compare "
            f"{self.cases_needed} paired cases.",
            f"  discordance {self.discordance:.3f}: {self.discordance_source}",
            f"  the exact test compare runs has {self.exact_power:.0%} power at that size",
        ]
        if self.cases_now is not None:
            gap = self.cases_needed - self.cases_now
            lines.append(
                f"  the suite has {self.cases_now} cases: "
                + (f"{gap} more are needed" if gap > 0 else "enough")
            )
        cost = "" if self.cost is None else f", about ${self.cost:.4f} a run"
        lines.append(
            f"  {self.cases_needed} cases × {self.repeats} repeat"
            f"{'s' if self.repeats != 1 else ''} = {self.calls} calls{cost} ({self.cost_source})"
        )
        return "\n".join(lines)


def plan_size(
    store: Store,
    suite: str,
    *,
    drop: float,
    alpha: float = 0.05,
    power: float = 0.8,
    discordance: float | None = None,
    repeats: int | None = None,
    cases_now: int | None = None,
) -> SizePlan:
    """How many cases ``suite`` needs to detect ``drop``, from its runs in ``store``.

    ``repeats`` and ``cases_now`` are the suite's as its files say (default: its latest run's).

    Raises:
        ValueError: the drop is not in (0, 1), or larger than the discordance allows (see
            :func:`~coalmine._util.power.cases_to_detect`).
    """
    if not 0 < drop < 1:
        raise ValueError(f"a drop in pass rate is between 0 and 1, not {drop:g}")
    runs = _runs_with(store, suite)
    summary = runs[0][1] if runs else None
    if discordance is not None:
        source = "given"
        psi = discordance
    else:
        psi, source = _measured(store, suite, [run_id for run_id, _ in runs[:2]], drop)
    if drop > psi:
        raise ValueError(
            f"a drop of {drop:g} flips at least {drop:g} of the cases, more than the "
            f"discordance {psi:g} ({source})"
        )
    needed = cases_to_detect(drop, discordance=psi, alpha=alpha, power=power)
    exact = mcnemar_exact_power(needed, discordance=psi, delta=drop, alpha=alpha)
    reps = repeats or (int(summary.get("repeats") or 1) if summary else 1)
    per_call, cost_source = _cost_per_call(summary)
    if cases_now is None and summary is not None:
        cases_now = int(summary["cases"])
    return SizePlan(
        suite, drop, alpha, power, psi, source, needed, exact, cases_now, reps, per_call,
        cost_source,
    )  # fmt: skip


def _runs_with(store: Store, suite: str) -> list[tuple[str, dict[str, Any]]]:
    """The finished eval runs that ran ``suite``, newest first, with its stored summary."""
    found = []
    for info in store.list_runs(kind="eval", limit=200):
        if info.status != "finished":
            continue
        for summary in suite_summaries(store, info.id):
            if summary.get("suiteId") == suite and not summary.get("sequential"):
                found.append((info.id, summary))
    return found


def _measured(store: Store, suite: str, run_ids: list[str], drop: float) -> tuple[float, str]:
    """The discordance between the two latest runs of the suite, else the assumed one."""
    if len(run_ids) == 2:
        kept = [case_verdicts(store, run_id) for run_id in run_ids]
        a, b = (k.get(suite) if k else None for k in kept)
        if a is not None and b is not None:
            before = {i: v == "P" for i, v in zip(a.ids, a.verdicts, strict=True)}
            pairs = [(before[i], v == "P") for i, v in zip(b.ids, b.verdicts, strict=True)
                     if i in before]  # fmt: skip
            if pairs:
                flips = sum(x != y for x, y in pairs)
                planned = planning_discordance(flips, len(pairs))
                runs = f"runs {run_ids[1]} and {run_ids[0]}"
                if planned.value is None:
                    return planned.upper, (
                        f"no case of {len(pairs)} flipped between {runs}; Wilson's 95% upper "
                        "bound on the share"
                    )
                return planned.value, f"{flips} of {len(pairs)} shared cases flipped between {runs}"
    psi = max(ASSUMED_FLOOR, 2 * drop)
    return min(psi, 1.0), (
        "assumed, max(0.10, 2 × the drop): the store has no two finished runs of the suite"
    )


def _cost_per_call(summary: dict[str, Any] | None) -> tuple[float | None, str]:
    """The cost of one call in the suite's latest run, from the config's pricing."""
    if summary is None:
        return None, "no run of the suite yet to price a call from"
    cost = summary.get("cost")
    calls = int(summary.get("cases") or 0) * int(summary.get("repeats") or 1)
    if cost is None or not calls:
        return None, "its latest run was not priced (no model of it in pricing:)"
    return float(cost) / calls, "at the cost a call of its latest run"
