"""The HTML report: self-contained, escaped, locked down by its CSP, and working in Chromium."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import escape

from coalmine.compare import compare_runs
from coalmine.graders.keyword import KeywordGrade
from coalmine.graders.llm_judge import JudgeGrade
from coalmine.graders.structural import StructuralGrade
from coalmine.reports.base import registry
from coalmine.reports.html import describe_grade, render_html
from coalmine.results import (
    CanaryRun,
    CaseResult,
    Grade,
    InvalidSpecRecord,
    JudgeInfo,
    RunTotals,
)

PAYLOAD = "<script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED2'\">"
TITLE = "Canary run canary-run-2026-04-13"
CHROMIUM_INSTALL = "apt-get update && apt-get install -y chromium"


def make_run() -> CanaryRun:
    keyword = KeywordGrade(
        score=0.5,
        passed=False,
        weight=2,
        matched=1,
        required=2,
        forbidden_found=["TODO"],
        missing=["csrf"],
    )
    structural = StructuralGrade(
        score=1.0, passed=True, sections_found=2, sections_required=2, missing=[]
    )
    judge = JudgeGrade(
        score=0.5,
        passed=False,
        criteria={"clarity": 1.0, "safety": 0.0},
        reasons={"clarity": "clear enough", "safety": "it says " + PAYLOAD},
        judge_model="judge-model",
        prompt_sha256="sha256:" + "ab" * 32,
        attempts=1,
    )
    return CanaryRun(
        run_id="canary-run-2026-04-13",
        timestamp="2026-04-13T07:30:00Z",
        summary=RunTotals(total=3, passed=1, failed=1, errored=1, invalid=1, composite_score=0.68),
        results=[
            CaseResult(id="req-001-shop", phase="requirements", title="Shop API",
                       agent="Analyst", verdict="PASS", composite_score=0.91,
                       grader_scores={"structural": structural}, duration_seconds=1.0,
                       prompt="Write the requirements.", output="# Scope\n# Risks\n"),
            CaseResult(id="qa-001-login", phase="qa", title="Login review",
                       agent="QA Coordinator", verdict="FAIL", composite_score=0.45,
                       grader_scores={"keyword": keyword, "llm-judge": judge},
                       duration_seconds=2.0, prompt="Review the login page.", output=PAYLOAD,
                       failures=["composite 0.45 < 0.70",
                                 "keyword 0.50 < 0.80: missing keywords 'csrf'"],
                       warnings=["invalid UTF-8 was replaced"]),
            CaseResult(id="rai-001-bias", phase="rai", title="Bias", agent="RAI Reviewer",
                       verdict="ERROR", composite_score=None, reason="judge_error",
                       error="llm-judge: the judge gave no usable verdict",
                       duration_seconds=3.0),
        ],
        judge=JudgeInfo(mode="agent", agent="judge", provider="openai", model="judge-model",
                        description="a test judge", inline=True),
        invalid_specs=[InvalidSpecRecord(path="bench/canaries/document/doc-001.yaml", line=3,
                                         id="doc-001", reason="unknown phase 'docs'")],
    )  # fmt: skip


class Page(HTMLParser):
    """The tags of a page, the text of its scripts and <title>, and its case rows."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.source = text
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.title = ""
        self.cases: list[tuple[str, bool]] = []
        self._in: str | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        if tag in ("script", "title"):
            self._in = tag
            if tag == "script":
                self.scripts.append("")
        if tag == "tbody" and found.get("class") == "case":
            self.cases.append((found["data-case"] or "", "hidden" in found))

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "title":
            self.title += data

    def visible(self) -> list[str]:
        return [case for case, hidden in self.cases if not hidden]


# --- the page itself ------------------------------------------------------------------------


def test_the_page_loads_nothing_from_outside() -> None:
    run = make_run()
    run.results[0].output = "see https://example.com/x and http://example.org"
    text = render_html(run)
    page = Page(text)
    names = {tag for tag, _ in page.tags}
    assert not names & {"link", "img", "iframe", "object", "embed", "base", "form"}
    assert [tag for tag, attrs in page.tags if tag == "script"] == ["script"]
    for tag, attrs in page.tags:
        assert not {"src", "href", "action", "srcset", "poster", "data"} & attrs.keys(), tag
        assert not any("://" in (value or "") for value in attrs.values()), tag
    assert "url(" not in text and "@import" not in text
    # The only URLs are the ones the agent wrote, shown as text inside its output.
    assert [m.start() for m in re.finditer("https?://", text)] == [
        text.index("https://example.com/x"),
        text.index("http://example.org"),
    ]
    assert text.index("http://example.org") < text.index("</pre>", text.index("https://"))


def test_agent_markup_appears_only_escaped() -> None:
    text = render_html(make_run())
    page = Page(text)
    assert text.count("<script") == 1
    assert "<img" not in text and "document.title='PWNED'" not in text
    assert str(escape(PAYLOAD)) in text
    assert "&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;" in text
    assert not [(tag, name) for tag, attrs in page.tags for name in attrs if name.startswith("on")]
    assert page.title == TITLE


def test_the_csp_allows_exactly_the_inline_script() -> None:
    text = render_html(make_run())
    (script,) = Page(text).scripts
    assert script.strip() and "PWNED" not in script and "canary-run" not in script
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    match = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', text)
    assert match is not None
    assert match.group(1) == (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    )
    assert text.index("Content-Security-Policy") < text.index("<title>")


HEADER = """\
<h1>Canary run <code>canary-run-2026-04-13</code></h1>
<p class="muted">2026-04-13T07:30:00Z · 0.00 s</p>
<dl class="summary">
<div><dt>Passed</dt><dd id="passed">1/3</dd></div>
<div><dt>Composite</dt><dd id="composite">0.68</dd></div>
<div><dt>Errored</dt><dd>1</dd></div>
<div><dt>Invalid specs</dt><dd>1</dd></div>
<div><dt>Interrupted</dt><dd>no</dd></div>
</dl>
<p id="judge"><strong>Judge:</strong> openai, judge-model (advisory until calibrated) — a test judge</p>
"""

ROW = """\
<tbody class="case" data-case="qa-001-login" data-verdict="FAIL">
<tr>
<td><code>qa-001-login</code></td>
<td>qa</td>
<td>Login review</td>
<td>QA Coordinator</td>
<td class="num" data-score="0.45">0.45</td>
<td class="v-FAIL">FAIL</td>
</tr>
<tr class="more"><td colspan="6"><details>
<summary>details · 2.00 s</summary>
<div class="detail">
<h3>Failures</h3>
<ul class="failures">
<li>composite 0.45 &lt; 0.70</li>
<li>keyword 0.50 &lt; 0.80: missing keywords &#39;csrf&#39;</li>
</ul>
<h3>Warnings</h3>
<ul class="warnings">
<li>invalid UTF-8 was replaced</li>
</ul>
<h3>Graders</h3>
<table class="graders">
<thead><tr><th>Grader</th><th>Score</th><th>Passed</th><th>Weight</th><th>Details</th></tr></thead>
<tbody>
<tr data-grader="keyword">
<td><code>keyword</code></td>
<td class="num">0.50</td>
<td>no</td>
<td class="num">2</td>
<td>
<div><span class="muted">matched:</span> 1</div>
<div><span class="muted">required:</span> 2</div>
<div><span class="muted">forbidden found:</span> TODO</div>
<div><span class="muted">missing keywords:</span> csrf</div>
</td>
</tr>
<tr data-grader="llm-judge">
<td><code>llm-judge</code></td>
<td class="num">0.50</td>
<td>no</td>
<td class="num">1</td>
<td>
<div><span class="muted">judge model:</span> judge-model</div>
<div><span class="muted">judge prompt sha256:</span> sha256:abababababababababababababababababababababababababababababababab</div>
<div><span class="muted">attempts:</span> 1</div>
<table class="criteria">
<thead><tr><th>Criterion</th><th>Score</th><th>Reason</th></tr></thead>
<tbody>
<tr><td>clarity</td><td class="num">1</td><td>clear enough</td></tr>
<tr><td>safety</td><td class="num">0</td><td>it says &lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;&lt;img src=x onerror=&#34;document.title=&#39;PWNED2&#39;&#34;&gt;</td></tr>
</tbody>
</table>
</td>
</tr>
</tbody>
</table>
<h3>Prompt</h3>
<pre class="prompt">Review the login page.</pre>
<h3>Output</h3>
<pre class="output">&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;&lt;img src=x onerror=&#34;document.title=&#39;PWNED2&#39;&#34;&gt;</pre>
</div>
</details></td></tr>
</tbody>
"""


def test_header_and_case_rows_are_pinned() -> None:
    text = render_html(make_run())
    assert HEADER in text
    assert ROW in text
    assert Page(text).cases == [
        ("req-001-shop", False), ("qa-001-login", False), ("rai-001-bias", False)
    ]  # fmt: skip
    assert '<td class="num" data-score="">—</td>' in text  # ERROR has no composite
    assert '<pre class="error">llm-judge: the judge gave no usable verdict</pre>' in text
    assert "<code>bench/canaries/document/doc-001.yaml:3</code>" in text
    assert "<pre>unknown phase &#39;docs&#39;</pre>" in text
    assert 'id="regressions"' not in text
    assert text == render_html(make_run())  # nothing varies between renders


def test_a_run_read_back_from_json_renders_the_same() -> None:
    run = make_run()
    again = CanaryRun.model_validate_json(run.model_dump_json())
    assert type(again.results[1].grader_scores["keyword"]) is Grade
    assert render_html(again) == render_html(run)


def test_the_html_reporter_is_registered() -> None:
    html = registry.get("html")
    assert html.render is render_html and html.suffix == ".html"


def test_describe_grade_lists_the_graders_own_fields() -> None:
    detail = describe_grade(
        Grade.model_validate(
            {"score": 1.0, "sections_required": 2, "missing": ["Risks"], "note": None}
        )
    )
    assert detail.facts == [("sections required", "2"), ("missing sections", "Risks")]
    assert detail.criteria == []
    assert describe_grade(Grade(skipped=True, reason="no judge")).facts == []


def test_an_interrupted_empty_run_still_renders() -> None:
    run = CanaryRun(
        run_id="r", timestamp="t", interrupted=True,
        summary=RunTotals(total=0, passed=0, failed=0, composite_score=None), results=[],
    )  # fmt: skip
    text = render_html(run)
    assert "<p>No canary ran.</p>" in text and 'id="cases"' not in text
    assert "<dt>Interrupted</dt><dd>yes</dd>" in text and '<dd id="composite">—</dd>' in text


def test_the_regressions_section_shows_the_comparison() -> None:
    base = make_run().model_copy(deep=True)
    base.run_id = "canary-run-2026-04-12"
    base.results[1].verdict = "PASS"
    base.results[1].composite_score = 0.95
    base.results[1].grader_scores["keyword"].score = 1.0
    base.results[2].id = "rai-009-gone"
    new = make_run()
    text = render_html(new, comparison=compare_runs(base, new))
    section = text[text.index('<h2 id="regressions">') :]
    assert "<p>Compared with <code>canary-run-2026-04-12</code>.</p>" in section
    comparison = compare_runs(base, new)
    assert f"<p>{escape(comparison.verdict_sentence())}</p>" in section
    assert f"<p>{escape(comparison.score_sentence())}</p>" in section
    assert "<h3>Regressions (1)</h3>" in section and "<h3>Fixed (0)</h3>" in section
    assert "<h3>Score changes (1)</h3>" in section
    assert (
        '<td><span class="v-PASS">PASS</span> → <span class="v-FAIL">FAIL</span></td>\n'
        '<td class="num">0.95 → 0.45</td>\n<td>keyword -0.50</td>'
    ) in section
    assert "<h3>New cases (1)</h3>\n<ul>\n<li><code>rai-001-bias</code></li>" in section
    assert "<h3>Removed cases (1)</h3>\n<ul>\n<li><code>rai-009-gone</code></li>" in section


# --- in a real browser ----------------------------------------------------------------------


def chromium() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if found is None:
        message = f"headless Chromium is not installed; install it with: {CHROMIUM_INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def dump_dom(page: Path, fragment: str, profile: Path) -> Page:
    """Open ``page#fragment`` in headless Chromium and parse the DOM after its script ran."""
    argv = [
        chromium(), "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=2000",
        "--dump-dom", page.as_uri() + fragment,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "</html>" in done.stdout, done.stderr[-2000:]
    return Page(done.stdout)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "run.html"
    path.write_text(render_html(make_run()), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("fragment", "visible", "shown"),
    [
        ("", ["req-001-shop", "qa-001-login", "rai-001-bias"], "3 of 3"),
        ("#verdict=FAIL", ["qa-001-login"], "1 of 3"),
        ("#verdict=pass,ERROR", ["req-001-shop", "rai-001-bias"], "2 of 3"),
        ("#q=login", ["qa-001-login"], "1 of 3"),
        ("#q=ANALYST", ["req-001-shop"], "1 of 3"),  # agent, any case
        ("#q=rai", ["rai-001-bias"], "1 of 3"),  # phase and id
        ("#verdict=FAIL&q=shop", [], "0 of 3"),
    ],
)
def test_the_fragment_filters_the_table(
    report: Path, tmp_path: Path, fragment: str, visible: list[str], shown: str
) -> None:
    page = dump_dom(report, fragment, tmp_path / "profile")
    assert page.visible() == visible
    assert len(page.cases) == 3
    assert f'<span id="shown">{shown}</span>' in page.source
    assert page.title == TITLE
    assert ("img" not in {tag for tag, _ in page.tags}) and len(page.scripts) == 1


@pytest.mark.parametrize(
    ("fragment", "order"),
    [
        ("#sort=score", ["qa-001-login", "req-001-shop", "rai-001-bias"]),
        ("#sort=-score", ["req-001-shop", "qa-001-login", "rai-001-bias"]),  # no score: last
        ("#sort=id", ["qa-001-login", "rai-001-bias", "req-001-shop"]),
        ("#verdict=PASS,FAIL&sort=-agent", ["rai-001-bias", "qa-001-login", "req-001-shop"]),
    ],
)
def test_the_fragment_sorts_the_table(
    report: Path, tmp_path: Path, fragment: str, order: list[str]
) -> None:
    page = dump_dom(report, fragment, tmp_path / "profile")
    assert [case for case, _ in page.cases] == order
    key = fragment.split("sort=")[1].split("&")[0]
    sorted_by = [attrs for tag, attrs in page.tags if tag == "th" and "aria-sort" in attrs]
    assert sorted_by == [
        {
            "data-key": key.lstrip("-"),
            "aria-sort": "descending" if key.startswith("-") else "ascending",
        }
    ]


def test_the_csp_stops_markup_that_escaping_let_through(tmp_path: Path) -> None:
    # Simulate an escaping mistake: put the agent's markup into the page raw.
    text = render_html(make_run())
    assert str(escape(PAYLOAD)) in text
    broken = tmp_path / "broken.html"
    broken.write_text(text.replace(str(escape(PAYLOAD)), PAYLOAD), encoding="utf-8")
    page = dump_dom(broken, "#verdict=FAIL", tmp_path / "profile")
    assert page.scripts.count("document.title='PWNED'") == 2  # the output and a judge reason
    assert ("img", {"src": "x", "onerror": "document.title='PWNED2'"}) in page.tags
    assert page.title == TITLE  # neither the injected script nor the onerror handler ran
    assert page.visible() == ["qa-001-login"]  # while our own script did


CLICKS = """
document.querySelector("input[name=verdict][value=PASS]").click();
var q = document.getElementById("q");
q.value = "o";
q.dispatchEvent(new Event("input"));
document.querySelector("th[data-key=score] button").click();
document.querySelector("th[data-key=score] button").click();
document.title = location.hash;
"""


def test_clicks_filter_and_sort_and_write_the_fragment(tmp_path: Path) -> None:
    # A second script, allowed by adding its hash to the page's own CSP, clicks like a user.
    text = render_html(make_run())
    digest = base64.b64encode(hashlib.sha256(CLICKS.encode()).digest()).decode()
    text = text.replace("script-src '", f"script-src 'sha256-{digest}' '", 1)
    text = text.replace("</body>", f"<script>{CLICKS}</script>\n</body>")
    clicked = tmp_path / "clicked.html"
    clicked.write_text(text, encoding="utf-8")
    page = dump_dom(clicked, "", tmp_path / "profile")
    assert page.title == "#verdict=FAIL,ERROR&q=o&sort=-score"
    assert page.visible() == ["qa-001-login"]  # not PASS, and "o" in its id, title or agent
    assert [case for case, _ in page.cases] == ["req-001-shop", "qa-001-login", "rai-001-bias"]


# --- the pieces the report and the viewer share ------------------------------------------------


def test_the_diff_marks_words_only_in_expected_and_only_in_the_output() -> None:
    from coalmine.reports.html import diff_html

    assert str(diff_html("Madrid is big", "Barcelona is big")) == (
        "<del>Madrid</del><ins>Barcelona</ins> is big"
    )
    # every piece is escaped, the markup is ours
    assert str(diff_html("<b>a</b>", "<b>x</b>")) == ("&lt;b&gt;<del>a</del><ins>x</ins>&lt;/b&gt;")
    assert (
        str(diff_html({"k": 1}, '{\n  "k": 2\n}'))
        == "{\n  &#34;k&#34;: <del>1</del><ins>2</ins>\n}"
    )
    assert str(diff_html("same", "same")) == "same"
    assert str(diff_html("", "new")) == "<ins>new</ins>"


def test_a_long_text_is_diffed_line_by_line() -> None:
    from coalmine.reports.html import DIFF_LIMIT, diff_html

    big = "x" * DIFF_LIMIT
    assert (
        str(diff_html(f"{big}\nold\n", f"{big}\nnew\n"))
        == f"{big}\n<del>old\n</del><ins>new\n</ins>"
    )


def test_tool_calls_pair_with_the_expected_ones_by_position() -> None:
    from coalmine.reports.html import pair_calls
    from coalmine.results import ToolCall

    called = [ToolCall(name="search", arguments={"q": "x"})]
    pairs = pair_calls(called, [{"name": "search"}, {"name": "book", "arguments": {"id": 1}}])
    assert [(c.name if c else None, w.name if w else None) for c, w in pairs] == [
        ("search", "search"), (None, "book")
    ]  # fmt: skip
    assert pair_calls(called, None)[0][1] is None
