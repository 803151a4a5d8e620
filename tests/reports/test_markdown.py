"""The markdown report, pinned: fixed run, fixed text."""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from coalmine.compare import compare_runs
from coalmine.graders.keyword import KeywordGrade
from coalmine.graders.structural import StructuralGrade
from coalmine.reports.markdown import render_comparison, render_markdown, short_id
from coalmine.results import (
    CanaryRun,
    CaseResult,
    Grade,
    InvalidSpecRecord,
    JudgeInfo,
    RecalledLesson,
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


# -- hostile text: a job summary renders this markdown ------------------------------------------

SCRIPT = "<script>alert('x')</script>"
IMG = '<img src=x onerror="alert(1)">'
BREAKING = f"first line\n- a new item\n# a heading\n| cell | break |\n```\n{SCRIPT}\n```"
parser = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")


def hostile_run() -> CanaryRun:
    reason = f"the answer {IMG} is wrong;\n- and this line\n> quotes {SCRIPT}"
    skipped = Grade(skipped=True, reason=reason, weight=0.5)
    cases = [
        CaseResult(id=f"qa-00{i}-{SCRIPT}", phase=f"qa{IMG}", title=f"Title | {SCRIPT}",
                   agent=f"Agent {IMG}", verdict="FAIL", composite_score=0.2,
                   grader_scores={f"judge {IMG}": skipped}, duration_seconds=1.0,
                   error=f"boom {SCRIPT}\n{BREAKING}", failures=[BREAKING, reason],
                   output=f"out {SCRIPT}\n{IMG}", cache=f"miss: {IMG}")
        for i in (1, 2)
    ]  # fmt: skip
    return CanaryRun(
        run_id="r1",
        timestamp="2026-04-13T07:30:00Z",
        summary=RunTotals(total=2, passed=0, failed=2, composite_score=0.2, invalid=1),
        results=cases,
        judge=JudgeInfo(
            mode="agent",
            agent="judge",
            provider="openai",
            model=f"m{IMG}",
            description=BREAKING,
            inline=True,
        ),  # fmt: skip
        invalid_specs=[
            InvalidSpecRecord(path=f"bench/`{SCRIPT}`.yaml", line=2, id=f"x{IMG}", reason=BREAKING)
        ],  # fmt: skip
        lessons=[RecalledLesson(id=1, kind=f"k{IMG}", text=BREAKING, score=1.0)],
    )


def tokens_of(text: str) -> list[Token]:
    found: list[Token] = []
    todo = parser.parse(text)
    while todo:
        token = todo.pop(0)
        found.append(token)
        todo = [*(token.children or []), *todo]
    return found


def test_hostile_outputs_reasons_and_titles_add_no_html_and_break_no_list() -> None:
    run = hostile_run()
    text = render_markdown(run, results_path=None, date="2026-04-13", cache_explain=True)
    base = run.model_copy(update={"results": [r.model_copy(update={"verdict": "PASS"})
                                              for r in run.results]})  # fmt: skip
    text += "\n" + render_comparison(compare_runs(base, run))
    tokens = tokens_of(text)
    kinds = [t.type for t in tokens]
    assert not [
        t
        for t in tokens
        if t.type.startswith(("html", "link", "image", "fence", "code_block", "hr", "blockquote"))
    ]
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == ["Canary Run Results — 2026-04-13", "Failures", "Cache", "Invalid specs",
                        "Lessons recalled", "Compared with r1"]  # fmt: skip
    assert kinds.count("tr_open") == 3 and kinds.count("td_open") == 12  # 2 rows of 6 cells
    rendered = parser.render(text)
    assert "<script" not in rendered and "<img" not in rendered
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in rendered.replace("&#x27;", "'")
    # each failing case is one item; its error, failures and output lines are its sub-items
    failures = text.split("### Failures\n\n", 1)[1].split("\n\n### Cache", 1)[0]
    items = parser.parse(failures)
    depth, top, sub = 0, 0, 0
    for token in items:
        if token.type == "list_item_open":
            depth += 1
            top += depth == 1
            sub += depth == 2
        elif token.type == "list_item_close":
            depth -= 1
    assert (top, sub) == (2, 2 * (8 + 2 + 1))  # 8 error lines, 2 failures, the output
