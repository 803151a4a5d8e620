"""``coalmine eval run --promptfoo CONFIG``: the table, the JSON rows, promptfoo's result file."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from coalmine.cli.main import main

FIXTURES = Path(__file__).parents[1] / "promptfoo" / "fixtures"
REPORT = FIXTURES / "report"

# What differs between our --format promptfoo document and promptfoo's own for report_a, and why:
ALLOWED = {
    # made per run: ids, clocks, durations
    ".evalId",
    ".results.timestamp",
    ".metadata.exportedAt",
    ".metadata.evaluationCreatedAt",
    ".metadata.platform",
    ".metadata.arch",
    ".results.results[].id",  # the captured file had its random ids removed
    ".results.results[].latencyMs",
    ".results.prompts[].metrics.totalLatencyMs",
    ".results.stats.durationMs",
    ".results.stats.evaluationDurationMs",
    # coalmine's graders word their failures their own way
    ".results.results[].error",
    ".results.results[].gradingResult.reason",
    ".results.results[].gradingResult.componentResults[].reason",
    ".results.results[].gradingResult.componentResults[].componentResults[].reason",
    # coalmine shows no progress bar
    ".runtimeOptions.showProgressBar",
}


STORED: set[str] = set()
"""What else differs when the document is built from the store after ``import promptfoo``."""


def differences(ours: Any, theirs: Any, path: str = "") -> set[str]:
    """The paths (list indices as ``[]``) where the two documents differ."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found: set[str] = set()
        for key in set(ours) | set(theirs):
            if key not in ours or key not in theirs:
                found.add(f"{path}.{key}")
            else:
                found |= differences(ours[key], theirs[key], f"{path}.{key}")
        return found
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return {path}
        return set().union(
            *(differences(a, b, f"{path}[]") for a, b in zip(ours, theirs, strict=True))
        )
    if isinstance(ours, int | float) and isinstance(theirs, int | float):
        return set() if abs(ours - theirs) < 1e-9 else {path}
    return set() if ours == theirs else {path}


def coalmine(*args: str, root: Path) -> int:
    return main(["eval", "run", "--display", "none", "--root", str(root), *args])


def test_the_table_has_a_line_per_row_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = coalmine("--promptfoo", str(REPORT / "report_b.yaml"), root=tmp_path)
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert re.split(r"\s{2,}", out[0]) == [
        "TEST",
        "PROMPT",
        "PROVIDER",
        "RESULT",
        "SCORE",
        "REASON",
    ]
    assert re.split(r"\s{2,}", out[5]) == [
        "2",
        "0",
        "echo",
        "ERROR",
        "0.0000",
        "Error: Transform failed ([inline transform]: (() => { throw new Error('boom') })()): boom",
    ]
    assert re.split(r"\s{2,}", out[9]) == ["4", "0", "echo", "PASS", "1.0000"]
    assert out[-1] == f"10 rows: 4 passed, 0 failed, 6 errored ({REPORT / 'report_b.yaml'})"


def test_exit_0_when_every_row_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert coalmine("--promptfoo", str(REPORT / "report_d.yaml"), root=tmp_path) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("1 row: 1 passed")


def test_a_broken_config_exits_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: [hi]\nproviders: [echo]\ntests:\n  - assert:\n      - value: x\n")
    assert coalmine("--promptfoo", str(config), root=tmp_path) == 2
    err = capsys.readouterr().err
    assert f"{config}:5: invalid assertion" in err


def test_json_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = coalmine("--promptfoo", str(REPORT / "report_c.yaml"), "--format", "json", root=tmp_path)
    rows = json.loads(capsys.readouterr().out)
    assert code == 1
    no_output = next(r for r in rows if (r["testIdx"], r["promptIdx"]) == (2, 1))
    assert no_output | {"output": None} == {
        "testIdx": 2,
        "promptIdx": 1,
        "provider": "py",
        "prompt": "Q: {{q}}",
        "description": None,
        "status": "fail",
        "success": False,
        "score": 0.0,
        "failureReason": 0,
        "error": "No output",
        "namedScores": {},
        "assertions": [],
        "output": None,
    }


def test_the_promptfoo_document_matches_promptfoos_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(REPORT / "report_a.yaml", tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ("--promptfoo", "report_a.yaml", "-c", "1", "--format", "promptfoo")
    assert coalmine(*args, "-o", "report_a.out.json", root=tmp_path) == 1
    assert capsys.readouterr().out == ""  # the document went to the file
    ours = json.loads((tmp_path / "report_a.out.json").read_text(encoding="utf-8"))
    theirs = json.loads((REPORT / "report_a.expected.json").read_text(encoding="utf-8"))
    assert differences(ours, theirs) <= ALLOWED
    assert ours["results"]["stats"] | {"durationMs": 0, "evaluationDurationMs": 0} == theirs[
        "results"
    ]["stats"] | {"durationMs": 0, "evaluationDurationMs": 0}


def test_the_promptfoo_document_goes_to_stdout_without_o(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--promptfoo", str(REPORT / "report_d.yaml"), "--format", "promptfoo")
    assert coalmine(*args, root=tmp_path) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["results"]["stats"]["successes"] == 1
    assert "outputPath" not in document["config"]


def test_o_writes_the_document_beside_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    assert (
        coalmine("--promptfoo", str(REPORT / "report_d.yaml"), "-o", str(out), root=tmp_path) == 0
    )
    assert capsys.readouterr().out.startswith("TEST")
    assert json.loads(out.read_text(encoding="utf-8"))["config"]["outputPath"] == [str(out)]


@pytest.mark.parametrize(
    "extra",
    [("some-suite",), ("--limit", "2"), ("--resume",), ("--repeats", "2"), ("--cache",)],
)
def test_options_of_suite_runs_are_refused(
    extra: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert coalmine("--promptfoo", str(REPORT / "report_d.yaml"), *extra, root=tmp_path) == 2
    assert "--promptfoo runs the whole config: drop" in capsys.readouterr().err


def test_help_explains_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "promptfoo exits 100 there" in text
    assert "nothing is stored and it cannot be resumed" in text


def test_imported_suites_give_promptfoos_document_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(REPORT / "report_a.yaml", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["import", "promptfoo", "report_a.yaml", "--out", "project"]) == 0
    capsys.readouterr()
    args = ("-c", "1", "--format", "promptfoo", "-o", "report_a.out.json")
    assert coalmine(*args, root=tmp_path / "project") == 1
    assert capsys.readouterr().out == ""  # the document went to the file
    ours = json.loads((tmp_path / "report_a.out.json").read_text(encoding="utf-8"))
    theirs = json.loads((REPORT / "report_a.expected.json").read_text(encoding="utf-8"))
    assert differences(ours, theirs) <= ALLOWED | STORED


def test_format_promptfoo_needs_imported_suites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "harness" / "evals").mkdir(parents=True)
    (tmp_path / "coalmine.yaml").write_text("agents:\n  echo: {provider: echo}\n")
    line = {"id": "a", "prompt": "hi", "graders": [{"type": "contains", "config": {"value": "hi"}}]}
    (tmp_path / "harness" / "evals" / "mine.jsonl").write_text(json.dumps(line) + "\n")
    assert coalmine("--format", "promptfoo", root=tmp_path) == 2
    err = capsys.readouterr().err
    assert "go with --promptfoo CONFIG, or with suites imported" in err and "mine is not" in err


def test_a_python_providers_cost_and_tokens_reach_the_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PROMPTFOO_PYTHON", sys.executable)
    config = REPORT / "report_c.yaml"
    args = ("--promptfoo", str(config), "--format", "promptfoo")
    assert coalmine(*args, root=tmp_path) == 1
    ours = json.loads(capsys.readouterr().out)
    theirs = json.loads((REPORT / "report_c.expected.json").read_text(encoding="utf-8"))

    def costs(document: dict[str, Any]) -> list[tuple[Any, ...]]:
        rows = sorted(document["results"]["results"], key=lambda r: (r["testIdx"], r["promptIdx"]))
        # a provider's returned error keeps its tokens in promptfoo, not here (a known difference)
        return [
            (
                r["testIdx"],
                r["promptIdx"],
                r["cost"],
                None if r.get("error") else r.get("tokenUsage"),
            )
            for r in rows
        ]

    assert costs(ours) == costs(theirs)
    # the provider reported 0.25 on two rows: its column's metrics add them up
    assert ours["results"]["prompts"][1]["metrics"]["cost"] == 0.5


def test_a_test_generator_that_raises_exits_2_naming_the_config_line_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PROMPTFOO_PYTHON", sys.executable)
    (tmp_path / "gen.py").write_text("def make():\n    raise ValueError('no tests today')\n")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: [hi]\nproviders: [echo]\ntests:\n  - file://gen.py:make\n")
    assert coalmine("--promptfoo", str(config), root=tmp_path) == 2
    err = capsys.readouterr().err
    assert f"{config}:4: tests from file://gen.py:make: Error running Python script" in err
    assert "ValueError: no tests today" in err and "Traceback" not in err


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_a_nunjucks_filter_that_does_not_load_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.js").write_text("module.exports = ;\n")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: [hi]\nproviders: [echo]\nnunjucksFilters:\n  bad: bad.js\n")
    assert coalmine("--promptfoo", str(config), root=tmp_path) == 2
    err = capsys.readouterr().err
    assert f"error: {config}: nunjucksFilters.bad: bad.js does not load: SyntaxError" in err


def test_format_promptfoo_names_the_imported_suites_that_could_not_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(REPORT / "report_d.yaml", tmp_path / "promptfooconfig.yaml")
    assert (
        main(
            ["import", "promptfoo", str(tmp_path / "promptfooconfig.yaml"), "--out", str(tmp_path)]
        )
        == 0
    )
    [suite] = (tmp_path / "harness" / "evals").glob("*.yaml")
    suite.write_text(suite.read_text().replace("prompt_idx: 0", "prompt_idx: -1"))
    capsys.readouterr()
    assert coalmine("--format", "promptfoo", root=tmp_path) == 2
    err = capsys.readouterr().err
    assert "(no suite could be read); not read:" in err
    assert f"{suite}:" in err and "promptfoo.prompt_idx" in err
