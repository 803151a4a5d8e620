"""Running promptfoo configs in coalmine gives promptfoo 0.121.20's verdicts, row by row.

The configs and promptfoo's captured results live beside each other:
``tests/promptfoo/fixtures/{scoring,report,providers}`` (captured for the pure modules), the
matrix configs ``tests/promptfoo/fixtures/matrix/run_*`` and, in
``tests/promptfoo/fixtures/runs``, ``runtimes.yaml`` (JavaScript and Python assertions,
transforms, coerced values, ``file://`` vars), ``weight_zero.yaml`` (script values at weight
0) and ``regex.yaml`` (JavaScript's regular expressions). Their expected files were captured
with ``promptfoo eval -c <config> -o out.json --no-cache --no-table --no-write`` and trimmed to
each row's verdict, score, named scores and components (and the first line of its error).

With ``COALMINE_PROMPTFOO`` pointing at a promptfoo 0.121.20 executable, the live test runs
both tools on the same configs (the ``echo`` provider) and compares them row by row.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.checking import coerce_value
from coalmine.promptfoo.node import NodeRuntime, node_available
from coalmine.promptfoo.output import rows_json
from coalmine.promptfoo.python_calls import PythonScriptError, inline_script, script_verdict
from coalmine.promptfoo.row import PromptfooRow, RowAgent, RowTools, evaluate_row
from coalmine.promptfoo.run import PromptfooRun, run_promptfoo
from coalmine.promptfoo.scoring import FailureReason
from tests.helpers.project import Project

TESTS = Path(__file__).parents[1]
PROMPTFOO = TESTS / "promptfoo" / "fixtures"
RUNNER = Path(__file__).parent / "fixtures" / "runs"
NEEDS_NODE = pytest.mark.skipif(node_available() is not None, reason="needs Node.js >= 18")

# (config, promptfoo's captured rows, needs Node.js)
CAPTURED = [
    (
        PROMPTFOO / "scoring" / "scoring.yaml",
        PROMPTFOO / "scoring" / "scoring.expected.json",
        False,
    ),
    (
        PROMPTFOO / "scoring" / "templates.yaml",
        PROMPTFOO / "scoring" / "templates.expected.json",
        False,
    ),
    (
        PROMPTFOO / "report" / "report_a.yaml",
        PROMPTFOO / "report" / "report_a.expected.json",
        False,
    ),
    (PROMPTFOO / "report" / "report_b.yaml", PROMPTFOO / "report" / "report_b.expected.json", True),
    (
        PROMPTFOO / "report" / "report_c.yaml",
        PROMPTFOO / "report" / "report_c.expected.json",
        False,
    ),
    (
        PROMPTFOO / "report" / "report_d.yaml",
        PROMPTFOO / "report" / "report_d.expected.json",
        False,
    ),
    (
        PROMPTFOO / "providers" / "promptfooconfig.yaml",
        PROMPTFOO / "providers" / "promptfoo-output.json",
        False,
    ),
    (RUNNER / "runtimes.yaml", RUNNER / "runtimes.expected.json", True),
    (RUNNER / "weight_zero.yaml", RUNNER / "weight_zero.expected.json", False),
    (RUNNER / "regex.yaml", RUNNER / "regex.expected.json", False),
    *(
        (folder / "promptfooconfig.yaml", folder / "promptfoo-verdicts.json", False)
        for folder in sorted((PROMPTFOO / "matrix").glob("run_*"))
    ),
]


pytestmark = pytest.mark.usefixtures("fast_python")


def copied_into(config: Path, project: Path) -> Path:
    """``config`` with its folder copied into ``project``: a project reads only its own files."""
    shutil.copytree(config.parent, project / "promptfoo", dirs_exist_ok=True)
    return project / "promptfoo" / config.name


def run(config: Path, root: Path, **options: Any) -> PromptfooRun:
    async def go() -> PromptfooRun:
        return await run_promptfoo(config, root=root, **options)

    return anyio.run(go)


def promptfoo_rows(path: Path) -> dict[tuple[int, int], dict[str, Any]]:
    """The captured rows by (testIdx, promptIdx), from any of the fixtures' shapes."""
    document = json.loads(path.read_text(encoding="utf-8"))
    rows = document if isinstance(document, list) else document["results"]
    if isinstance(rows, dict):
        rows = rows["results"]
    return {(r["testIdx"], r["promptIdx"]): r for r in rows}


def components(row: dict[str, Any]) -> list[bool] | None:
    if "gradingResult" in row:
        return [c["pass"] for c in (row["gradingResult"] or {}).get("componentResults") or []]
    if "componentResults" in row:
        return [c["pass"] for c in row["componentResults"]]
    return None  # the providers fixture keeps no components


def assert_same_rows(ours: PromptfooRun, expected: dict[tuple[int, int], dict[str, Any]]) -> None:
    assert sorted(expected) == [(r.row.test_idx, r.row.prompt_idx) for r in ours.rows]
    for row in ours.rows:
        theirs = expected[(row.row.test_idx, row.row.prompt_idx)]
        outcome, where = row.result.outcome, (row.row.test_idx, row.row.prompt_idx)
        assert outcome.success == theirs["success"], where
        assert int(outcome.failure_reason) == theirs["failureReason"], where
        if "score" in theirs:
            assert math.isclose(outcome.score, theirs["score"], abs_tol=1e-9), where
        if "namedScores" in theirs:
            assert outcome.named_scores.keys() == theirs["namedScores"].keys(), where
            for name, value in theirs["namedScores"].items():
                assert math.isclose(outcome.named_scores[name], value, abs_tol=1e-9), where
        wanted = components(theirs)
        if wanted is not None:
            grading = outcome.grading
            got = [c.passed for c in grading.component_results] if grading else []
            assert got == wanted, where


@pytest.mark.parametrize(
    ("config", "captured", "node"),
    CAPTURED,
    ids=[f"{c.parent.name}/{c.stem}" for c, _, _ in CAPTURED],
)
def test_rows_match_promptfoo(config: Path, captured: Path, node: bool, tmp_path: Path) -> None:
    if node and node_available() is not None:
        pytest.skip("needs Node.js >= 18")
    ours = run(config, tmp_path)
    assert_same_rows(ours, promptfoo_rows(captured))


def test_exit_code_and_counts(tmp_path: Path) -> None:
    ours = run(PROMPTFOO / "scoring" / "scoring.yaml", tmp_path)
    statuses = [r.result.outcome.status for r in ours.rows]
    assert (statuses.count("pass"), statuses.count("fail"), statuses.count("error")) == (10, 13, 3)
    assert ours.exit_code == 1
    assert run(PROMPTFOO / "report" / "report_d.yaml", tmp_path).exit_code == 0


def test_json_rows_carry_each_assertion(tmp_path: Path) -> None:
    rows = rows_json(run(PROMPTFOO / "report" / "report_a.yaml", tmp_path))
    set_row = next(r for r in rows if r["testIdx"] == 3 and r["promptIdx"] == 0)
    assert set_row["status"] == "fail"
    assert set_row["score"] == pytest.approx(0.5)
    # defaultTest's contains, the set's entry, the set's two children, the not-contains
    assert [(a["type"], a["pass"]) for a in set_row["assertions"]] == [
        ("contains", True),
        ("assert-set", True),
        ("contains", True),
        ("contains", False),
        ("not-contains", False),
    ]
    assert set_row["error"] == 'Expected output to not contain "Cy"'  # promptfoo's reason


# --- one row ----------------------------------------------------------------------------------


def evaluate(row: PromptfooRow, agent: RowAgent | None = None, **tools: Any) -> Any:
    async def go() -> Any:
        async with NodeRuntime(**tools.pop("node", {})) as node:
            return await evaluate_row(
                row, agent or RowAgent(id="echo"), RowTools(node=node, **tools)
            )

    return anyio.run(go)


def fixed(*assertions: dict[str, Any], output: Any = "Hello Ada", **fields: Any) -> PromptfooRow:
    values: dict[str, Any] = {
        "test_idx": 0,
        "prompt_idx": 0,
        "template": "Hi {{ name }}",
        "prompt": {"raw": "Hi {{ name }}", "label": "Hi {{ name }}"},
        "vars": {"name": "Ada"},
        "assertions": tuple(Assertion.model_validate(a) for a in assertions),
        "provider_output": output,
        "base_dir": RUNNER,
    }
    values.update(fields)
    return PromptfooRow(**values)


def test_a_fixed_output_calls_no_provider_and_renders_the_prompt() -> None:
    result = evaluate(fixed({"type": "contains", "value": "{{ name }}"}))
    assert (result.outcome.success, result.outcome.score) == (True, 1.0)
    assert result.rendered_prompt == "Hi Ada"
    assert not result.called
    component = result.outcome.grading.component_results[0]
    assert component.metadata == {"renderedAssertionValue": "Ada"}


def test_a_provider_without_an_agent_is_an_unsupported_error() -> None:
    agent = RowAgent(id="bedrock:x", problem="promptfoo's 'bedrock' provider is not supported")
    result = evaluate(fixed({"type": "contains", "value": "x"}, output=None), agent)
    assert result.outcome.failure_reason is FailureReason.ERROR
    assert result.outcome.error == (
        "unsupported: provider 'bedrock:x': promptfoo's 'bedrock' provider is not supported"
    )
    assert result.rendered_prompt == "Hi Ada"  # it got that far


def test_a_judge_grader_without_a_judge_is_an_error() -> None:
    result = evaluate(fixed({"type": "llm-rubric", "value": "is polite"}))
    assert result.outcome.status == "error"
    assert result.outcome.error.startswith("llm-rubric needs a judge")


def test_an_unsupported_assertion_type_says_why() -> None:
    result = evaluate(fixed({"type": "similar", "value": "hello"}))
    assert result.outcome.status == "error"
    assert "needs an embedding model" in result.outcome.error


def test_an_unknown_type_inside_an_assert_set_is_an_error() -> None:
    nested = {"type": "assert-set", "assert": [{"type": "assert-set", "assert": []}]}
    result = evaluate(fixed(nested))
    assert result.outcome.error == "Error: Unknown assertion type: assert-set"


def test_a_prompt_that_fails_to_render_is_an_error_with_no_rendered_prompt() -> None:
    result = evaluate(fixed(template="Hi {{ name | nosuchfilter }}"))
    assert result.outcome.status == "error"
    assert "nosuchfilter" in result.outcome.error
    assert result.rendered_prompt == ""


def test_a_missing_var_file_is_an_error() -> None:
    result = evaluate(fixed(vars={"name": "file://missing.txt"}))
    assert result.outcome.status == "error"
    assert "missing.txt" in result.outcome.error


def test_a_row_the_caller_marks_unsupported_is_an_error() -> None:
    result = evaluate(fixed(unsupported="a prompt function runs code"))
    assert result.outcome.error == "unsupported: a prompt function runs code"


def test_an_empty_fixed_output_calls_the_provider() -> None:
    # promptfoo tests providerOutput for truthiness: "" calls the provider (none is wired here)
    result = evaluate(fixed({"type": "contains", "value": "x"}, output=""), RowAgent(id="echo"))
    assert result.outcome.error == "unsupported: provider 'echo': no agent"


def test_javascript_without_node_is_unsupported_with_the_install_hint() -> None:
    row = fixed({"type": "javascript", "value": "output.length > 1"})
    result = evaluate(row, node={"node": "no-such-node-binary"})
    assert result.outcome.status == "error"
    assert result.outcome.error.startswith("unsupported: the 'javascript' assertion needs Node.js")
    assert "https://nodejs.org" in result.outcome.error


@NEEDS_NODE
def test_transforms_run_provider_then_test_then_assertion() -> None:
    row = fixed(
        {"type": "equals", "value": "hello ada!?", "transform": "output + '?'"},
        {"type": "equals", "value": "hello ada!"},
        options={"transform": "output + '!'"},
    )
    agent = RowAgent(id="echo", transform="output.toLowerCase()")
    result = evaluate(row, agent)
    assert result.output == "hello ada!"
    assert [c.passed for c in result.outcome.grading.component_results] == [True, True]


@NEEDS_NODE
def test_a_throwing_transform_is_an_error() -> None:
    result = evaluate(fixed({"type": "contains", "value": "x"}, options={"transform": "null"}))
    assert result.outcome.status == "error"
    assert "did not return a value" in result.outcome.error


# --- hand-computed rules ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "value", "coerced"),
    [
        ("contains", 42, 42),  # equals and the contains family: promptfoo's handlers
        ("equals", None, None),
        ("word-count", "3", 3),
        ("word-count", "2.5", 2.5),
        ("regex", 5, 5),
    ],
)
def test_values_are_coerced_as_promptfoo_handlers_do(base: str, value: Any, coerced: Any) -> None:
    assert coerce_value(base, value) == coerced


def test_the_inline_python_script() -> None:
    assert inline_script("len(output) > 2") == (
        "import json\n\ndef main(output, context):\n    return len(output) > 2\n"
    )
    body = "x = 1\n  return x"  # indented by the first indented line's indentation
    assert inline_script(body).endswith("def main(output, context):\n  x = 1\n    return x\n")


@pytest.mark.parametrize(
    ("result", "threshold", "inverse", "expected"),
    [
        (True, None, False, (True, 1.0, "Assertion passed")),
        ("FALSE", None, False, (False, 0.0, "Python code returned false\ncode")),
        (False, None, True, (True, 1.0, "Assertion passed")),
        (0.3, None, False, (True, 0.3, "Assertion passed")),
        (0.3, 0.5, False, (False, 0.3, "Python code returned false\ncode")),
        (0, None, True, (True, 0.0, "Assertion passed")),
        ("12abc", None, False, (True, 12.0, "Assertion passed")),  # parseFloat reads a prefix
        (
            {"pass_": True, "score": 0.4, "reason": "ok"},
            0.5,
            False,
            (False, 0.4, "Python score 0.4 is less than threshold 0.5: ok"),
        ),
        (
            '{"pass": false, "score": 0, "reason": "no"}',
            None,
            True,
            (True, 0.0, "Assertion passed"),
        ),
        (
            {"pass": True, "score": 1, "reason": "yes"},
            None,
            True,
            (False, 1.0, "Python code returned true"),
        ),
    ],
)
def test_python_answers_mean_what_they_mean_in_promptfoo(
    result: Any, threshold: float | None, inverse: bool, expected: tuple[bool, float, str]
) -> None:
    verdict = script_verdict(result, threshold=threshold, inverse=inverse, suffix="code")
    assert (verdict.passed, verdict.score, verdict.reason) == expected


@pytest.mark.parametrize("result", [None, "maybe", {"pass": True}, [], '{"a": 1'])
def test_other_python_answers_are_rejected(result: Any) -> None:
    with pytest.raises(PythonScriptError):
        script_verdict(result, threshold=None, inverse=False, suffix=None)


# --- the judge, concurrency, serial tests --------------------------------------------------


JUDGE = """\
import json

def judge(prompt, context):
    verdict = "polite" in prompt
    return json.dumps({"pass": verdict, "score": 1.0 if verdict else 0.0, "reason": "judged"})
"""


def test_llm_rubric_is_graded_by_the_project_judge(tmp_path: Path) -> None:
    project = Project(tmp_path / "proj")
    module = f"pf_judge_{os.getpid()}"
    project.write(f"{module}.py", JUDGE)
    project.config({"judge": {"provider": "python", "target": f"{module}:judge"}})
    config = project.write(
        "promptfooconfig.yaml",
        """\
        prompts: ["{{ q }}"]
        providers: [echo]
        tests:
          - vars: {q: hello}
            assert:
              - {type: llm-rubric, value: is polite}
          - vars: {q: bye}
            assert:
              - {type: llm-rubric, value: is rude}
        """,
    )
    ours = run(config, project.root)
    assert [r.result.outcome.status for r in ours.rows] == ["pass", "fail"]
    without = run(config, project.root, judge=False)
    assert [r.result.outcome.status for r in without.rows] == ["error", "error"]


def test_rows_come_back_in_order_whatever_the_concurrency(tmp_path: Path) -> None:
    one = run(PROMPTFOO / "report" / "report_a.yaml", tmp_path, concurrency=1)
    many = run(PROMPTFOO / "report" / "report_a.yaml", tmp_path, concurrency=8)
    key = [(r.row.test_idx, r.row.prompt_idx, r.result.outcome.score) for r in one.rows]
    assert key == [(r.row.test_idx, r.row.prompt_idx, r.result.outcome.score) for r in many.rows]


def test_warnings_name_what_is_ignored(tmp_path: Path) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: [hi]\nproviders: [echo]\nredteam: {}\ntests: [{vars: {a: 1}}]\n")
    ours = run(config, tmp_path)
    assert any("'redteam' is not supported" in w for w in ours.warnings)


# --- live: the real promptfoo ---------------------------------------------------------------

LIVE = [c for c, _, _ in CAPTURED if c.parent.name in ("scoring", "runs")] + [
    PROMPTFOO / "report" / "report_a.yaml",
    PROMPTFOO / "matrix" / "run_features" / "promptfooconfig.yaml",
]
"""The configs run by both tools live (the others' captured verdicts are compared offline)."""


_LIVE_RUNS: dict[tuple[str, Path], dict[str, Any]] = {}
"""promptfoo's documents for the fixture configs, kept for the worker's session."""


def run_real_promptfoo(
    executable: str, config: Path, tmp_path: Path, *, reuse: bool = False
) -> dict[str, Any]:
    """Run promptfoo on ``config`` and read its result document.

    ``reuse`` keeps the document for the next test that asks: for the fixture configs, which
    do not change while the tests run.
    """
    key = (executable, config.resolve())
    if reuse and key in _LIVE_RUNS:
        return _LIVE_RUNS[key]
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(tmp_path / "promptfoo-home"),
    }
    command = [executable, "eval", "-c", config.name, "-o", str(out)]
    command += ["--no-cache", "--no-table", "--no-write", "--no-progress-bar"]
    done = subprocess.run(command, cwd=config.parent, env=env, capture_output=True, text=True)
    assert out.exists(), f"promptfoo failed ({done.returncode}):\n{done.stderr[-2000:]}"
    assert done.returncode in (0, 100), done.stderr[-2000:]
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if reuse:
        _LIVE_RUNS[key] = document
    return document


@NEEDS_NODE
@pytest.mark.parametrize("config", LIVE, ids=lambda c: f"{c.parent.name}/{c.stem}")
def test_live_promptfoo_and_coalmine_agree_row_by_row(
    config: Path, promptfoo: str, tmp_path: Path
) -> None:
    theirs = run_real_promptfoo(promptfoo, config, tmp_path, reuse=True)
    rows = {(r["testIdx"], r["promptIdx"]): r for r in theirs["results"]["results"]}
    assert_same_rows(run(config, tmp_path), rows)


STORED = PROMPTFOO / "runs" / "stored_outputs.yaml"


def test_a_stored_output_reaches_every_later_row_in_promptfoos_order(tmp_path: Path) -> None:
    done = run(STORED, tmp_path)
    outputs = {(r.row.test_idx, r.row.prompt_idx): r.result.output for r in done.rows}
    # test 0 stores, row by row: each row renders with the output the row before it stored
    assert outputs[(0, 0)] == "TA one none"
    assert outputs[(0, 1)] == "TB one TA one none"
    assert outputs[(0, 2)] == "TA ONE TB ONE TA ONE NONE"
    last = "TB ONE TA ONE TB ONE TA ONE NONE"
    assert outputs[(0, 3)] == last
    # the stored value wins over the test's own var of that name
    assert outputs[(1, 1)] == f"B two {last}"
    # an empty output is not stored: {{other}} stays unknown, and is kept as written
    assert outputs[(3, 0)] == "A four {{other}} " + last
    assert [r.result.outcome.success for r in done.rows if r.row.test_idx == 3] == [
        True,
        True,
        False,
        False,
    ]
    assert [r.result.outcome.success for r in done.rows if r.row.test_idx == 1] == [
        False,
        True,
        False,
        True,
    ]


@NEEDS_NODE
def test_stored_outputs_agree_with_live_promptfoo(promptfoo: str, tmp_path: Path) -> None:
    theirs = run_real_promptfoo(promptfoo, STORED, tmp_path)
    rows = {(r["testIdx"], r["promptIdx"]): r for r in theirs["results"]["results"]}
    ours = run(STORED, tmp_path)
    assert_same_rows(ours, rows)
    for row in ours.rows:
        assert (
            row.result.output == rows[(row.row.test_idx, row.row.prompt_idx)]["response"]["output"]
        )
