"""Calibration sets: human-labelled judgements, one JSON object a line.

``{"id", "prompt", "output", "context"?, "criteria" (names → descriptions) or "rubric",
"labels": [{"labeller", "verdict": "pass"|"fail"|"unsure", "note"?}], "split"?: "dev"|"heldout"}``

Several labellers per item give the human–human agreement ceiling; an item whose decisive
labels tie, or that has only ``unsure`` ones, is unsure: counted, left out of the rates. An item
without ``split`` is assigned one from a stable hash of its id: 40% dev, 60% held-out, the same
on every machine and every run. Only the dev split may be looked at while tuning a rubric or a
judge prompt (calibration uses it only to pick the judge's threshold).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from coalmine._source import Document, read_json
from coalmine._source import validation_problems as _validation_problems
from coalmine.specs.suite import BadLine

Verdict = Literal["pass", "fail", "unsure"]
Split = Literal["dev", "heldout"]
DEV_SHARE = 40
"""Percent of items (by the hash of their id) in the dev split."""


class Label(BaseModel):
    """One person's verdict on one output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    labeller: str = Field(min_length=1)
    verdict: Verdict
    note: str | None = None


class LabelledItem(BaseModel):
    """A judged output and what people said of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    prompt: str
    """The task the agent was given."""
    output: str
    """What the agent answered (what the judge grades)."""
    context: str | list[str] | None = None
    criteria: dict[str, str] | list[str] | None = None
    """llm-judge criteria: names, or names → descriptions."""
    rubric: str | None = None
    """An llm-rubric rubric (instead of criteria)."""
    labels: list[Label] = Field(min_length=1)
    split: Split | None = None

    @model_validator(mode="after")
    def _criteria_or_rubric(self) -> LabelledItem:
        if (self.criteria is None) == (self.rubric is None):
            raise ValueError("give either 'criteria' (llm-judge) or 'rubric' (llm-rubric)")
        if self.criteria is not None and not self.criteria:
            raise ValueError("'criteria' is empty")
        return self

    @property
    def grader(self) -> str:
        """The grader that judges this item: ``llm-judge`` or ``llm-rubric``."""
        return "llm-judge" if self.criteria is not None else "llm-rubric"

    @property
    def grader_config(self) -> dict[str, Any]:
        """The grader config that asks the judge what the labellers were asked."""
        if self.criteria is not None:
            return {"criteria": self.criteria}
        return {"value": self.rubric}

    @property
    def assigned_split(self) -> Split:
        """The item's split: its own, or 40/60 by a stable hash of its id."""
        return self.split or split_of(self.id)


def split_of(item_id: str) -> Split:
    """``dev`` for 40% of ids, ``heldout`` for the rest, by sha256 of the id."""
    bucket = int(hashlib.sha256(item_id.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "dev" if bucket < DEV_SHARE else "heldout"


@dataclass
class LabelSet:
    """A loaded calibration set."""

    path: Path
    sha256: str
    """Of the file's bytes: the record names exactly which labels it was computed from."""
    items: list[LabelledItem] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)

    @property
    def set_id(self) -> str:
        """The set's name (its file's stem)."""
        return self.path.stem


def load_labels(path: Path) -> LabelSet:
    """Read a calibration set; a bad line is reported with file:line and the rest loads.

    Raises:
        OSError: the file cannot be read.
    """
    data = path.read_bytes()
    labels = LabelSet(path, "sha256:" + hashlib.sha256(data).hexdigest())
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = read_json(raw)
        except json.JSONDecodeError as exc:
            labels.bad.append(BadLine(path, number, f"not valid JSON ({exc.msg})"))
            continue
        raw_id = obj.get("id") if isinstance(obj, dict) else None
        item_id = raw_id if isinstance(raw_id, str) else None
        try:
            item = LabelledItem.model_validate(obj)
        except ValidationError as exc:
            doc = Document(path, obj, {}, number)
            found = _validation_problems(exc, doc, LabelledItem)
            labels.bad.append(BadLine(path, number, "; ".join(p.message for p in found), item_id))
            continue
        if item.id in seen:
            message = f"duplicate id (first on line {seen[item.id]})"
            labels.bad.append(BadLine(path, number, message, item.id))
            continue
        seen[item.id] = number
        labels.items.append(item)
    return labels
