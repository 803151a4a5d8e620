"""A promptfoo run shown three ways: a table, coalmine's JSON rows, promptfoo's result file.

:func:`render_table` prints one line per row (``testIdx``, ``promptIdx``, provider, verdict,
score, reason) and a summary; :func:`rows_json` gives each row's verdict and its assertions;
:func:`promptfoo_document` builds the document ``promptfoo eval -o out.json`` writes
(:mod:`coalmine.promptfoo.report`), so tools that read promptfoo's output read coalmine's.

What the document cannot say as promptfoo would: reasons are coalmine's graders' words
(``Assertion passed`` for a pass, as promptfoo), an error's text is coalmine's (no JavaScript
stack), a provider's cost is 0 (coalmine's agents report tokens, not cost), a provider's
returned ``error`` is reported like a thrown one (no ``response``), and ``config`` is the file's
config with promptfoo's defaults, not promptfoo's in-memory copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coalmine.promptfoo.grading import grading_result
from coalmine.promptfoo.matrix import Matrix
from coalmine.promptfoo.matrix.config import load_config as load_promptfoo_config
from coalmine.promptfoo.matrix.sources import Problems
from coalmine.promptfoo.report import (
    ReportColumn,
    ReportPrompt,
    ReportProvider,
    ReportRow,
    eval_id,
    promptfoo_output,
)
from coalmine.promptfoo.run import PromptfooRun, RunRow
from coalmine.promptfoo.scoring import ComponentResult

__all__ = [
    "config_section",
    "eval_id",
    "promptfoo_document",
    "render_table",
    "rows_json",
    "runtime_options",
]

_REASON_WIDTH = 100


def report_row(row: RunRow) -> ReportRow:
    """The row as :func:`~coalmine.promptfoo.report.promptfoo_output` takes it."""
    result, outcome = row.result, row.result.outcome
    return ReportRow(
        test_idx=row.row.test_idx,
        prompt_idx=row.row.prompt_idx,
        prompt=_prompt(row),
        provider=ReportProvider(id=row.provider.ref_id, label=row.provider.label or ""),
        rendered_prompt=result.rendered_prompt,
        vars=dict(result.test_case["vars"] if result.test_case else row.row.test.vars),
        test_case=result.test_case or row.test_case,
        output=result.output,
        success=outcome.success,
        score=outcome.score,
        failure_reason=int(outcome.failure_reason),
        error=outcome.error,
        grading_result=grading_result(outcome.grading) if outcome.grading else None,
        named_scores=outcome.named_scores,
        latency_ms=result.latency_ms,
        cost=result.cost or 0.0,
        token_usage=result.token_usage,
    )


def _prompt(row: RunRow) -> ReportPrompt:
    prompt = row.row.prompt
    config = dict(prompt.config) if prompt.config is not None else None
    return ReportPrompt(raw=prompt.raw, label=prompt.label, id=prompt.id, config=config)


def promptfoo_document(run: PromptfooRun, *, output_path: Path | None = None) -> dict[str, Any]:
    """The result file ``promptfoo eval -o FILE`` would write for this run."""
    columns = [
        ReportColumn(
            ReportPrompt(
                raw=c.prompt.raw,
                label=c.prompt.label,
                id=c.prompt.id,
                config=dict(c.prompt.config) if c.prompt.config is not None else None,
            ),
            ReportProvider(id=c.provider.id, label=c.provider.label or ""),
        )
        for c in run.matrix.columns
    ]
    return promptfoo_output(
        [report_row(r) for r in run.rows],
        config=config_section(run.matrix, run.environ, output_path),
        eval_id=eval_id(run.started_at),
        created_at=run.started_at,
        duration_ms=run.duration_ms,
        columns=columns,
        runtime_options=runtime_options(run.concurrency),
    )


def runtime_options(concurrency: int) -> dict[str, Any]:
    """The ``runtimeOptions`` promptfoo writes for ``eval --no-cache`` at this concurrency."""
    return {
        "eventSource": "cli",
        "showProgressBar": False,
        "repeat": 1,
        "maxConcurrency": concurrency,
        "cache": False,
    }


def config_section(
    matrix: Matrix, environ: Mapping[str, str], output_path: Path | None
) -> dict[str, Any]:
    """The config as promptfoo writes it: the file's keys, with promptfoo's defaults added."""
    raw = load_promptfoo_config(matrix.path, problems=Problems(), environ=environ)
    data: dict[str, Any] = dict(raw.data) if raw is not None else {}
    written = "defaultTest" in data
    config: dict[str, Any] = {"tags": data.pop("tags", {})}
    for key in ("env", "defaultTest", "outputPath", "extensions", "metadata", "evaluateOptions"):
        data.pop(key, None)
    config.update(data)
    config["env"] = dict(matrix.extras.get("env") or {})
    default = dict(matrix.default_test)
    if written:
        options, metadata = default.get("options") or {}, default.get("metadata") or {}
        config["defaultTest"] = {**default, "options": options, "metadata": metadata}
    if output_path is not None:
        config["outputPath"] = [str(output_path)]
    config["extensions"] = []
    config["metadata"] = dict(matrix.extras.get("metadata") or {})
    config["evaluateOptions"] = dict(matrix.extras.get("evaluateOptions") or {})
    return config


def rows_json(run: PromptfooRun) -> list[dict[str, Any]]:
    """Each row's verdict and its assertions' (coalmine's JSON for ``--format json``)."""
    out = []
    for row in run.rows:
        outcome = row.result.outcome
        components = outcome.grading.component_results if outcome.grading else ()
        out.append(
            {
                "testIdx": row.row.test_idx,
                "promptIdx": row.row.prompt_idx,
                "provider": row.provider.key,
                "prompt": row.row.prompt.label,
                "description": row.row.test.description,
                "status": outcome.status,
                "success": outcome.success,
                "score": outcome.score,
                "failureReason": int(outcome.failure_reason),
                "error": outcome.error,
                "namedScores": dict(outcome.named_scores),
                "assertions": [_assertion_json(c) for c in components],
                "output": row.result.output,
            }
        )
    return out


def _assertion_json(entry: ComponentResult) -> dict[str, Any]:
    kind = "assert-set" if "assertionSet" in entry.metadata else None
    if kind is None and entry.assertion is not None:
        kind = entry.assertion.type
    return {"type": kind, "pass": entry.passed, "score": entry.score, "reason": entry.reason}


def render_table(run: PromptfooRun) -> str:
    """One line per row, then a summary line."""
    table = [("TEST", "PROMPT", "PROVIDER", "RESULT", "SCORE", "REASON")]
    counts: Mapping[str, int] = {"pass": 0, "fail": 0, "error": 0}
    tally = dict(counts)
    for row in run.rows:
        outcome = row.result.outcome
        tally[outcome.status] += 1
        reason = (outcome.error or "").strip().splitlines()
        shown = reason[0] if reason else ""
        if len(shown) > _REASON_WIDTH:
            shown = shown[: _REASON_WIDTH - 1] + "…"
        cells = (str(row.row.test_idx), str(row.row.prompt_idx), row.provider.key)
        table.append((*cells, outcome.status.upper(), f"{outcome.score:.4f}", shown))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)), r[-1]]).rstrip()
        for r in table
    ]
    total = len(run.rows)
    lines.append(
        f"{total} row{'s' if total != 1 else ''}: {tally['pass']} passed, {tally['fail']} "
        f"failed, {tally['error']} errored ({run.matrix.path})"
    )
    return "\n".join(lines)
