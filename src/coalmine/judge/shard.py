"""Judge calibration on several engines: worker processes, or actors on a Ray cluster.

As with an eval run (:mod:`coalmine.evals.shard`), the driver sends work and alone writes the
store; each shard loads the config itself from the project (secrets only from its environment)
and gets its part of ``--concurrency`` and of the judges' limits. The unit of work is a
labelled item: every rerun of the primary judge, each quorum judge, and the padded output.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from coalmine.backends.engine import EngineSpec
from coalmine.backends.shards import Backend, run_sharded
from coalmine.config import Config
from coalmine.engine.history import require_project_config
from coalmine.engine.limits import shard_config, split_count
from coalmine.engine.wiring import Wiring, secret_values
from coalmine.judge.judging import ItemVerdict, Judging, calibrated_agent
from coalmine.judge.labels import LabelledItem

ENGINE = "coalmine.judge.shard:open_calibration_engine"


@dataclass(frozen=True)
class CalibrationSpec:
    """What a calibration shard needs: plain data, no secret."""

    root: str
    kind: str
    judge: str | None
    """The agent calibrated (None: the config's judge)."""
    quorum: tuple[str, ...]
    reruns: int
    verbosity: bool


async def judge_on_shards(
    config: Config,
    items: Sequence[LabelledItem],
    *,
    kind: str,
    judge: str | None,
    quorum: Sequence[str],
    reruns: int,
    verbosity: bool,
    concurrency: int,
    workers: int,
    backend: Backend | None,
) -> list[ItemVerdict | None]:
    """What the judges said of each item, in order, judged on ``workers`` shards.

    Raises:
        CoalmineError: a shard could not open, or every shard was lost.
    """
    backend = backend or Backend()
    root = "." if backend.kind == "ray" else str(config.root)
    spec = CalibrationSpec(root, kind, judge, tuple(quorum), reruns, verbosity)
    engines = [
        EngineSpec(ENGINE, spec, i, workers, max(1, split_count(concurrency, i, workers)))
        for i in range(workers)
    ]
    found: list[ItemVerdict | None] = [None] * len(items)

    async def keep(item: tuple[int, LabelledItem], verdict: ItemVerdict) -> None:
        found[item[0]] = verdict

    secrets = secret_values(config)

    def scrub(text: str) -> str:
        from coalmine._util.secrets import redact

        return redact(text, secrets)

    await run_sharded(
        backend, engines, list(enumerate(items)), keep, stop=anyio.Event(), cancel=None,
        scrub=scrub,
    )  # fmt: skip
    return found


@asynccontextmanager
async def open_calibration_engine(
    spec: CalibrationSpec, index: int, count: int
) -> AsyncIterator[Callable[[tuple[int, LabelledItem]], Awaitable[ItemVerdict]]]:
    """A shard's engine: judges one labelled item with every judge of the calibration."""
    config = shard_config(require_project_config(Path(spec.root).resolve()), index, count)
    wiring = Wiring(None, tuple(secret_values(config)), None, None)
    primary = calibrated_agent(config, spec.judge)
    others = [calibrated_agent(config, name) for name in spec.quorum]
    callers = {a.name: wiring.caller(a) for a in [primary, *others]}
    judging = Judging(
        callers, spec.kind, config.defaults.judge_timeout_seconds, spec.reruns, primary.name,
        list(spec.quorum), spec.verbosity,
    )  # fmt: skip

    async def handle(item: tuple[int, LabelledItem]) -> ItemVerdict:
        return await judging.judge(item[1])

    try:
        yield handle
    finally:
        with anyio.CancelScope(shield=True):
            for caller in callers.values():
                await caller.provider.aclose()
