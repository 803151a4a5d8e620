"""The MCP tools' own parts, without a server: finding a case by its id."""

from __future__ import annotations

import pytest

from coalmine.errors import UsageError
from coalmine.mcp.tools import _find_case
from coalmine.results import CaseResult


def _case(case_id: str, verdict: str = "FAIL") -> CaseResult:
    return CaseResult(id=case_id, phase="eval", title=case_id, agent="a", verdict=verdict,
                      composite_score=0.0, duration_seconds=0.1)  # fmt: skip


def test_a_case_is_found_by_its_id_or_by_its_name_within_a_suite() -> None:
    results = [_case("smoke/capital-fr"), _case("smoke/capital-de", "PASS"), _case("qa-001")]
    assert _find_case(results, "qa-001").id == "qa-001"
    assert _find_case(results, "capital-fr").id == "smoke/capital-fr"
    assert _find_case(results, "smoke/capital-de").id == "smoke/capital-de"


def test_an_unknown_or_ambiguous_case_is_a_usage_error_naming_the_candidates() -> None:
    results = [_case("a/same"), _case("b/same"), _case("c/ok", "PASS")]
    with pytest.raises(UsageError, match="several cases: a/same, b/same"):
        _find_case(results, "same")
    with pytest.raises(UsageError, match="no case 'nope'; its failing cases: a/same, b/same"):
        _find_case(results, "nope")
    with pytest.raises(UsageError, match="every case passed"):
        _find_case([_case("c/ok", "PASS")], "nope")
