"""promptfoo's result file (``promptfoo eval -o out.json``), built from the rows coalmine ran.

This mirrors promptfoo 0.121.20: ``createOutputData`` (``src/util/output.ts``), the ``Eval``
model's ``toEvaluateSummary`` and ``getStats`` (``src/models/eval.ts``), ``EvalResult``'s
``createFromEvaluateResult`` and ``toEvaluateResult`` (``src/models/evalResult.ts``), the
evaluator's bookkeeping (``buildCompletedPrompts``, ``createEvaluateResult``, the ``runEval``
error path, ``updatePromptMetricsForRow`` and ``updatePromptResultCounts`` in
``src/evaluator.ts``), ``accumulateNamedMetric`` (``src/util/namedMetrics.ts``), the token
arithmetic of ``src/util/tokenUsageUtils.ts`` and ``sanitizeObject`` (``src/util/sanitizer.ts``).

- **Order of ``results``**: promptfoo reads the rows back from SQLite without ``ORDER BY``; the
  planner walks the ``(evalId, testIdx, success)`` index (``src/database/tables.ts``), so rows
  come by ``testIdx``, failed and errored rows before passed ones, then in the order they were
  stored: ``runSerially`` tests first, then as they finished. Finishing order is not
  reproducible; it is taken as ``promptIdx`` order, which is what ``-j 1`` gives.
- **``prompts``**: one column per provider × prompt (providers outer), ``provider`` the
  provider's label, else its id; ``id`` hashes the label, else the prompt's id, else its text.
  ``metrics`` add up each row in the order the rows were stored.
- **``stats``**: the columns' counts and token usage, summed.
- **An ERROR row** keeps the provider's response only when the provider *returned* an error
  (pass it as :attr:`ReportRow.response`); anything that threw (the provider, a transform, an
  unknown assertion) leaves no response, no token usage and ``metadata.errorContext``. No ERROR
  row has a ``gradingResult``.
- **Redaction**: the test case, the row's prompt and the config are written through promptfoo's
  ``sanitizeObject``: secret-named keys and secret-looking strings become ``[REDACTED]``, a
  string holding a JSON object or array is re-serialised compactly (a chat prompt's ``raw``
  loses its indentation), form-encoded secrets are masked and ``url`` values are normalised.

Bugs kept: ``description`` is never written (``EvalResult`` reads a field it never sets); a
metric without ``namedScoreWeights`` adds its raw value per row but counts every assertion that
feeds it. Left out: ``metadata.nodeVersion`` (no Node.js ran), ``derivedMetrics``, traces, blob
assets, redteam timings, HTTP-header redaction of response metadata, Azure SAS tokens, and
``url`` forms other than ``scheme://``.
"""

from __future__ import annotations

import hashlib
import platform as _platform
import secrets
import string
import sys
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from coalmine.promptfoo._redact import redact
from coalmine.promptfoo.nunjucks import render_metric_name
from coalmine.promptfoo.nunjucks._js import js_key, js_truthy, to_js
from coalmine.promptfoo.nunjucks._json import js_json_stringify

__all__ = [
    "PROMPTFOO_VERSION",
    "ReportColumn",
    "ReportPrompt",
    "ReportProvider",
    "ReportRow",
    "dump_promptfoo_output",
    "eval_id",
    "promptfoo_output",
]

PROMPTFOO_VERSION = "0.121.20"
_ASSERT, _ERROR = 1, 2
_ROW_IDS = uuid.UUID("5b0c7e1a-9d2f-4c3b-8a61-7f0e2d4c9b18")


def eval_id(started: datetime) -> str:
    """An id in promptfoo's form: ``eval-XXX-<timestamp>``."""
    suffix = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(3))
    return f"eval-{suffix}-{started.strftime('%Y-%m-%dT%H:%M:%S')}"


@dataclass(frozen=True)
class ReportPrompt:
    """A prompt as configured (its template, not a rendering)."""

    raw: str
    label: str
    id: str | None = None
    config: Mapping[str, Any] | None = None
    """The prompt's own ``config``, when it has one."""


@dataclass(frozen=True)
class ReportProvider:
    """A provider as promptfoo names it; ``label`` is ``""`` when none was given."""

    id: str
    label: str = ""


class ReportColumn(NamedTuple):
    """One column of the results table: a prompt for a provider."""

    prompt: ReportPrompt
    provider: ReportProvider


@dataclass(frozen=True, kw_only=True)
class ReportRow:
    """One test × prompt × provider, with the verdict coalmine's scoring gave it."""

    test_idx: int
    prompt_idx: int
    """The column: providers outer, prompts inner, as promptfoo numbers them."""
    prompt: ReportPrompt
    provider: ReportProvider
    rendered_prompt: str
    """What the provider was sent; ``""`` when the prompt failed to render."""
    vars: Mapping[str, Any]
    """The vars the row ran with (those the runner added, too), before redaction."""
    test_case: Mapping[str, Any]
    """The test as promptfoo holds it (``vars``, ``assert``, ``options``, ``metadata`` …)."""
    output: Any
    """The output graded (after transforms); ``None`` when there was none."""
    success: bool
    score: float
    failure_reason: int
    """0 none, 1 an assertion failed, 2 an error."""
    error: str | None = None
    grading_result: Mapping[str, Any] | None = None
    named_scores: Mapping[str, float] = field(default_factory=dict)
    latency_ms: int = 0
    cost: float = 0.0
    token_usage: Mapping[str, Any] | None = None
    """In promptfoo's keys (``prompt``, ``completion``, ``total``, ``cached``, ``numRequests``)."""
    description: str | None = None
    """Never written: promptfoo drops it (bug kept); the test case carries it."""
    response: Mapping[str, Any] | None = None
    """The provider's response exactly as promptfoo would hold it, to override the default."""


def promptfoo_output(
    rows: Iterable[ReportRow],
    *,
    config: Mapping[str, Any],
    eval_id: str,
    created_at: datetime,
    duration_ms: int,
    promptfoo_version: str = PROMPTFOO_VERSION,
    columns: Sequence[ReportColumn] | None = None,
    runtime_options: Mapping[str, Any] | None = None,
    exported_at: datetime | None = None,
    platform: str | None = None,
    arch: str | None = None,
) -> dict[str, Any]:
    """The document ``promptfoo eval -o out.json`` writes, for these rows.

    Args:
        rows: The rows, in any order.
        config: The config as promptfoo holds it once loaded; redacted here.
        eval_id: promptfoo's ``eval-XXX-<timestamp>`` id.
        created_at: When the evaluation started (timezone-aware).
        duration_ms: How long it took.
        promptfoo_version: The version written in ``metadata``.
        columns: Every column, in ``promptIdx`` order; by default those the rows name.
        runtime_options: The ``runtimeOptions`` to write (omitted when ``None``).
        exported_at: ``metadata.exportedAt``; by default ``created_at``.
        platform: ``metadata.platform``, Node's name for it; by default this machine's.
        arch: ``metadata.arch``, Node's name for it; by default this machine's.
    """
    stored = sorted(rows, key=_stored_key)
    table = list(columns) if columns is not None else _columns_of(stored)
    metrics = [_empty_metrics() for _ in table]
    for row in stored:
        if not 0 <= row.prompt_idx < len(table):
            raise ValueError(f"row {row.test_idx} names column {row.prompt_idx} of {len(table)}")
        _add_row(metrics[row.prompt_idx], row)
    written = sorted(stored, key=lambda row: (row.test_idx, row.success))
    timestamp = _iso(created_at)
    var_names = _var_names(stored)
    document: dict[str, Any] = {
        "evalId": eval_id,
        "results": {
            "version": 3,
            "timestamp": timestamp,
            "prompts": [_column(c, m) for c, m in zip(table, metrics, strict=True)],
            "results": [_result(row, eval_id) for row in written],
            "stats": _stats(metrics, duration_ms),
        },
        "config": redact(config),
        "shareableUrl": None,
        "metadata": {
            "promptfooVersion": promptfoo_version,
            "platform": platform or _node_platform(),
            "arch": arch or _node_arch(),
            "exportedAt": _iso(exported_at or created_at),
            "evaluationCreatedAt": timestamp,
        },
    }
    if var_names:
        document["vars"] = var_names
    if runtime_options is not None:
        document["runtimeOptions"] = _plain(runtime_options)
    return document


def dump_promptfoo_output(document: Mapping[str, Any]) -> str:
    """The document as promptfoo writes it: ``JSON.stringify(document, null, 2)``."""
    text = js_json_stringify(to_js(document), 2)
    assert text is not None  # a mapping always serialises
    return text


# --- order, columns, vars -----------------------------------------------------------------


def _stored_key(row: ReportRow) -> tuple[bool, int, int]:
    options = row.test_case.get("options") or {}
    return (not js_truthy(options.get("runSerially")), row.test_idx, row.prompt_idx)


def _columns_of(rows: Sequence[ReportRow]) -> list[ReportColumn]:
    found: dict[int, ReportColumn] = {}
    for row in rows:
        column = ReportColumn(row.prompt, row.provider)
        if found.setdefault(row.prompt_idx, column) != column:
            raise ValueError(f"column {row.prompt_idx} holds two prompts or providers")
    missing = [i for i in range(len(found)) if i not in found]
    if missing:
        raise ValueError(f"no row for columns {missing}: pass columns= to name every column")
    return [found[i] for i in range(len(found))]


def _var_names(rows: Sequence[ReportRow]) -> list[str]:
    # The tests' vars come first, in test order, then any a row added (``_conversation`` …).
    names: dict[str, None] = {}
    for row in sorted(rows, key=lambda r: r.test_idx):
        names.update(dict.fromkeys(row.test_case.get("vars") or {}))
    for row in rows:
        names.update(dict.fromkeys(row.vars))
    return list(names)


def _prompt_id(*, label: str | None, prompt_id: str | None, raw: str) -> str:
    key = label if label else prompt_id if prompt_id else raw
    return hashlib.sha256(key.encode()).hexdigest()


def _column(column: ReportColumn, metrics: dict[str, Any]) -> dict[str, Any]:
    prompt, provider = column
    entry: dict[str, Any] = {
        "id": _prompt_id(label=prompt.label, prompt_id=prompt.id, raw=prompt.raw),
        "raw": prompt.raw,
        "label": prompt.label,
    }
    if prompt.config is not None:
        entry["config"] = _plain(prompt.config)
    entry["provider"] = provider.label or provider.id
    entry["metrics"] = metrics
    return entry


# --- one result ---------------------------------------------------------------------------


def _response(row: ReportRow) -> dict[str, Any] | None:
    if row.response is not None:
        return _object(row.response)
    if row.failure_reason == _ERROR:
        return None
    if js_truthy(row.test_case.get("providerOutput")):
        return {"output": row.output, "tokenUsage": _empty_usage(), "cost": 0, "cached": False}
    if row.provider.id == "echo":
        echo_usage = {"total": 0, "prompt": 0, "completion": 0, "numRequests": 1}
        return {
            "output": row.output,
            "raw": row.rendered_prompt,
            "cost": 0,
            "cached": False,
            "tokenUsage": echo_usage,
            "isRefusal": False,
            "metadata": {},
        }
    response: dict[str, Any] = {"output": row.output}
    if row.token_usage is not None:
        response["tokenUsage"] = _plain(row.token_usage)
    if row.cost:
        response["cost"] = row.cost
    response["cached"] = False
    return response


def _grading(row: ReportRow) -> dict[str, Any] | None:
    if row.failure_reason == _ERROR or row.grading_result is None:
        return None
    return _object(row.grading_result)


def _metadata(row: ReportRow, response: Mapping[str, Any] | None) -> dict[str, Any]:
    metadata = dict(row.test_case.get("metadata") or {})
    if response is None:
        context = {"providerId": row.provider.id, "providerLabel": row.provider.label}
        return _object({**metadata, "errorContext": context})
    metadata.update(response.get("metadata") or {})
    metadata["_promptfooFileMetadata"] = _file_metadata(row.test_case.get("vars") or {})
    if not js_truthy(metadata.get("sessionIds")) and not js_truthy(metadata.get("sessionId")):
        session = _session_id(response.get("sessionId"))
        session = session if session is not None else _session_id(row.vars.get("sessionId"))
        metadata.pop("sessionId", None)
        if session is not None:
            metadata["sessionId"] = session
    return _object(metadata)


_MEDIA = {
    "image": {"jpg", "jpeg", "png", "gif", "bmp", "webp", "svg"},
    "video": {"mp4", "webm", "ogg", "mov", "avi", "wmv", "mkv", "m4v"},
    "audio": {"wav", "mp3", "ogg", "aac", "m4a", "flac", "wma", "aiff", "opus"},
}


def _file_metadata(test_vars: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, value in test_vars.items():
        if isinstance(value, str) and value.startswith("file://"):
            extension = value.rsplit(".", 1)[-1] if "." in value else ""
            kind = next((k for k, exts in _MEDIA.items() if extension.lower() in exts), None)
            if kind is not None:
                found[name] = {"path": value, "type": kind, "format": extension}
    return found


def _session_id(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else js_json_stringify(to_js(value))


def _result(row: ReportRow, eval_id: str) -> dict[str, Any]:
    response = _response(row)
    grading = _grading(row)
    test_case: dict[str, Any] = redact(row.test_case)
    prompt_config = {**(row.prompt.config or {}), **(row.test_case.get("options") or {})}
    prompt_config.pop("repeat", None)
    prompt = {"raw": row.rendered_prompt, "label": row.prompt.label, "config": prompt_config}
    usage = _empty_usage()
    if response is not None:
        _add_response_usage(usage, response)
    if grading is not None:
        usage["assertions"]["numRequests"] += 1
        _add_assertion_usage(usage["assertions"], grading.get("tokensUsed"))
    error = row.error
    if not error and row.failure_reason == _ASSERT and row.grading_result is not None:
        error = row.grading_result.get("reason")
    result: dict[str, Any] = {"cost": (response or {}).get("cost") or 0}
    if error:
        result["error"] = str(error)
    result |= {
        "gradingResult": grading,
        "id": str(uuid.uuid5(_ROW_IDS, f"{eval_id}/{row.test_idx}/{row.prompt_idx}")),
        "latencyMs": row.latency_ms or 0,
        "namedScores": _plain(row.named_scores),
        "prompt": redact(prompt),
        "promptId": _prompt_id(label=row.prompt.label, prompt_id=None, raw=row.rendered_prompt),
        "promptIdx": row.prompt_idx,
        "provider": {"id": row.provider.id, "label": row.provider.label},
    }
    if response is not None:
        result["response"] = response
    result |= {
        "score": row.score,
        "success": row.success,
        "testCase": test_case,
        "testIdx": row.test_idx,
        "tokenUsage": usage,
        "vars": test_case.get("vars") or {},
        "metadata": _metadata(row, response),
        "failureReason": int(row.failure_reason),
    }
    return result


# --- metrics and stats --------------------------------------------------------------------


def _empty_details() -> dict[str, int]:
    keys = ("reasoning", "acceptedPrediction", "rejectedPrediction")
    return dict.fromkeys((*keys, "cacheReadInputTokens", "cacheCreationInputTokens"), 0)


def _empty_usage() -> dict[str, Any]:
    counts = dict.fromkeys(("total", "prompt", "completion", "cached", "numRequests"), 0)
    return {
        **dict.fromkeys(("prompt", "completion", "cached", "total", "numRequests"), 0),
        "completionDetails": _empty_details(),
        "assertions": {**counts, "completionDetails": _empty_details()},
    }


def _empty_metrics() -> dict[str, Any]:
    counts = ("testPassCount", "testFailCount", "testErrorCount", "assertPassCount")
    return {
        "score": 0,
        **dict.fromkeys((*counts, "assertFailCount", "totalLatencyMs"), 0),
        "tokenUsage": _empty_usage(),
        "namedScores": {},
        "namedScoresCount": {},
        "namedScoreWeights": {},
        "cost": 0,
    }


def _sum(a: Any, b: Any) -> Any:
    return (0 if a is None else a) + (0 if b is None else b)


def _add_details(target: dict[str, Any], update: Any) -> None:
    if isinstance(update, Mapping):
        old = target.get("completionDetails") or {}
        target["completionDetails"] = {k: _sum(old.get(k), update.get(k)) for k in _empty_details()}


def _add_usage(target: dict[str, Any], update: Mapping[str, Any] | None) -> None:
    """``accumulateTokenUsage``: ``numRequests`` only when the update has the key."""
    if update is None:
        return
    for key in ("prompt", "completion", "cached", "total"):
        target[key] = _sum(target.get(key), update.get(key))
    if "numRequests" in update:
        target["numRequests"] = _sum(target.get("numRequests"), update["numRequests"])
    _add_details(target, update.get("completionDetails"))
    extra = update.get("assertions")
    if isinstance(extra, Mapping):
        counts = ("total", "prompt", "completion", "cached", "numRequests")
        assertions = target.setdefault("assertions", dict.fromkeys(counts, 0))
        for key in counts:
            assertions[key] = _sum(assertions.get(key), extra.get(key))
        _add_details(assertions, extra.get("completionDetails"))


def _add_response_usage(target: dict[str, Any], response: Mapping[str, Any]) -> None:
    """``accumulateResponseTokenUsage``: a response without a request count counts one."""
    usage = response.get("tokenUsage")
    if isinstance(usage, Mapping):
        _add_usage(target, usage)
        if "numRequests" not in usage:
            target["numRequests"] = _sum(target.get("numRequests"), 1)
    else:
        target["numRequests"] = _sum(target.get("numRequests"), 1)


def _add_assertion_usage(target: dict[str, Any], used: Any) -> None:
    """``accumulateAssertionTokenUsage``: tokens only, never ``numRequests``."""
    if isinstance(used, Mapping):
        for key in ("total", "prompt", "completion", "cached"):
            target[key] = _sum(target.get(key), used.get(key))
        _add_details(target, used.get("completionDetails"))


def _add_named_score(metrics: dict[str, Any], row: ReportRow, name: str, value: float) -> None:
    """``accumulateNamedMetric``, with the row's ``gradingResult`` as promptfoo held it."""
    grading = _grading(row) or {}
    test_vars = row.test_case.get("vars") or {}
    count = 0
    for component in grading.get("componentResults") or []:
        metric = (component.get("assertion") or {}).get("metric")
        if js_truthy(metric) and isinstance(metric, str) and "{" in metric:
            metric = render_metric_name(metric, test_vars)
        count += metric == name
    count = count or 1
    weights = grading.get("namedScoreWeights") or {}
    weight = (weights.get(name) or 0) if name in weights else count
    metrics["namedScores"][name] = _sum(
        metrics["namedScores"].get(name), value * weight if name in weights else value
    )
    metrics["namedScoresCount"][name] = _sum(metrics["namedScoresCount"].get(name), count)
    metrics["namedScoreWeights"][name] = _sum(metrics["namedScoreWeights"].get(name), weight)


def _add_row(metrics: dict[str, Any], row: ReportRow) -> None:
    """``updatePromptMetricsForRow`` and ``updatePromptResultCounts``."""
    metrics["score"] += row.score
    for name, value in row.named_scores.items():
        _add_named_score(metrics, row, name, value)
    if row.success:
        metrics["testPassCount"] += 1
    elif row.failure_reason == _ERROR:
        metrics["testErrorCount"] += 1
    else:
        metrics["testFailCount"] += 1
    grading = _grading(row)
    components = (grading or {}).get("componentResults") or []
    metrics["assertPassCount"] += sum(1 for c in components if js_truthy(c.get("pass")))
    metrics["assertFailCount"] += sum(1 for c in components if not js_truthy(c.get("pass")))
    metrics["totalLatencyMs"] += row.latency_ms or 0
    response = _response(row)
    if response is not None:
        _add_response_usage(metrics["tokenUsage"], response)
    if grading is not None:
        _add_assertion_usage(metrics["tokenUsage"]["assertions"], grading.get("tokensUsed"))
    metrics["cost"] += (response or {}).get("cost") or 0


def _stats(metrics: Sequence[Mapping[str, Any]], duration_ms: int) -> dict[str, Any]:
    usage = _empty_usage()
    for column in metrics:
        _add_usage(usage, column["tokenUsage"])
    return {
        "successes": sum(m["testPassCount"] for m in metrics),
        "failures": sum(m["testFailCount"] for m in metrics),
        "errors": sum(m["testErrorCount"] for m in metrics),
        "tokenUsage": usage,
        "durationMs": duration_ms,
        "evaluationDurationMs": duration_ms,
    }


# --- values -------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A JSON-shaped deep copy: mappings to dicts, tuples to lists, enums to numbers."""
    if isinstance(value, Mapping):
        return _object(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return value


def _object(value: Mapping[Any, Any]) -> dict[str, Any]:
    return {js_key(k): _plain(v) for k, v in value.items()}


def _iso(moment: datetime) -> str:
    """JavaScript's ``Date.prototype.toISOString``: UTC, milliseconds, ``Z``."""
    if moment.tzinfo is None:
        raise ValueError(f"{moment!r} has no timezone: pass an aware datetime")
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _node_platform() -> str:
    return "win32" if sys.platform.startswith("win") else sys.platform


def _node_arch() -> str:
    machine = _platform.machine().lower()
    names = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "i386": "ia32", "i686": "ia32"}
    return names.get(machine, machine)
