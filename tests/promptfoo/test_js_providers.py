"""promptfoo configs with JavaScript providers, run by ``run_promptfoo`` in real Node.js.

The verdicts below are promptfoo 0.121.20's for the parity folders ``js_provider`` and
``js_provider_forms`` (``tests/promptfoo/test_parity.py`` compares them live); here they are
pinned, so the rows are checked where promptfoo itself is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coalmine.promptfoo.run import PromptfooRun
from tests.promptfoo.test_run import NEEDS_NODE, copied_into, run

pytestmark = [NEEDS_NODE, pytest.mark.usefixtures("fast_python")]

PARITY = Path(__file__).parent / "fixtures" / "parity"

# (testIdx, promptIdx): (success, failureReason, score, each component's pass)
JS_PROVIDER = {
    (0, 0): (False, 1, 6 / 7, [True, True, True, False]),
    (0, 1): (False, 1, 4 / 7, [True, True, False, False]),
    (0, 2): (True, 0, 1, [True, True, True, True]),  # label, prompt, test, abortSignal seen
    (1, 0): (True, 0, 0.5, [False, True]),
    (1, 1): (True, 0, 1, [True, True]),  # its own config
    (1, 2): (False, 1, 0, [False, False]),
    (2, 0): (False, 2, 0, []),  # no cost: the cost assertion errors
    (2, 2): (True, 0, 1, [True, True, True, True, True]),  # an object output, with its cost
    (3, 0): (False, 2, 0, []),  # it throws
    (3, 2): (True, 0, 1, [True]),
    (4, 0): (False, 2, 0, []),  # {error}
    (4, 2): (False, 2, 0, []),  # {error: {…}}
    (5, 0): (False, 0, 0, []),  # {output: null}: No output, not an error
    (6, 1): (False, 0, 0, []),  # a bare string is no response
    (7, 0): (True, 0, 1, [True, True]),  # 0 is an output
    (8, 1): (True, 0, 1, [True]),  # so is ""
    (9, 2): (True, 0, 1, [True, True]),  # the test's transform of an object
}
FORMS = {
    (0, 0): (False, 1, 0.75, [True, True, True, False]),  # env, config and metadata
    (0, 1): (False, 2, 0, []),
    (1, 1): (False, 1, 1 / 3, [True, False, False]),
    (2, 2): (True, 0, 2 / 3, [True, True, False]),  # the provider's transform
    (3, 1): (False, 2, 0, []),
    (4, 1): (True, 0, 1, [True, True, True, True]),
    (4, 2): (False, 1, 0.75, [True, False, True, True]),
}


def verdicts(done: PromptfooRun) -> dict[tuple[int, int], tuple[bool, int, float, list[bool]]]:
    found = {}
    for r in done.rows:
        outcome = r.result.outcome
        grading = outcome.grading
        components = [c.passed for c in grading.component_results] if grading else []
        found[(r.row.test_idx, r.row.prompt_idx)] = (
            outcome.success,
            outcome.failure_reason,
            pytest.approx(outcome.score),
            components,
        )
    return found


@pytest.mark.parametrize(
    ("folder", "expected"), [("js_provider", JS_PROVIDER), ("js_provider_forms", FORMS)]
)
def test_javascript_provider_rows_get_promptfoos_verdicts(
    tmp_path: Path,
    folder: str,
    expected: dict[tuple[int, int], tuple[bool, int, float, list[bool]]],
) -> None:
    config = copied_into(PARITY / folder / "promptfooconfig.yaml", tmp_path)
    found = verdicts(run(config, tmp_path))
    assert {place: found[place] for place in expected} == expected


def test_what_a_throwing_provider_threw_is_the_row_error(tmp_path: Path) -> None:
    config = copied_into(PARITY / "js_provider" / "promptfooconfig.yaml", tmp_path)
    rows = {(r.row.test_idx, r.row.prompt_idx): r.result for r in run(config, tmp_path).rows}
    assert rows[(3, 0)].outcome.error is not None
    assert rows[(3, 0)].outcome.error.startswith("Error: cannot talk about secrets\n    at ")
    assert rows[(4, 0)].outcome.error == "refused: politics"
    assert rows[(2, 2)].output == {
        "answer": "cats: 4 words", "words": 4, "topic": "cats", "label": "js-object",
        "template": "Tell me about {{ topic }}", "description": "an object output", "repeat": 0,
        "aborts": True,
    }  # fmt: skip
