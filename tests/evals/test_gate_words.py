"""The gate line states the rule and the count that broke it (never "fails (every case passes)")."""

from __future__ import annotations

from coalmine.evals.summary import EVERY_CASE, gate_in_words
from coalmine.results import EvalGate


def test_every_case_rule_in_words() -> None:
    failing = EvalGate(passed=False, rule=EVERY_CASE, blocking_failures=2)
    assert gate_in_words("smoke", failing) == (
        "smoke fails its gate (no case may fail on a grader that may block): "
        "2 cases failed or errored on graders that may block"
    )
    holding = EvalGate(passed=True, rule=EVERY_CASE, blocking_failures=0)
    assert gate_in_words("smoke", holding) == (
        "smoke holds its gate (no case may fail on a grader that may block)"
    )


def test_score_rule_in_words() -> None:
    holding = EvalGate(passed=True, rule="score >= 0.8", blocking_failures=1)
    assert gate_in_words("rag", holding) == (
        "rag holds its gate (score >= 0.8, over the graders that may block); "
        "1 case failed or errored on graders that may block"
    )
    failing = EvalGate(passed=False, rule="score >= 0.8", blocking_failures=3)
    assert gate_in_words("rag", failing).startswith("rag fails its gate (score >= 0.8, over")
