"""Secrets are scrubbed whole, and where an excerpt cut one in two."""

from __future__ import annotations

from coalmine.graders.text import EqualsConfig, score_equals
from coalmine.providers.base import redact, redact_model

KEY = "sk-live-0123456789abcdef"


def test_a_whole_secret_and_a_short_one() -> None:
    assert redact(f"key={KEY}; again {KEY}", [KEY]) == "key=***; again ***"
    assert redact("abc", ["abc"]) == "abc"  # under 4 characters: too common to scrub


def test_the_start_or_end_of_a_secret_at_a_cut_is_scrubbed() -> None:
    assert redact(f"…uses {KEY[:12]}…", [KEY]) == "…uses ***…"
    assert redact(f"…{KEY[-9:]} was sent", [KEY]) == "…*** was sent"
    assert redact(f"…{KEY[:3]}…", [KEY]) == f"…{KEY[:3]}…"  # 3 characters say nothing
    assert redact(f"{KEY[:12]} and more", [KEY]) == f"{KEY[:12]} and more"  # not at a cut


def test_an_equals_reason_whose_excerpt_cuts_a_secret_keeps_none_of_it() -> None:
    # the first difference is at 0, so the excerpt is the output's first 40 characters: the
    # 31 before the key, then the key's first 9, then the cut
    output = "B" + "y" * 30 + KEY + " and a tail"
    grade = score_equals(output, EqualsConfig(value="A" * 50))
    assert f"{KEY[:9]}…" in grade.explain()  # the excerpt quotes the start of the key …
    scrubbed = redact_model(grade, [KEY])
    dumped = scrubbed.model_dump_json()
    assert "***…" in scrubbed.explain()
    assert all(KEY[i : i + 4] not in dumped for i in range(len(KEY) - 3))  # … and none is kept
