"""The keyword grader: required/forbidden keywords as case-insensitive substrings."""

from __future__ import annotations

import anyio
import pytest
from pydantic import ValidationError

from coalmine.graders.base import GradeContext, registry
from coalmine.graders.keyword import KeywordConfig, KeywordGrade, score_keywords


def test_all_required_matched_scores_one() -> None:
    config = KeywordConfig(required=["SQL injection", "parameterized", "login"])
    grade = score_keywords(
        "The login handler has SQL injection; use parameterized queries.", config
    )
    # 3 matched, 0 forbidden, 3 required: (3 - 0) / 3 = 1.0
    assert grade.score == 1.0
    assert grade.passed is True
    assert grade.matched == 3
    assert grade.required == 3
    assert grade.missing == []
    assert grade.forbidden_found == []


def test_four_of_five_passes_exactly_at_threshold() -> None:
    config = KeywordConfig(required=["alpha", "beta", "gamma", "delta", "epsilon"])
    grade = score_keywords("alpha beta gamma delta", config)
    # 4 matched, 0 forbidden, 5 required: (4 - 0) / 5 = 0.8, and the threshold is >= 0.8
    assert grade.score == 0.8
    assert grade.passed is True
    assert grade.missing == ["epsilon"]


def test_forbidden_keyword_costs_one_required() -> None:
    config = KeywordConfig(required=["xss", "csrf", "ssrf"], forbidden=["looks good"])
    grade = score_keywords("Found XSS and CSRF. Otherwise it looks good.", config)
    # matched xss, csrf = 2; forbidden found = 1; required = 3: (2 - 1) / 3 = 0.3333
    assert grade.score == pytest.approx(1 / 3)
    assert grade.score is not None and round(grade.score, 4) == 0.3333
    assert grade.passed is False
    assert grade.matched == 2
    assert grade.required == 3
    assert grade.forbidden_found == ["looks good"]
    assert grade.missing == ["ssrf"]


def test_more_forbidden_than_matched_clamps_at_zero() -> None:
    config = KeywordConfig(
        required=["rollback", "canary"], forbidden=["yolo", "skip tests", "lgtm"]
    )
    grade = score_keywords("rollback? LGTM, yolo, skip tests.", config)
    # matched 1 (rollback), forbidden 3: (1 - 3) / 2 = -1.0, clamped by max(0, ...) to 0.0
    assert grade.score == 0.0
    assert grade.passed is False
    assert grade.forbidden_found == ["yolo", "skip tests", "lgtm"]


def test_no_required_and_no_forbidden_found_scores_one() -> None:
    config = KeywordConfig(forbidden=["password"])
    grade = score_keywords("The config reads the token from the environment.", config)
    # no required keywords and nothing forbidden found: 1.0 by the pinned rule
    assert grade.score == 1.0
    assert grade.passed is True
    assert grade.required == 0
    assert grade.matched == 0


def test_no_required_and_one_forbidden_found_scores_zero() -> None:
    config = KeywordConfig(forbidden=["password"])
    grade = score_keywords("Hard-coded PASSWORD in settings.py", config)
    # no required keywords and one forbidden found: 0.0 by the pinned rule
    assert grade.score == 0.0
    assert grade.passed is False
    assert grade.forbidden_found == ["password"]


def test_empty_config_scores_one() -> None:
    grade = score_keywords("anything", KeywordConfig())
    # nothing required, nothing forbidden: 1.0
    assert grade.score == 1.0


def test_matching_ignores_case() -> None:
    config = KeywordConfig(required=["Injection", "AUTH"], forbidden=["TODO"])
    grade = score_keywords("injection in auth; todo: fix", config)
    # both required matched, "TODO" found as "todo": (2 - 1) / 2 = 0.5
    assert grade.matched == 2
    assert grade.forbidden_found == ["TODO"]
    assert grade.score == 0.5


def test_casefold_matches_sharp_s_both_ways() -> None:
    # str.casefold() maps "ß" to "ss", so "straße" and "STRASSE" both fold to "strasse".
    assert "straße".casefold() == "STRASSE".casefold() == "strasse"
    upper_required = score_keywords(
        "Die Hauptstraße ist gesperrt.", KeywordConfig(required=["STRASSE"])
    )
    sharp_required = score_keywords("HAUPTSTRASSE GESPERRT", KeywordConfig(required=["straße"]))
    assert upper_required.score == 1.0
    assert sharp_required.score == 1.0


def test_casefold_non_ascii_keyword_not_in_text_is_missing() -> None:
    # "ÉTÉ" folds to "été", which is not in "ete" (accents are not stripped)
    grade = score_keywords("ete", KeywordConfig(required=["ÉTÉ"]))
    assert grade.score == 0.0
    assert grade.missing == ["ÉTÉ"]


def test_substring_semantics() -> None:
    config = KeywordConfig(required=["inject", "auth"])
    grade = score_keywords("SQL injection in the authentication flow", config)
    # "inject" is inside "injection", "auth" inside "authentication": 2 / 2 = 1.0
    assert grade.score == 1.0
    assert grade.missing == []


def test_missing_keeps_config_spelling_and_order() -> None:
    config = KeywordConfig(required=["Zeta", "alpha", "Mu"], forbidden=["B", "a"])
    grade = score_keywords("ALPHA only", config)
    assert grade.missing == ["Zeta", "Mu"]
    # "a" is a substring of "alpha"; "B" is not in the text
    assert grade.forbidden_found == ["a"]
    # matched 1, forbidden 1, required 3: (1 - 1) / 3 = 0.0
    assert grade.score == 0.0


def test_explain_names_missing_and_forbidden() -> None:
    config = KeywordConfig(required=["xss", "csrf", "ssrf"], forbidden=["looks good"])
    grade = score_keywords("XSS found; looks good otherwise", config)
    assert grade.explain() == "missing keywords 'csrf', 'ssrf'; forbidden found 'looks good'"


def test_explain_only_missing_and_empty_when_perfect() -> None:
    only_missing = score_keywords("abc", KeywordConfig(required=["abc", "xyz"]))
    assert only_missing.explain() == "missing keywords 'xyz'"
    perfect = score_keywords("abc", KeywordConfig(required=["abc"]))
    assert perfect.explain() == ""


@pytest.mark.parametrize("field", ["required", "forbidden"])
@pytest.mark.parametrize("blank", ["", "   "])
def test_blank_keyword_is_rejected(field: str, blank: str) -> None:
    # an empty keyword would be "found" in every response
    with pytest.raises(ValidationError) as info:
        KeywordConfig.model_validate({field: ["ok", blank]})
    assert info.value.errors()[0]["loc"] == (field, 1)


def test_unknown_config_key_is_rejected() -> None:
    with pytest.raises(ValidationError) as info:
        KeywordConfig.model_validate({"requird": ["x"]})
    assert info.value.errors()[0]["type"] == "extra_forbidden"


def test_registered_grader_returns_keyword_grade() -> None:
    item = registry.get("keyword")
    assert item.threshold == 0.8
    assert item.needs_judge is False
    config = KeywordConfig(required=["rollback", "monitoring"])
    ctx = GradeContext(case_id="deploy-001", prompt="Plan the deploy.")
    grade = anyio.run(item.grade, config, "Rollback plan only.", ctx)
    # 1 of 2 matched: 1 / 2 = 0.5, below 0.8
    assert isinstance(grade, KeywordGrade)
    assert grade.score == 0.5
    assert grade.passed is False
