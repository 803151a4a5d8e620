"""Rows of real promptfoo runs, trimmed to what the matrix decides, and the same rows from ours.

The fixtures ``tests/promptfoo/fixtures/matrix/run_*/promptfoo-rows.json`` were captured with::

    .venv/bin/python -m tests.promptfoo.matrix_runs PROMPTFOO_BIN tests/promptfoo/fixtures/matrix/run_*

which runs ``promptfoo eval`` (0.121.20, the ``echo`` provider) in each case's folder and keeps,
for each result row sorted by (testIdx, promptIdx): the prompt label, the provider, the vars,
and the test case promptfoo evaluated (description, assertions, options, metadata, threshold).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.matrix import Matrix

ROWS_FILE = "promptfoo-rows.json"
_ASSERTION_KEYS = ("type", "value", "threshold", "metric", "weight")


def trim(output: dict[str, Any]) -> dict[str, Any]:
    """What we compare of a promptfoo output file (``-o out.json``)."""
    results = output["results"]
    rows = [
        {
            "testIdx": r["testIdx"],
            "promptIdx": r["promptIdx"],
            "prompt": r["prompt"]["label"],
            "provider": r["provider"].get("label") or r["provider"]["id"],
            "vars": r["vars"],
            "description": r["testCase"].get("description"),
            "assert": [_assertion(a) for a in r["testCase"].get("assert") or []],
            "options": r["testCase"].get("options") or {},
            "metadata": r["testCase"].get("metadata") or {},
            "threshold": r["testCase"].get("threshold"),
        }
        for r in results["results"]
    ]
    rows.sort(key=lambda row: (row["testIdx"], row["promptIdx"]))
    columns = [{"prompt": p["label"], "provider": p["provider"]} for p in results["prompts"]]
    return {"columns": columns, "rows": rows}


def _assertion(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: raw[k] for k in _ASSERTION_KEYS if k in raw and raw[k] is not None}


def ours(matrix: Matrix) -> dict[str, Any]:
    """The same fields, from our matrix (rows in its own order: it must already be sorted)."""
    rows = [
        {
            "testIdx": row.test_idx,
            "promptIdx": row.prompt_idx,
            "prompt": row.prompt.label,
            "provider": row.provider.key,
            "vars": dict(row.test.vars),
            "description": row.test.description,
            "assert": [_our_assertion(a) for a in row.test.assertions],
            "options": dict(row.test.options),
            "metadata": dict(row.test.metadata),
            "threshold": row.test.threshold,
        }
        for row in matrix.rows()
    ]
    columns = [{"prompt": c.prompt.label, "provider": c.provider.key} for c in matrix.columns]
    return {"columns": columns, "rows": rows}


def _our_assertion(assertion: Assertion) -> dict[str, Any]:
    dumped = assertion.model_dump(by_alias=True, exclude_unset=True)
    return {k: dumped[k] for k in _ASSERTION_KEYS if k in dumped and dumped[k] is not None}


def dump(trimmed: dict[str, Any]) -> str:
    """JSON with one row a line (the fixtures stay readable and diff well)."""
    parts = [json.dumps({k: v for k, v in trimmed.items() if k != "rows"}, ensure_ascii=False)]
    rows = ",\n".join(json.dumps(row, ensure_ascii=False) for row in trimmed["rows"])
    return f'{parts[0][:-1]}, "rows": [\n{rows}\n]}}\n'


def capture(case: Path, promptfoo: str) -> dict[str, Any]:
    """Run promptfoo on ``case/promptfooconfig.yaml`` and trim its output."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        env = {
            **os.environ,
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CONFIG_DIR": str(Path(tmp) / "home"),
        }
        command = [promptfoo, "eval", "-c", "promptfooconfig.yaml", "-o", str(out)]
        command += ["--no-cache", "--no-table", "--no-write", "--no-progress-bar"]
        done = subprocess.run(command, cwd=case, env=env, capture_output=True, text=True)
        if not out.exists():
            raise RuntimeError(f"promptfoo failed ({done.returncode}):\n{done.stderr[-2000:]}")
        version = subprocess.run([promptfoo, "--version"], env=env, capture_output=True, text=True)
        trimmed = trim(json.loads(out.read_text(encoding="utf-8")))
        return {"promptfoo": version.stdout.strip(), **trimmed}


if __name__ == "__main__":
    for folder in sys.argv[2:]:
        trimmed = capture(Path(folder), sys.argv[1])
        (Path(folder) / ROWS_FILE).write_text(dump(trimmed), encoding="utf-8")
