"""The markdown report, pinned: fixed run, fixed text."""

from __future__ import annotations

from pathlib import Path

from coalmine.graders.keyword import KeywordGrade
from coalmine.graders.structural import StructuralGrade
from coalmine.reports.markdown import render_markdown, short_id
from coalmine.results import (
    CanaryRun,
    CaseResult,
    Grade,
    InvalidSpecRecord,
    JudgeInfo,
    RunTotals,
)

EXPECTED = """\
## Canary Run Results — 2026-04-13

| ID | Phase | Title | Agent | Score | Verdict |
|----|-------|-------|-------|-------|---------|
| req-001 | requirements | E-commerce API Requirements | Analyst | 0.91 | ✅ PASS |
| qa-001 | qa | Security \\| review | QA Coordinator | 0.45 | ❌ FAIL |
| rai-001 | rai | Bias | RAI Reviewer | — | ⚠️ ERROR |

**Summary:** 1/3 passed | Composite: 0.68 | 1 errored | 1 invalid spec | Results saved to bench/results/canary-run-2026-04-13.json

**Judge:** openai, judge-model (advisory until calibrated) — a test judge

### Failures

- **qa-001-security-review** (QA Coordinator): FAIL
  - composite 0.45 < 0.70
  - keyword 0.50 < 0.80: missing keywords 'csrf'
- **rai-001-bias** (RAI Reviewer): ERROR, judge_error
  - llm-judge: the judge gave no usable verdict

_Skipped graders: llm-judge (the config says judge: none); weights renormalised over the other graders._

### Invalid specs

- **doc-001** `bench/canaries/document/doc-001.yaml:3`: unknown phase 'docs'
"""


def make_run() -> CanaryRun:
    keyword = KeywordGrade(
        score=0.5, passed=False, matched=1, required=2, forbidden_found=[], missing=["csrf"]
    )
    structural = StructuralGrade(
        score=0.4, passed=False, sections_found=2, sections_required=5, missing=[]
    )
    skipped = Grade(skipped=True, reason="the config says judge: none", weight=0.4)
    return CanaryRun(
        run_id="canary-run-2026-04-13",
        timestamp="2026-04-13T07:30:00Z",
        summary=RunTotals(
            total=3, passed=1, failed=1, errored=1, invalid=1, composite_score=0.68
        ),
        results=[
            CaseResult(id="req-001-ecommerce-api", phase="requirements",
                       title="E-commerce API Requirements", agent="Analyst", verdict="PASS",
                       composite_score=0.91, duration_seconds=1.0),
            CaseResult(id="qa-001-security-review", phase="qa", title="Security | review",
                       agent="QA Coordinator", verdict="FAIL", composite_score=0.45,
                       grader_scores={"keyword": keyword, "structural": structural,
                                      "llm-judge": skipped},
                       duration_seconds=2.0,
                       failures=["composite 0.45 < 0.70",
                                 "keyword 0.50 < 0.80: missing keywords 'csrf'"]),
            CaseResult(id="rai-001-bias", phase="rai", title="Bias", agent="RAI Reviewer",
                       verdict="ERROR", composite_score=None, reason="judge_error",
                       error="llm-judge: the judge gave no usable verdict", duration_seconds=3.0),
        ],
        judge=JudgeInfo(mode="agent", agent="judge", provider="openai", model="judge-model",
                        description="a test judge", inline=True),
        invalid_specs=[InvalidSpecRecord(path="bench/canaries/document/doc-001.yaml", line=3,
                                         id="doc-001", reason="unknown phase 'docs'")],
    )  # fmt: skip


def test_markdown_report_is_pinned() -> None:
    text = render_markdown(
        make_run(),
        results_path=Path("bench/results/canary-run-2026-04-13.json"),
        date="2026-04-13",
    )
    assert text == EXPECTED


def test_short_id_keeps_the_selector_part() -> None:
    assert short_id("req-001-ecommerce-api") == "req-001"
    assert short_id("custom") == "custom"
    assert short_id("qa-7-x") == "qa-7"


def test_judge_named_by_agent_shows_the_agent() -> None:
    info = JudgeInfo(mode="agent", agent="Analyst", provider="command")
    assert info.describe() == "Analyst (command)"
    assert JudgeInfo(mode="none").describe() is None
