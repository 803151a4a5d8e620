"""STAND-IN agent: Triage, for the example eval suite (harness/evals/triage.jsonl).

An offline placeholder for a retrieval agent: it ranks a tiny in-memory set of runbooks by word
overlap with the bug report, and answers JSON ``{"retrieved": [ids, best first], "severity"}``
after calling a ``search_docs`` tool (the call is part of its answer, as a real agent's tool
calls would be). Replace it with your real retrieval agent; coalmine's python provider calls
``run(prompt, context)``.
"""

from __future__ import annotations

import json
import re
from typing import Any

RUNBOOKS = {
    "auth-runbook": "login password reset session token expired sign in",
    "sql-runbook": "sql injection query database parameterised timeout",
    "deploy-runbook": "deploy rollout canary rollback release pipeline",
    "perf-runbook": "latency slow cache memory cpu timeout",
    "billing-runbook": "invoice payment card charge refund",
}
URGENT = ("outage", "down", "injection", "breach", "all users")


def run(prompt: str, context: Any = None) -> dict[str, Any]:
    """Rank the runbooks for the report in ``prompt`` and guess its severity."""
    words = set(re.findall(r"[a-z]+", prompt.lower()))
    scored = [(doc, len(words & set(text.split()))) for doc, text in RUNBOOKS.items()]
    ranked = sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))
    severity = "high" if any(w in prompt.lower() for w in URGENT) else "normal"
    answer = {"retrieved": [doc for doc, _ in ranked], "severity": severity}
    query = prompt.rsplit(":", 1)[-1].strip()
    return {
        "output": json.dumps(answer),
        "tool_calls": [{"name": "search_docs", "arguments": {"query": query}}],
    }
