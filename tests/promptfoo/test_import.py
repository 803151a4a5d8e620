"""Imported promptfoo configs run under ``coalmine eval run`` with promptfoo's verdicts.

Each captured config (the same ones ``eval run --promptfoo`` is checked on, with promptfoo
0.121.20's own results beside them) is imported with ``coalmine import promptfoo`` into a fresh
project, run with ``coalmine eval run``, and every stored row compared with promptfoo's:
success, failureReason, score, named scores and each assertion's pass. The same holds for the
live comparison (``COALMINE_PROMPTFOO``): promptfoo runs the config, coalmine runs its import.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from coalmine._util.clock import FixedClock
from coalmine.evals.plan import plan_evals
from coalmine.evals.run import run_evals
from coalmine.judge.labelling import Asked, run_candidates
from coalmine.promptfoo.node import node_available
from coalmine.store.evals import iter_attempts
from coalmine.store.runs import Store
from tests.evals.test_run import StopAfter
from tests.helpers.anthropic_server import FakeAnthropic
from tests.helpers.cli import run_main
from tests.helpers.openai_server import FakeOpenAI
from tests.promptfoo.test_run import (
    CAPTURED,
    LIVE,
    NEEDS_NODE,
    PROMPTFOO,
    components,
    copied_into,
    promptfoo_rows,
    run_real_promptfoo,
)

pytestmark = pytest.mark.usefixtures("fast_python")


def import_and_run(config: Path, project: Path, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    """Import ``config`` into ``project``, run its suites; the stored rows' promptfoo verdicts."""
    config = copied_into(config, project)
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code in (0, 1), output
    code, output = run_main("eval", "run", "--root", str(project), "--display", "plain", *extra)
    assert code in (0, 1), output
    return code, stored_rows(project)


def stored_rows(project: Path) -> list[dict[str, Any]]:
    store = Store.open(project / ".coalmine" / "coalmine.db")
    try:
        run = store.list_runs(kind="eval", limit=1)[0]
        suites = [p.stem for p in sorted((project / "harness" / "evals").glob("*.jsonl"))]
        rows = []
        for suite in suites:
            for attempt in iter_attempts(store, run.id, suite):
                rows.append({**attempt.record["promptfoo"], "_attempt": attempt})
        return rows
    finally:
        store.close()


def assert_same(rows: list[dict[str, Any]], expected: dict[tuple[int, int], dict[str, Any]]):
    assert sorted((r["testIdx"], r["promptIdx"]) for r in rows) == sorted(expected)
    for row in rows:
        where = (row["testIdx"], row["promptIdx"])
        theirs = expected[where]
        assert row["success"] == theirs["success"], where
        assert row["failureReason"] == theirs["failureReason"], where
        if "score" in theirs:
            assert math.isclose(row["score"], theirs["score"], abs_tol=1e-9), where
        if "namedScores" in theirs:
            assert row["namedScores"].keys() == theirs["namedScores"].keys(), where
        wanted = components(theirs)
        if wanted is not None:
            got = components(row) or []
            assert got == wanted, where
        attempt = row["_attempt"]
        status = (
            "pass" if theirs["success"] else ("error" if theirs["failureReason"] == 2 else "fail")
        )
        assert attempt.status == status, where


@pytest.mark.parametrize(
    ("config", "captured", "node"),
    CAPTURED,
    ids=[f"{c.parent.name}/{c.stem}" for c, _, _ in CAPTURED],
)
def test_imported_suites_give_promptfoos_verdicts(
    config: Path, captured: Path, node: bool, tmp_path: Path
) -> None:
    if node and node_available() is not None:
        pytest.skip("needs Node.js >= 18")
    _, rows = import_and_run(config, tmp_path / "project")
    assert_same(rows, promptfoo_rows(captured))


def test_import_writes_one_compat_suite_per_column_and_the_agents(tmp_path: Path) -> None:
    config = PROMPTFOO / "report" / "report_a.yaml"
    project = tmp_path / "project"
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    suites = sorted((project / "harness" / "evals").glob("*.yaml"))
    source = yaml.safe_load(config.read_text(encoding="utf-8"))
    columns = len(source["prompts"]) * len(source["providers"])
    assert len(suites) == columns, output
    for suite in suites:
        meta = yaml.safe_load(suite.read_text(encoding="utf-8"))
        assert meta["compat"] == "promptfoo"
        base = (suite.parent / meta["promptfoo"]["base_dir"]).resolve()
        assert base == config.parent.resolve()
        lines = [json.loads(x) for x in suite.with_suffix(".jsonl").read_text().splitlines()]
        assert [x["testIdx"] for x in lines] == sorted(x["testIdx"] for x in lines)
        assert len({x["id"] for x in lines}) == len(lines)
    agents = yaml.safe_load((project / "coalmine.yaml").read_text(encoding="utf-8"))["agents"]
    assert {a["provider"] for a in agents.values()} == {"echo"}
    # importing again writes nothing new
    code2, output2 = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code2 == code
    assert "wrote" not in output2 and f"{2 * columns} file(s) unchanged" in output2


def test_a_changed_suite_is_not_overwritten_without_force(tmp_path: Path) -> None:
    config = PROMPTFOO / "scoring" / "scoring.yaml"
    project = tmp_path / "project"
    run_main("import", "promptfoo", str(config), "--out", str(project))
    suite = next((project / "harness" / "evals").glob("*.jsonl"))
    suite.write_text('{"id": "mine", "assert": []}\n', encoding="utf-8")
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code == 2 and "--force" in output
    assert suite.read_text(encoding="utf-8") == '{"id": "mine", "assert": []}\n'
    code, _ = run_main("import", "promptfoo", str(config), "--out", str(project), "--force")
    assert code == 1  # the scoring fixture has an unknown assertion type on purpose
    assert '"mine"' not in suite.read_text(encoding="utf-8")


def test_an_interrupted_imported_run_resumes_without_rerunning_rows(tmp_path: Path) -> None:
    project = tmp_path / "project"
    config = PROMPTFOO / "scoring" / "scoring.yaml"
    run_main("import", "promptfoo", str(config), "--out", str(project))
    plan = plan_evals(project)
    store = Store.open(project / ".coalmine" / "coalmine.db")

    async def main(stop_after: int, **options: Any) -> Any:
        hook = StopAfter(stop_after, anyio.Event())
        clock = FixedClock(at=datetime(2026, 11, 30, tzinfo=UTC), step=1.0)
        return await run_evals(plan, store=store, stop=hook.stop, hooks=[hook], clock=clock,
                               concurrency=1, **options)  # fmt: skip

    try:
        first = anyio.run(main, 4)
        assert (first.interrupted, first.exit_code) == (True, 3)
        [suite] = plan.suites
        done = [a.case_id for a in iter_attempts(store, first.run_id, suite.name)]
        assert 4 <= len(done) < 26
        second = anyio.run(lambda: main(1000, resume=first.run_id))
        assert (second.run_id, second.interrupted) == (first.run_id, False)
        ids = [a.case_id for a in iter_attempts(store, first.run_id, suite.name)]
        assert sorted(ids) == sorted(set(ids)) and len(ids) == 26
    finally:
        store.close()
    assert_same(stored_rows(project), promptfoo_rows(config.with_name("scoring.expected.json")))


def test_a_provider_without_agent_is_reported_and_its_rows_are_errors(tmp_path: Path) -> None:
    config = tmp_path / "pf" / "promptfooconfig.yaml"
    config.parent.mkdir()
    config.write_text(
        "prompts: ['Say {{ word }}']\n"
        "providers: ['echo', 'webhook:http://localhost:1/x']\n"
        "tests:\n  - vars: {word: hi}\n    assert: [{type: contains, value: hi}]\n",
        encoding="utf-8",
    )
    project = tmp_path / "project"
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code == 1
    assert "webhook:http://localhost:1/x" in output
    code, rows = import_and_run(config, project)
    by_column = {r["promptIdx"]: r for r in rows}
    assert by_column[0]["success"] is True
    assert by_column[1]["failureReason"] == 2
    assert "unsupported" in by_column[1]["error"]
    assert code == 1


@NEEDS_NODE
@pytest.mark.parametrize("config", LIVE, ids=lambda c: f"{c.parent.name}/{c.stem}")
def test_live_promptfoo_and_imported_suites_agree_row_by_row(
    config: Path, promptfoo: str, tmp_path: Path
) -> None:
    theirs = run_real_promptfoo(promptfoo, config, tmp_path, reuse=True)
    expected = {(r["testIdx"], r["promptIdx"]): r for r in theirs["results"]["results"]}
    _, rows = import_and_run(config, tmp_path / "project")
    assert_same(rows, expected)


RUBRIC_CONFIG = """\
prompts: ["{{ q }}"]
providers: [echo]
tests:
  - description: kind
    vars: {q: thank you kindly}
    assert:
      - {type: contains, value: thank}
      - {type: llm-rubric, value: is polite}
  - description: rude
    vars: {q: go away}
    assert:
      - {type: contains, value: go}
      - {type: llm-rubric, value: is polite}
  - description: broken
    vars: {q: go away}
    assert:
      - {type: contains, value: nope}
      - {type: llm-rubric, value: is polite}
"""


def verdict(passed: bool) -> str:
    return json.dumps({"pass": passed, "score": 1.0 if passed else 0.0, "reason": "judged"})


@pytest.mark.parametrize("blocking", [False, True])
def test_imported_llm_rubric_uses_the_project_judge_and_its_blocking_policy(
    blocking: bool, tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    config = tmp_path / "pf" / "promptfooconfig.yaml"
    config.parent.mkdir()
    config.write_text(RUBRIC_CONFIG, encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    judge = {"provider": "openai", "base_url": openai_server.base_url, "model": "judge-model"}
    if blocking:
        judge["blocking"] = True
    (project / "coalmine.yaml").write_text(
        "# my project\n" + yaml.safe_dump({"judge": judge}), encoding="utf-8"
    )
    openai_server.enqueue(verdict(True), verdict(False), verdict(False))
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code == 0, output
    text = (project / "coalmine.yaml").read_text(encoding="utf-8")
    assert text.startswith("# my project\n") and "echo:" in text
    code, output = run_main("eval", "run", "--root", str(project), "-c", "1", "--display", "plain")
    rows = {r["_attempt"].case_id: r for r in stored_rows(project)}
    assert {k: r["success"] for k, r in rows.items()} == {
        "kind": True,
        "rude": False,
        "broken": False,
    }
    assert len(openai_server.requests) == 3
    assert "is polite" in json.dumps(openai_server.requests[0].body)
    # promptfoo's verdicts stand; whether a judge-only failure fails the suite is the policy's
    assert rows["broken"]["_attempt"].blocks is True  # failed on a deterministic assertion
    assert rows["rude"]["_attempt"].blocks is blocking
    assert rows["rude"]["_attempt"].record.get("advisory", False) is not blocking
    assert code == 1  # "broken" fails the suite either way
    # judge label offers the imported rows with their rubric, so a calibration covers it
    store = Store.open(project / ".coalmine" / "coalmine.db")
    try:
        candidates = run_candidates(store, store.list_runs(kind="eval", limit=1)[0])
    finally:
        store.close()
    rude = next(c for c in candidates if c.id.endswith("/rude"))
    assert (rude.prompt, rude.output, rude.asked) == (
        "go away",
        "go away",
        Asked(rubric="is polite"),
    )


MODEL_CONFIG = """\
prompts: ["Translate to French: {{ word }}"]
providers:
  - id: openai:chat:gpt-4o-mini
    config: {temperature: 0.2}
  - anthropic:messages:claude-sonnet-4-5
tests:
  - vars: {word: cat}
    assert:
      - {type: icontains, value: chat}
"""


def test_imported_model_providers_call_the_vendors_protocols_and_keep_keys_out(
    tmp_path: Path, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "pf" / "promptfooconfig.yaml"
    config.parent.mkdir()
    config.write_text(MODEL_CONFIG, encoding="utf-8")
    project = tmp_path / "project"
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code == 0, output
    with FakeAnthropic() as anthropic:
        monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret-0001")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-0002")
        openai_server.enqueue("Le chat")
        anthropic.enqueue("un chien")
        code, output = run_main("eval", "run", "--root", str(project), "--display", "plain")
        [sent] = anthropic.requests
        # the config run directly reaches the same endpoints
        openai_server.enqueue("Le chat")
        anthropic.enqueue("un chien")
        direct, table = run_main("eval", "run", "--promptfoo", str(config), "--root", str(project))
        assert len(anthropic.requests) == 2
    assert direct == 1 and "PASS" in table and "FAIL" in table
    assert code == 1, output  # the anthropic row fails its assertion
    request = openai_server.requests[0]
    assert len(openai_server.requests) == 2
    assert request.body["model"] == "gpt-4o-mini" and request.body["temperature"] == 0.2
    assert request.body["messages"][-1]["content"] == "Translate to French: cat"
    assert request.headers["Authorization"] == "Bearer sk-openai-secret-0001"
    assert sent.body["model"] == "claude-sonnet-4-5"
    assert sent.body["messages"][-1]["content"] == "Translate to French: cat"
    verdicts = {(r["promptIdx"], r["success"]) for r in stored_rows(project)}
    assert verdicts == {(0, True), (1, False)}
    written = [p for p in project.rglob("*") if p.is_file()]
    for path in written:
        data = path.read_bytes()
        assert b"sk-openai-secret-0001" not in data and b"sk-ant-secret-0002" not in data, path


def test_imported_code_prompts_loaders_and_generators_run_as_promptfoo_runs_them(
    tmp_path: Path,
) -> None:
    # rows as promptfoo 0.121.20 gives them (the parity configs compare whole folders live)
    source = tmp_path / "source"
    source.mkdir()
    (source / "code.py").write_text(
        "def make(context):\n"
        "    return 'Made for ' + context['vars']['name']\n"
        "def get_var(name, prompt, other):\n"
        "    return {'output': ' loaded ' + other['name'] + ' '}\n"
        "def tests():\n"
        "    return [{'vars': {'name': 'Ada', 'extra': 'file://code.py'}},\n"
        "            {'vars': {'name': 'Bo', 'extra': 'x'}, 'assert': [{'type': 'contains', 'value': 'Ada'}]}]\n"
    )
    (source / "gen.py").write_text(
        "import json, sys\nprint('Exec for', json.loads(sys.argv[-1])['vars']['name'])\n"
    )
    config = source / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Hi {{ name }}{{ extra }}', file://code.py:make, 'exec:python3 gen.py']\n"
        "providers: [echo]\n"
        "tests: file://code.py:tests\n"
    )
    code, rows = import_and_run(config, tmp_path / "project")
    assert code == 1
    verdicts = {(r["testIdx"], r["promptIdx"]): r["success"] for r in rows}
    assert verdicts == {
        (0, 0): True, (0, 1): True, (0, 2): True, (1, 0): False, (1, 1): False, (1, 2): False,
    }  # fmt: skip
    prompts = {(r["testIdx"], r["promptIdx"]): r["_attempt"].record["prompt"] for r in rows}
    assert prompts[(0, 0)] == "Hi Adaloaded Ada"
    assert prompts[(0, 1)] == "Made for Ada"
    assert prompts[(1, 2)] == "Exec for Bo"
