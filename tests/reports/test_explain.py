"""A case's failure in words: escaped cells, fences nothing closes, every cause and grader."""

from __future__ import annotations

from coalmine.reports.explain import explain_case, fenced, markdown_table
from coalmine.results import CaseResult, Grade


def test_a_table_escapes_what_would_break_a_row_or_open_markup() -> None:
    assert markdown_table([["a", "b"], ["x|y", "two\nlines"], ["<img src=x>", "`tick`"]]) == (
        "| a | b |\n|---|---|\n| x\\|y | two lines |\n| \\<img src=x> | \\`tick\\` |"
    )
    assert markdown_table([]) == ""


def test_a_fence_is_longer_than_any_run_of_backticks_in_the_text() -> None:
    assert fenced("plain") == "```\nplain\n```"
    assert fenced("a ```` b") == "`````\na ```` b\n`````"


def test_a_failure_is_explained_with_its_causes_graders_expected_and_output() -> None:
    result = CaseResult(
        id="smoke/capital-fr", phase="eval", title="t", agent="bot", verdict="FAIL",
        composite_score=0.5, duration_seconds=0.2, failures=["equals failed: differs at 0"],
        grader_scores={"equals": Grade(score=0.0, passed=False, detail="differs at 0"),
                       "regex": Grade(score=1.0, passed=True),
                       "llm-judge": Grade(skipped=True, reason="no judge for this run")},
        expected={"city": "Paris"}, output="Lyon ``` breaks out?",
    )  # fmt: skip
    text = explain_case(result)
    assert text.splitlines()[0] == "**smoke/capital-fr**: FAIL (score 0.50)"
    assert "- equals failed: differs at 0" in text
    assert "| equals | 0.000 | False | differs at 0 |" in text
    assert "| regex | 1.000 | True |  |" in text
    assert "| llm-judge | skipped | None | no judge for this run |" in text
    assert 'expected:\n```\n{\n  "city": "Paris"\n}\n```' in text
    assert "output:\n````\nLyon ``` breaks out?\n````" in text


def test_a_case_with_repeats_says_how_many_passed_with_its_interval() -> None:
    def run(verdict: str) -> CaseResult:
        return CaseResult(id="s/c", phase="s", title="t", agent="bot", verdict=verdict,
                          composite_score=None, duration_seconds=0.1)  # fmt: skip

    runs = [run("PASS"), run("FAIL"), run("PASS"), run("ERROR")]
    result = run("FAIL").model_copy(update={"repeats": runs})
    # 2 of the 3 runs that graded: Wilson 95% (0.2077, 0.9385), which straddles 0.5
    assert "passed 2 of 3 runs (95% interval 0.21–0.94) — flaky: its runs disagree" in (
        explain_case(result)
    )
    steady = run("PASS").model_copy(update={"repeats": [run("PASS")] * 3})
    assert "passed 3 of 3 runs (95% interval 0.44–1.00)\n" in explain_case(steady) + "\n"
    assert "flaky" not in explain_case(steady)
