"""The structural grader: required sections found among headings and labels."""

from __future__ import annotations

import textwrap

import anyio
import pytest

from coalmine.graders.base import GradeContext, registry
from coalmine.graders.structural import (
    StructuralConfig,
    StructuralGrade,
    extract_headings,
    score_structure,
)


def md(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def sections(*names: str) -> StructuralConfig:
    return StructuralConfig(required_sections=list(names))


def test_atx_headings_of_every_level() -> None:
    text = md(
        """
        # One
        ## Two
        ### Three
        #### Four
        ##### Five
        ###### Six
        ####### Seven is not a heading
        """
    )
    assert extract_headings(text)[:6] == ["One", "Two", "Three", "Four", "Five", "Six"]
    assert "Seven is not a heading" not in extract_headings(text)


def test_atx_closing_hashes_and_indent_are_dropped() -> None:
    text = "## Risks ##\n   ### Rollback plan ###   \n#hashtag is not a heading"
    assert extract_headings(text) == ["Risks", "Rollback plan"]


def test_atx_hash_inside_heading_text_is_kept() -> None:
    # CommonMark: a closing sequence of '#' must be preceded by a space, so the heading of
    # "## Migrating to C#" is "Migrating to C#", not "Migrating to C".
    assert extract_headings("## Migrating to C#") == ["Migrating to C#"]
    assert score_structure("## Migrating to C#", sections("C#")).missing == []


def test_setext_headings() -> None:
    text = md(
        """
        Overview
        ========

        Risks
        -----
        body text
        """
    )
    assert extract_headings(text) == ["Overview", "Risks"]


def test_list_item_before_dashes_is_not_a_setext_heading() -> None:
    text = "- first item\n---\nplain"
    assert extract_headings(text) == []


def test_html_headings_with_inner_tags_and_entities() -> None:
    text = md(
        """
        <h1>Report</h1>
        <h2 class="section"><strong>Risks</strong> &amp; Mitigations</h2>
        <H3>Rollback&nbsp;plan</H3>
        <p>not a heading</p>
        """
    )
    assert extract_headings(text) == ["Report", "Risks & Mitigations", "Rollback plan"]


@pytest.mark.parametrize(
    "line", ["**Risks**", "__Risks__", "**Risks:**", "**Risks**:", "  **Risks**  "]
)
def test_wholly_bold_line_is_a_heading(line: str) -> None:
    assert extract_headings(line) == ["Risks"]


def test_bold_words_inside_prose_are_not_headings() -> None:
    text = "We list **risks** further down and then **rollback** steps"
    assert extract_headings(text) == []
    # 0 of 2 sections in a heading or label: 0 / 2 = 0.0
    assert score_structure(text, sections("risks", "rollback")).score == 0.0


def test_label_before_colon_up_to_80_chars() -> None:
    label_80 = "R" + "x" * 79
    label_81 = "R" + "x" * 80
    assert len(label_80) == 80 and len(label_81) == 81
    assert extract_headings(f"{label_80}: value") == [label_80]
    assert extract_headings(f"{label_81}: value") == []


def test_label_is_text_before_the_first_colon() -> None:
    assert extract_headings("Rollback plan: revert at 10:30 UTC") == ["Rollback plan"]


@pytest.mark.parametrize(
    "line", ["See https://example.com/risks", "Deploy at 10:30 UTC", "ratio 3:1 for rollback"]
)
def test_colon_without_space_after_makes_no_label(line: str) -> None:
    assert extract_headings(line) == []


def test_label_colon_may_end_the_line() -> None:
    assert extract_headings("Rollback plan:\n- revert") == ["Rollback plan"]


def test_list_item_labels() -> None:
    text = md(
        """
        - Rollback: revert the release
        * Monitoring: error rate dashboards
        1. Owners: the on-call engineer
        2) **Timeline:** two days
        """
    )
    assert extract_headings(text) == ["Rollback", "Monitoring", "Owners", "Timeline"]


def test_section_named_only_in_body_prose_is_not_found() -> None:
    prose = "We considered rollback carefully and it seems fine."
    assert score_structure(prose, sections("Rollback")).missing == ["Rollback"]
    labelled = prose + "\nRollback plan: revert the deploy."
    grade = score_structure(labelled, sections("Rollback"))
    assert grade.missing == []
    assert grade.score == 1.0


def test_headings_inside_fenced_code_are_ignored() -> None:
    text = md(
        """
        ## Usage
        ```python
        # Risks
        rollback: bool = True
        ```
        ~~~
        # Monitoring
        ~~~
        ## Notes
        """
    )
    assert extract_headings(text) == ["Usage", "Notes"]
    # 0 of 3 sections are outside the fences: 0 / 3 = 0.0
    grade = score_structure(text, sections("Risks", "Rollback", "Monitoring"))
    assert grade.score == 0.0


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "## Setup\n```bash\n# Risks\n"
    assert extract_headings(text) == ["Setup"]


def test_shorter_inner_fence_does_not_close_a_longer_one() -> None:
    # CommonMark: a closing fence is at least as long as the opening one and has no info
    # string, so "```bash" inside a "````" block is content and "# install" stays code.
    text = md(
        """
        ````markdown
        ```bash
        # install
        ```
        ````
        ## After
        """
    )
    assert extract_headings(text) == ["After"]


def test_two_of_three_fails_at_threshold_0_7() -> None:
    text = "# Risks\n# Rollback\nsome text"
    grade = score_structure(text, sections("Risks", "Rollback", "Monitoring"))
    # 2 found / 3 required = 0.6667 < 0.7
    assert grade.score is not None and round(grade.score, 4) == 0.6667
    assert grade.passed is False
    assert grade.sections_found == 2
    assert grade.sections_required == 3
    assert grade.missing == ["Monitoring"]
    assert grade.explain() == "missing sections 'Monitoring'"


def test_three_of_four_passes() -> None:
    text = "# Summary\n**Risks**\nRollback: revert\n"
    grade = score_structure(text, sections("Summary", "Risks", "Rollback", "Owners"))
    # 3 found / 4 required = 0.75 >= 0.7
    assert grade.score == 0.75
    assert grade.passed is True
    assert grade.missing == ["Owners"]


def test_all_found_explains_nothing() -> None:
    grade = score_structure("# A\n# B", sections("a", "b"))
    assert grade.score == 1.0
    assert grade.explain() == ""


def test_section_matches_case_insensitively_within_a_heading() -> None:
    text = "## RISK ASSESSMENT and mitigations\n### rollback PLAN"
    grade = score_structure(text, sections("Risk assessment", "Rollback plan", "mitigations"))
    assert grade.missing == []


def test_multi_word_sections_with_irregular_whitespace() -> None:
    text = "##   Rollback \t  Plan  \nTest   strategy:  unit and e2e"
    assert extract_headings(text) == ["Rollback Plan", "Test strategy"]
    grade = score_structure(text, sections("rollback  plan", " Test\tStrategy "))
    assert grade.missing == []
    assert grade.score == 1.0


def test_required_sections_must_not_be_empty() -> None:
    with pytest.raises(ValueError):
        StructuralConfig.model_validate({"required_sections": []})
    with pytest.raises(ValueError):
        StructuralConfig.model_validate({"required_sections": [""]})


def test_registered_grader_returns_structural_grade() -> None:
    item = registry.get("structural")
    assert item.threshold == 0.7
    ctx = GradeContext(case_id="doc-001", prompt="Write the runbook.")
    grade = anyio.run(item.grade, sections("Risks"), "# Risks\n", ctx)
    assert isinstance(grade, StructuralGrade)
    assert grade.score == 1.0
