"""The ``python`` grader end to end: a project's own grading functions in an eval run.

Each test writes a project with a python agent (``agent_<uid>.py``, echoing the prompt; a
``tools:a,b`` prompt calls tools ``a`` and ``b``) and a package of checks
(``graders_<uid>/checks.py``), enabled under ``python_graders:`` in coalmine.yaml. Every name is
unique per test: Python caches modules by name, and a second project's module of the same name
is refused.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from coalmine.errors import ConfigError
from coalmine.evals.plan import EvalPlan, plan_evals
from coalmine.evals.run import EvalOutcome, run_evals
from coalmine.store.runs import Store

AGENT = """\
async def run(prompt, context):
    verb, _, arg = prompt.partition(":")
    if verb == "tools":
        calls = [{"name": n, "arguments": {"q": context.case_id}} for n in arg.split(",")]
        return {"output": "used tools", "tool_calls": calls}
    return prompt
"""

CHECKS = """\
import anyio

SEEN = []
LIMIT = 3


def exact(output, context):
    return output == context["inputs"].get("expected")


async def words(output, context):
    await anyio.sleep(0)
    wanted = context["args"]["words"]
    found = [w for w in wanted if w in output.split()]
    return {"score": len(found) / len(wanted), "reason": f"found {len(found)} of {len(wanted)}"}


def verdict(output, context):
    return {"pass": output.startswith("ok"), "score": 0.1, "reason": "says " + output}


def spy(output, context):
    SEEN.append((output, context))
    return True


def boom(output, context):
    raise ValueError(f"cannot parse {output!r}")


def nothing(output, context):
    return None
"""

WORDS = ["red", "green", "blue"]


def python(function: str, **config: Any) -> dict[str, Any]:
    return {"type": "python", "config": {"function": function, **config}}


def case(case_id: str, prompt: str, *graders: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"id": case_id, "prompt": prompt, "graders": list(graders), **more}


class Project:
    """A project with the agent, the checks package, suites, and helpers to run them."""

    def __init__(self, root: Path, uid: str):
        self.root = root
        self.agent = f"agent_{uid}"
        self.package = f"graders_{uid}"
        root.mkdir(parents=True)
        (root / f"{self.agent}.py").write_text(AGENT, encoding="utf-8")
        (root / self.package).mkdir()
        (root / self.package / "__init__.py").write_text("", encoding="utf-8")
        (root / self.package / "checks.py").write_text(CHECKS, encoding="utf-8")

    def target(self, function: str) -> str:
        return f"{self.package}.checks:{function}"

    def config(self, graders: dict[str, str] | None = None) -> Path:
        """coalmine.yaml: agent ``Bot``; ``graders`` (default: each check under its own name)."""
        if graders is None:
            names = ["exact", "words", "verdict", "spy", "boom", "nothing"]
            graders = {name: self.target(name) for name in names}
        data = {
            "agents": {"Bot": {"provider": "python", "target": f"{self.agent}:run"}},
            "python_graders": graders,
        }
        path = self.root / "coalmine.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path

    def suite(
        self, name: str, cases: list[dict[str, Any]], meta: dict[str, Any] | None = None
    ) -> Path:
        folder = self.root / "harness" / "evals"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
        if meta is not None:
            (folder / f"{name}.yaml").write_text(yaml.safe_dump(meta), encoding="utf-8")
        return path

    @property
    def checks(self) -> Any:
        return sys.modules[f"{self.package}.checks"]

    def plan(self) -> EvalPlan:
        return plan_evals(self.root)

    def run(self, plan: EvalPlan | None = None) -> EvalOutcome:
        plan = plan or self.plan()
        store = Store.open(self.root / ".coalmine" / "coalmine.db")
        try:
            return anyio.run(partial(run_evals, plan, store=store))
        finally:
            store.close()

    def query(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        conn = sqlite3.connect(self.root / ".coalmine" / "coalmine.db")
        conn.row_factory = sqlite3.Row
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def row(self, run_id: str, case_id: str) -> sqlite3.Row:
        [found] = self.query(
            "SELECT * FROM eval_attempts WHERE run_id = ? AND case_id = ?", run_id, case_id
        )
        return found


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    uid = uuid.uuid4().hex[:12]
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading adds the project folder
    yield Project(tmp_path / "proj", uid)
    for name in [m for m in sys.modules if uid in m]:
        del sys.modules[name]


def test_the_projects_functions_grade_the_suite(proj: Project) -> None:
    proj.config()
    proj.suite(
        "sql",
        [
            case("same", "SELECT 1", python("exact"), expected="SELECT 1"),
            case("other", "SELECT 2", python("exact"), expected="SELECT 1"),
            # 2 of 3 words = 0.667 reaches 0.6; 1 of 3 = 0.333 does not
            case("two", "red and green", python("words", threshold=0.6, args={"words": WORDS})),
            case("one", "red only", python("words", threshold=0.6, args={"words": WORDS})),
            # pass overrides the threshold: score 0.1 passes, and would fail "not ok"
            case("says-ok", "ok then", python("verdict")),
        ],
    )
    outcome = proj.run()
    [r] = outcome.suites
    assert (r.cases, r.passed, r.failed, r.errored, r.bad_lines) == (5, 3, 2, 0, 0)
    assert (r.verdict, outcome.exit_code) == ("fail", 1)
    # grader mean over the 5 runs: (1 + 0 + 2/3 + 1/3 + 0.1) / 5 = 2.1/5 = 0.42
    assert r.graders["python"].model_dump() == {"mean": 0.42, "n": 5, "skipped": 0}
    assert [(f.id, f.status) for f in r.failures] == [("one", "fail"), ("other", "fail")]
    assert r.failures[0].reason == "python failed: found 1 of 3"

    two = proj.row(outcome.run_id, "two")
    assert (two["status"], two["error_kind"]) == ("pass", None)
    assert json.loads(two["record"])["grades"] == {
        "python": {
            "score": 2 / 3,
            "passed": True,
            "weight": 1.0,
            "function": "words",
            "message": "found 2 of 3",
        }
    }
    one = json.loads(proj.row(outcome.run_id, "one")["record"])
    assert one["grades"]["python"]["message"] == "found 1 of 3"
    assert one["why"] == "python failed: found 1 of 3"
    says = json.loads(proj.row(outcome.run_id, "says-ok")["record"])["grades"]["python"]
    assert (says["score"], says["passed"], says["message"]) == (0.1, True, "says ok then")
    exact = json.loads(proj.row(outcome.run_id, "same")["record"])["grades"]["python"]
    assert exact == {"score": 1.0, "passed": True, "weight": 1.0, "function": "exact"}


def test_the_function_gets_the_cases_context(proj: Project) -> None:
    proj.config()
    proj.suite(
        "ctx",
        [
            case(
                "with-tools",
                "tools:search,run_sql",
                python("spy", args={"dialect": "postgres"}),
                expected="SELECT 1",
                metadata={"team": "data"},
            ),
            case("plain", "hello", python("spy")),
        ],
    )
    outcome = proj.run()
    assert (outcome.suites[0].passed, outcome.exit_code) == (2, 0)
    seen = dict((context["case_id"], (output, context)) for output, context in proj.checks.SEEN)
    assert seen["with-tools"] == (
        "used tools",
        {
            "case_id": "with-tools",
            "prompt": "tools:search,run_sql",
            "inputs": {"expected": "SELECT 1", "metadata": {"team": "data"}},
            "tool_calls": [
                {"name": "search", "arguments": {"q": "with-tools"}},
                {"name": "run_sql", "arguments": {"q": "with-tools"}},
            ],
            "args": {"dialect": "postgres"},
        },
    )
    assert seen["plain"] == (
        "hello",
        {"case_id": "plain", "prompt": "hello", "inputs": {}, "tool_calls": [], "args": {}},
    )


def test_a_line_naming_a_function_the_config_does_not_enable_is_a_bad_line(
    proj: Project,
) -> None:
    proj.config({"exact": proj.target("exact")})
    path = proj.suite(
        "mixed",
        [
            case("a", "x", python("exact"), expected="x"),
            case("typo", "x", python("exakt"), expected="x"),
            case("other", "x", python("spy")),  # defined in the module, but not enabled
            case("b", "y", python("exact"), expected="y"),
        ],
    )
    plan = proj.plan()
    [suite] = plan.suites
    assert list(suite.index.ids) == ["a", "b"]
    assert [(b.line, b.case_id) for b in suite.index.bad] == [(2, "typo"), (3, "other")]
    outcome = proj.run(plan)
    [r] = outcome.suites
    assert (r.cases, r.passed, r.bad_lines, r.verdict) == (2, 2, 2, "pass")
    assert outcome.exit_code == 2  # a bad line is a usage error, even when the rest passes
    typo, other = r.bad_line_examples
    assert typo.startswith(f"{path}:2: ")
    assert (
        "python grader 'exakt' (did you mean 'exact'?) is not enabled: list it under "
        "'python_graders:' in the config (enabled: exact)"
    ) in typo
    assert other.startswith(f"{path}:3: ")
    assert "python grader 'spy' is not enabled" in other
    assert {row["case_id"] for row in proj.query("SELECT case_id FROM eval_attempts")} == {
        "a",
        "b",
    }


def test_a_suite_yaml_naming_a_function_not_enabled_is_a_broken_suite(proj: Project) -> None:
    proj.config({"exact": proj.target("exact")})
    proj.suite("ghost", [case("a", "x", python("exact"), expected="x")], meta={
        "graders": [python("nope")]
    })  # fmt: skip
    proj.suite("fine", [case("a", "x", python("exact"), expected="x")])
    plan = proj.plan()
    assert [s.name for s in plan.suites] == ["fine"]
    [broken] = plan.broken
    assert broken.path == proj.root / "harness" / "evals" / "ghost.jsonl"
    assert "python grader 'nope' is not enabled" in broken.message
    assert "(enabled: exact)" in broken.message
    outcome = proj.run(plan)
    assert [(s.suite_id, s.verdict) for s in outcome.suites] == [("fine", "pass")]
    assert outcome.exit_code == 2


def test_a_suite_yaml_grader_the_config_enables_grades_every_case(proj: Project) -> None:
    proj.config()
    proj.suite(
        "shared",
        [case("a", "x", expected="x"), case("b", "y", expected="x")],
        meta={"graders": [python("exact")]},
    )
    [r] = proj.run().suites
    assert (r.passed, r.failed) == (1, 1)


def test_a_python_grader_that_does_not_import_is_a_config_error_at_run_start(
    proj: Project,
) -> None:
    path = proj.config({"ok": proj.target("exact"), "sql-valid": f"{proj.package}.sql:valid"})
    proj.suite("s", [case("a", "x", python("ok"), expected="x")])
    plan = proj.plan()  # planning does not import the functions
    with pytest.raises(ConfigError) as caught:
        proj.run(plan)
    error = caught.value
    assert error.path == path
    assert error.reason.startswith(
        f"python_graders: sql-valid: cannot load '{proj.package}.sql:valid' (from {proj.root}): "
        f"ModuleNotFoundError: No module named '{proj.package}.sql'"
    )
    assert str(error).startswith(f"{path}: python_graders: sql-valid: ")


def test_a_python_grader_with_a_missing_function_is_a_config_error(proj: Project) -> None:
    proj.config({"gone": proj.target("gone")})
    proj.suite("s", [case("a", "x", python("gone"))])
    with pytest.raises(ConfigError) as caught:
        proj.run()
    reason = caught.value.reason
    assert reason.startswith(f"python_graders: gone: cannot load '{proj.target('gone')}'")
    assert "AttributeError" in reason and "'gone'" in reason


def test_a_python_grader_that_is_not_callable_is_a_config_error(proj: Project) -> None:
    proj.config({"limit": proj.target("LIMIT")})
    proj.suite("s", [case("a", "x", python("limit"))])
    with pytest.raises(ConfigError) as caught:
        proj.run()
    assert caught.value.reason == f"python_graders: limit: '{proj.target('LIMIT')}' is not callable"


def test_a_python_grader_whose_module_name_is_taken_is_a_config_error(
    proj: Project, tmp_path: Path
) -> None:
    # another folder's module of the same name is imported first: the clash is refused
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / proj.package).mkdir(parents=True)
    (elsewhere / proj.package / "__init__.py").write_text("", encoding="utf-8")
    sys.path.insert(0, str(elsewhere))
    __import__(proj.package)
    proj.config({"exact": proj.target("exact")})
    proj.suite("s", [case("a", "x", python("exact"), expected="x")])
    with pytest.raises(ConfigError) as caught:
        proj.run()
    reason = caught.value.reason
    assert reason.startswith(f"python_graders: exact: cannot load '{proj.target('exact')}': ")
    assert f"a module named '{proj.package}' is already imported from {elsewhere}" in reason


def test_a_python_grader_config_error_leaves_no_run_in_the_store(proj: Project) -> None:
    proj.config({"sql-valid": f"{proj.package}.sql:valid"})
    proj.suite("s", [case("a", "x", python("sql-valid"))])
    with pytest.raises(ConfigError):
        proj.run()
    store = Store.open(proj.root / ".coalmine" / "coalmine.db")
    try:
        assert store.find_unfinished("eval") is None
    finally:
        store.close()


def test_a_function_that_raises_makes_the_case_an_error_naming_it(proj: Project) -> None:
    proj.config()
    proj.suite(
        "errs",
        [
            case("fine", "x", python("exact"), expected="x"),
            case("raises", "SELEC 1", python("boom")),
            case("returns-none", "x", python("nothing")),
        ],
    )
    outcome = proj.run()
    [r] = outcome.suites
    assert (r.cases, r.passed, r.failed, r.errored) == (3, 1, 0, 2)
    assert (r.verdict, outcome.exit_code) == ("fail", 1)  # an error blocks: never a pass
    raised = proj.row(outcome.run_id, "raises")
    assert (raised["status"], raised["error_kind"], raised["blocks"], raised["score"]) == (
        "error",
        "grader",
        1,
        None,
    )
    record = json.loads(raised["record"])
    assert record["error"].startswith(
        "case 'raises': python: boom raised ValueError: cannot parse 'SELEC 1'\n"
    )
    assert record["output"] == "SELEC 1"
    none = proj.row(outcome.run_id, "returns-none")
    assert (none["status"], none["error_kind"]) == ("error", "grader")
    assert json.loads(none["record"])["error"].startswith(
        "case 'returns-none': python: nothing returned None; expected a bool"
    )
    assert [(f.id, f.status) for f in r.failures] == [
        ("raises", "error"),
        ("returns-none", "error"),
    ]
    assert r.failures[0].reason.startswith("case 'raises': python: boom raised ValueError")
