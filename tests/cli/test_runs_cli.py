"""``runs import`` once per run, and ``latest``/``previous`` by start time and by kind.

Canary runs come from result files and from real canary runs of the ``echo`` agent (its answer
is its prompt), eval runs from real eval runs of it; every command runs in-process on a real
store in a temporary folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from coalmine.store.runs import Store
from tests.helpers.cli import run_main


def result_file(
    path: Path, verdicts: list[str], *, timestamp: str = "2026-04-13T07:30:00Z", **extra: Any
) -> Path:
    """A canary result file: case ``qa-00N-x`` of each verdict, labelled by the file's stem."""
    results = [
        {"id": f"qa-{i:03d}-x", "phase": "qa", "title": "t", "agent": "QA", "verdict": v,
         "composite_score": 1.0 if v == "PASS" else 0.2,
         "grader_scores": {"keyword": {"score": 1.0 if v == "PASS" else 0.2}},
         "duration_seconds": 1.0}
        for i, v in enumerate(verdicts)
    ]  # fmt: skip
    data = {
        "run_id": path.stem, "timestamp": timestamp,
        "summary": {"total": len(results), "passed": verdicts.count("PASS"),
                    "failed": len(results) - verdicts.count("PASS"), "composite_score": 0.5},
        "results": results, **extra,
    }  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def canary_project(root: Path, ids: list[str]) -> Path:
    """Canaries that the echo agent passes (their prompt holds the required keyword)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "coalmine.yaml").write_text(
        "agents:\n  QA Coordinator: {provider: echo}\n  echo: {provider: echo}\n", encoding="utf-8"
    )
    for spec_id in ids:
        spec = root / "bench" / "canaries" / "qa" / f"{spec_id}.yaml"
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_text(
            f"id: {spec_id}\nphase: qa\ntitle: {spec_id}\nprompt: find the injection\n"
            "expected:\n  graders:\n    - {type: keyword, config: {required: [injection]}}\n",
            encoding="utf-8",
        )
    return root


def eval_suite(root: Path, name: str = "greet") -> None:
    (root / "harness" / "evals").mkdir(parents=True, exist_ok=True)
    graders = [{"type": "contains", "config": {"value": "hi"}}]
    line = {"id": "a", "prompt": "echo hi", "agent": "echo", "graders": graders}
    (root / "harness" / "evals" / f"{name}.jsonl").write_text(json.dumps(line) + "\n")


def stored_runs(root: Path) -> list[tuple[str, str, str | None]]:
    """``(id, kind, label)`` of every stored run, newest first."""
    store = Store.open(root / ".coalmine" / "coalmine.db")
    try:
        return [(r.id, r.kind, r.label) for r in store.list_runs(limit=100)]
    finally:
        store.close()


def cli(root: Path, *args: str) -> tuple[int, str]:
    return run_main(*args, "--root", str(root))


# -- runs import: once per run --------------------------------------------------------------


def test_importing_a_file_again_or_a_copy_of_it_keeps_one_run(tmp_path: Path) -> None:
    root = canary_project(tmp_path / "proj", [])
    first = result_file(tmp_path / "files" / "canary-run-2026-04-13.json", ["PASS", "FAIL"])
    code, out = cli(root, "runs", "import", str(first))
    assert code == 0, out
    [(run_id, _, label)] = stored_runs(root)
    assert label == "canary-run-2026-04-13" and f"imported as {run_id}" in out

    copy = tmp_path / "elsewhere" / "copy.json"
    copy.parent.mkdir()
    shutil.copyfile(first, copy)
    # the same run, pretty-printed another way, is the same content too
    squeezed = tmp_path / "squeezed.json"
    squeezed.write_text(json.dumps(json.loads(first.read_text()), separators=(",", ":")))
    code, out = cli(root, "runs", "import", str(first), str(copy), str(squeezed))
    assert code == 0, out
    assert out.count(f"already in the store as {run_id}") == 3
    assert "imported as" not in out
    assert stored_runs(root) == [(run_id, "canary", "canary-run-2026-04-13")]
    code, out = cli(root, "runs", "show", "canary-run-2026-04-13")
    assert code == 0, out  # the label names one run


def test_a_file_of_a_stored_run_with_other_content_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    root = canary_project(tmp_path / "proj", [])
    first = result_file(tmp_path / "a" / "canary-run-2026-04-13.json", ["PASS", "FAIL"])
    assert cli(root, "runs", "import", str(first))[0] == 0
    [(run_id, _, _)] = stored_runs(root)
    edited = result_file(tmp_path / "b" / "canary-run-2026-04-13.json", ["PASS", "PASS"])
    code, out = cli(root, "runs", "import", str(edited))
    assert code == 2
    assert str(edited) in out and run_id in out and str(first) in out
    assert "Traceback" not in out
    assert len(stored_runs(root)) == 1


def test_the_result_file_of_a_run_recorded_here_is_already_there(tmp_path: Path) -> None:
    root = canary_project(tmp_path / "proj", ["qa-001-a", "qa-002-b"])
    assert cli(root, "canary", "run", "--display", "none")[0] == 0
    [(run_id, _, label)] = stored_runs(root)
    [written] = (root / "bench" / "results").glob("*.json")
    code, out = cli(root, "runs", "import", str(written))
    assert code == 0, out
    assert f"already in the store as {run_id}" in out
    assert len(stored_runs(root)) == 1
    # the same file edited by hand is not that run any more
    data = json.loads(written.read_text())
    data["results"][0]["verdict"] = "FAIL"
    written.write_text(json.dumps(data))
    code, out = cli(root, "runs", "import", str(written))
    assert code == 2 and run_id in out and "qa-001-a" in out
    assert len(stored_runs(root)) == 1


def test_a_bad_file_is_reported_and_the_others_still_import(tmp_path: Path) -> None:
    root = canary_project(tmp_path / "proj", [])
    good = result_file(tmp_path / "canary-run-2026-04-13.json", ["PASS"])
    broken = tmp_path / "broken.json"
    broken.write_text('{"run_id": ')
    missing = tmp_path / "missing.json"
    code, out = cli(root, "runs", "import", str(broken), str(missing), str(good))
    assert code == 2
    assert f"{broken} is not a readable canary result file" in out
    assert str(missing) in out
    assert "Traceback" not in out
    assert [label for _, _, label in stored_runs(root)] == ["canary-run-2026-04-13"]


def test_an_eval_run_record_is_not_imported_as_a_canary_run(tmp_path: Path) -> None:
    root = canary_project(tmp_path / "proj", [])
    eval_suite(root)
    assert cli(root, "eval", "run", "--display", "none")[0] == 0
    record = tmp_path / "eval-record.json"
    code, out = cli(root, "report", "latest", "--format", "json", "--out", str(record))
    assert code == 0, out
    code, out = cli(root, "runs", "import", str(record))
    assert code == 2 and "eval run" in out
    assert [kind for _, kind, _ in stored_runs(root)] == ["eval"]


def test_an_imported_old_run_is_not_latest(tmp_path: Path) -> None:
    root = canary_project(tmp_path / "proj", ["qa-000-x", "qa-001-x"])
    assert cli(root, "canary", "run", "--display", "none")[0] == 0
    [(local, _, _)] = stored_runs(root)
    old = result_file(
        tmp_path / "canary-run-2025-01-02.json", ["PASS", "FAIL"], timestamp="2025-01-02T08:00:00Z"
    )
    code, out = cli(root, "runs", "import", str(old))
    assert code == 0, out
    runs = stored_runs(root)
    assert [r[0] for r in runs][0] == local  # the list is by start time: the old run last
    assert runs[-1][2] == "canary-run-2025-01-02"
    code, out = cli(root, "runs", "show", "latest", "--format", "json")
    assert json.loads(out)["store_run_id"] == local
    # previous is the run that started before latest: the old one, where qa-001-x failed
    code, out = cli(root, "compare", "previous", "latest")
    assert code == 0, out
    assert "- qa-001-x: FAIL → PASS" in out


def test_a_canary_run_compares_with_the_run_that_started_before_it(tmp_path: Path) -> None:
    root = canary_project(tmp_path / "proj", ["qa-000-x", "qa-001-x"])
    old = result_file(
        tmp_path / "canary-run-2025-01-02.json", ["PASS", "FAIL"], timestamp="2025-01-02T08:00:00Z"
    )
    assert cli(root, "canary", "run", "--display", "none")[0] == 0
    assert cli(root, "runs", "import", str(old))[0] == 0  # imported after, started before
    code, out = cli(root, "canary", "run", "--display", "none", "--baseline", "latest")
    assert code == 0, out
    # the baseline is the first local run (both pass), not the imported one (qa-001-x failed)
    assert "No case changed between PASS and not-PASS over 2 shared cases." in out


# -- compare: latest and previous of one kind ----------------------------------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A canary run, then an eval run: the newest run of all is the eval run."""
    root = canary_project(tmp_path / "proj", ["qa-000-x", "qa-001-x"])
    eval_suite(root)
    assert cli(root, "canary", "run", "--display", "none")[0] == 0
    assert cli(root, "eval", "run", "--display", "none")[0] == 0
    return root


def test_latest_is_the_latest_run_of_the_other_runs_kind(mixed: Path, tmp_path: Path) -> None:
    old = result_file(tmp_path / "canary-run-2025-01-02.json", ["PASS", "FAIL"],
                      timestamp="2025-01-02T08:00:00Z")  # fmt: skip
    assert cli(mixed, "runs", "import", str(old))[0] == 0
    code, out = cli(mixed, "compare", "canary-run-2025-01-02", "latest")
    assert code == 0, out  # the latest canary run: qa-001-x was fixed
    assert "- qa-001-x: FAIL → PASS" in out
    assert "over 2 shared cases" in out or "2 comparable cases" in out
    code, out = cli(mixed, "compare", "previous", "latest", "--kind", "canary")
    assert code == 0 and "- qa-001-x: FAIL → PASS" in out
    code, out = cli(mixed, "report", "latest", "--baseline", "previous", "--kind", "canary")
    assert code == 0 and "qa-001-x" in out


def test_comparing_runs_of_two_kinds_is_a_usage_error(mixed: Path) -> None:
    [(eval_id, eval_kind, _), (canary_id, canary_kind, _)] = stored_runs(mixed)
    assert (eval_kind, canary_kind) == ("eval", "canary")
    code, out = cli(mixed, "compare", canary_id, eval_id)
    assert code == 2
    assert "canary run" in out and "eval run" in out and "Traceback" not in out
    code, out = cli(mixed, "report", eval_id, "--baseline", canary_id)
    assert code == 2 and "canary run" in out


def test_previous_with_no_earlier_run_of_the_kind_is_a_usage_error(mixed: Path) -> None:
    [(eval_id, _, _), _] = stored_runs(mixed)
    code, out = cli(mixed, "compare", "previous", eval_id)
    assert code == 2 and "no finished eval run started before" in out


def test_runs_with_no_case_in_common_do_not_compare(tmp_path: Path) -> None:
    root = canary_project(tmp_path / "proj", [])
    a = result_file(tmp_path / "canary-run-2026-04-13.json", ["PASS", "PASS"])
    b = result_file(
        tmp_path / "canary-run-2026-04-14.json", ["PASS"], timestamp="2026-04-14T07:30:00Z"
    )
    data = json.loads(b.read_text())
    data["results"][0]["id"] = "dev-001-y"
    b.write_text(json.dumps(data))
    code, out = cli(root, "compare", str(a), str(b))
    assert code == 2
    assert "no case in common" in out and "qa-000-x" in out and "dev-001-y" in out


def test_a_canary_baseline_with_no_case_in_common_stops_before_any_call(
    tmp_path: Path,
) -> None:
    root = canary_project(tmp_path / "proj", ["qa-000-x"])
    other = result_file(tmp_path / "canary-run-2026-04-13.json", ["PASS"])
    data = json.loads(other.read_text())
    data["results"][0]["id"] = "dev-001-y"
    other.write_text(json.dumps(data))
    code, out = cli(root, "canary", "run", "--display", "none", "--baseline", str(other))
    assert code == 2 and "no case in common" in out
    assert stored_runs(root) == []  # nothing ran


def test_an_imported_interrupted_run_is_not_resumed(tmp_path: Path) -> None:
    root = canary_project(tmp_path / "proj", ["qa-000-x", "qa-001-x"])
    cut = result_file(tmp_path / "canary-run-2026-04-13.json", ["PASS"], interrupted=True)
    assert cli(root, "runs", "import", str(cut))[0] == 0
    [(imported, _, _)] = stored_runs(root)
    code, out = cli(root, "canary", "run", "--resume", "--display", "none")
    assert code == 2 and "no unfinished canary run" in out
    code, out = cli(root, "canary", "run", "--resume", imported, "--display", "none")
    assert code == 2 and "imported" in out
    assert len(stored_runs(root)) == 1


def test_report_latest_of_a_kind_is_that_kind_s_latest_run_or_a_usage_error(
    mixed: Path, tmp_path: Path
) -> None:
    code, out = cli(mixed, "report", "latest", "--kind", "canary", "--format", "json")
    assert code == 0 and '"qa-001-x"' in out  # the canary run, though the eval run is newer
    code, out = cli(mixed, "report", "latest", "--kind", "eval", "--format", "json")
    assert code == 0 and '"kind": "eval"' in out
    only = canary_project(tmp_path / "only", ["qa-000-x"])
    assert cli(only, "canary", "run", "--display", "none")[0] == 0
    code, out = cli(only, "report", "latest", "--kind", "eval")
    assert code == 2 and "no finished eval run" in out  # never the canary run instead
    [result] = sorted((only / "bench" / "results").glob("*.json"))
    code, out = cli(only, "report", str(result), "--kind", "eval")
    assert code == 2 and "holds a canary run, and --kind asks for: eval" in out
