"""``coalmine report`` of an eval run, in every format: suites, cases, what the agent said.

The run is real (the eval engine, the store, the echo agent) and its clock is pinned, so the
reports are compared with golden files whole. ``COALMINE_UPDATE_GOLDEN=1`` rewrites them.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from coalmine._util.clock import FixedClock
from coalmine.engine.history import load_run
from coalmine.evals.plan import plan_evals
from coalmine.evals.run import run_evals
from coalmine.reports.base import registry as reporters
from coalmine.store.runs import Store

GOLDEN = Path(__file__).parent / "golden"
AT = datetime(2026, 4, 13, 7, 30, tzinfo=UTC)
CASES = [
    {"id": "capital-france", "prompt": "Paris", "expected": "Paris", "graders": [{"type": "equals"}]},
    {"id": "capital-spain", "prompt": "The capital of Spain is Barcelona.",
     "expected": "The capital of Spain is Madrid.", "graders": [{"type": "equals"}]},
    {"id": "greeting", "prompt": "hello <script>alert(1)</script>", "tags": ["smoke"],
     "graders": [{"type": "contains", "config": {"value": "goodbye"}},
                 {"type": "icontains", "config": {"value": "HELLO"}}]},
]  # fmt: skip


@pytest.fixture(scope="module")
def run_ref(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("project")
    (root / "harness" / "evals").mkdir(parents=True)
    (root / "coalmine.yaml").write_text("agents:\n  echo: {provider: echo}\n", encoding="utf-8")
    lines = [json.dumps(c) for c in CASES]
    (root / "harness" / "evals" / "capitals.jsonl").write_text("\n".join(lines) + "\n")
    store = Store.open(root / ".coalmine" / "coalmine.db")
    try:
        plan = plan_evals(root, [])
        clock = FixedClock(AT, step=0.125)
        outcome = anyio.run(lambda: run_evals(plan, store=store, clock=clock, concurrency=1))
    finally:
        store.close()
    return root, outcome.run_id


def render(run_ref: tuple[Path, str], fmt: str) -> str:
    root, run_id = run_ref
    store = Store.open(root / ".coalmine" / "coalmine.db")
    try:
        text = reporters.get(fmt).render(load_run(store, run_id))
    finally:
        store.close()
    text = text.replace(run_id, "RUN-ID")
    return re.sub(r'"coalmine_?[vV]ersion": "[^"]*"', '"coalmine_version": "X"', text)


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("markdown", "md"), ("json", "json"), ("html", "html"), ("junit", "xml")]
)
def test_an_eval_run_reports_as_an_eval_run(
    run_ref: tuple[Path, str], fmt: str, suffix: str
) -> None:
    text = render(run_ref, fmt)
    path = GOLDEN / f"eval-run.{suffix}"
    if os.environ.get("COALMINE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_each_format_shows_the_output_and_the_expected_value(run_ref: tuple[Path, str]) -> None:
    for fmt in ("markdown", "json", "html", "junit"):
        text = render(run_ref, fmt)
        assert "Barcelona" in text and "Madrid" in text, fmt
    markdown = render(run_ref, "markdown")
    assert (
        'expected "…capital of Spain is Madrid.", got "…capital of Spain is Barcelona."' in markdown
    )
    # no expected: the output, escaped (a job summary renders it: it must not run)
    assert '  - output: "hello \\<script>alert(1)\\</script>"' in markdown
    assert "Canary" not in markdown and "Phase" not in markdown
    html = render(run_ref, "html")
    assert (
        "<h1>Eval run <code>" in html
        and '<th data-key="phase"><button type="button">Suite</button></th>' in html
    )
    assert "Madrid</del><ins>Barcelona</ins>" in html.replace("<del>", "<del>")
    assert (
        "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    )
