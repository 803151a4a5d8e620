"""``coalmine export promptfoo``: configs that promptfoo runs with the same results.

Two ways round, each compared row by row:

- an imported suite exported back (to another folder, so its ``file://`` paths are rewritten)
  gives promptfoo's captured verdicts for that column when the exported config is run;
- a coalmine suite (prompts with template characters and trailing newlines, graders with
  promptfoo equivalents, the case's ``expected``, weights, thresholds) exported and run as a
  promptfoo config passes and fails exactly the cases ``coalmine eval run`` passes and fails.

The exported configs are run by ``eval run --promptfoo`` here and, with ``COALMINE_PROMPTFOO``,
by promptfoo itself.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from coalmine.promptfoo.node import node_available
from coalmine.store.evals import iter_attempts
from coalmine.store.runs import Store
from tests.helpers.cli import run_main
from tests.promptfoo.test_run import (
    CAPTURED,
    NEEDS_NODE,
    PROMPTFOO,
    components,
    copied_into,
    promptfoo_rows,
    run,
    run_real_promptfoo,
)

pytestmark = pytest.mark.usefixtures("fast_python")


def export(project: Path, suite: str, out: Path) -> tuple[int, str]:
    return run_main("export", "promptfoo", suite, "--root", str(project), "--out", str(out))


@pytest.mark.parametrize(
    ("config", "captured", "node"),
    CAPTURED,
    ids=[f"{c.parent.name}/{c.stem}" for c, _, _ in CAPTURED],
)
def test_an_imported_suite_exported_back_gives_promptfoos_verdicts(
    config: Path, captured: Path, node: bool, tmp_path: Path
) -> None:
    if node and node_available() is not None:
        pytest.skip("needs Node.js >= 18")
    project = tmp_path / "project"
    config = copied_into(config, project)
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code in (0, 1), output
    expected = promptfoo_rows(captured)
    for suite in sorted((project / "harness" / "evals").glob("*.yaml")):
        meta = yaml.safe_load(suite.read_text(encoding="utf-8"))
        column = meta["promptfoo"]["prompt_idx"]
        lines = [json.loads(x) for x in suite.with_suffix(".jsonl").read_text().splitlines()]
        out = tmp_path / "exported" / suite.stem / "promptfooconfig.yaml"
        code, output = export(project, suite.stem, out)
        assert code == 0, output
        ours = run(out, tmp_path)
        assert len(ours.rows) == len(lines)
        for row, line in zip(ours.rows, lines, strict=True):
            theirs = expected[(line["testIdx"], column)]
            outcome, where = row.result.outcome, (suite.stem, line["id"])
            assert outcome.success == theirs["success"], where
            assert int(outcome.failure_reason) == theirs["failureReason"], where
            if "score" in theirs:
                assert math.isclose(outcome.score, theirs["score"], abs_tol=1e-9), where
            wanted = components(theirs)
            if wanted is not None and outcome.grading is not None:
                assert [c.passed for c in outcome.grading.component_results] == wanted, where


NATIVE_SUITE = [
    # (id, prompt, graders, expected, threshold)
    ("plain", "Hello World", [{"type": "contains", "config": {"value": "World"}}], None, None),
    ("braces", "Keep {{ name }} and {% raw %}", [{"type": "contains", "config": {"value": "{{ name }}"}}], None, None),
    ("newline", "two lines\n", [{"type": "equals"}], "two lines\n", None),
    ("expected", "abc", [{"type": "equals"}], "abd", None),
    ("levenshtein", "kitten", [{"type": "levenshtein", "config": {"value": "sitting", "threshold": 3}}], None, None),
    ("not", "quiet", [{"type": "not-contains", "config": {"value": "loud"}}], None, None),
    ("weights", "alpha", [
        {"type": "contains", "weight": 3, "config": {"value": "alpha"}},
        {"type": "contains", "weight": 1, "config": {"value": "beta"}},
    ], None, 0.7),
    ("below", "alpha", [
        {"type": "contains", "weight": 1, "config": {"value": "alpha"}},
        {"type": "contains", "weight": 1, "config": {"value": "beta"}},
    ], None, 0.7),
    ("json", '{"a": 1}', [{"type": "is-json"}], None, None),
    ("regex", "order 66", [{"type": "regex", "config": {"value": "\\d+$"}}], None, None),
    ("regex-eol", "done\n", [{"type": "regex", "config": {"value": "done$"}}], None, None),
    ("any", "red car", [{"type": "icontains-any", "config": {"value": ["BLUE", "RED"]}}], None, None),
    ("kept-out", "hello", [
        {"type": "contains", "config": {"value": "hello"}},
        {"type": "keyword", "config": {"required": ["hello"]}},
    ], None, None),
]  # fmt: skip


def native_project(root: Path) -> Path:
    (root / "harness" / "evals").mkdir(parents=True)
    (root / "coalmine.yaml").write_text("agents:\n  echo:\n    provider: echo\n", encoding="utf-8")
    lines = []
    for case_id, prompt, graders, expected, threshold in NATIVE_SUITE:
        line: dict[str, Any] = {"id": case_id, "prompt": prompt, "graders": graders}
        if expected is not None:
            line["expected"] = expected
        if threshold is not None:
            line["threshold"] = threshold
        lines.append(json.dumps(line))
    suite = root / "harness" / "evals" / "native.jsonl"
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_a_coalmine_suite_exports_to_a_config_with_the_same_verdicts(tmp_path: Path) -> None:
    project = native_project(tmp_path / "project")
    code, output = run_main("eval", "run", "--root", str(project), "--display", "plain")
    assert code in (0, 1), output
    store = Store.open(project / ".coalmine" / "coalmine.db")
    try:
        run_id = store.list_runs(kind="eval", limit=1)[0].id
        ours = {a.case_id: a.status == "pass" for a in iter_attempts(store, run_id, "native")}
    finally:
        store.close()
    out = tmp_path / "pf" / "promptfooconfig.yaml"
    code, output = export(project, "native", out)
    assert code == 1  # keyword has no promptfoo equivalent
    assert "not exportable: grader keyword" in output
    config = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert config["providers"] == ["echo"]
    assert config["tests"][2]["vars"]["prompt"] == ""
    assert config["tests"][2]["options"]["prefix"] == "{% raw %}two lines\n{% endraw %}"
    done = run(out, tmp_path)
    theirs = {r.row.test.description: r.result.outcome.success for r in done.rows}
    assert theirs == ours
    assert not theirs["expected"] and not theirs["below"] and theirs["weights"]
    rendered = {r.row.test.description: r.result.rendered_prompt for r in done.rows}
    assert rendered["braces"] == "Keep {{ name }} and {% raw %}"
    assert rendered["newline"] == "two lines\n"


def test_exporting_an_unknown_suite_names_the_ones_there(tmp_path: Path) -> None:
    project = native_project(tmp_path / "project")
    code, output = export(project, "nope", tmp_path / "x.yaml")
    assert code == 2 and "native" in output


@NEEDS_NODE
def test_live_promptfoo_runs_an_exported_coalmine_suite_with_the_same_verdicts(
    promptfoo: str, tmp_path: Path
) -> None:
    project = native_project(tmp_path / "project")
    out = tmp_path / "pf" / "promptfooconfig.yaml"
    export(project, "native", out)
    ours = {r.row.test.description: r.result.outcome.success for r in run(out, tmp_path).rows}
    document = run_real_promptfoo(promptfoo, out, tmp_path)
    theirs = {r["testCase"]["description"]: r["success"] for r in document["results"]["results"]}
    assert theirs == ours


@NEEDS_NODE
@pytest.mark.parametrize(
    "config",
    [PROMPTFOO / "scoring" / "scoring.yaml", PROMPTFOO / "report" / "report_a.yaml"],
    ids=lambda c: c.stem,
)
def test_live_promptfoo_runs_exported_imported_suites_as_it_ran_the_original(
    config: Path, promptfoo: str, tmp_path: Path
) -> None:
    (tmp_path / "original").mkdir()
    original = run_real_promptfoo(promptfoo, config, tmp_path / "original", reuse=True)
    expected = {(r["testIdx"], r["promptIdx"]): r for r in original["results"]["results"]}
    project = tmp_path / "project"
    run_main("import", "promptfoo", str(config), "--out", str(project))
    for suite in sorted((project / "harness" / "evals").glob("*.yaml")):
        column = yaml.safe_load(suite.read_text(encoding="utf-8"))["promptfoo"]["prompt_idx"]
        lines = [json.loads(x) for x in suite.with_suffix(".jsonl").read_text().splitlines()]
        out = tmp_path / "exported" / suite.stem / "promptfooconfig.yaml"
        export(project, suite.stem, out)
        (tmp_path / suite.stem).mkdir()
        document = run_real_promptfoo(promptfoo, out, tmp_path / suite.stem)
        rows = sorted(document["results"]["results"], key=lambda r: r["testIdx"])
        assert len(rows) == len(lines)
        for row, line in zip(rows, lines, strict=True):
            theirs = expected[(line["testIdx"], column)]
            where = (suite.stem, line["id"])
            assert (row["success"], row["failureReason"]) == (
                theirs["success"],
                theirs["failureReason"],
            ), where
            assert math.isclose(row["score"], theirs["score"], abs_tol=1e-9), where


def test_a_secret_of_the_agent_is_never_written_into_the_exported_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_KEY", "gw-secret-key-8080")
    project = tmp_path / "project"
    (project / "harness" / "evals").mkdir(parents=True)
    (project / "coalmine.yaml").write_text(
        "agents:\n  gpt:\n    provider: openai\n    model: gpt-4o-mini\n"
        '    base_url: "https://gateway.example/v1?key=${GATEWAY_KEY}"\n',
        encoding="utf-8",
    )
    line = {"id": "a", "prompt": "hi", "expected": "hi", "graders": [{"type": "equals"}]}
    (project / "harness" / "evals" / "s.jsonl").write_text(json.dumps(line) + "\n")
    out = tmp_path / "pf" / "promptfooconfig.yaml"
    code, output = export(project, "s", out)
    text = out.read_text(encoding="utf-8")
    assert "gw-secret-key-8080" not in text + output
    assert yaml.safe_load(text)["providers"][0]["config"]["apiBaseUrl"] == (
        "https://gateway.example/v1?key=***"
    )
    assert code == 1 and "agent gpt: its secrets are written as ***: fill them in" in output


def test_code_prompts_and_filters_go_back_with_their_paths_for_the_new_folder(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    source = project / "promptfoo"
    (source / "bin").mkdir(parents=True)
    (source / "code.py").write_text("def make(context):\n    return 'Made {{ n | twice }}'\n")
    (source / "twice.js").write_text("module.exports = (v) => `${v}${v}`;\n")
    (source / "bin" / "gen.py").write_text(
        "import json, sys, os\nprint('Exec', os.path.basename(os.getcwd()), json.loads(sys.argv[-1])['vars']['n'])\n"
    )
    config = source / "promptfooconfig.yaml"
    config.write_text(
        "nunjucksFilters: {twice: twice.js}\n"
        "prompts:\n"
        "  - file://code.py:make\n"
        "  - id: exec:python3 bin/gen.py\n"
        "    label: exec prompt\n"
        "    config: {k: 1}\n"
        "providers: [echo]\n"
        "tests: [{vars: {n: ab}}]\n"
    )
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code == 0, output
    exported, rendered = {}, set()
    for suite in sorted((project / "harness" / "evals").glob("*.yaml")):
        out = tmp_path / "elsewhere" / suite.stem / "promptfooconfig.yaml"
        code, output = export(project, suite.stem, out)
        assert code == 0, output
        exported[suite.stem] = yaml.safe_load(out.read_text(encoding="utf-8"))
        assert exported[suite.stem]["nunjucksFilters"] == {
            "twice": "../../project/promptfoo/twice.js"
        }
        [row] = run(out, tmp_path).rows
        rendered.add(row.result.rendered_prompt)
    assert rendered == {"Made abab", "Exec promptfoo ab"}  # the filter, the original folder
    prompts = sorted((c["prompts"][0] for c in exported.values()), key=lambda p: p["label"])
    # the command stays as promptfoo read it, and runs in the original folder (its basePath)
    assert prompts == [
        {"raw": "file://../../project/promptfoo/code.py:make", "label": "code.py:make"},
        {
            "raw": "exec:python3 bin/gen.py",
            "label": "exec prompt",
            "config": {"k": 1, "basePath": "../../project/promptfoo"},
        },
    ]
