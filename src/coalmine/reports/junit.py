"""A canary run as JUnit XML, the test report every CI system reads.

One ``<testsuite>`` holds one ``<testcase>`` per canary (``classname="canary.<phase>"``, ``name``
= the case id). A FAIL carries a ``<failure>`` whose message is the first cause and whose text
lists them all; an ERROR carries an ``<error>``; an invalid spec becomes a testcase with an
``<error type="invalid_spec">``, so CI counts it. The grader breakdown, the warnings and, for a
canary that did not pass, the agent's output go to the testcase's ``<system-out>``.

The document follows Jenkins' ``junit-10.xsd``. Agent output can hold any character, and XML 1.0
cannot carry some of them even escaped, so every string is cleaned once the tree is built.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from coalmine.compare import Comparison
from coalmine.reports.base import reporter
from coalmine.results import CanaryRun, CaseResult, Grade, InvalidSpecRecord, format_score

# Everything outside XML 1.0's Char production: C0 controls but tab, LF and CR; lone
# surrogates; U+FFFE and U+FFFF.
_ILLEGAL_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

# Only real line breaks: str.splitlines() also splits at \x0b, \x0c and \x1c-\x1e.
_NEWLINE = re.compile(r"\r\n|\r|\n")

SUITE_NAME = "coalmine canary"


@reporter("junit", suffix=".xml")
def junit_report(run: CanaryRun, *, comparison: Comparison | None = None) -> str:
    """The run for CI; JUnit has no place for a comparison, so a baseline changes nothing."""
    return render_junit(run)


def render_junit(run: CanaryRun) -> str:
    """Return the run as a JUnit XML document (UTF-8 declared, trailing newline)."""
    failures = sum(r.verdict == "FAIL" for r in run.results)
    errors = sum(r.verdict == "ERROR" for r in run.results) + len(run.invalid_specs)
    counts = {
        "tests": str(len(run.results) + len(run.invalid_specs)),
        "failures": str(failures),
        "errors": str(errors),
    }
    time = _seconds(run.duration_seconds)
    root = ET.Element("testsuites", {"name": "coalmine", **counts, "time": time})
    attrs = {"name": SUITE_NAME, **counts, "skipped": "0", "time": time}
    if (timestamp := _ant_timestamp(run.timestamp)) is not None:
        attrs["timestamp"] = timestamp
    # The run does not record its machine; 'localhost' is Ant's word for "unknown".
    attrs |= {"hostname": "localhost", "id": "0", "package": "coalmine"}
    suite = ET.SubElement(root, "testsuite", attrs)
    _add_properties(suite, run)
    for result in run.results:
        _add_case(suite, result, run.kind or "canary")
    for spec in run.invalid_specs:
        _add_invalid(suite, spec)
    if run.interrupted:
        note = "Interrupted: only the canaries listed finished; the others did not run."
        ET.SubElement(suite, "system-out").text = note
    for element in root.iter():
        _clean(element)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def _add_properties(suite: ET.Element, run: CanaryRun) -> None:
    props = {"coalmine.run_id": run.run_id, "coalmine.started": run.timestamp}
    if run.coalmine_version:
        props["coalmine.version"] = run.coalmine_version
    if run.judge is not None and (judge := run.judge.describe()):
        props["coalmine.judge"] = judge
    if run.interrupted:
        props["coalmine.interrupted"] = "true"
    parent = ET.SubElement(suite, "properties")
    for name, value in props.items():
        ET.SubElement(parent, "property", name=name, value=value)


def _add_case(suite: ET.Element, r: CaseResult, kind: str) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"{kind}.{r.phase}",
        name=r.id,
        time=_seconds(r.duration_seconds),
    )
    error = [r.error] if r.error else []
    if r.verdict == "FAIL":
        text = "\n".join([*r.failures, *error])
        message = _first_line(text, "the canary failed")
        _add_outcome(case, "failure", kind=r.reason or "gate", message=message, text=text)
    elif r.verdict == "ERROR":
        text = "\n".join([*error, *r.failures])
        message = _first_line(text, "coalmine could not judge this canary")
        _add_outcome(case, "error", kind=r.reason or "error", message=message, text=text)
    ET.SubElement(case, "system-out").text = _case_summary(r)


def _add_invalid(suite: ET.Element, spec: InvalidSpecRecord) -> None:
    case = ET.SubElement(
        suite, "testcase", classname="canary.invalid", name=spec.id or spec.path, time="0.000"
    )
    where = f"{spec.path}:{spec.line}" if spec.line else spec.path
    message = _first_line(spec.reason, "invalid spec")
    text = f"{where}\n{spec.reason}"
    _add_outcome(case, "error", kind="invalid_spec", message=message, text=text)


def _add_outcome(case: ET.Element, tag: str, *, kind: str, message: str, text: str) -> None:
    """Add ``<failure>`` or ``<error>``: the message is one line, the text all of them."""
    ET.SubElement(case, tag, message=message, type=kind).text = text or message


def _case_summary(r: CaseResult) -> str:
    composite = format_score(r.composite_score) if r.composite_score is not None else "none"
    lines = [f"title: {r.title}", f"agent: {r.agent}", f"verdict: {r.verdict}"]
    lines.append(f"composite: {composite}")
    if r.grader_scores:
        lines.append("graders:")
        lines += [f"  {name}: {_grade_line(g)}" for name, g in r.grader_scores.items()]
    if r.warnings:
        lines.append("warnings:")
        lines += [f"  {w}" for w in r.warnings]
    if r.verdict != "PASS" and r.output is not None:
        cut = " (cut)" if r.output_truncated else ""
        lines += [f"output{cut}:", r.output]
    return "\n".join(lines)


def _grade_line(g: Grade) -> str:
    if g.skipped:
        return f"skipped ({g.reason})" if g.reason else "skipped"
    if g.score is None:
        return "no score"
    line = format_score(g.score)
    if g.passed is not None:
        line += " passed" if g.passed else " failed"
    explain = g.explain()
    return f"{line}: {explain}" if explain else line


def _first_line(text: str, fallback: str) -> str:
    """The first line with visible text, once cleaned (a message attribute is one line)."""
    lines = (_ILLEGAL_XML.sub("", line).strip() for line in _NEWLINE.split(text))
    return next((line for line in lines if line), fallback)


def _seconds(value: float) -> str:
    """Seconds with three decimals; Surefire's time pattern has no sign, exponent or NaN."""
    return f"{value:.3f}" if math.isfinite(value) and value >= 0 else "0.000"


def _ant_timestamp(stamp: str) -> str | None:
    """``2026-04-13T07:30:00`` in UTC: Ant's form, which has no zone and no fraction.

    The exact string the run recorded stays in the ``coalmine.started`` property.
    """
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # the result contract stores UTC
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _clean(element: ET.Element) -> None:
    """Drop the characters XML 1.0 cannot carry from the element's text, tail and attributes."""
    if element.text:
        element.text = _ILLEGAL_XML.sub("", element.text)
    if element.tail:
        element.tail = _ILLEGAL_XML.sub("", element.tail)
    for key in list(element.attrib):
        element.attrib[key] = _ILLEGAL_XML.sub("", element.attrib[key])
