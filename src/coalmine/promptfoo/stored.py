"""promptfoo's result document for a stored run of imported suites (``--format promptfoo``).

Each line of a ``compat: promptfoo`` suite is stored with the row as promptfoo's result file
holds it (:mod:`coalmine.promptfoo.suite`), so the document ``promptfoo eval -o`` would
write can be built from the store after the run, or for a resumed one: each suite is a column
(its prompt and provider), each stored line a row (its first repeat). The ``config`` section is
the promptfoo config the suites were imported from, when every suite names the same one and it
is still there; otherwise the columns' prompts and providers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from coalmine.errors import ConfigError
from coalmine.evals.plan import PlannedSuite
from coalmine.graders.base import grader_configs
from coalmine.promptfoo.matrix import load_matrix
from coalmine.promptfoo.output import config_section, eval_id, runtime_options
from coalmine.promptfoo.report import (
    ReportColumn,
    ReportPrompt,
    ReportProvider,
    ReportRow,
    promptfoo_output,
)
from coalmine.promptfoo.suite import line_test_case
from coalmine.specs.suite import SuiteMeta, load_suite
from coalmine.store.evals import iter_attempts
from coalmine.store.runs import Store

__all__ = ["stored_document"]


def stored_document(
    store: Store,
    run_id: str,
    suites: Sequence[PlannedSuite],
    *,
    output_path: Path | None = None,
) -> dict[str, Any]:
    """The result document of the run's imported suites (every suite must be one)."""
    info = store.get_run(run_id)
    started = datetime.fromisoformat(info.started_at)
    ended = datetime.fromisoformat(info.ended_at) if info.ended_at else started
    metas = [s.index.meta for s in suites]
    indexes = [m.promptfoo.prompt_idx for m in metas if m.promptfoo is not None]
    renumber = len(set(indexes)) != len(indexes)  # suites of several configs: number them anew
    columns, rows = [], []
    for position, suite in enumerate(suites):
        meta = suite.index.meta
        source = meta.promptfoo
        assert source is not None
        column = position if renumber else source.prompt_idx
        prompt = _prompt(meta)
        provider = ReportProvider(id=source.provider.id, label=source.provider.label or "")
        columns.append((column, ReportColumn(prompt, provider)))
        lines = load_suite(suite.index.path, grader_configs=grader_configs()).cases
        by_id = {c.case.id: c for c in lines}
        for attempt in iter_attempts(store, run_id, suite.name):
            row = attempt.record.get("promptfoo")
            case = by_id.get(attempt.case_id)
            if attempt.rep != 0 or not isinstance(row, dict) or case is None:
                continue
            assert case.promptfoo is not None
            output = row["output"] if "output" in row else attempt.record.get("output")
            rows.append(
                ReportRow(
                    test_idx=row["testIdx"],
                    prompt_idx=column,
                    prompt=prompt,
                    provider=provider,
                    rendered_prompt=attempt.record.get("prompt", ""),
                    vars=row.get("vars", {}),
                    test_case=row.get("testCase") or line_test_case(case.promptfoo),
                    output=output,
                    success=row["success"],
                    score=row["score"],
                    failure_reason=row["failureReason"],
                    error=row.get("error"),
                    grading_result=row.get("gradingResult"),
                    named_scores=row.get("namedScores", {}),
                    latency_ms=row.get("latencyMs", 0),
                    cost=row.get("cost", 0.0),
                    token_usage=row.get("tokenUsage"),
                )
            )
    columns.sort(key=lambda c: c[0])
    return promptfoo_output(
        rows,
        config=_config(suites, output_path),
        eval_id=eval_id(started),
        created_at=started,
        duration_ms=round((ended - started).total_seconds() * 1000),
        columns=[c for _, c in columns],
        runtime_options=runtime_options(info.options.get("concurrency") or 1),
    )


def _prompt(meta: SuiteMeta) -> ReportPrompt:
    assert meta.promptfoo is not None
    prompt = meta.promptfoo.prompt
    config = dict(prompt.config) if prompt.config is not None else None
    return ReportPrompt(
        raw=meta.prompt_template or "", label=prompt.label, id=prompt.id, config=config
    )


def _config(suites: Sequence[PlannedSuite], output_path: Path | None) -> dict[str, Any]:
    """The source config's section, when all suites came from one that is still there."""
    sources = set()
    for suite in suites:
        meta = suite.index.meta
        assert meta.promptfoo is not None
        sources.add((suite.index.path.parent / meta.promptfoo.config).resolve())
    if len(sources) == 1:
        [path] = sources
        if path.is_file():
            try:
                return config_section(load_matrix(path, environ={}), {}, output_path)
            except ConfigError:
                pass  # changed since the import: describe the columns instead
    prompts, providers = [], []
    for suite in suites:
        meta = suite.index.meta
        assert meta.promptfoo is not None
        prompts.append(meta.prompt_template or "")
        providers.append(meta.promptfoo.provider.id)
    config: dict[str, Any] = {"prompts": prompts, "providers": providers}
    if output_path is not None:
        config["outputPath"] = [str(output_path)]
    return config
