"""Calibrate a judge against human labels: judge every labelled item, summarise, store.

Every item goes to the judge's grader (``llm-judge`` for items with criteria, ``llm-rubric`` for
items with a rubric) ``reruns`` times, and once to each judge of the quorum. Judge calls go
through the judge's own caller (its limits, retries and the response cache: each rerun has its
own cache entry), so an interrupted calibration run again answers what it already asked from
the cache. The record names exactly what was calibrated: the judge's identity (provider, model,
temperature, system prompt), the prompt template's and the rubrics' sha256, the labels file's
sha256 and the held-out items, the models that answered (``judge.served_models``, as the
replies name them) and each item's verdict; it keeps every raw judge reply as an artifact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from coalmine._util.hashing import hash_text
from coalmine.backends.shards import sharded
from coalmine.config import Config
from coalmine.engine.wiring import Wiring, secret_values
from coalmine.errors import ConfigError
from coalmine.graders.base import registry as graders
from coalmine.graders.judged import judge_prompt_identity
from coalmine.judge.calibration import JudgedItem, disagreements, summarize
from coalmine.judge.judging import (
    ItemVerdict,
    Judging,
    calibrated_agent,
    identity_key_of,
)
from coalmine.judge.labels import LabelledItem, LabelSet
from coalmine.judge.lessons import retain_calibration_lessons
from coalmine.store.cache import ResponseCache
from coalmine.store.runs import Store

if TYPE_CHECKING:
    from coalmine.backends.shards import Backend


OUTPUT_SCHEMAS = {"llm-judge": "llm-judge/criteria-v1", "llm-rubric": "llm-rubric/pass-score-v1"}


@dataclass(frozen=True)
class CalibrationOutcome:
    """The stored record and its id."""

    record: dict[str, Any]
    calibration_id: int
    lessons: tuple[int, ...] = ()
    """Ids of the lessons its disagreements with the humans were retained as."""


async def calibrate(
    config: Config,
    labels: LabelSet,
    *,
    store: Store,
    judge: str | None = None,
    reruns: int = 3,
    quorum: Sequence[str] = (),
    concurrency: int = 8,
    cache: bool = True,
    verbosity: bool = True,
    workers: int = 1,
    backend: Backend | None = None,
) -> CalibrationOutcome:
    """Judge every labelled item, compute the calibration, store its record.

    ``workers`` above 1 judges the items on that many shards of ``backend`` (worker processes by
    default, or Ray actors), each with its part of ``concurrency`` and of the judges' limits;
    they ask afresh, for the cache is the store's, which only this process opens.

    Raises:
        ConfigError: no judge, an unknown agent, or a set that mixes criteria and rubrics.
    """
    kinds = {item.grader for item in labels.items}
    if len(kinds) != 1:
        raise ConfigError(
            f"{labels.path}: a calibration set calibrates one kind of judge grader; this one "
            f"has {', '.join(sorted(kinds)) or 'no valid items'} (criteria or a rubric, not both)",
            path=labels.path,
        )
    (kind,) = kinds
    primary = calibrated_agent(config, judge)
    others = [calibrated_agent(config, name) for name in quorum]
    judged = [JudgedItem(item, [None] * reruns) for item in labels.items]
    replies: dict[str, list[str]] = {}
    verdicts: list[ItemVerdict | None]
    if sharded(workers, backend):
        from coalmine.judge.shard import judge_on_shards

        verdicts = await judge_on_shards(
            config, labels.items, kind=kind, judge=judge, quorum=[a.name for a in others],
            reruns=reruns, verbosity=verbosity, concurrency=concurrency, workers=workers,
            backend=backend,
        )  # fmt: skip
        identity_key = identity_key_of(config, primary)
    else:
        wiring = Wiring(
            ResponseCache(store) if cache else None, tuple(secret_values(config)), None, None
        )
        callers = {a.name: wiring.caller(a) for a in [primary, *others]}
        judging = Judging(
            callers, kind, config.defaults.judge_timeout_seconds, reruns, primary.name,
            [a.name for a in others], verbosity, anyio.CapacityLimiter(concurrency),
        )  # fmt: skip
        verdicts = [None] * len(judged)

        async def judge_item(position: int, item: LabelledItem) -> None:
            verdicts[position] = await judging.judge(item)

        try:
            async with anyio.create_task_group() as tg:
                for position, item in enumerate(labels.items):
                    tg.start_soon(judge_item, position, item)
        finally:
            with anyio.CancelScope(shield=True):
                for c in callers.values():
                    await c.provider.aclose()
        identity_key = callers[primary.name].identity_key()
    served: set[str] = set()
    for j, verdict in zip(judged, verdicts, strict=True):
        assert verdict is not None
        served.update(verdict.models)
        j.scores, j.quorum, j.padded = list(verdict.scores), dict(verdict.quorum), verdict.padded
        if verdict.replies:
            replies.setdefault(j.item.id, []).extend(verdict.replies)
    record = summarize(
        judged,
        default_threshold=graders.get(kind).threshold,
        limits=config.judge_calibration,
        quorum_names=[a.name for a in others],
    )
    identities = {
        found
        for item in labels.items
        if (found := judge_prompt_identity(kind, item.grader_config)) is not None
    }
    templates = {i.template_sha256 for i in identities}
    heldout = sorted(j.item.id for j in judged if j.item.assigned_split == "heldout")
    settings = primary.settings
    record.update(
        {
            "created_at": datetime.now(UTC).isoformat(),
            "grader": kind,
            "judge": {
                "agent": primary.name,
                "provider": primary.provider,
                "model": getattr(settings, "model", None),
                "temperature": getattr(settings, "temperature", None),
                "identity_key": identity_key,
                "served_models": sorted(served),
            },
            "judge_prompt_sha256": next(iter(templates)) if len(templates) == 1 else None,
            "output_schema": OUTPUT_SCHEMAS[kind],
            "rubric_sha256s": sorted(i.rubric_sha256 for i in identities),
            "rubric_source": str(labels.path),
            "calibration_set": {
                "id": labels.set_id,
                "path": str(labels.path),
                "sha256": labels.sha256,
                "items": len(labels.items),
                "bad_lines": len(labels.bad),
            },
            "heldout_set": {
                "id": f"{labels.set_id}#heldout",
                "sha256": hash_text("\n".join(heldout)),
                "items": len(heldout),
            },
        }
    )
    calibration_id = store.record_calibration(
        identity_key, may_block=bool(record["may_block"]), record=record, replies=replies
    )
    lessons = retain_calibration_lessons(
        store,
        disagreements(judged, threshold=record["threshold"]),
        judge=primary.name,
        judge_key=identity_key,
        labels=labels,
        root=config.root,
    )
    return CalibrationOutcome(record, calibration_id, tuple(lessons))
