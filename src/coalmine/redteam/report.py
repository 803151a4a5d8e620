"""What got through: a stored run's red-team findings, grouped as a security review reads them.

A case is a red-team case when it carries the ``redteam`` tag (every case of a generated pack
does). An attack case is a *finding* when one of its runs failed a blocking grader: the attack
worked at least once. A run in which the agent failed (it crashed, hung, printed garbage, or
could not be reached) is counted as errored, never as a finding: nothing was attacked. A control
case that failed is a *flagged control*: the grader, not the agent, is wrong, and the report
says so first. The grouping reads the case's own tags (``surface:``, ``category:``,
``strategy:``, ``severity:``, ``owasp:``), as the run stored them, so a report of an old run
says what its cases said then; a case without them falls back to its category's row of
:data:`coalmine.redteam.owasp.CATEGORIES`.

:func:`summarise` is pure (tested on hand-made attempts); :func:`load_findings` reads the store.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from coalmine.redteam.owasp import CATEGORIES, OWASP_2025, SEVERITIES
from coalmine.store.evals import iter_attempts, run_suites
from coalmine.store.runs import Store

__all__ = [
    "SEVERITY_ORDER",
    "Finding",
    "Findings",
    "load_findings",
    "render_json",
    "render_markdown",
    "render_terminal",
    "summarise",
]

SEVERITY_ORDER: tuple[str, ...] = SEVERITIES


@dataclass(frozen=True)
class Finding:
    """One red-team case of a run: an attack (or a control) and what its graders said."""

    suite: str
    case_id: str
    surface: str
    category: str
    strategy: str
    severity: str
    owasp: tuple[str, ...]
    control: bool
    got_through: bool
    """An attack: a blocking grader failed in one of its runs. A control: it failed."""
    errored: bool
    failed: tuple[str, ...] = ()
    """The failed graders of the first run that failed (``forbidden-tools``, ``no-leak`` …)."""
    why: str = ""
    """What that run's record says of its failure: each failed grader and why (``called
    forbidden tools: …``), as ``runs show`` prints it."""

    @property
    def reasons(self) -> str:
        """``why``, or the failed graders' names when the record had no words for it."""
        return self.why or ", ".join(self.failed)


@dataclass(frozen=True)
class Findings:
    """A run's red-team cases, and the counts the report prints."""

    run_id: str
    cases: tuple[Finding, ...] = ()
    by: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    """``surface``/``category``/``strategy``/``severity``/``owasp`` → (value, findings,
    attack cases), worst first."""

    @property
    def attacks(self) -> list[Finding]:
        """The attack cases."""
        return [c for c in self.cases if not c.control]

    @property
    def findings(self) -> list[Finding]:
        """The attacks that got through, the most severe first."""
        rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
        found = [c for c in self.attacks if c.got_through]
        return sorted(found, key=lambda f: (rank.get(f.severity, 9), f.suite, f.case_id))

    @property
    def flagged_controls(self) -> list[Finding]:
        """Control cases that failed: a grader to fix."""
        return [c for c in self.cases if c.control and c.got_through]

    def at_least(self, severity: str) -> list[Finding]:
        """The findings of ``severity`` or worse."""
        worst = SEVERITY_ORDER[: SEVERITY_ORDER.index(severity) + 1]
        return [f for f in self.findings if f.severity in worst]


def _tag(tags: Sequence[str], prefix: str) -> list[str]:
    return [t[len(prefix) :] for t in tags if t.startswith(prefix)]


def _failed(grades: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        key for key, grade in grades.items()
        if isinstance(grade, Mapping) and grade.get("passed") is False
    )  # fmt: skip


def summarise(
    run_id: str, attempts: Iterable[tuple[str, str, str, bool, Mapping[str, Any]]]
) -> Findings:
    """The findings of ``attempts``: ``(suite, case id, status, blocks, record)`` per run.

    Cases without the ``redteam`` tag are left out; a case's repeats make one finding.
    """
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for suite, case_id, status, blocks, record in attempts:
        tags = [str(t) for t in record.get("tags") or ()]
        if "redteam" not in tags:
            continue
        fresh = {"tags": tags, "through": False, "errored": False, "failed": (), "why": ""}
        entry = seen.setdefault((suite, case_id), fresh)
        if status == "error" or record.get("error"):
            entry["errored"] = True  # the agent crashed, hung or was not reached: not a finding
        elif status == "fail" and blocks and not entry["through"]:
            entry["through"] = True
            entry["failed"] = _failed(record.get("grades") or {})
            entry["why"] = str(record.get("why") or "")
    cases = []
    for (suite, case_id), entry in seen.items():
        tags = entry["tags"]
        category_id = next(iter(_tag(tags, "category:")), "unknown")
        row = CATEGORIES.get(category_id)
        control = "control" in tags
        severity = next(iter(_tag(tags, "severity:")), row.severity if row else "medium")
        cases.append(
            Finding(
                suite=suite,
                case_id=case_id,
                surface=next(iter(_tag(tags, "surface:")), row.surface if row else "unknown"),
                category=category_id,
                strategy="control" if control else next(iter(_tag(tags, "strategy:")), "none"),
                severity="none" if control else severity,
                owasp=tuple(_tag(tags, "owasp:")) or (row.owasp if row else ()),
                control=control,
                got_through=entry["through"],
                errored=entry["errored"],
                failed=entry["failed"],
                why=entry["why"],
            )
        )
    cases.sort(key=lambda c: (c.suite, c.case_id))
    return Findings(run_id, tuple(cases), _group(cases))


def _group(cases: Sequence[Finding]) -> dict[str, list[tuple[str, int, int]]]:
    attacks = [c for c in cases if not c.control]
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    out: dict[str, list[tuple[str, int, int]]] = {}
    for key in ("severity", "owasp", "surface", "category", "strategy"):
        total: Counter[str] = Counter()
        through: Counter[str] = Counter()
        for case in attacks:
            values = case.owasp if key == "owasp" else (getattr(case, key),)
            for value in values:
                total[value] += 1
                through[value] += case.got_through
        rows = [(v, through[v], total[v]) for v in total]
        if key == "severity":
            rows.sort(key=lambda r: rank.get(r[0], 9))
        elif key == "owasp":
            rows.sort(key=lambda r: r[0])
        else:
            rows.sort(key=lambda r: (-r[1] / r[2], r[0]))
        out[key] = rows
    return out


def load_findings(store: Store, ref: str) -> Findings:
    """The red-team findings of the stored eval run ``ref`` (id, prefix, label, ``latest``).

    Raises:
        UsageError: ``ref`` names no eval run, or several.
    """
    info = store.get_run(ref, kind="eval")
    attempts = (
        (suite, a.case_id, a.status, a.blocks, a.record)
        for suite in run_suites(store, info.id)
        for a in iter_attempts(store, info.id, suite)
    )
    return summarise(info.id, attempts)


# ------------------------------------------------------------------ rendering

_TITLES = {
    "severity": "By severity",
    "owasp": "By OWASP LLM Top 10 (2025)",
    "surface": "By surface",
    "category": "By category",
    "strategy": "By strategy",
}


def _label(key: str, value: str) -> str:
    if key == "owasp":
        return f"{value} {OWASP_2025.get(value, '')}".strip()
    if key == "category" and value in CATEGORIES:
        return f"{value} ({CATEGORIES[value].title})"
    return value


def _headline(f: Findings) -> str:
    attacks, found = len(f.attacks), len(f.findings)
    rate = f" ({found / attacks:.0%} of {attacks} attack cases)" if attacks else ""
    controls = sum(1 for c in f.cases if c.control)
    errored = sum(1 for c in f.cases if c.errored)
    text = f"{found} finding{'s' if found != 1 else ''}{rate}"
    text += f"; {controls} control case{'s' if controls != 1 else ''}"
    text += f", {len(f.flagged_controls)} flagged" if f.flagged_controls else ", none flagged"
    return text + (f"; {errored} errored (not counted as findings)" if errored else "")


def render_terminal(f: Findings) -> str:
    """The report as plain text for a terminal."""
    if not f.cases:
        return f"run {f.run_id}: no red-team case (tag redteam) in this run\n"
    lines = [f"red team, run {f.run_id}: {_headline(f)}"]
    if f.flagged_controls:
        lines.append("FLAGGED CONTROLS (a grader is wrong here, not the agent):")
        lines += [f"  {c.suite}/{c.case_id}: {c.reasons}" for c in f.flagged_controls]
    for key, rows in f.by.items():
        lines.append(f"{_TITLES[key]}:")
        width = max((len(_label(key, v)) for v, _, _ in rows), default=0)
        lines += [f"  {_label(key, v):<{width}}  {n:>4} / {t:<4}" for v, n, t in rows]
    if f.findings:
        lines.append("Findings:")
        for c in f.findings:
            lines.append(
                f"  [{c.severity}] {c.suite}/{c.case_id}  {', '.join(c.owasp)}  strategy"
                f" {c.strategy}"
            )
            lines.append(f"      {c.reasons}")
    return "\n".join(lines) + "\n"


def render_markdown(f: Findings) -> str:
    """The report as Markdown (a CI job summary, a pull-request comment)."""
    lines = [f"# Red team: run `{f.run_id}`", "", _headline(f) + ".", ""]
    if not f.cases:
        return "\n".join([*lines[:2], "No red-team case (tag `redteam`) in this run.", ""])
    if f.flagged_controls:
        lines += ["## Flagged controls", "", "A grader is wrong here, not the agent.", ""]
        lines += [f"- `{c.suite}/{c.case_id}`: {c.reasons}" for c in f.flagged_controls]
        lines.append("")
    for key, rows in f.by.items():
        lines += [f"## {_TITLES[key]}", "", "| | findings | attack cases |", "|---|---:|---:|"]
        lines += [f"| {_label(key, v)} | {n} | {t} |" for v, n, t in rows]
        lines.append("")
    if f.findings:
        lines += ["## Findings", "", "| severity | case | OWASP | strategy | why |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for c in f.findings:
            why = c.reasons.replace("|", "\\|")
            lines.append(
                f"| {c.severity} | `{c.suite}/{c.case_id}` | {', '.join(c.owasp)} |"
                f" {c.strategy} | {why} |"
            )
        lines.append("")
    return "\n".join(lines)


def render_json(f: Findings) -> str:
    """The report as JSON: the counts, the groups and every case."""
    data = {
        "schema": "coalmine.redteam.report.v1",
        "run_id": f.run_id,
        "attack_cases": len(f.attacks),
        "findings": len(f.findings),
        "flagged_controls": [f"{c.suite}/{c.case_id}" for c in f.flagged_controls],
        "by": {
            k: [{"value": v, "findings": n, "attack_cases": t} for v, n, t in rows]
            for k, rows in f.by.items()
        },  # fmt: skip
        "cases": [asdict(c) for c in f.cases],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
