"""The labels a calibration set still wants, and which cases of a run `judge label` offers first.

When the newest calibration made from a set fell short only for lack of evidence, its record
says how many more held-out items of each kind would let the judge block (``labels_needed``:
items the humans fail, items they pass). ``coalmine judge label --out`` that set then offers
first the cases most likely to be of the kinds wanted, by the run's *other* graders: a case
another grader failed is likely one the humans fail, one every other grader passed likely one
they pass. The judge's own verdict is never used to choose: offering the cases the judge failed
would bring in, among the human-fail items, mostly ones the judge got right, and pull down the
very false-pass rate the labels are meant to measure. Other graders are a weaker hint, and they
choose by a signal the judge did not give. Without them the cases keep the run's order, and the
command says which kind is wanted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalmine.judge.labelling import Draft


@dataclass(frozen=True)
class Wanted:
    """What the newest calibration made from a set still wants."""

    calibration_id: int
    judge: str | None
    fail: int
    """More held-out items the humans fail."""
    pass_: int
    """More held-out items the humans pass."""
    either: int = 0


def _same_file(recorded: str, out: Path, root: Path) -> bool:
    path = Path(recorded)
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, root / path]
    target = out.resolve()
    return any(c.resolve() == target for c in candidates)


def find_wanted(
    rows: Sequence[tuple[int, Mapping[str, Any]]], out: Path, *, root: Path
) -> Wanted | None:
    """What the newest calibration made from the set ``out`` wants (``None``: nothing, or none).

    ``rows`` are ``(id, record)`` of the store's newest calibrations (any order); a record's set
    path is as it was given, tried as it is, from the working directory and from ``root``.
    """
    made = [
        (i, r)
        for i, r in rows
        if isinstance(path := (r.get("calibration_set") or {}).get("path"), str)
        and _same_file(path, out, root)
    ]
    if not made:
        return None
    calibration_id, record = max(made, key=lambda row: row[0])
    needed = record.get("labels_needed")
    if not isinstance(needed, Mapping) or not any(needed.values()):
        return None
    return Wanted(
        calibration_id,
        (record.get("judge") or {}).get("agent"),
        int(needed.get("fail") or 0),
        int(needed.get("pass") or 0),
        int(needed.get("either") or 0),
    )


def offer_first(drafts: Sequence[Draft], wanted: Wanted) -> list[Draft]:
    """``drafts`` with the likely kinds wanted first, then the rest, each in the run's order.

    Up to ``wanted.fail`` drafts another grader failed and ``wanted.pass_`` drafts every other
    grader passed come first, taken in turn (one likely fail, one likely pass, …) so that
    stopping early still brings some of each.
    """
    likely_fail = [d for d in drafts if d.failed_other is True][: wanted.fail]
    likely_pass = [d for d in drafts if d.failed_other is False][: wanted.pass_]
    first: list[Draft] = []
    for n in range(max(len(likely_fail), len(likely_pass))):
        first += likely_fail[n : n + 1] + likely_pass[n : n + 1]
    chosen = {id(d) for d in first}
    return first + [d for d in drafts if id(d) not in chosen]


def describe_wanted(wanted: Wanted, drafts: Sequence[Draft]) -> str:
    """What the calibration wants and how the cases are ordered for it, in a line."""
    kinds = [
        f"{count} more held-out {'item' if count == 1 else 'items'} the humans {kind}"
        for count, kind in ((wanted.fail, "fail"), (wanted.pass_, "pass"))
        if count
    ]
    if wanted.either:
        kinds.append(f"{wanted.either} more of either kind")
    who = f" of {wanted.judge}" if wanted.judge else ""
    head = f"calibration #{wanted.calibration_id}{who} on this set wants {' and '.join(kinds)}"
    hinted = (wanted.fail and any(d.failed_other is True for d in drafts)) or (
        wanted.pass_ and any(d.failed_other is False for d in drafts)
    )
    if not wanted.fail and not wanted.pass_:
        return head
    if hinted:
        return (
            f"{head}: the cases another grader failed (for fail) or passed (for pass) come "
            "first; never chosen by the judge's own verdict"
        )
    return f"{head}: no other grader hints which cases those are, so they keep the run's order"
