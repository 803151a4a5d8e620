"""Whatever stops a run, it ends in the store and says so in one line, never a traceback.

A canary, eval or review run whose agent cannot be built (a damaged cassette) or whose plugin
provider raises something unexpected is left ``error`` in the store, with what stopped it,
and the command exits 2 (a config problem) or 1 (anything else) with a plain message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from coalmine.providers.base import provider
from coalmine.providers.base import registry as providers
from coalmine.store.runs import RunInfo, Store
from tests.helpers.cli import run_main
from tests.helpers.project import Project

GRADERS = [{"type": "contains", "config": {"value": "ok"}}]


class _Settings(BaseModel):
    pass


@pytest.fixture
def exploding(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A plugin provider whose call raises what no provider should (a bug in the plugin)."""
    monkeypatch.setattr(providers, "_items", dict(providers._items))

    @provider("test-exploding", settings=_Settings)
    class Exploding:
        def __init__(self, *, agent: str, settings: BaseModel, base_dir: Path) -> None:
            self.agent = agent

        async def call(self, request: Any) -> Any:
            raise RuntimeError("boom in the plugin")

        async def aclose(self) -> None:
            pass

    yield "test-exploding"


def runs(project: Project) -> list[RunInfo]:
    store = Store.open(project.root / ".coalmine" / "coalmine.db")
    try:
        return store.list_runs()
    finally:
        store.close()


def damaged_cassette(project: Project) -> dict[str, Any]:
    project.write("cassettes/qa.jsonl", '{"key": "k", "output": {"text": "ok"}}\nnot json\n')
    return {"provider": "replay", "cassette": "cassettes/qa.jsonl"}


def suite(project: Project, cases: int = 3) -> None:
    lines = [
        json.dumps({"id": f"c{i}", "prompt": f"say ok {i}", "graders": GRADERS})
        for i in range(cases)
    ]
    project.write("harness/evals/smoke.jsonl", "\n".join(lines) + "\n")


def assert_clean(code: int, output: str, expected: int) -> None:
    assert code == expected, output
    assert "Traceback" not in output
    assert "ExceptionGroup" not in output
    assert output.count("error:") == 1, output


def test_eval_run_whose_agent_cannot_be_built_ends_as_error(project: Project) -> None:
    project.config({"agents": {"QA": damaged_cassette(project)}})
    suite(project)  # three workers meet the same broken agent at once
    code, output = run_main("eval", "run", "--root", str(project.root), "--display", "none")
    assert_clean(code, output, 2)
    assert "qa.jsonl:2: damaged cassette entry" in output
    (info,) = runs(project)
    assert info.status == "error"
    assert info.error is not None and "damaged cassette entry" in info.error
    assert info.ended_at is not None


def test_canary_run_whose_agent_cannot_be_built_ends_as_error(project: Project) -> None:
    project.config({"agents": {"QA": damaged_cassette(project)}, "routing": {"qa": "QA"}})
    project.canary("qa-001-one")
    project.canary("qa-002-two")
    code, output = run_main(
        "canary", "run", "--root", str(project.root), "--display", "none", "--jobs", "2"
    )
    assert_clean(code, output, 2)
    (info,) = runs(project)
    assert info.status == "error" and info.ended_at is not None


def test_an_unexpected_exception_ends_the_run_with_exit_1(project: Project, exploding: str) -> None:
    project.config({"agents": {"QA": {"provider": exploding}}})
    suite(project)
    code, output = run_main("eval", "run", "--root", str(project.root), "--display", "none")
    assert_clean(code, output, 1)
    (info,) = runs(project)
    assert info.status == "error"
    assert f"eval run {info.id}" in output
    assert "RuntimeError: boom in the plugin" in output
    assert f"coalmine eval run --resume {info.id}" in output
    # the traceback is kept with the run, for a bug report, not thrown at the user
    assert info.error is not None and "Traceback" in info.error and "boom" in info.error
    code, output = run_main("runs", "show", info.id, "--root", str(project.root))
    assert f"run {info.id} stopped on an error: the eval run" in output
    assert "Traceback" not in output


def test_an_errored_run_can_be_resumed(project: Project, exploding: str) -> None:
    project.config({"agents": {"QA": {"provider": exploding}}})
    suite(project, cases=1)
    code, _ = run_main("eval", "run", "--root", str(project.root), "--display", "none")
    assert code == 1
    project.write("agents/__init__.py", "")  # a package: an installed `agents` must not win
    project.write("agents/ok.py", "def run(prompt, context):\n    return 'ok'\n")
    project.config({"agents": {"QA": {"provider": "python", "target": "agents.ok:run"}}})
    code, output = run_main("eval", "run", "--resume", "--root", str(project.root))
    assert code == 0, output
    (info,) = runs(project)
    assert info.status == "finished" and info.error is None


def test_review_run_with_an_unexpected_exception_ends_as_error(
    project: Project, exploding: str
) -> None:
    agents = {name: {"provider": exploding} for name in ("resolver", "reviewer", "grader")}
    project.config({"agents": agents, "judge": "none"})
    eval_json = {
        "prompt": "Please look at my change.",
        "assertions": [{"id": "1", "text": "The reviewer finds it", "target": "reviewer"}],
    }
    project.write("evals/review/one/eval.json", json.dumps(eval_json))
    project.write("evals/review/one/test-files/app.py", "x = 1\n")
    code, output = run_main("review", "run", "--root", str(project.root))
    assert_clean(code, output, 1)
    (info,) = runs(project)
    assert info.kind == "review" and info.status == "error"
