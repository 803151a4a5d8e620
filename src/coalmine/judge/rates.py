"""People's labels on a run's cases, and the judge's pass rate they correct (PPI).

``coalmine judge label RUN`` writes people's verdicts on a run's cases to a calibration set, by
``suite/case`` id. Those verdicts correct a judge grader's pass rate over the suite
(:mod:`coalmine.evals.judged`): at the end of ``eval run``, from every set the judge's
calibrations name and the sets given, and afterwards with ``coalmine judge rate RUN``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from coalmine.evals.judged import JudgeRates
from coalmine.judge.labels import load_labels
from coalmine.judge.stats import majority_label
from coalmine.results import EvalJudgeRate
from coalmine.store.evals import iter_attempts, run_suites
from coalmine.store.runs import Store

Labels = dict[str, tuple[str, float]]


def calibration_sets(store: Store, judge_agent: str | None, root: Path) -> list[Path]:
    """The calibration sets the newest calibrations of the judge agent were made from."""
    found: list[Path] = []
    for _, record in store.newest_calibrations():
        judge = record.get("judge")
        if (
            judge_agent is not None
            and isinstance(judge, dict)
            and judge.get("agent") != judge_agent
        ):
            continue
        where = (record.get("calibration_set") or {}).get("path")
        if not isinstance(where, str):
            continue
        path = Path(where)
        for candidate in [path] if path.is_absolute() else [root / path, path]:
            if candidate.is_file() and candidate.resolve() not in {p.resolve() for p in found}:
                found.append(candidate)
                break
    return found


def labels_of(paths: Iterable[Path]) -> Labels:
    """``suite/case`` → (the labelled output, 1 pass or 0 fail) over the sets (unsure left out).

    A set that cannot be read is skipped (``judge calibrate`` reports its problems).
    """
    labels: Labels = {}
    for path in paths:
        try:
            found = load_labels(path)
        except OSError:
            continue
        for item in found.items:
            verdict = majority_label([label.verdict for label in item.labels])
            if verdict is not None:
                labels[item.id] = (item.output, 1.0 if verdict == "pass" else 0.0)
    return labels


def stored_rates(store: Store, run_id: str, labels: Labels) -> list[tuple[str, EvalJudgeRate]]:
    """Each suite of a stored eval run with a judge grader: its raw and corrected judge rate."""
    out: list[tuple[str, EvalJudgeRate]] = []
    for suite in run_suites(store, run_id):
        rates = JudgeRates(suite, labels)
        last = None
        for attempt in iter_attempts(store, run_id, suite):
            if attempt.case_id != last:  # a case's first run (attempts come by case, by repeat)
                rates.add(attempt.case_id, attempt.record)
                last = attempt.case_id
        result = rates.result()
        if result is not None:
            out.append((suite, result))
    return out


def rate_in_words(suite: str, r: EvalJudgeRate) -> Sequence[str]:
    """A judge rate as a person reads it."""
    line = f"{suite}: {r.grader} passed {r.raw:.3f} of {r.cases} cases (the judge's rate)"
    if r.corrected is None or r.ci95 is None:
        return [line, f"  {r.note}"]
    only = (
        f"; from the labels alone {r.labels_only_ci95[0]:.3f}–{r.labels_only_ci95[1]:.3f}"
        if r.labels_only_ci95
        else ""
    )
    return [
        line,
        f"  corrected: {r.corrected:.3f} (95% CI {r.ci95[0]:.3f}–{r.ci95[1]:.3f}{only})",
        f"  {r.note}",
    ]
