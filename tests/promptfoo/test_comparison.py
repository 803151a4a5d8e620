"""promptfoo's ``max-score``: a test's rows compared once all are graded, direct and imported.

The hand-computed cases build rows with :func:`score_row` and compare them; the config
``fixtures/parity/max_score`` was run with promptfoo 0.121.20 and ``fixtures/runs/
max_score.expected.json`` keeps, trimmed, what promptfoo reported per row (each row's
max-score reason and named scores too), which ``eval run --promptfoo`` and the imported
suites must give.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from coalmine._util.clock import FixedClock
from coalmine.errors import ConfigError
from coalmine.evals.plan import plan_evals
from coalmine.evals.run import run_evals
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.comparison import (
    NOTHING_TO_AGGREGATE,
    TOO_FEW,
    check_max_scores,
    compare_rows,
    max_score_problem,
)
from coalmine.promptfoo.grading import grading_result
from coalmine.promptfoo.matrix import load_matrix
from coalmine.promptfoo.scoring import (
    AssertionOutcome,
    AssertSetOutcome,
    FailureReason,
    RowOutcome,
    error_row,
    graded_row,
    score_row,
)
from coalmine.store.evals import iter_attempts
from coalmine.store.runs import Store
from tests.evals.test_run import StopAfter
from tests.helpers.cli import run_main
from tests.promptfoo.test_import import import_and_run, stored_rows
from tests.promptfoo.test_run import NEEDS_NODE, PROMPTFOO, copied_into, evaluate, fixed, run

pytestmark = pytest.mark.usefixtures("fast_python")

PARITY = PROMPTFOO / "parity" / "max_score" / "promptfooconfig.yaml"
EXPECTED = PROMPTFOO / "runs" / "max_score.expected.json"
MAX_SCORE = Assertion(type="max-score")


def graded(kind: str, score: float, *, passed: bool | None = None, **fields: Any) -> Any:
    assertion = Assertion.model_validate({"type": kind, **fields})
    passed = score > 0 if passed is None else passed
    return AssertionOutcome(assertion, passed, score, "ok" if passed else f"{kind} failed")


def row(*outcomes: Any) -> RowOutcome:
    """A row graded as promptfoo grades it, its max-score (last) skipped."""
    return graded_row(score_row([*outcomes, graded("max-score", 0.0, passed=True)]))


def compare(*rows: RowOutcome, value: Any = None) -> list[RowOutcome]:
    assertion = MAX_SCORE if value is None else Assertion(type="max-score", value=value)
    return compare_rows(rows, assertion, columns=range(len(rows)))


def last(outcome: RowOutcome) -> Any:
    assert outcome.grading is not None
    return outcome.grading.component_results[-1]


# --- hand-computed -----------------------------------------------------------------------


def test_the_highest_average_wins_and_a_row_that_passed_fails_with_the_reason() -> None:
    # aggregates: (1 + 0.2) / 2 = 0.6, (1 + 0.8) / 2 = 0.9, (0 + 0.9) / 2 = 0.45
    first, best, failing = compare(
        row(graded("contains", 1.0), graded("javascript", 0.2)),
        row(graded("contains", 1.0), graded("javascript", 0.8)),
        row(graded("contains", 0.0), graded("javascript", 0.9)),
    )
    assert (best.success, best.score, best.error) == (True, 0.9, None)
    assert last(best).reason == "Selected as highest scoring output (score: 0.900)"
    assert (last(best).passed, last(best).score) == (True, 1.0)
    assert (first.success, first.score, first.failure_reason) == (False, 0.0, FailureReason.ASSERT)
    assert first.error == "Not selected (score: 0.600, max: 0.900)"
    assert first.grading is not None and first.grading.reason == first.error
    assert first.grading.named_scores == {"maxScore": 0.6, "assertionCount": 2, "totalWeight": 2}
    assert first.named_scores == {}  # the row's own named scores do not take them
    # a row that already failed keeps its reason, and loses its score
    assert (failing.success, failing.score, failing.error) == (False, 0.0, "contains failed")
    assert last(failing).reason == "Not selected (score: 0.450, max: 0.900)"


def test_a_tie_goes_to_the_first_row() -> None:
    one, two = compare(row(graded("contains", 1.0)), row(graded("contains", 1.0)))
    assert (one.success, two.success) == (True, False)
    assert two.error == "Not selected (score: 1.000, max: 1.000)"


def test_a_threshold_not_reached_selects_none_and_says_so_to_the_best() -> None:
    low, high, tied = compare(
        row(graded("javascript", 0.6)),
        row(graded("javascript", 0.8)),
        row(graded("javascript", 0.8)),
        value={"threshold": 0.9},
    )
    assert [o.success for o in (low, high, tied)] == [False, False, False]
    assert high.error == tied.error == "Not selected - score 0.800 below threshold 0.9"
    assert low.error == "Not selected (score: 0.600, max: 0.800)"


def test_a_threshold_compares_as_in_javascript_and_a_value_not_a_mapping_is_no_options() -> None:
    one, _ = compare(
        row(graded("equals", 0.0)), row(graded("equals", 0.0)), value={"threshold": None}
    )
    assert last(one).reason == "Selected as highest scoring output (score: 0.000)"
    assert last(one).passed and not one.success  # it won, and its equals still fails it
    one, two = compare(row(graded("equals", 0.0)), row(graded("equals", 1.0)), value="best")
    assert (one.success, two.success) == (False, True)
    _, two = compare(
        row(graded("equals", 0.0)), row(graded("equals", 1.0)), value={"threshold": "2"}
    )
    assert two.error == "Not selected - score 1.000 below threshold 2"  # "2" is 2 to `>=`


def test_method_sum_weighs_by_type_name_and_counts_weight_zero_scores() -> None:
    value = {"method": "sum", "weights": {"regex": 0.5, "not-contains": 2}}
    # Σ score·w: 1·1 + 0·2 + 1·0.5 = 1.5 and 0·1 + 1·2 + 0·0.5 = 2; Σ w = 3.5 for both
    loser, winner = compare(
        row(graded("contains", 1.0), graded("not-contains", 0.0, weight=0), graded("regex", 1.0)),
        row(graded("contains", 0.0), graded("not-contains", 1.0, weight=0), graded("regex", 0.0)),
        value=value,
    )
    assert last(winner).reason == "Selected as highest scoring output (score: 2.000)"
    assert last(loser).reason == "Not selected (score: 1.500, max: 2.000)"
    assert last(loser).named_scores == {"maxScore": 1.5, "assertionCount": 3, "totalWeight": 3.5}
    # the weight-0 assertion passed (forced) and still counts its 0 with weight 2
    assert loser.error == "Not selected (score: 1.500, max: 2.000)"


def test_an_assert_sets_children_count_and_its_own_entry_and_max_score_do_not() -> None:
    children = (
        graded("contains", 1.0),
        graded("max-score", 0.0, passed=True),
        graded("javascript", 0.5),
    )
    raw = [c.assertion.model_dump(by_alias=True, exclude_unset=True) for c in children]
    nested = AssertSetOutcome(Assertion.model_validate({"type": "assert-set", "assert": raw}),
                              children)  # fmt: skip
    one, two = compare(row(nested, graded("equals", 0.0)), row(graded("equals", 1.0)))
    # (1 + 0.5 + 0) / 3 = 0.5 against 1
    assert last(one).named_scores == {"maxScore": 0.5, "assertionCount": 3, "totalWeight": 3}
    assert two.success


def test_a_max_score_is_left_to_the_comparison_and_its_not_form_is_an_unknown_type() -> None:
    result = evaluate(fixed({"type": "contains", "value": "Ada"}, {"type": "max-score"}))
    assert result.outcome.grading is not None
    assert [c.assertion.type for c in result.outcome.grading.component_results] == ["contains"]
    result = evaluate(fixed({"type": "contains", "value": "Ada"}, {"type": "not-max-score"}))
    assert result.outcome.error == "Error: Unknown assertion type: not-max-score"


def test_where_promptfoo_stops_the_eval_the_rows_are_errors_that_say_why() -> None:
    broken = error_row("Template render error")
    fine, kept = compare(row(graded("contains", 1.0)), broken)
    assert kept is broken
    assert fine.failure_reason is FailureReason.ERROR
    assert fine.error is not None and "column 1 is an ERROR" in fine.error
    assert NOTHING_TO_AGGREGATE in fine.error
    [alone] = compare(row(graded("contains", 1.0)))
    assert alone.failure_reason is FailureReason.ERROR and TOO_FEW in (alone.error or "")


def test_the_merged_grading_result_has_promptfoos_keys_in_its_order() -> None:
    one, _ = compare(row(graded("contains", 1.0)), row(graded("contains", 0.0)))
    assert one.grading is not None
    written = grading_result(one.grading)
    assert list(written) == ["pass", "score", "reason", "namedScores", "tokensUsed",
                             "componentResults", "assertion"]  # fmt: skip
    assert written["assertion"] == {"type": "max-score"}
    assert written["componentResults"][-1] == {
        "pass": True,
        "score": 1.0,
        "reason": "Selected as highest scoring output (score: 1.000)",
        "namedScores": {"maxScore": 1.0, "assertionCount": 1, "totalWeight": 1.0},
        "assertion": {"type": "max-score"},
    }


EQUALS: dict[str, Any] = {"type": "equals", "value": "a"}
MAX: dict[str, Any] = {"type": "max-score"}


def max_with(value: Any) -> dict[str, Any]:
    return {"type": "max-score", "value": value}


@pytest.mark.parametrize(
    ("assertions", "outputs", "problem"),
    [
        ([EQUALS], 1, None),  # no max-score
        ([EQUALS, MAX], 2, None),
        ([EQUALS, MAX], 1, TOO_FEW),
        ([MAX], 2, NOTHING_TO_AGGREGATE),
        ([{"type": "select-best", "value": "x"}, MAX], 3, NOTHING_TO_AGGREGATE),
        ([{"type": "assert-set", "assert": [EQUALS]}, MAX], 2, None),
        ([EQUALS, max_with({"weights": None})], 2, "value.weights is null"),
        ([EQUALS, max_with({"weights": {"equals": "2"}})], 2, "weights.equals is '2', not a"),
    ],
)
def test_what_stops_promptfoo_is_known_before_a_row_runs(
    assertions: list[dict[str, Any]], outputs: int, problem: str | None
) -> None:
    found = max_score_problem([Assertion.model_validate(a) for a in assertions], outputs=outputs)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_a_config_with_one_column_names_the_test_and_its_line(tmp_path: Path) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n"
        "  - vars: {q: a}\n"
        "  - description: best\n    vars: {q: b}\n"
        "    assert: [{type: contains, value: b}, {type: max-score}]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        check_max_scores(load_matrix(config))
    assert caught.value.path == config and caught.value.line == 5
    assert str(caught.value).startswith(f"{config}:5: test 1 ('best'): max-score compares")
    assert TOO_FEW in str(caught.value)
    with pytest.raises(ConfigError, match="this test has 1"):
        run(config, tmp_path)
    project = tmp_path / "project"
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code == 2 and "test 1 ('best')" in output and "Traceback" not in output


# --- promptfoo's own rows ----------------------------------------------------------------


def expected_rows() -> dict[tuple[int, int], dict[str, Any]]:
    document = json.loads(EXPECTED.read_text(encoding="utf-8"))
    return {(r["testIdx"], r["promptIdx"]): r for r in document["results"]}


def assert_agrees(row: dict[str, Any]) -> None:
    """A row in promptfoo's result-file shape agrees with the captured one."""
    where = (row["testIdx"], row["promptIdx"])
    theirs = expected_rows()[where]
    assert (row["success"], row["failureReason"]) == (theirs["success"], theirs["failureReason"])
    assert math.isclose(row["score"], theirs["score"], abs_tol=1e-9), where
    assert row["namedScores"].keys() == theirs["namedScores"].keys(), where
    grading = row["gradingResult"]
    assert [c["pass"] for c in grading["componentResults"]] == [
        c["pass"] for c in theirs["componentResults"]
    ], where
    component = grading["componentResults"][-1]
    assert component["reason"] == theirs["maxScore"]["reason"], where
    # the error is max-score's where promptfoo's is (another assertion's reason is its grader's)
    error, wanted = row.get("error"), theirs.get("error")
    assert (error is None, error == component["reason"]) == (
        wanted is None,
        wanted == theirs["maxScore"]["reason"],
    ), where
    for name, value in theirs["maxScore"]["namedScores"].items():
        assert math.isclose(component["namedScores"][name], value, abs_tol=1e-9), where


@NEEDS_NODE
def test_eval_run_promptfoo_gives_promptfoos_rows(tmp_path: Path) -> None:
    ours = run(copied_into(PARITY, tmp_path), tmp_path)
    assert len(ours.rows) == len(expected_rows()) == 24
    for ran in ours.rows:
        outcome = ran.result.outcome
        assert outcome.grading is not None
        assert_agrees({
            "testIdx": ran.row.test_idx, "promptIdx": ran.row.prompt_idx,
            "success": outcome.success, "failureReason": int(outcome.failure_reason),
            "score": outcome.score, "namedScores": outcome.named_scores, "error": outcome.error,
            "gradingResult": grading_result(outcome.grading),
        })  # fmt: skip


@NEEDS_NODE
def test_imported_suites_compare_their_columns_as_promptfoo_does(tmp_path: Path) -> None:
    code, rows = import_and_run(PARITY, tmp_path / "project")
    assert code == 1 and len(rows) == 24
    for found in rows:
        assert_agrees(found)


def test_a_suite_run_alone_has_one_column_to_compare_and_its_rows_say_so(tmp_path: Path) -> None:
    config = tmp_path / "pf" / "promptfooconfig.yaml"
    config.parent.mkdir()
    config.write_text(
        "prompts: ['A {{q}}', 'B {{q}}']\nproviders: [echo]\ntests:\n"
        "  - vars: {q: a}\n    assert: [{type: contains, value: B}, {type: max-score}]\n"
        "  - vars: {q: b}\n    assert: [{type: contains, value: b}]\n",
        encoding="utf-8",
    )
    project = tmp_path / "project"
    assert run_main("import", "promptfoo", str(config), "--out", str(project))[0] == 0
    first = sorted((project / "harness" / "evals").glob("*.yaml"))[0].stem
    code, _ = run_main("eval", "run", first, "--root", str(project), "--display", "plain")
    assert code == 1
    alone = {r["testIdx"]: r for r in stored_rows(project) if r["promptIdx"] == 0}
    assert alone[0]["failureReason"] == 2 and TOO_FEW in alone[0]["error"]
    assert alone[1]["success"] is True  # a test without max-score is not held back


def test_an_interrupted_run_stores_no_held_line_and_resumes_them_compared(tmp_path: Path) -> None:
    config = tmp_path / "pf" / "promptfooconfig.yaml"
    config.parent.mkdir()
    tests = "  - vars: {q: w0}\n    assert: [{type: contains, value: w}]\n" + "".join(
        f"  - vars: {{q: w{i}}}\n    assert: [{{type: contains, value: B}}, {{type: max-score}}]\n"
        for i in (1, 2)
    )
    config.write_text(
        f"prompts: ['A {{{{q}}}}', 'B {{{{q}}}}']\nproviders: [echo]\ntests:\n{tests}",
        encoding="utf-8",
    )
    project = tmp_path / "project"
    assert run_main("import", "promptfoo", str(config), "--out", str(project))[0] == 0
    plan = plan_evals(project)
    store = Store.open(project / ".coalmine" / "coalmine.db")

    async def main(stop_after: int, **options: Any) -> Any:
        hook = StopAfter(stop_after, anyio.Event())
        clock = FixedClock(at=datetime(2026, 12, 5, tzinfo=UTC), step=1.0)
        return await run_evals(plan, store=store, stop=hook.stop, hooks=[hook], clock=clock,
                               concurrency=1, **options)  # fmt: skip

    try:
        first = anyio.run(main, 1)  # the first suite's first line (no max-score) is stored
        assert first.interrupted
        stored = [a for s in plan.suites for a in iter_attempts(store, first.run_id, s.name)]
        assert [a.case_id for a in stored] == ["test-0"]  # a held line is not stored
        second = anyio.run(lambda: main(1000, resume=first.run_id))
        assert not second.interrupted
    finally:
        store.close()
    rows = {(r["testIdx"], r["promptIdx"]): r for r in stored_rows(project)}
    assert len(rows) == 6
    assert rows[(0, 0)]["success"] is True
    for test in (1, 2):  # B contains B: it wins each test; A loses with score 0
        assert rows[(test, 1)]["success"] is True
        assert (rows[(test, 0)]["success"], rows[(test, 0)]["score"]) == (False, 0)


def test_an_imported_suite_with_max_score_is_refused_on_export(tmp_path: Path) -> None:
    project = tmp_path / "project"
    assert run_main("import", "promptfoo", str(copied_into(PARITY, tmp_path)), "--out",
                    str(project))[0] == 0  # fmt: skip
    suite = sorted((project / "harness" / "evals").glob("*.yaml"))[0]
    out = tmp_path / "out" / "promptfooconfig.yaml"
    code, output = run_main("export", "promptfoo", suite.stem, "--root", str(project), "--out",
                            str(out))  # fmt: skip
    assert code == 2 and not out.exists()
    assert f"{suite.with_suffix('.jsonl')}:1: suite {suite.stem}" in output
    assert "'max-score'" in output and "Traceback" not in output
