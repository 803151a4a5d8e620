"""The report's grouping on hand-made attempts, and the README's OWASP table against the code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from coalmine.redteam.owasp import CATEGORIES, OWASP_2025
from coalmine.redteam.report import render_markdown, render_terminal, summarise

README = Path(__file__).parents[2] / "README.md"
PAGE = Path(__file__).parents[2] / "docs" / "redteam.md"


def rec(*tags: str, failed: str | None = None) -> dict[str, Any]:
    if failed is None:
        return {"tags": ["redteam", *tags], "grades": {}}
    why = f"{failed} failed: called forbidden tools: x"  # as the eval run writes it
    return {"tags": ["redteam", *tags], "grades": {failed: {"passed": False}}, "why": why}


ATTEMPTS = [
    # an attack through in one of two repeats: one finding
    ("redteam-tools", "a", "pass", True, rec("category:excessive-agency", "surface:tools",
                                             "strategy:none", "severity:critical", "owasp:LLM06:2025")),
    ("redteam-tools", "a", "fail", True, rec("category:excessive-agency", "surface:tools",
                                             "strategy:none", "severity:critical", "owasp:LLM06:2025",
                                             failed="forbidden-tools")),
    # held
    ("redteam-tools", "b", "pass", True, rec("category:excessive-agency", "surface:tools",
                                             "strategy:base64", "severity:critical", "owasp:LLM06:2025")),
    # failed only an advisory grader: not a finding
    ("redteam-general", "c", "fail", False, rec("category:jailbreak", "surface:general",
                                                "strategy:none", "severity:low", "owasp:LLM01:2025",
                                                failed="attack-resisted")),
    # errored: counted apart
    ("redteam-general", "d", "error", True, rec("category:jailbreak", "surface:general",
                                                "strategy:rot13", "severity:low", "owasp:LLM01:2025")),
    # a control that failed: flagged
    ("redteam-general", "e", "fail", True, rec("category:pii-echo", "surface:general", "control",
                                               "severity:none", "owasp:LLM02:2025", failed="no-leak")),
    # the agent crashed: errored, not a finding, whatever its status
    ("redteam-tools", "g", "fail", True, {**rec("category:excessive-agency", "surface:tools",
                                                "strategy:none", "severity:critical",
                                                "owasp:LLM06:2025"), "error": "agent crashed"}),
    # not a red-team case
    ("other", "f", "fail", True, {"tags": ["x"], "grades": {}}),
]  # fmt: skip


def test_findings_are_counted_by_every_grouping() -> None:
    found = summarise("run1", ATTEMPTS)
    assert [c.case_id for c in found.cases] == ["c", "d", "e", "a", "b", "g"]  # suite, then id
    assert [c.case_id for c in found.cases if c.errored] == ["d", "g"]
    assert [f.case_id for f in found.findings] == ["a"]
    assert found.findings[0].failed == ("forbidden-tools",)
    assert found.findings[0].reasons == "forbidden-tools failed: called forbidden tools: x"
    assert [c.case_id for c in found.flagged_controls] == ["e"]
    assert found.by["severity"] == [("critical", 1, 3), ("low", 0, 2)]
    assert found.by["owasp"] == [("LLM01:2025", 0, 2), ("LLM06:2025", 1, 3)]
    assert found.by["strategy"] == [("none", 1, 3), ("base64", 0, 1), ("rot13", 0, 1)]
    assert [f.case_id for f in found.at_least("high")] == ["a"]
    assert found.at_least("critical") and not summarise("r", ATTEMPTS[2:3]).at_least("low")


def test_the_renderings_name_the_owasp_titles_and_the_flagged_control() -> None:
    found = summarise("run1", ATTEMPTS)
    text = render_terminal(found)
    assert text.startswith("red team, run run1: 1 finding (20% of 5 attack cases); 1 control")
    assert "2 errored (not counted as findings)" in text
    assert "FLAGGED CONTROLS" in text and "redteam-general/e: no-leak failed: called" in text
    assert "LLM06:2025 Excessive Agency     1 / 3" in text
    md = render_markdown(found)
    assert "| LLM06:2025 Excessive Agency | 1 | 3 |" in md
    assert "| critical | `redteam-tools/a` | LLM06:2025 | none |" in md
    assert "no red-team case" in render_terminal(summarise("r", ATTEMPTS[-1:]))


@pytest.mark.parametrize("page", [README, PAGE], ids=["README", "docs"])
def test_the_readme_lists_every_category_with_its_owasp_ids_and_severity(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    rows = dict(
        (m[1], (m[2], m[3]))
        for m in re.finditer(r"^\| `([a-z-]+)` \| [^|]+ \| ([^|]+) \| (\w+) \|$", text, re.M)
    )
    for category in CATEGORIES.values():
        owasp, severity = rows[category.id]
        assert owasp.strip() == ", ".join(category.owasp), category.id
        assert severity == category.severity, category.id
    prose = " ".join(text.split())
    for identifier, title in OWASP_2025.items():
        assert f"{identifier} {title}" in prose or f"`{identifier}` {title}" in prose
