"""Label the cases of a run: the items to label, and the calibration set they are written to.

``coalmine judge label`` shows a person each case of a finished canary or eval run (its prompt,
its output and what the judge is asked) and writes each answer to a calibration set (see
``coalmine.judge.labels``) the moment it is given. This module holds everything but the
terminal: which cases can be labelled (``run_candidates``), what each one is judged against
(``plan_labelling``) and the file (``LabelFile``).

A case is judged against, in order: the criteria the command was given, or its rubric, or what
the case's own judge grader asks. That is the ``llm-judge`` criteria (names → descriptions) or
the ``llm-rubric`` rubric of the case's spec as it reads now (the canary's YAML, or the suite's
line and YAML), so a calibration made from the labels covers that grader (same rubric hash);
when the spec cannot be read, or no longer names the criteria the run graded, the names of the
criteria of the case's ``llm-judge`` grade are used (without descriptions).

The file is resumable. An item this labeller has labelled is not asked again. A new item is
appended as one line, flushed at once. An item already in the file with other people's labels
only is shown as it is stored (its prompt, output and criteria, so every label of an item is
about the same text; the others' verdicts are never shown, so the labels stay independent),
and the new label is added to that item's line: the file is rewritten through a temporary file
and an atomic rename, every other line kept byte for byte (bad lines included). One person at a
time may write a file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coalmine._source import SourceError, read_json
from coalmine._util.files import write_file
from coalmine.engine.grading import grade_key
from coalmine.errors import StoreError, UsageError
from coalmine.evals.compat import case_graders
from coalmine.graders.base import grader_configs
from coalmine.judge.labels import Label, LabelledItem, Verdict, load_labels
from coalmine.results import CaseResult, Grade
from coalmine.specs.loader import InvalidSpec, load_canary_spec
from coalmine.specs.models import GraderSpec
from coalmine.specs.suite import SUITES_DIR, BadLine, SuiteCase, scan_suite
from coalmine.store.evals import iter_attempts, suite_summaries
from coalmine.store.runs import RunInfo, Store

Criteria = dict[str, str] | list[str]


@dataclass(frozen=True)
class Asked:
    """What the judge is asked about an output: criteria (``llm-judge``) or a rubric."""

    criteria: Criteria | None = None
    rubric: str | None = None


@dataclass(frozen=True)
class Candidate:
    """A case of a run that can be labelled: it has a prompt and an output."""

    id: str
    """The canary id, or ``<suite>/<case id>`` for an eval case."""
    prompt: str
    output: str
    asked: Asked | None = None
    """What the case's own judge grader asks; ``None`` when it has none."""
    context: str | list[str] | None = None
    failed_other: bool | None = None
    """Whether the case failed a grader that is not a judge (``other_graders_failed``)."""


@dataclass(frozen=True)
class Draft:
    """An item about to be labelled: what the labeller sees."""

    id: str
    prompt: str
    output: str
    asked: Asked
    context: str | list[str] | None = None
    stored: bool = False
    """The item is in the file already (labelled by someone else); it is shown as stored."""
    differs: bool = False
    """Stored, and this run's output for the id is not the stored one."""
    failed_other: bool | None = None
    """The case's other graders failed it (never shown: it only orders the items)."""


@dataclass(frozen=True)
class LabelPlan:
    """The items still to label, in the run's order."""

    drafts: list[Draft]
    done: int
    """Cases this labeller has labelled already."""
    missing: list[str] = field(default_factory=list)
    """Ids of new items with nothing to judge them against (no criteria, rubric or judge)."""


# -- what can be labelled ----------------------------------------------------------------------


def run_candidates(store: Store, info: RunInfo, *, root: Path | None = None) -> list[Candidate]:
    """The cases of ``info`` that have a prompt and an output, in the run's order.

    ``root`` is where the run's specs are read (default: the run's own root).

    Raises:
        UsageError: the run is neither a canary nor an eval run.
    """
    base = root if root is not None else Path(info.root)
    if info.kind == "canary":
        return list(_canary_candidates(store, info.id))
    if info.kind == "eval":
        return list(_eval_candidates(store, info, base))
    raise UsageError(f"run {info.id} is a {info.kind!r} run; label a canary or an eval run")


def _canary_candidates(store: Store, run_id: str) -> Iterator[Candidate]:
    configs = grader_configs()
    for result in store.case_results(run_id):
        if result.prompt is None or result.output is None:
            continue
        grades = {k: g.model_dump(exclude_none=True) for k, g in result.grader_scores.items()}
        asked = judge_asks(grades, _canary_graders(result, configs))
        failed = other_graders_failed(grades)
        yield Candidate(result.id, result.prompt, result.output, asked, failed_other=failed)


def _canary_graders(result: CaseResult, configs: Mapping[str, Any]) -> list[GraderSpec] | None:
    if not result.spec_path:
        return None
    found = load_canary_spec(Path(result.spec_path), phases=(result.phase,), grader_configs=configs)
    if isinstance(found, InvalidSpec) or found.id != result.id:
        return None
    return list(found.spec.expected.graders)


def _eval_candidates(store: Store, info: RunInfo, root: Path) -> Iterator[Candidate]:
    for summary in suite_summaries(store, info.id):
        suite = str(summary["suiteId"])
        attempts = [
            a
            for a in iter_attempts(store, info.id, suite)
            if a.rep == 0 and "prompt" in a.record and "output" in a.record
        ]
        if not attempts:
            continue
        specs = _suite_graders(_suite_paths(suite, info, root), {a.case_id for a in attempts})
        for a in attempts:
            grades = a.record.get("grades") or {}
            graders, context = specs.get(a.case_id, (None, None))
            yield Candidate(
                f"{suite}/{a.case_id}",
                str(a.record["prompt"]),
                str(a.record["output"]),
                judge_asks(grades, graders),
                context,
                other_graders_failed(grades),
            )


def _suite_paths(suite: str, info: RunInfo, root: Path) -> list[Path]:
    named = [Path(s) for s in info.selectors if s.endswith(".jsonl") and Path(s).stem == suite]
    return [*named, root / SUITES_DIR / f"{suite}.jsonl"]


def _suite_graders(
    paths: Sequence[Path], wanted: set[str]
) -> dict[str, tuple[list[GraderSpec], str | list[str] | None]]:
    """The effective graders (and context) of the ``wanted`` cases of a suite, if it is found."""
    configs = grader_configs()
    for path in paths:
        if not path.is_file():
            continue
        try:
            index = scan_suite(path, grader_configs=configs, select=lambda c: c.id in wanted)
            with index.path.open("rb") as handle:
                cases = [index.read(i, handle) for i in range(len(index))]
        except (SourceError, OSError):
            continue
        return {c.case.id: (case_graders(c), _context_of(c)) for c in cases}
    return {}


def _context_of(case: SuiteCase) -> str | list[str] | None:
    """A case's retrieved context; an imported line's is its ``context`` var, as promptfoo's."""
    if case.promptfoo is None:
        return case.case.context
    found = case.promptfoo.vars.get("context")
    if isinstance(found, str) or (
        isinstance(found, list) and all(isinstance(x, str) for x in found)
    ):
        return found
    return None


def other_graders_failed(grades: Mapping[str, Mapping[str, Any]]) -> bool | None:
    """Whether a case failed a grader that is not a judge (its grade names no ``judge_model``).

    ``True``: one failed it; ``False``: every one that graded passed it; ``None``: none graded.
    It hints at what the humans will say without looking at the judge's own verdict.
    """
    verdicts = [
        g.get("passed")
        for g in grades.values()
        if "judge_model" not in g and isinstance(g.get("passed"), bool)
    ]
    if not verdicts:
        return None
    return not all(verdicts)


def judge_asks(
    grades: Mapping[str, Mapping[str, Any]], graders: Sequence[GraderSpec] | None
) -> Asked | None:
    """What a case's judge grader asks: from its spec's graders, else its grade's criteria.

    ``grades`` are the case's grades by key (as dicts); ``graders`` its spec's graders, in
    order (``None`` when the spec is not found). The first ``llm-judge`` or ``llm-rubric``
    grader of the spec decides, unless the run graded other criteria under its key (the spec
    changed since): then the grade's criteria names are used.
    """
    taken: dict[str, Grade] = {}
    for spec in graders or ():
        key = grade_key(spec.name or spec.type, taken)
        taken[key] = Grade()
        if spec.type == "llm-rubric" and isinstance(spec.config.get("value"), str):
            return Asked(rubric=spec.config["value"])
        if spec.type != "llm-judge":
            continue
        criteria = spec.config.get("criteria")
        graded = (grades.get(key) or {}).get("criteria")
        if isinstance(criteria, dict | list) and criteria:
            names = set(criteria)
            if not isinstance(graded, dict) or set(graded) == names:
                return Asked(criteria=criteria)
        break
    for grade in grades.values():
        graded = grade.get("criteria")
        if isinstance(graded, dict) and graded:
            return Asked(criteria=[str(name) for name in graded])
    return None


def plan_labelling(
    candidates: Iterable[Candidate], file: LabelFile, *, asked: Asked | None = None
) -> LabelPlan:
    """The items ``file.labeller`` has still to label; ``asked`` overrides what cases ask.

    An id already in the file with others' labels is shown as stored (its own criteria).
    """
    drafts: list[Draft] = []
    missing: list[str] = []
    done = 0
    for c in candidates:
        if file.labelled(c.id):
            done += 1
            continue
        stored = file.items.get(c.id)
        if stored is not None:
            criteria = stored.criteria
            what = Asked(criteria=criteria, rubric=stored.rubric)
            differs = stored.output != c.output
            draft = Draft(c.id, stored.prompt, stored.output, what, stored.context, True, differs,
                          c.failed_other)  # fmt: skip
            drafts.append(draft)
            continue
        what_new = asked or c.asked
        if what_new is None:
            missing.append(c.id)
            continue
        drafts.append(
            Draft(c.id, c.prompt, c.output, what_new, c.context, failed_other=c.failed_other)
        )
    return LabelPlan(drafts, done, missing)


# -- the file ----------------------------------------------------------------------------------


def _line(item: LabelledItem) -> str:
    """One JSON line; the characters ``str.splitlines`` would split on are escaped."""
    text = json.dumps(item.model_dump(mode="json", exclude_none=True), ensure_ascii=False)
    for ch in ("\x85", "\u2028", "\u2029"):  # json escapes the others (control characters)
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


class LabelFile:
    """A calibration set being written by one labeller."""

    def __init__(self, path: Path, labeller: str):
        self.path = path
        self.labeller = labeller
        self.items: dict[str, LabelledItem] = {}
        self.bad: list[BadLine] = []
        if path.exists():
            loaded = load_labels(path)
            self.items = {item.id: item for item in loaded.items}
            self.bad = loaded.bad

    def labelled(self, item_id: str) -> bool:
        """Whether this labeller has labelled ``item_id``."""
        item = self.items.get(item_id)
        return item is not None and any(lb.labeller == self.labeller for lb in item.labels)

    def add(self, draft: Draft, verdict: Verdict, note: str | None = None) -> LabelledItem:
        """Write this labeller's ``verdict`` on ``draft`` to the file, now.

        Raises:
            OSError: the file cannot be written.
        """
        label = Label(labeller=self.labeller, verdict=verdict, note=note or None)
        stored = self.items.get(draft.id)
        if stored is not None:
            item = stored.model_copy(update={"labels": [*stored.labels, label]})
            self._replace(item)
        else:
            item = LabelledItem(
                id=draft.id,
                prompt=draft.prompt,
                output=draft.output,
                context=draft.context,
                criteria=draft.asked.criteria,
                rubric=draft.asked.rubric,
                labels=[label],
            )
            self._append(item)
        self.items[item.id] = item
        return item

    def _append(self, item: LabelledItem) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as out:
            if out.tell() > 0 and not self._ends_with_newline():
                out.write(b"\n")
            out.write((_line(item) + "\n").encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def _replace(self, item: LabelledItem) -> None:
        """Rewrite the file with ``item``'s line replaced (the first valid line of its id)."""
        text = self.path.read_bytes().decode("utf-8", errors="replace")
        lines = text.splitlines()  # as load_labels splits them, so line numbers agree
        bad = {b.line for b in load_labels(self.path).bad}
        for number, raw in enumerate(lines, 1):
            if number in bad or not raw.strip():
                continue
            try:
                obj = read_json(raw)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and obj.get("id") == item.id:
                lines[number - 1] = _line(item)
                break
        else:
            raise OSError(f"{self.path}: item {item.id!r} is no longer in the file")
        try:
            write_file(self.path, "\n".join(lines) + "\n")  # whole, or not at all
        except StoreError as exc:  # add() promises OSError for a file it cannot write
            raise OSError(str(exc)) from None
