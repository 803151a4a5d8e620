"""The JUnit report: valid against Jenkins' schema, counts right, hostile text survives, pinned."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from coalmine.graders.keyword import KeywordGrade
from coalmine.reports.base import registry as reporters
from coalmine.reports.junit import render_junit
from coalmine.results import (
    CanaryRun,
    CaseResult,
    Grade,
    InvalidSpecRecord,
    JudgeInfo,
    RunTotals,
)

XSD = Path(__file__).parent / "data" / "junit-10.xsd"

# Every character XML 1.0 forbids, one of each kind, between legal text.
ILLEGAL = "\x00\x01\x08\x0b\x0c\x0e\x1f\ud800\udfff\ufffe\uffff"
HOSTILE = f"a{ILLEGAL}b ]]> <script>&amp; & </x> \t tab\nline2 \U0001f600"
HOSTILE_CLEAN = "ab ]]> <script>&amp; & </x> \t tab\nline2 \U0001f600"

EXPECTED = """\
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="coalmine" tests="5" failures="2" errors="2" time="12.500">
  <testsuite name="coalmine canary" tests="5" failures="2" errors="2" skipped="0" time="12.500" timestamp="2026-04-13T07:30:00" hostname="localhost" id="0" package="coalmine">
    <properties>
      <property name="coalmine.run_id" value="canary-run-2026-04-13" />
      <property name="coalmine.started" value="2026-04-13T07:30:00Z" />
      <property name="coalmine.version" value="0.1.0" />
      <property name="coalmine.judge" value="judge (openai, judge-model)" />
    </properties>
    <testcase classname="canary.requirements" name="req-001-ecommerce-api" time="1.250">
      <system-out>title: E-commerce API Requirements
agent: Analyst
verdict: PASS
composite: 0.91
graders:
  keyword: 1.00 passed
warnings:
  invalid UTF-8 was replaced</system-out>
    </testcase>
    <testcase classname="canary.qa" name="qa-001-security-review" time="2.000">
      <failure message="composite 0.45 &lt; 0.70" type="gate">composite 0.45 &lt; 0.70
keyword 0.50 &lt; 0.80: missing keywords 'csrf'</failure>
      <system-out>title: Security review
agent: QA Coordinator
verdict: FAIL
composite: 0.45
graders:
  keyword: 0.50 failed: missing keywords 'csrf'
  llm-judge: skipped (the config says judge: none)
output:
Use &lt;form&gt; tokens &amp; cookies.</system-out>
    </testcase>
    <testcase classname="canary.code" name="code-001-refactor" time="30.000">
      <failure message="the agent failed; no grader ran" type="agent_error">the agent failed; no grader ran
agent 'Coder' timed out after 30 s
stderr (tail):
killed</failure>
      <system-out>title: Refactor
agent: Coder
verdict: FAIL
composite: 0.00</system-out>
    </testcase>
    <testcase classname="canary.rai" name="rai-001-bias" time="3.000">
      <error message="llm-judge: the judge gave no usable verdict" type="judge_error">llm-judge: the judge gave no usable verdict</error>
      <system-out>title: Bias
agent: RAI Reviewer
verdict: ERROR
composite: none
output:
fine</system-out>
    </testcase>
    <testcase classname="canary.invalid" name="bench/canaries/docs/broken.yaml" time="0.000">
      <error message="the file is not valid YAML" type="invalid_spec">bench/canaries/docs/broken.yaml
the file is not valid YAML
mapping values are not allowed here</error>
    </testcase>
  </testsuite>
</testsuites>
"""


def case(**fields: object) -> CaseResult:
    base: dict[str, object] = {
        "id": "x-001-case",
        "phase": "qa",
        "title": "A case",
        "agent": "Agent",
        "verdict": "PASS",
        "composite_score": 1.0,
        "duration_seconds": 1.0,
    }
    return CaseResult.model_validate(base | fields)


def make_run(
    results: list[CaseResult], invalid: list[InvalidSpecRecord] | None = None, **fields: object
) -> CanaryRun:
    passed = sum(r.verdict == "PASS" for r in results)
    failed = sum(r.verdict == "FAIL" for r in results)
    errored = sum(r.verdict == "ERROR" for r in results)
    summary = RunTotals(
        total=len(results), passed=passed, failed=failed, errored=errored,
        invalid=len(invalid or []), composite_score=None,
    )  # fmt: skip
    base: dict[str, object] = {
        "run_id": "canary-run-2026-04-13",
        "timestamp": "2026-04-13T07:30:00Z",
        "summary": summary,
        "results": results,
        "invalid_specs": invalid or [],
    }
    return CanaryRun.model_validate(base | fields)


def pinned_run() -> CanaryRun:
    full = KeywordGrade(
        score=1.0, passed=True, matched=2, required=2, forbidden_found=[], missing=[]
    )
    half = KeywordGrade(
        score=0.5, passed=False, matched=1, required=2, forbidden_found=[], missing=["csrf"]
    )
    skipped = Grade(skipped=True, reason="the config says judge: none", weight=0.4)
    results = [
        case(id="req-001-ecommerce-api", phase="requirements",
             title="E-commerce API Requirements", agent="Analyst", composite_score=0.91,
             grader_scores={"keyword": full}, duration_seconds=1.25, output="all good",
             warnings=["invalid UTF-8 was replaced"]),
        case(id="qa-001-security-review", title="Security review", agent="QA Coordinator",
             verdict="FAIL", composite_score=0.45,
             grader_scores={"keyword": half, "llm-judge": skipped}, duration_seconds=2.0,
             failures=["composite 0.45 < 0.70", "keyword 0.50 < 0.80: missing keywords 'csrf'"],
             output="Use <form> tokens & cookies."),
        case(id="code-001-refactor", phase="code", title="Refactor", agent="Coder",
             verdict="FAIL", composite_score=0.0, reason="agent_error",
             error="agent 'Coder' timed out after 30 s\nstderr (tail):\nkilled",
             failures=["the agent failed; no grader ran"], duration_seconds=30.0),
        case(id="rai-001-bias", phase="rai", title="Bias", agent="RAI Reviewer",
             verdict="ERROR", composite_score=None, reason="judge_error",
             error="llm-judge: the judge gave no usable verdict", duration_seconds=3.0,
             output="fine"),
    ]  # fmt: skip
    invalid = [
        InvalidSpecRecord(path="bench/canaries/docs/broken.yaml", line=None, id=None,
                          reason="the file is not valid YAML\nmapping values are not allowed here"),
    ]  # fmt: skip
    judge = JudgeInfo(mode="agent", agent="judge", provider="openai", model="judge-model")
    return make_run(results, invalid, judge=judge, duration_seconds=12.5, coalmine_version="0.1.0")


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(XSD)


def write_report(run: CanaryRun, tmp_path: Path, schema: xmlschema.XMLSchema) -> ET.Element:
    """Write the report as CI reads it (a UTF-8 file), validate it, and return its root."""
    path = tmp_path / "junit.xml"
    path.write_text(render_junit(run), encoding="utf-8")
    schema.validate(str(path))
    return ET.parse(path).getroot()


def test_the_report_is_pinned() -> None:
    assert render_junit(pinned_run()) == EXPECTED


def test_junit_is_a_registered_reporter() -> None:
    junit = reporters.get("junit")
    assert junit.suffix == ".xml"
    assert junit.render(pinned_run()) == EXPECTED


def test_the_pinned_report_validates(tmp_path: Path, schema: xmlschema.XMLSchema) -> None:
    root = write_report(pinned_run(), tmp_path, schema)
    assert root.tag == "testsuites"


def test_counts_match_the_verdicts(tmp_path: Path, schema: xmlschema.XMLSchema) -> None:
    # Hand count: 2 PASS, 3 FAIL, 1 ERROR, 2 invalid specs -> 8 tests, 3 failures, 3 errors.
    results = [
        case(id="p1"),
        case(id="p2"),
        case(id="f1", verdict="FAIL", failures=["composite 0.10 < 0.70"]),
        case(id="f2", verdict="FAIL", failures=["keyword 0.00 < 0.80"]),
        case(id="f3", verdict="FAIL", reason="agent_error", error="boom", failures=["x"]),
        case(id="e1", verdict="ERROR", composite_score=None, reason="no_graders", error="none"),
    ]
    invalid = [
        InvalidSpecRecord(path="a.yaml", line=1, id="a-001", reason="bad"),
        InvalidSpecRecord(path="b.yaml", line=None, id=None, reason="worse"),
    ]
    root = write_report(make_run(results, invalid), tmp_path, schema)
    (suite,) = root.findall("testsuite")
    for element in (root, suite):
        assert (element.get("tests"), element.get("failures"), element.get("errors")) == (
            "8",
            "3",
            "3",
        )
    assert suite.get("skipped") == "0"
    assert len(suite.findall("testcase")) == 8
    assert len(suite.findall("testcase/failure")) == 3
    assert len(suite.findall("testcase/error")) == 3
    invalid_cases = suite.findall("testcase[@classname='canary.invalid']")
    assert [c.get("name") for c in invalid_cases] == ["a-001", "b.yaml"]
    errors = suite.findall("testcase[@classname='canary.invalid']/error")
    assert [e.get("type") for e in errors] == ["invalid_spec"] * 2


def test_failures_carry_their_reasons(tmp_path: Path, schema: xmlschema.XMLSchema) -> None:
    results = [
        case(id="f1", verdict="FAIL",
             failures=["", "composite 0.40 < 0.70", "structural 0.20 < 0.60: missing ## Risks"]),
        case(id="f2", verdict="FAIL", failures=[]),
        case(id="e1", verdict="ERROR", composite_score=None, reason="grader_error",
             error="  \nregex grader: bad pattern '('\ndetail", failures=[]),
        case(id="e2", verdict="ERROR", composite_score=None),
    ]  # fmt: skip
    suite = write_report(make_run(results), tmp_path, schema).find("testsuite")
    assert suite is not None

    def outcome(name: str, tag: str) -> ET.Element:
        found = suite.find(f"testcase[@name='{name}']/{tag}")
        assert found is not None, (name, tag)
        return found

    f1 = outcome("f1", "failure")
    assert (f1.get("type"), f1.get("message")) == ("gate", "composite 0.40 < 0.70")
    assert f1.text == "\ncomposite 0.40 < 0.70\nstructural 0.20 < 0.60: missing ## Risks"
    f2 = outcome("f2", "failure")
    assert (f2.get("type"), f2.get("message"), f2.text) == ("gate",) + ("the canary failed",) * 2
    e1 = outcome("e1", "error")
    assert (e1.get("type"), e1.get("message")) == ("grader_error", "regex grader: bad pattern '('")
    assert e1.text is not None and e1.text.endswith("bad pattern '('\ndetail")
    e2 = outcome("e2", "error")
    assert (e2.get("type"), e2.get("message")) == ("error", "coalmine could not judge this canary")
    assert suite.find("testcase[@name='e2']/failure") is None


def test_hostile_text_is_cleaned_and_escaped(tmp_path: Path, schema: xmlschema.XMLSchema) -> None:
    hostile = case(
        id=f"qa-9{ILLEGAL}", title=HOSTILE, agent=HOSTILE, verdict="FAIL", output=HOSTILE,
        failures=[HOSTILE, "second"], error=HOSTILE, warnings=[HOSTILE],
        grader_scores={"keyword": Grade(skipped=True, reason=HOSTILE)},
    )  # fmt: skip
    invalid = [InvalidSpecRecord(path=HOSTILE, line=2, id=None, reason=HOSTILE)]
    run = make_run([hostile], invalid, run_id=HOSTILE, coalmine_version=HOSTILE)
    text = render_junit(run)
    text.encode("utf-8")  # no lone surrogate survives
    assert not any(ch in text for ch in ILLEGAL)
    assert "]]>" not in text and "<script>" not in text

    suite = write_report(run, tmp_path, schema).find("testsuite")
    assert suite is not None
    (first, second) = suite.findall("testcase")
    assert first.get("name") == "qa-9"
    failure = first.find("failure")
    assert failure is not None
    # The message is one line: the hostile line up to its newline.
    assert failure.get("message") == HOSTILE_CLEAN.split("\n")[0].strip()
    assert failure.text == f"{HOSTILE_CLEAN}\nsecond\n{HOSTILE_CLEAN}"
    out = first.findtext("system-out")
    assert (
        out is not None and out.count(HOSTILE_CLEAN) == 5
    )  # title, agent, grader, warning, output
    assert second.get("name") == HOSTILE_CLEAN
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["coalmine.run_id"] == HOSTILE_CLEAN
    assert props["coalmine.version"] == HOSTILE_CLEAN


def test_an_interrupted_run_says_so(tmp_path: Path, schema: xmlschema.XMLSchema) -> None:
    run = make_run([case()], interrupted=True)
    suite = write_report(run, tmp_path, schema).find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["coalmine.interrupted"] == "true"
    note = suite.findtext("system-out")
    assert note is not None and note.startswith("Interrupted:")

    finished = write_report(make_run([case()]), tmp_path, schema).find("testsuite")
    assert finished is not None
    assert "coalmine.interrupted" not in {p.get("name") for p in finished.iter("property")}
    assert finished.find("system-out") is None


def test_an_empty_run_is_valid(tmp_path: Path, schema: xmlschema.XMLSchema) -> None:
    root = write_report(make_run([]), tmp_path, schema)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("0", "0", "0")


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2026-04-13T07:30:00Z", "2026-04-13T07:30:00"),
        ("2026-04-13T07:30:00.123456+00:00", "2026-04-13T07:30:00"),
        ("2026-04-13T09:30:00+02:00", "2026-04-13T07:30:00"),
        ("2026-04-13T07:30:00", "2026-04-13T07:30:00"),
        ("yesterday", None),
    ],
)
def test_timestamp_is_ants_utc_form(
    stamp: str, expected: str | None, tmp_path: Path, schema: xmlschema.XMLSchema
) -> None:
    suite = write_report(make_run([], timestamp=stamp), tmp_path, schema).find("testsuite")
    assert suite is not None
    assert suite.get("timestamp") == expected
    started = [
        p.get("value") for p in suite.iter("property") if p.get("name") == "coalmine.started"
    ]
    assert started == [stamp]


def test_times_fit_surefires_pattern(tmp_path: Path, schema: xmlschema.XMLSchema) -> None:
    results = [case(id="nan", duration_seconds=float("nan")), case(id="neg", duration_seconds=-1)]
    root = write_report(make_run(results, duration_seconds=1e20), tmp_path, schema)
    assert root.get("time") == "100000000000000000000.000"
    assert [c.get("time") for c in root.iter("testcase")] == ["0.000", "0.000"]


def test_the_fixture_schema_rejects_what_jenkins_rejects(schema: xmlschema.XMLSchema) -> None:
    ok = '<testsuite name="s" tests="1" failures="0" errors="0" time="1,234.5"><testcase name="t"/></testsuite>'
    assert schema.is_valid(ok)
    assert not schema.is_valid('<testsuite name="s" failures="0" errors="0"/>')  # no tests
    assert not schema.is_valid('<testsuite name="s" tests="0" failures="0" errors="0" time="-1"/>')
    assert not schema.is_valid('<testsuites time="1e3"/>')
    assert not schema.is_valid(
        '<testsuite name="s" tests="1" failures="0" errors="0"><testcase/></testsuite>'
    )  # a testcase needs a name
    assert not schema.is_valid(
        '<testsuite name="s" tests="1" failures="0" errors="0">'
        '<testcase name="t"><properties/></testcase></testsuite>'
    )  # properties belong to the suite
