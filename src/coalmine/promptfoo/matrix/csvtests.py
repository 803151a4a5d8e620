r"""CSV files as promptfoo 0.121.20 reads them, and a tests CSV row as the test it makes.

A file is read as csv-parse reads it with ``columns: true``: a row with the wrong number of
cells is an error (named at its line; the other rows still load).

Columns are vars, except the special ones (promptfoo's ``testCaseFromCsvRow``):

- ``__expected``, ``__expected1`` … (any column starting ``__expected``): one assertion each, in
  column order, from :func:`assertion_from_string`; an empty cell adds none.
- ``__description``, ``__prefix``, ``__suffix`` (into ``options``), ``__providerOutput``,
  ``__metric`` (set on **every** assertion of the row, even to ``""``; also kept as the test's
  ``metric``, which promptfoo does not have), ``__threshold`` (a number, else unset),
  ``__metadata:key`` and ``__metadata:key[]`` (comma-separated, ``\,`` escapes).
- ``__config:__expectedN:threshold`` sets the N-th assertion's threshold, and also
  ``metadata.threshold`` (a promptfoo quirk kept here). Every row needs a number in that cell:
  promptfoo stops with "Invalid numeric value" on an empty one.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalmine.promptfoo.matrix.sources import Problems, is_code_file

__all__ = ["ASSERTION_TYPES", "CsvRow", "assertion_from_string", "csv_row_to_test", "read_csv_rows"]

ASSERTION_TYPES = (
    "agent-rubric answer-relevance bleu classifier contains contains-all contains-any "
    "contains-html contains-json contains-sql contains-xml context-faithfulness context-recall "
    "context-relevance conversation-relevance cost equals factuality finish-reason g-eval gleu "
    "guardrails icontains icontains-all icontains-any is-html is-json is-refusal is-sql "
    "is-valid-function-call is-valid-openai-function-call is-valid-openai-tools-call is-xml "
    "javascript latency levenshtein llm-rubric pi meteor model-graded-closedqa "
    "model-graded-factuality moderation perplexity perplexity-score python regex rouge-n ruby "
    "similar similar:cosine similar:dot similar:euclidean starts-with tool-call-f1 skill-used "
    "trajectory:goal-success trajectory:tool-args-match trajectory:step-count "
    "trajectory:tool-sequence trajectory:tool-used trace-error-spans trace-span-count "
    "trace-span-duration search-rubric webhook word-count"
).split()
"""promptfoo's base assertion types, in the order its string parser tries them."""

_ASSERTION = re.compile(
    r"^(not-)?(" + "|".join(map(re.escape, ASSERTION_TYPES)) + r")(?:\((\d+(?:\.\d+)?)\))?"
    r"(?::([\s\S]*))?$"
)
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_LIST_TYPES = {"contains-all", "contains-any", "icontains-all", "icontains-any"}
_THRESHOLD_TYPES = {
    "answer-relevance", "classifier", "context-faithfulness", "context-recall",
    "context-relevance", "cost", "latency", "levenshtein", "perplexity-score", "perplexity",
    "rouge-n", "similar", "starts-with",
}  # fmt: skip
_SPECIAL = "expected prefix suffix description providerOutput metric threshold metadata config"


# --- CSV files, as csv-parse reads them with ``columns: true`` ----------------------------------


@dataclass(frozen=True)
class CsvRow:
    """One record of a CSV file: its first line and its cells by column name."""

    line: int
    cells: dict[str, str]


def read_csv_rows(text: str, *, path: Path, problems: Problems) -> list[CsvRow]:
    """Records of a CSV file; a record with the wrong number of cells is a problem, not a row.

    A byte-order mark is dropped; a later column with the same name wins (csv-parse builds an
    object). Fields quoted in odd ways (``"a"b``) follow Python's lenient reading, which may
    differ from csv-parse's ``relax_quotes`` in the exact text kept.
    """
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    rows: list[CsvRow] = []
    header: list[str] | None = None
    previous_end = 0
    try:
        for record in reader:
            start, previous_end = previous_end + 1, reader.line_num
            cells = record or [""]  # csv-parse reads an empty line as one empty cell
            if header is None:
                header = cells
                continue
            if len(cells) != len(header):
                problems.error(
                    f"Invalid Record Length: columns length is {len(header)}, got {len(cells)}",
                    path=path,
                    line=start,
                )
                continue
            rows.append(CsvRow(start, dict(zip(header, cells, strict=True))))
    except csv.Error as exc:
        problems.error(f"invalid CSV: {exc}", path=path, line=reader.line_num)
    return rows


def parse_number(text: str | None) -> float | None:
    """A cell as a finite number, or ``None`` (blank or not a complete numeric literal)."""
    trimmed = (text or "").strip()
    if not _NUMBER.match(trimmed):
        return None
    value = float(trimmed)
    return int(value) if value.is_integer() and abs(value) <= 2**53 else value


def assertion_from_string(expected: str) -> dict[str, Any]:
    """An ``__expected`` cell as an assertion (``contains:x``, ``not-icontains:x``, ``grade:`` …).

    ``javascript:``/``fn:``/``eval:`` and ``file://x.js`` give ``javascript``; ``grade:`` and
    ``llm-rubric:`` give ``llm-rubric``; ``python:`` and ``file://x.py`` give ``python``; a known
    type (optionally ``not-``, optionally ``(threshold)``) takes the rest as its value; anything
    else is ``equals`` the whole cell.
    """
    code = expected.removeprefix("file://") if expected.startswith("file://") else None
    if expected.startswith(("javascript:", "fn:", "eval:")) or (
        code and is_code_file(code) and not code.endswith(".py")
    ):
        cut = next(len(p) for p in ("javascript:", "fn:", "eval:", "") if expected.startswith(p))
        return {"type": "javascript", "value": expected[cut:].strip()}
    if expected.startswith(("grade:", "llm-rubric:")):
        cut = 6 if expected.startswith("grade:") else 11
        return {"type": "llm-rubric", "value": expected[cut:]}
    if expected.startswith("python:") or (
        code is not None and (expected.endswith(".py") or ".py:" in expected)
    ):
        return {"type": "python", "value": expected[7:].strip()}
    match = _ASSERTION.match(expected)
    if match is None:
        return {"type": "equals", "value": expected}
    negated, kind, threshold_text, value = match.groups()
    full = f"not-{kind}" if negated else kind
    if kind in _LIST_TYPES:
        return {"type": full, "value": split_values(value) if value else value}
    if kind in ("contains-json", "is-json"):
        return {"type": full, "value": value}
    stripped = value.strip() if value is not None else None
    if kind in _THRESHOLD_TYPES:
        threshold = parse_number(threshold_text)
        default = 0.8 if kind == "similar" else 0.75
        return {
            "type": full,
            "value": stripped,
            "threshold": default if threshold is None else threshold,
        }
    return {"type": full, "value": stripped}


def split_values(value: str) -> list[str]:
    r"""``a, "b,c", d`` → ``["a", "b,c", "d"]`` (quotes group; ``""`` and ``\\"`` escape a quote).

    Raises:
        ValueError: a quoted field is not closed, or is followed by something other than a comma.
    """
    out: list[str] = []
    i = 0
    while i < len(value):
        while i < len(value) and (value[i].isspace() or value[i] == ","):
            i += 1
        if i >= len(value):
            break
        if value[i] != '"':
            end = value.find(",", i)
            end = len(value) if end < 0 else end
            out.append(value[i:end].strip())
            i = end
            continue
        field, i = _quoted(value, i + 1)
        out.append(field)
        while i < len(value) and value[i].isspace():
            i += 1
        if i < len(value) and value[i] != ",":
            raise ValueError("Expected comma after quoted field in contains assertion value")
    return out


def _quoted(value: str, i: int) -> tuple[str, int]:
    field = ""
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value) and value[i + 1] in '"\\':
            field, i = field + value[i + 1], i + 2
        elif ch == '"' and i + 1 < len(value) and value[i + 1] == '"':
            field, i = field + '"', i + 2
        elif ch == '"':
            return field, i + 1
        else:
            field, i = field + ch, i + 1
    raise ValueError("Unterminated quoted field in contains assertion value")


def csv_row_to_test(
    cells: dict[str, Any], *, path: Path, line: int | None, problems: Problems
) -> dict[str, Any] | None:
    """The test case of one CSV row (``None`` when the row is invalid; why is in ``problems``)."""
    test_vars: dict[str, Any] = {}
    asserts: list[dict[str, Any]] = []
    options: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    thresholds: dict[int, float] = {}
    extra: dict[str, Any] = {}
    metric: Any = None
    for raw_key, value in cells.items():
        key = str(raw_key).strip()
        if not key.startswith("__") and key.startswith(tuple(f"_{k}" for k in _SPECIAL.split())):
            problems.warn(
                f'You used a single underscore for the key "{key}". '
                f'Did you mean to use "_{key}" instead?',
                path=path,
                line=line,
            )
        try:
            if key.startswith("__expected"):
                if str(value).strip():
                    asserts.append(assertion_from_string(str(value).strip()))
            elif key in ("__prefix", "__suffix"):
                options[key[2:]] = value
            elif key in ("__description", "__providerOutput", "__metric"):
                extra[key[2:]] = value
                metric = value if key == "__metric" else metric
            elif key == "__threshold":
                extra["threshold"] = parse_number(str(value))
            elif key.startswith("__metadata:"):
                _metadata(key[11:], str(value), metadata)
            elif key == "__metadata":
                problems.warn(
                    'The "__metadata" column requires a key, e.g. "__metadata:category": ignored',
                    path=path,
                    line=line,
                )
            elif key.startswith("__config:"):
                _config(key, str(value), thresholds, problems, path=path, line=line)
            else:
                test_vars[key] = value
        except ValueError as exc:
            problems.error(f"column {key!r}: {exc}", path=path, line=line)
            return None
    for i, assertion in enumerate(asserts):
        if "metric" in extra:  # without the column promptfoo's metric is undefined: no key
            assertion["metric"] = metric
        if i in thresholds:
            assertion["threshold"] = metadata["threshold"] = thresholds[i]
    test: dict[str, Any] = {"vars": test_vars, "assert": asserts, "options": options}
    for key in ("description", "providerOutput"):
        if extra.get(key):
            test[key] = extra[key]
    if extra.get("threshold") is not None:
        test["threshold"] = extra["threshold"]
    if "metric" in extra:
        test["metric"] = metric  # not a promptfoo test key: kept for the matrix, see above
    if metadata:
        test["metadata"] = metadata
    return test


def _metadata(key: str, value: str, metadata: dict[str, Any]) -> None:
    if not value.strip():
        return
    if key.endswith("[]"):
        parts = re.split(r"(?<!\\),", value)
        metadata[key[:-2]] = [part.strip().replace("\\,", ",") for part in parts]
    else:
        metadata[key] = value


def _config(
    key: str,
    value: str,
    thresholds: dict[int, float],
    problems: Problems,
    *,
    path: Path,
    line: int | None,
) -> None:
    parts = key[9:].split(":")
    if len(parts) != 2:
        problems.warn(
            f'Invalid __config column format: "{key}". Expected format: '
            "__config:__expected:threshold or __config:__expected<N>:threshold",
            path=path,
            line=line,
        )
        return
    expected, option = parts
    numbered = re.fullmatch(r"__expected(\d+)", expected)
    if expected == "__expected":
        index = 0
    elif numbered and int(numbered.group(1)) >= 1:
        index = int(numbered.group(1)) - 1
    else:
        raise ValueError(f'Invalid expected key "{expected}" in __config column')
    if option != "threshold":
        raise ValueError(f'Invalid config key "{option}" (valid: threshold)')
    number = parse_number(value)
    if number is None:
        raise ValueError(f"Invalid numeric value {value!r} for threshold")
    thresholds[index] = number
