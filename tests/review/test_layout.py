"""Review eval layout: eval.json + test-files/, and the pipeline whose inputs keep roles apart."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from coalmine.errors import SpecError, UsageError
from coalmine.review.layout import (
    DEFAULT_PIPELINE,
    Assertion,
    Pipeline,
    ReviewEval,
    Role,
    load_pipeline,
    load_review_evals,
)

GOOD: dict[str, Any] = {
    "prompt": "Please look over my change to the login handler before I merge it.",
    "assertions": [
        {
            "id": "1.1",
            "text": "Flags the string-built SQL query as injectable.",
            "target": "reviewer",
        },
        {"id": "1.2", "text": "Loads the python profile.", "target": "resolver"},
        {"id": "1.3", "text": "Suggests parameterised queries."},
    ],
    "trap": "The query looks escaped but is not.",
    "description": "SQL injection in a Flask view.",
}


def review_dir(root: Path) -> Path:
    return root / "evals" / "review"


def add_eval(root: Path, name: str, data: dict[str, Any] | str, *, files: bool = True) -> Path:
    folder = review_dir(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else json.dumps(data, indent=2)
    (folder / "eval.json").write_text(text, encoding="utf-8")
    if files:
        (folder / "test-files").mkdir(exist_ok=True)
        (folder / "test-files" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    return folder / "eval.json"


def write_pipeline(root: Path, text: str) -> Path:
    path = review_dir(root) / "pipeline.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of the first line of ``path`` that contains ``needle``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


# --- evals -----------------------------------------------------------------------------------


def test_a_valid_eval_loads_with_the_default_pipeline(tmp_path: Path) -> None:
    path = add_eval(tmp_path, "sql-injection", GOOD)
    found = load_review_evals(tmp_path)
    assert found.problems == [] and found.pipeline_path is None
    assert found.pipeline == DEFAULT_PIPELINE
    (ev,) = found.evals
    assert isinstance(ev, ReviewEval)
    assert (ev.name, ev.path, ev.test_files) == ("sql-injection", path, path.parent / "test-files")
    assert ev.prompt == GOOD["prompt"]
    assert [(a.id, a.target) for a in ev.assertions] == [
        ("1.1", "reviewer"),
        ("1.2", "resolver"),
        ("1.3", "reviewer"),  # the default target
    ]
    assert (ev.trap, ev.description, ev.spec) == (GOOD["trap"], GOOD["description"], None)


def test_the_default_pipeline_is_the_seeds() -> None:
    pipeline = DEFAULT_PIPELINE
    assert list(pipeline.roles) == ["resolver", "reviewer", "grader"]
    assert {name: role.agent for name, role in pipeline.roles.items()} == {
        "resolver": "resolver",
        "reviewer": "reviewer",
        "grader": "grader",
    }
    assert pipeline.roles["resolver"].inputs == ["diff", "worktree"]
    assert pipeline.roles["reviewer"].inputs == ["diff", "resolver", "spec"]
    assert pipeline.roles["grader"].inputs == ["resolver", "reviewer", "assertions"]
    assert [r.grader for r in pipeline.roles.values()] == [False, False, True]
    assert pipeline.grader == "grader"
    assert load_pipeline(Path("/nonexistent/pipeline.yaml")) is DEFAULT_PIPELINE


@pytest.mark.parametrize(
    ("change", "needle", "message"),
    [
        ({"prompt": None}, None, "missing required key 'prompt'"),
        ({"prompt": "   "}, '"prompt"', "prompt: Value error, must not be blank"),
        ({"assertions": None}, None, "missing required key 'assertions'"),
        ({"assertions": []}, '"assertions"', "assertions: List should have at least 1 item"),
        ({"promt": "typo"}, '"promt"', "unknown key 'promt' (did you mean 'prompt'?)"),
    ],
)
def test_a_broken_eval_is_a_problem_at_its_line(
    tmp_path: Path, change: dict[str, Any], needle: str | None, message: str
) -> None:
    data = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    path = add_eval(tmp_path, "broken", data)
    add_eval(tmp_path, "fine", GOOD)
    found = load_review_evals(tmp_path)
    assert [ev.name for ev in found.evals] == ["fine"]  # the others load
    (problem,) = found.problems
    assert (problem.eval_name, problem.path) == ("broken", path)
    assert problem.line == (line_of(path, needle) if needle else 1)
    assert message in problem.message
    assert str(problem).startswith(f"{path}:{problem.line}: ")


def assertion_problems(tmp_path: Path, assertions: list[dict[str, Any]]) -> tuple[Path, list[str]]:
    path = add_eval(tmp_path, "bad", {**GOOD, "assertions": assertions})
    found = load_review_evals(tmp_path)
    assert found.evals == []
    return path, [str(p) for p in found.problems]


def test_duplicate_assertion_ids_are_named_at_the_duplicate(tmp_path: Path) -> None:
    path, problems = assertion_problems(
        tmp_path,
        [
            {"id": "a", "text": "First."},
            {"id": "b", "text": "Second."},
            {"id": "a", "text": "Third."},
        ],
    )
    line = line_of(path, '"Third."') - 1  # the id of the third item
    assert problems == [
        f"{path}:{line}: duplicate assertion id 'a' (first at assertions[0])",
    ]


def test_blank_text_and_unknown_target_are_problems(tmp_path: Path) -> None:
    path, problems = assertion_problems(
        tmp_path,
        [
            {"id": "a", "text": " \n "},
            {"id": "b", "text": "Fine.", "target": "grader"},
        ],
    )
    text_line = line_of(path, '"text": " \\n "')
    target_line = line_of(path, '"target": "grader"')
    assert problems[0] == f"{path}:{text_line}: assertions.0.text: Value error, must not be blank"
    assert problems[1].startswith(f"{path}:{target_line}: assertions.1.target: Input should be")
    assert "'resolver', 'reviewer' or 'both'" in problems[1]


def test_missing_test_files_is_a_problem(tmp_path: Path) -> None:
    path = add_eval(tmp_path, "no-fixture", GOOD, files=False)
    found = load_review_evals(tmp_path)
    (problem,) = found.problems
    assert problem.path == path and problem.line is None
    assert "no test-files/ folder" in str(problem) and str(path) in str(problem)


def test_bad_json_and_duplicate_keys_are_problems(tmp_path: Path) -> None:
    broken = add_eval(tmp_path, "broken", '{\n  "prompt": "x",\n  "assertions": [\n}\n')
    twice = add_eval(
        tmp_path,
        "twice",
        '{\n  "prompt": "x",\n  "assertions": [{"id": "a", "text": "t"}],\n  "prompt": "y"\n}\n',
    )
    listed = add_eval(tmp_path, "listed", "[1, 2]")
    problems = {p.eval_name: p for p in load_review_evals(tmp_path).problems}
    assert str(problems["broken"]).startswith(f"{broken}:4: not valid JSON")
    assert str(problems["twice"]) == f"{twice}:4: duplicate key 'prompt' (first given at line 2)"
    assert str(problems["listed"]) == f"{listed}:1: an eval must be a JSON object"


def test_tab_indented_json_keeps_its_lines(tmp_path: Path) -> None:
    text = (
        '{\n\t"prompt": "x",\n\t"assertions": [\n\t\t{"id": "a", "text": "t", "target": 3}\n\t]\n}'
    )
    path = add_eval(tmp_path, "tabs", text)
    (problem,) = load_review_evals(tmp_path).problems
    assert str(problem).startswith(f"{path}:4: assertions.0.target")


def test_names_select_evals_and_unknown_names_list_the_known(tmp_path: Path) -> None:
    for name in ("k8s-limits", "sql-injection", "clean-change"):
        add_eval(tmp_path, name, GOOD)
    (review_dir(tmp_path) / "_harness").mkdir()  # no eval.json: not an eval
    assert [e.name for e in load_review_evals(tmp_path).evals] == [
        "clean-change",
        "k8s-limits",
        "sql-injection",
    ]
    chosen = load_review_evals(tmp_path, ["sql-injection", "k8s-limits", "sql-injection"])
    assert [e.name for e in chosen.evals] == ["sql-injection", "k8s-limits"]
    with pytest.raises(UsageError) as caught:
        load_review_evals(tmp_path, ["sql-injektion"])
    message = str(caught.value)
    assert "no review eval 'sql-injektion' (did you mean 'sql-injection'?)" in message
    assert "clean-change, k8s-limits, sql-injection" in message


def test_no_evals_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no review evals in"):
        load_review_evals(tmp_path)


def test_assertion_and_eval_models_refuse_bad_values_in_code(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="must not be blank"):
        Assertion(id="a", text="  ")
    with pytest.raises(ValidationError, match="duplicate assertion id 'a'"):
        ReviewEval(
            name="x",
            path=tmp_path / "eval.json",
            test_files=tmp_path,
            prompt="p",
            assertions=[Assertion(id="a", text="t"), Assertion(id="a", text="u")],
        )
    with pytest.raises(ValidationError, match="is not a folder name"):
        ReviewEval(
            name="../up", path=tmp_path, test_files=tmp_path, prompt="p",
            assertions=[Assertion(id="a", text="t")],
        )  # fmt: skip


# --- pipeline --------------------------------------------------------------------------------


def test_a_declared_pipeline_loads_in_order(tmp_path: Path) -> None:
    add_eval(tmp_path, "one", GOOD)
    path = write_pipeline(
        tmp_path,
        """\
        roles:
          reviewer:
            agent: claude-reviewer
            inputs: [diff, file_list, prompt, spec]
          second-opinion:
            agent: gpt-reviewer
            inputs: [diff, reviewer]
          grader:
            agent: judge
            inputs: [reviewer, second-opinion, assertions, prompt]
        """,
    )
    found = load_review_evals(tmp_path)
    assert found.pipeline_path == path
    pipeline = found.pipeline
    assert list(pipeline.roles) == ["reviewer", "second-opinion", "grader"]
    assert pipeline.roles["second-opinion"] == Role(
        agent="gpt-reviewer", inputs=["diff", "reviewer"]
    )
    assert pipeline.grader == "grader" and pipeline.roles["grader"].grader


def test_the_grader_can_be_marked_on_another_role(tmp_path: Path) -> None:
    path = write_pipeline(
        tmp_path,
        """\
        roles:
          reviewer: {agent: r, inputs: [diff]}
          grader: {agent: g, inputs: [reviewer, assertions], grader: true}
          notes: {agent: n, inputs: [reviewer]}
        """,
    )
    pipeline = load_pipeline(path)
    assert pipeline.grader == "grader"
    assert [r.grader for r in pipeline.roles.values()] == [False, True, False]


def pipeline_error(tmp_path: Path, text: str) -> tuple[Path, str]:
    path = write_pipeline(tmp_path, text)
    add_eval(tmp_path, "one", GOOD)
    with pytest.raises(SpecError) as caught:
        load_review_evals(tmp_path)
    assert caught.value.path == path
    return path, str(caught.value)


@pytest.mark.parametrize(
    ("text", "needle", "message"),
    [
        (
            """\
            roles:
              reviewer:
                agent: r
                inputs:
                  - diff
                  - assertions
              grader: {agent: g, inputs: [reviewer, assertions]}
            """,
            "- assertions",
            "role 'reviewer' is not the grader and cannot take 'assertions': only the grader "
            "sees the rubric",
        ),
        (
            """\
            roles:
              reviewer: {agent: r, inputs: [diff]}
              grader:
                agent: g
                inputs:
                  - reviewer
                  - assertions
                  - diff
            """,
            "- diff",
            "role 'grader' is the grader and cannot take 'diff': the grader judges the roles' "
            "outputs, never the fixture or the worktree",
        ),
        (
            """\
            roles:
              resolver: {agent: a, inputs: [diff]}
              reviewer:
                agent: r
                inputs:
                  - diff
                  - critic
              critic: {agent: c, inputs: [diff]}
              grader: {agent: g, inputs: [reviewer, assertions]}
            """,
            "- critic",
            "role 'reviewer' cannot take 'critic': that role runs later",
        ),
        (
            """\
            roles:
              reviewer:
                agent: r
                inputs:
                  - dif
              grader: {agent: g, inputs: [reviewer, assertions]}
            """,
            "- dif",
            "role 'reviewer': unknown input 'dif' (did you mean 'diff'?); valid inputs: "
            "assertions, diff, file_list, prompt, spec, worktree",
        ),
        (
            """\
            roles:
              reviewer:
                agent: r
                inputs:
                  - trap
              grader: {agent: g, inputs: [reviewer, assertions]}
            """,
            "- trap",
            "role 'reviewer': 'trap' would leak the rubric",
        ),
        (
            """\
            roles:
              reviewer: {agent: r, inputs: [diff]}
              grader:
                agent: g
                inputs:
                  - assertions
                  - description
            """,
            "- description",
            "role 'grader': 'description' is never an input",
        ),
        (
            """\
            roles:
              reviewer: {agent: r, inputs: [diff]}
              grader:
                agent: g
                grader: true
                inputs: [reviewer, assertions]
              notes:
                agent: n
                inputs:
                  - grader
            """,
            "- grader",
            "role 'notes' cannot take the output of the grader 'grader'",
        ),
        (
            """\
            roles:
              reviewer:
                agent: r
                inputs:
                  - reviewer
              grader: {agent: g, inputs: [assertions]}
            """,
            "- reviewer",
            "role 'reviewer' cannot take its own output",
        ),
        (
            """\
            roles:
              reviewer:
                inputs: [diff]
              grader: {agent: g, inputs: [assertions]}
            """,
            "reviewer:",
            "missing required key 'roles.reviewer.agent'",
        ),
        (
            """\
            roles:
              reviewer: {agent: r, inputs: [diff]}
              grader:
                agent: g
                inputs: [reviewer]
            """,
            "inputs: [reviewer]",
            "role 'grader' is the grader and must take 'assertions'",
        ),
        (
            """\
            roles:
              reviewer: {agent: r, inputs: [diff], grader: true}
              grader:
                agent: g
                grader: true
                inputs: [assertions]
            """,
            "grader: true\n",
            "role 'grader': only one role can be the grader (already 'reviewer')",
        ),
        (
            """\
            roles:
              reviewer: {agent: r, inputs: [diff]}
              diff: {agent: g, inputs: [assertions]}
            """,
            "diff: {",
            "role name 'diff' is taken by an input",
        ),
        (
            """\
            roles:
              reviewer: {agent: r, inputs: [diff]}
            stages: []
            """,
            "stages:",
            "unknown key 'stages'",
        ),
    ],
)
def test_a_bad_pipeline_names_the_file_and_line(
    tmp_path: Path, text: str, needle: str, message: str
) -> None:
    path, error = pipeline_error(tmp_path, text)
    if needle.endswith("\n"):  # the second occurrence: the one inside a block
        lines = path.read_text(encoding="utf-8").splitlines()
        line = [i for i, t in enumerate(lines, 1) if t.strip() == needle.strip()][-1]
    else:
        line = line_of(path, needle)
    assert error.startswith(f"{path}:{line}: "), error
    assert message in error


def test_a_pipeline_built_in_code_is_checked_too() -> None:
    with pytest.raises(ValidationError, match="cannot take 'assertions'"):
        Pipeline(
            roles={
                "reviewer": Role(agent="r", inputs=["assertions"]),
                "grader": Role(agent="g", inputs=["reviewer", "assertions"]),
            }
        )
    with pytest.raises(ValidationError, match="no grader"):
        Pipeline(roles={"reviewer": Role(agent="r", inputs=["diff"], grader=False)})


def test_unreadable_pipeline_yaml_is_a_spec_error(tmp_path: Path) -> None:
    path, error = pipeline_error(tmp_path, "roles:\n  reviewer: [\n")
    assert error.startswith(f"{path}:")
    assert "invalid YAML" in error
    path, error = pipeline_error(tmp_path, "- just a list\n")
    assert error == f"{path}:1: a pipeline must be a mapping with a 'roles' key"
