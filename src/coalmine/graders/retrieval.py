"""Retrieval graders: one per metric of `coalmine.metrics.retrieval_metrics`.

``precision@k``, ``recall@k``, ``hit_rate@k``, ``mrr``, ``mrr@k``, ``ndcg@k``, ``ndcg_exp@k``,
``map`` and ``map@k`` score what the agent says it retrieved against the case's ``relevant``
judgements, with trec_eval's conventions (see `coalmine.metrics`). Each scores the metric
itself (0..1) and passes when it reaches the config's ``threshold``.

What the agent retrieved is read from its output as JSON, at ``path`` (default ``retrieved``):
the whole output when it is JSON, else the first JSON object or array in it where ``path``
leads somewhere (so prose or a code fence around the JSON is fine). The value there is either

- a list of doc ids, best first: the list order is the ranking (the ids get the scores
  n, n-1, …, 1, so ``ties`` cannot matter); or
- a list of ``{"id": str, "score": number}`` objects (other keys are ignored): ranked by
  score, and equal scores are ordered by ``ties`` — ``"trec"`` (doc id, descending, as
  trec_eval) or ``"input"`` (the list's order). Objects without ``score`` (all of them) are
  ranked by the list order, as plain ids are.

Output that is not JSON, a missing path, a list of anything else or a doc id listed twice
fails the grade (score 0, with the ``problem``): that is the agent's fault. A case without
``relevant`` judgements is a configuration error; a case whose judgements name no relevant
doc (no grade >= 1) is undefined, so the grade is skipped, as suite means skip it.

``threshold`` defaults to 0.5, a ranking at least half right: for ``mrr`` a relevant doc at
rank 1 or 2, for ``recall@k`` half the relevant docs within k, for ``ndcg`` and ``map`` most
relevant docs near the top. ``hit_rate@k`` scores only 0 or 1, so it passes only at 1. Set
your own from a baseline; mind that ``precision@k`` divides by k, so with fewer than k
relevant docs it cannot reach 1, and ``recall@k`` and ``map@k`` cannot when there are more
than k: the grade warns when its threshold is out of reach for the case.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from coalmine._util.jsonpath import PathNotFound, find_json, lookup, parse_json, parse_path
from coalmine.errors import GradeError
from coalmine.graders.base import CaseInputs, GradeContext, GradeFn, grader
from coalmine.metrics import Ties, retrieval_metrics, tie_warnings
from coalmine.results import Grade

_CONFIG = ConfigDict(extra="forbid", frozen=True)
_EPSILON = 1e-9  # float slack when comparing a score with its threshold, as the runner's gate
_SHOWN = 80


class RankConfig(BaseModel):
    """Config of ``mrr`` and ``map``, which score the whole ranking (they take no ``k``)."""

    model_config = _CONFIG
    case_inputs: ClassVar[CaseInputs] = {"relevant": ()}

    threshold: float = Field(0.5, ge=0, le=1)
    """The metric value at which the grader passes."""
    path: str = Field("retrieved", min_length=1)
    """Where the retrieved list is in the output's JSON: dotted (``result.docs``) or ``$``
    JSONPath (``$.result['docs']``); ``$`` alone is the whole JSON value."""
    ties: Ties = "trec"
    """How equal scores are ordered: ``trec`` by doc id, descending (as trec_eval), or
    ``input`` by their order in the list. Only ``{id, score}`` lists can tie."""

    @field_validator("path")
    @classmethod
    def _valid_path(cls, value: str) -> str:
        parse_path(value)
        return value


class CutConfig(RankConfig):
    """Config of every ``@k`` grader (``precision@k`` … ``map@k``) but ``hit_rate@k``."""

    k: int = Field(10, ge=1, strict=True)
    """The cut-off: only the top k retrieved docs count."""


class HitRateConfig(CutConfig):
    """Config of ``hit_rate@k``: it scores 0 or 1, so it passes only at 1 by default."""

    threshold: float = Field(1.0, ge=0, le=1)
    """The metric value at which the grader passes (any value above 0 means "a hit")."""


class RetrievalGrade(Grade):
    """Result of a retrieval grader."""

    metric: str
    """The metric with its cut-off, e.g. ``recall@5``."""
    value: float | None = None
    """The metric; ``None`` when it is undefined (no relevant doc) or the output is unusable."""
    threshold: float
    k: int | None = None
    retrieved: int = 0
    """How many docs the agent listed."""
    relevant: int = 0
    """How many docs the case judges relevant (grade >= 1)."""
    found: int = 0
    """Relevant docs within the top k (the whole list for ``mrr`` and ``map``)."""
    warnings: list[str] = []
    """A tie split by the cut-off; a threshold the metric cannot reach for this case."""
    problem: str | None = None
    """Why the retrieved list could not be read (not JSON, no such path, a malformed list)."""

    def explain(self) -> str:
        """Say why the grade failed: an unreadable list, or the metric below the threshold."""
        if self.problem is not None:
            return self.problem
        if self.passed is not False or self.value is None:
            return ""
        where = "retrieved" if self.k is None else f"in the top {self.k}"
        if self.metric.startswith("mrr"):
            seen = "no relevant doc " + where
            if self.value > 0:
                seen = f"the first relevant doc is at rank {round(1 / self.value)}"
        else:
            seen = f"{self.found} of {self.relevant} relevant docs {where}"
        text = f"{self.metric} is {self.value:.3g}, below {self.threshold:g}: {seen}"
        return "; ".join([text, *self.warnings])


# ---------------------------------------------------------------- inputs


def _qrels(ctx: GradeContext, name: str) -> dict[str, int]:
    """The case's judgements as doc id → grade; a configuration error when absent or malformed."""
    relevant = ctx.inputs.get("relevant")
    shape = "a list of relevant doc ids, or an object of doc id → grade"
    if relevant is None:
        raise GradeError(
            f"the case has no 'relevant' judgements; give it {shape}", grader=name, config=True
        )
    if isinstance(relevant, Mapping):
        bad = [
            key
            for key, grade in relevant.items()
            if not isinstance(key, str) or isinstance(grade, bool) or not isinstance(grade, int)
        ]
        if not bad:
            return dict(relevant)
        what = f"grade of {bad[0]!r} is {relevant[bad[0]]!r}, not an integer"
    elif isinstance(relevant, list | tuple):
        bad = [doc for doc in relevant if not isinstance(doc, str)]
        if not bad:
            return dict.fromkeys(relevant, 1)
        what = f"{bad[0]!r} is not a doc id string"
    else:
        what = f"it is {type(relevant).__name__}"
    message = f"the case's 'relevant' judgements are malformed ({what}); give {shape}"
    raise GradeError(message, grader=name, config=True)


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _at_path(output: str, spec: str) -> Any:
    """The value at ``spec`` in the output's JSON; ``ValueError`` saying why there is none."""
    steps = parse_path(spec)
    try:
        candidates = [parse_json(output)]
    except ValueError:
        candidates = find_json(output)
        if not candidates:
            raise ValueError("the output holds no JSON object or array") from None
    misses: list[PathNotFound] = []
    for candidate in candidates:
        try:
            return lookup(candidate, steps)
        except PathNotFound as miss:
            misses.append(miss)
    where = (
        "the output's JSON" if len(candidates) == 1 else f"any of the {len(candidates)} JSON values"
    )
    raise ValueError(f"path {spec!r} is not in {where} ({misses[0].reason})")


def _run(value: Any, spec: str) -> list[tuple[str, float]]:
    """The retrieved list as ``(doc id, score)`` pairs; ``ValueError`` when it is malformed."""
    if not isinstance(value, list):
        raise ValueError(
            f"{spec} is {_compact(value)}, not a list of doc ids or {{id, score}} objects"
        )
    if all(isinstance(item, str) for item in value):
        return [(doc, float(len(value) - i)) for i, doc in enumerate(value)]
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ValueError(
                f"item {i} of {spec} is {_compact(item)}: give every item as a doc id string,"
                ' or every item as an {"id": "…", "score": …} object'
            )
    scored = ["score" in item for item in value]
    if not any(scored):
        return [(item["id"], float(len(value) - i)) for i, item in enumerate(value)]
    if not all(scored):
        i = scored.index(False)
        raise ValueError(f"item {i} of {spec} has no 'score' while others have one")
    run = []
    for i, item in enumerate(value):
        score = item["score"]
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise ValueError(f"item {i} of {spec} has score {_compact(score)}, not a number")
        try:
            run.append((item["id"], float(score)))
        except OverflowError:
            raise ValueError(f"item {i} of {spec} has a score too large for a float") from None
    return run


# ---------------------------------------------------------------- grading


def _ceiling(family: str, relevant: int, k: int | None) -> float:
    """The best value the metric can take for a case with ``relevant`` relevant docs."""
    if k is None:
        return 1.0
    if family == "precision":  # divides by k, however few docs are relevant
        return min(relevant, k) / k
    if family in ("recall", "map"):  # divide by all relevant docs, but only k can count
        return min(relevant, k) / relevant
    return 1.0


def _grade(
    name: str, family: str, config: RankConfig, output: str, ctx: GradeContext
) -> RetrievalGrade:
    qrels = _qrels(ctx, name)
    k = config.k if isinstance(config, CutConfig) else None
    metric = name if k is None else f"{family}@{k}"
    relevant = sum(1 for grade in qrels.values() if grade >= 1)
    common: dict[str, Any] = {"metric": metric, "threshold": config.threshold, "k": k}
    try:
        run = _run(_at_path(output, config.path), config.path)
        # recall at the cut-off counts what was found; without one, over the whole list
        cut = k if k is not None else max(len(run), 1)
        metrics = retrieval_metrics(qrels, run, ks=(cut,), ties=config.ties)
        warnings = [] if k is None else tie_warnings(run, ks=(k,), ties=config.ties)
    except ValueError as exc:  # the agent's output, not the case, is at fault
        problem = f"cannot read the retrieved docs: {exc}"
        return RetrievalGrade(score=0.0, passed=False, problem=problem, relevant=relevant, **common)
    value = metrics[metric]
    common.update(retrieved=len(run), relevant=relevant)
    if value is None:
        reason = f"{metric} is undefined: the case judges no doc relevant (grade >= 1)"
        return RetrievalGrade(skipped=True, reason=reason, **common)
    ceiling = _ceiling(family, relevant, k)
    if ceiling < config.threshold - _EPSILON:
        warnings.append(
            f"threshold {config.threshold:g} is out of reach: with {relevant} relevant"
            f" doc(s), {metric} is at most {ceiling:.3g}"
        )
    found = round((metrics[f"recall@{cut}"] or 0.0) * relevant)
    passed = value >= config.threshold - _EPSILON
    return RetrievalGrade(
        score=value, passed=passed, value=value, found=found, warnings=warnings, **common
    )


def _retrieval_grader(name: str, family: str, doc: str) -> GradeFn:
    async def grade(config: RankConfig, output: str, ctx: GradeContext) -> Grade:
        return _grade(name, family, config, output, ctx)

    grade.__name__ = name.replace("@", "_at_")
    grade.__doc__ = doc
    return grade


_GRADERS: list[tuple[str, str, type[RankConfig], str]] = [
    ("precision@k", "precision", CutConfig, "Relevant docs in the top k, divided by k."),
    ("recall@k", "recall", CutConfig, "Relevant docs in the top k, divided by all relevant."),
    ("hit_rate@k", "hit_rate", HitRateConfig, "1 when a relevant doc is in the top k, else 0."),
    ("mrr", "mrr", RankConfig, "1 / the rank of the first relevant doc (0 when none)."),
    ("mrr@k", "mrr", CutConfig, "1 / the rank of the first relevant doc, 0 when below k."),
    ("ndcg@k", "ndcg", CutConfig, "Normalised DCG of the top k, gain = the grade."),
    ("ndcg_exp@k", "ndcg_exp", CutConfig, "Normalised DCG of the top k, gain = 2^grade - 1."),
    ("map", "map", RankConfig, "Average precision over the whole list (per relevant doc)."),
    ("map@k", "map", CutConfig, "Average precision over the top k (per relevant doc)."),
]
for _name, _family, _config, _doc in _GRADERS:
    _threshold = _config.model_fields["threshold"].default
    grader(_name, config=_config, threshold=_threshold)(_retrieval_grader(_name, _family, _doc))
