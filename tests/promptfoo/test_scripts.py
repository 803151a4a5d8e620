"""The config's own code a row runs besides assertions: transforms and scoring functions.

Python transforms run where promptfoo runs them (``file://x.py[:name]``, ``get_transform`` by
default) for the provider, the test and an assertion; ``options.transformVars`` runs (inline,
JavaScript or Python) on the test's vars before the prompt is rendered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coalmine.promptfoo.row import RowAgent
from coalmine.promptfoo.scoring import FailureReason
from tests.promptfoo.test_run import NEEDS_NODE, evaluate, fixed

pytestmark = [NEEDS_NODE, pytest.mark.usefixtures("fast_python")]

SCRIPTS = """\
def get_transform(value, context):
    return value.upper()

def tagged(output, context):
    return {"text": output, "label": context["prompt"].get("label"), "name": context["vars"]["name"]}

def nothing(output, context):
    return None

def explode(output, context):
    raise ValueError("cannot " + output)

def split_name(vars, context):
    first, _, last = vars["full"].partition(" ")
    return {"first": first, "last": last, "context": sorted(context), "prompt": context["prompt"]}

async def later(vars, context):
    return {"first": "async " + vars["full"]}
"""


def scripted(tmp_path: Path) -> Path:
    (tmp_path / "t.py").write_text(SCRIPTS, encoding="utf-8")
    return tmp_path


def passes(result: Any) -> list[bool]:
    return [c.passed for c in result.outcome.grading.component_results]


def test_python_transforms_run_for_the_provider_the_test_and_an_assertion(tmp_path: Path) -> None:
    tagged = "output.text === 'HELLO ADA' && output.label === 'Hi Ada' && output.name === 'Ada'"
    row = fixed(
        {"type": "equals", "value": "HELLO ADA"},
        {"type": "javascript", "value": tagged, "transform": "file://t.py:tagged"},
        options={"transform": "file://t.py"},
        base_dir=scripted(tmp_path),
    )
    result = evaluate(row)
    assert passes(result) == [True, True]
    assert result.output == "HELLO ADA"

    agent = RowAgent(id="echo", transform="file://t.py:tagged")
    provider = evaluate(fixed(base_dir=tmp_path), agent)
    assert provider.output == {"text": "Hello Ada", "label": "Hi {{ name }}", "name": "Ada"}


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("nothing", "Error: Transform function did not return a value\n\n[file transform]"),
        ("explode", "Error: Transform failed ([file transform]): Error running Python script: "),
        ("absent", "Error: Transform failed ([file transform]): Error running Python script: "),
    ],
)
def test_a_python_transform_that_fails_makes_the_row_an_error(
    tmp_path: Path, function: str, message: str
) -> None:
    row = fixed(
        {"type": "contains", "value": "Ada"},
        options={"transform": f"file://t.py:{function}"},
        base_dir=scripted(tmp_path),
    )
    outcome = evaluate(row).outcome
    assert outcome.failure_reason is FailureReason.ERROR
    assert outcome.error.startswith(message)


def test_a_python_transform_outside_the_project_is_refused(tmp_path: Path) -> None:
    row = fixed(options={"transform": "file://../elsewhere.py"}, base_dir=scripted(tmp_path))
    outcome = evaluate(row).outcome  # no reading_inside: the path is only resolved
    assert outcome.failure_reason is FailureReason.ERROR
    assert "elsewhere.py" in outcome.error


def context_check(check: str) -> dict[str, Any]:
    return {"type": "javascript", "value": check}


@pytest.mark.parametrize(
    ("code", "check"),
    [
        ("({...vars, first: vars.full.split(' ')[0]})", "context.vars.first === 'Ada'"),
        (
            "const [first, last] = vars.full.split(' ');\nreturn {first, last};\n",
            "context.vars.last === 'Lovelace' && context.vars.full === 'Ada Lovelace'",
        ),
        (
            "file://t.py:split_name",
            "context.vars.first === 'Ada' && context.vars.context.join() === 'prompt,uuid' "
            "&& JSON.stringify(context.vars.prompt) === '{}'",
        ),
        ("file://t.py:later", "context.vars.first === 'async Ada Lovelace'"),
        ("['Ada', 'one']", "context.vars['1'] === 'one' && context.vars['0'] === 'Ada'"),
    ],
)
def test_transform_vars_changes_the_vars_before_the_prompt_renders(
    tmp_path: Path, code: str, check: str
) -> None:
    row = fixed(
        context_check(check),
        context_check("JSON.stringify(context.test.vars) === JSON.stringify(context.vars)"),
        template="Hi {{ first }}",
        vars={"full": "Ada Lovelace"},
        test_case={"vars": {"full": "Ada Lovelace"}, "assert": []},
        options={"transformVars": code},
        base_dir=scripted(tmp_path),
    )
    result = evaluate(row)
    assert result.outcome.success, result.outcome.error
    assert result.test_case["vars"]["full"] == "Ada Lovelace"
    assert result.test_case["vars"] != {"full": "Ada Lovelace"}  # context.test has them too


@pytest.mark.parametrize("code", ["'text'", "42", "null", "file://t.py:nothing"])
def test_transform_vars_that_gives_no_object_is_an_error(tmp_path: Path, code: str) -> None:
    row = fixed(vars={"full": "x"}, options={"transformVars": code}, base_dir=scripted(tmp_path))
    outcome = evaluate(row).outcome
    assert outcome.failure_reason is FailureReason.ERROR
    assert "did not return a" in outcome.error


def test_transform_vars_sees_file_vars_unread(tmp_path: Path) -> None:
    (tmp_path / "name.txt").write_text("Ada", encoding="utf-8")
    row = fixed(
        template="Hi {{ name }} {{ ref }}",
        vars={"name": "file://name.txt"},
        options={"transformVars": "({ref: vars.name})"},
        base_dir=tmp_path,
    )
    result = evaluate(row)
    assert result.test_case["vars"] == {"name": "file://name.txt", "ref": "file://name.txt"}
    assert result.rendered_prompt == "Hi Ada Ada"  # both read when the prompt renders


# --- assertScoringFunction ----------------------------------------------------------------------

SCORING_JS = """\
module.exports = (namedScores, context) => ({
  pass: namedScores.quality >= 0.5,
  score: namedScores.quality,
  reason: `quality ${namedScores.quality} of ${context.componentResults.length} at ${context.threshold}`,
});
module.exports.strict = async (namedScores, context) => ({
  pass: context.componentResults.every((c) => c.pass),
  score: 0.25,
  reason: "strict",
  namedScores: { strict: 1 },
});
module.exports.bad = () => "nope";
module.exports.throws = () => { throw new Error("boom"); };
"""

SCORING_PY = """\
def func(named_scores, context):
    return {"pass": named_scores["quality"] > 0.9, "score": 0.75, "reason": "python",
            "componentResults": [{"pass": c["pass"], "score": 1, "reason": "again"}
                                 for c in context["componentResults"]]}

async def lenient(named_scores, context):
    return {"pass": True, "score": sum(named_scores.values()), "reason": "lenient"}

def raises(named_scores, context):
    raise ValueError("no score")
"""

QUALITY = (
    {"type": "contains", "value": "Hello", "metric": "quality"},
    {"type": "contains", "value": "Bye", "metric": "quality"},
)


def scoring_row(tmp_path: Path, reference: str, **fields: Any) -> Any:
    (tmp_path / "scoring.js").write_text(SCORING_JS, encoding="utf-8")
    (tmp_path / "scoring.py").write_text(SCORING_PY, encoding="utf-8")
    values: dict[str, Any] = {"scoring_function": reference, "base_dir": tmp_path, **fields}
    return evaluate(fixed(*fields.pop("assertions", QUALITY), **values))


@pytest.mark.parametrize(
    ("reference", "verdict", "named"),
    [
        ("file://scoring.js", (True, 0.5, "quality 0.5 of 2 at 0.4"), {"quality": 0.5}),
        ("file://scoring.js:strict", (False, 0.25, "strict"), {"strict": 1.0}),
        ("file://scoring.py", (False, 0.75, "python"), {"quality": 0.5}),
        ("file://scoring.py:lenient", (True, 0.5, "lenient"), {"quality": 0.5}),
    ],
)
def test_a_scoring_function_decides_the_row(
    tmp_path: Path, reference: str, verdict: tuple[bool, float, str], named: dict[str, float]
) -> None:
    result = scoring_row(tmp_path, reference, threshold=0.4)
    outcome = result.outcome
    assert (outcome.success, outcome.score, outcome.grading.reason) == verdict
    assert outcome.named_scores == named
    assert outcome.failure_reason is (FailureReason.NONE if verdict[0] else FailureReason.ASSERT)
    if reference == "file://scoring.py":  # its componentResults replace the row's
        assert [(c.passed, c.reason) for c in outcome.grading.component_results] == [
            (True, "again"),
            (False, "again"),
        ]


@pytest.mark.parametrize(
    ("reference", "reason"),
    [
        ("file://scoring.js:bad", "assertion scoring function must return a GradingResult"),
        ("file://scoring.js:throws", "boom"),
        ("file://scoring.py:raises", "Error running Python script: ValueError: no score"),
        ("file://nowhere.py", "Error running Python script: "),
    ],
)
def test_a_scoring_function_that_fails_fails_the_row(
    tmp_path: Path, reference: str, reason: str
) -> None:
    outcome = scoring_row(tmp_path, reference).outcome
    assert (outcome.success, outcome.score, outcome.failure_reason) == (
        False,
        0.0,
        FailureReason.ASSERT,
    )
    assert outcome.error.startswith(f"Scoring function error: {reason}")


@pytest.mark.parametrize("reference", ["file://scoring.js:absent", "file://nowhere.js"])
def test_a_javascript_scoring_function_that_does_not_load_is_an_error(
    tmp_path: Path, reference: str
) -> None:
    outcome = scoring_row(tmp_path, reference).outcome
    assert outcome.failure_reason is FailureReason.ERROR
    assert outcome.error.startswith(f"assertScoringFunction {reference}: ")


def test_a_row_without_assertions_is_not_scored(tmp_path: Path) -> None:
    outcome = scoring_row(tmp_path, "file://scoring.js:throws", assertions=()).outcome
    assert (outcome.success, outcome.grading.reason) == (True, "No assertions")


def test_python_code_needs_no_node(tmp_path: Path) -> None:
    row = fixed(
        {"type": "equals", "value": "HELLO ADA", "transform": "file://t.py"},
        vars={"full": "Ada"},
        options={"transformVars": "file://t.py:later"},
        scoring_function="file://scoring.py:lenient",
        base_dir=scripted(tmp_path),
    )
    (tmp_path / "scoring.py").write_text(SCORING_PY, encoding="utf-8")
    result = evaluate(row, node={"node": "no-such-node-binary"})
    assert (result.outcome.success, result.outcome.grading.reason) == (True, "lenient")
    assert result.test_case["vars"]["first"] == "async Ada"
