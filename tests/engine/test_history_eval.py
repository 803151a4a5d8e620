"""``compare`` and ``report`` on eval runs: each suite's case is one result, ``suite/case``."""

from __future__ import annotations

import json
from pathlib import Path

from coalmine.engine.history import eval_run_record, load_run
from coalmine.store.runs import Store
from tests.helpers.cli import run_main


def case(case_id: str, prompt: str, want: str) -> str:
    graders = [
        {"type": "contains", "config": {"value": want}},
        {"type": "icontains", "weight": 3, "config": {"value": "echo"}},
    ]
    return json.dumps({"id": case_id, "prompt": prompt, "graders": graders})


def project(root: Path, lines: list[str]) -> Path:
    (root / "harness" / "evals").mkdir(parents=True, exist_ok=True)
    (root / "coalmine.yaml").write_text("agents:\n  echo: {provider: echo}\n", encoding="utf-8")
    (root / "harness" / "evals" / "greet.jsonl").write_text("\n".join(lines) + "\n")
    return root


def run_ids(root: Path) -> list[str]:
    store = Store.open(root / ".coalmine" / "coalmine.db")
    try:
        return [r.id for r in reversed(store.list_runs(kind="eval"))]
    finally:
        store.close()


def test_an_eval_run_reads_as_one_result_per_case(tmp_path: Path) -> None:
    root = project(tmp_path, [case("a", "echo hi", "hi"), case("b", "echo hi", "bye")])
    run_main("eval", "run", "--root", str(root), "--repeats", "2", "--display", "none")
    [run_id] = run_ids(root)
    store = Store.open(root / ".coalmine" / "coalmine.db")
    try:
        record = eval_run_record(store, store.get_run(run_id))
        assert load_run(store, run_id).results == record.results
    finally:
        store.close()
    by_id = {r.id: r for r in record.results}
    assert sorted(by_id) == ["greet/a", "greet/b"]
    assert by_id["greet/a"].verdict == "PASS"
    assert by_id["greet/a"].composite_score == 1.0
    # b: contains fails (0, weight 1), icontains passes (1, weight 3): (0·1 + 1·3) / 4
    assert by_id["greet/b"].verdict == "FAIL"
    assert by_id["greet/b"].composite_score == 0.75
    assert by_id["greet/b"].grader_scores["contains"].score == 0.0
    assert (record.summary.total, record.summary.passed) == (2, 1)


def test_compare_finds_the_regression_between_two_eval_runs(tmp_path: Path) -> None:
    lines = [case(f"c{i}", f"echo {i} hi", "hi") for i in range(4)]
    root = project(tmp_path, lines)
    run_main("eval", "run", "--root", str(root), "--display", "none")
    lines[2] = case("c2", "echo 2 hi", "nope")
    project(tmp_path, lines)
    run_main("eval", "run", "--root", str(root), "--display", "none")
    base, new = run_ids(root)
    code, output = run_main("compare", base, new, "--root", str(root))
    assert code == 1
    assert "- greet/c2: PASS → FAIL (composite 1.00 → 0.75)" in output
    assert "over 4 comparable cases (1 changed)" in output
    code, output = run_main("compare", new, new, "--root", str(root))
    assert code == 0 and "over 4 shared cases" in output


def test_report_renders_an_eval_run_as_an_eval_run(tmp_path: Path) -> None:
    root = project(tmp_path, [case("a", "echo hi", "hi"), case("b", "echo hi", "bye")])
    run_main("eval", "run", "--root", str(root), "--display", "none")
    code, markdown = run_main("report", "latest", "--root", str(root))
    assert code == 0
    assert markdown.startswith("## Eval Run Results — ")
    assert "| greet | a | echo | 1.00 | ✅ PASS |" in markdown
    code, junit = run_main("report", "latest", "--root", str(root), "--format", "junit")
    assert code == 0 and 'classname="eval.greet" name="greet/b"' in junit
