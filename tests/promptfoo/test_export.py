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
import re
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


SCRIPTS = {
    "javascript": (
        "agent.js",
        "module.exports = class {\n  constructor(o) { this.o = o; }\n  id() { return this.o.id; }\n"
        "  async callApi(p) { return { output: this.o.config.prefix + p }; }\n};\n",
    ),
    "python": (
        "agent.py",
        "def call_api(prompt, options, context):\n"
        "    return {'output': options['config']['prefix'] + prompt}\n",
    ),
}


@NEEDS_NODE
@pytest.mark.parametrize("provider", sorted(SCRIPTS))
def test_a_script_agent_exports_as_its_file_with_its_options_as_the_config(
    tmp_path: Path, provider: str
) -> None:
    project = tmp_path / "project"
    (project / "harness" / "evals").mkdir(parents=True)
    name, code = SCRIPTS[provider]
    (project / name).write_text(code, encoding="utf-8")
    (project / "coalmine.yaml").write_text(
        f"agents:\n  bot:\n    provider: {provider}\n    convention: promptfoo\n"
        f"    file: {name}\n    options: {{config: {{prefix: 'A: ', basePath: .}}, env: {{K: v}}}}\n",
        encoding="utf-8",
    )
    lines = [{"id": "yes", "prompt": "hi", "graders": [
                 {"type": "contains", "config": {"value": "A: hi"}}]},
             {"id": "no", "prompt": "hi", "graders": [
                 {"type": "contains", "config": {"value": "B: hi"}}]}]  # fmt: skip
    (project / "harness" / "evals" / "s.jsonl").write_text(
        "\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8"
    )
    code_, output = run_main("eval", "run", "--root", str(project), "--display", "plain")
    assert code_ == 1, output
    out = tmp_path / "pf" / "promptfooconfig.yaml"
    code_, output = export(project, "s", out)
    assert code_ == 0, output
    config = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert config["providers"] == [
        {"id": f"file://../project/{name}", "label": "bot", "config": {"prefix": "A: "},
         "env": {"K": "v"}}
    ]  # fmt: skip
    done = run(out, tmp_path)
    assert [r.result.outcome.success for r in done.rows] == [True, False]


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


PARITY = PROMPTFOO / "parity"


def verdicts(rows: dict[tuple[int, int], Any]) -> dict[tuple[int, int], tuple[Any, ...]]:
    return {
        key: (
            r.success,
            int(r.failure_reason),
            round(r.score, 9),
            r.named_scores,
            r.grading and [c.passed for c in r.grading.component_results],
        )
        for key, r in rows.items()
    }


@NEEDS_NODE
@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["transforms", "scoring_functions", "components", "object_outputs"]
)
def test_configs_that_run_code_keep_their_verdicts_through_import_and_export(
    name: str, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    config = copied_into(PARITY / name / "promptfooconfig.yaml", project)
    direct = {
        (r.row.test_idx, r.row.prompt_idx): r.result.outcome for r in run(config, project).rows
    }
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code == 0, output  # nothing listed as unsupported
    code, output = run_main("eval", "run", "--root", str(project), "--display", "plain")
    assert code == 1, output
    store = Store.open(project / ".coalmine" / "coalmine.db")
    try:
        run_id = store.list_runs(kind="eval", limit=1)[0].id
        stored = {}
        for suite in sorted((project / "harness" / "evals").glob("*.yaml")):
            for attempt in iter_attempts(store, run_id, suite.stem):
                row = attempt.record["promptfoo"]
                stored[(row["testIdx"], row["promptIdx"])] = (
                    row["success"], row["failureReason"], round(row["score"], 9), row["namedScores"],
                    components(row) if "gradingResult" in row else None,
                )  # fmt: skip
    finally:
        store.close()
    assert stored == verdicts(direct)
    for suite in sorted((project / "harness" / "evals").glob("*.yaml")):
        column = yaml.safe_load(suite.read_text(encoding="utf-8"))["promptfoo"]["prompt_idx"]
        out = tmp_path / "exported" / suite.stem / "promptfooconfig.yaml"
        code, output = export(project, suite.stem, out)
        assert code == 0, output
        for ref in re.findall(r"file://([^\s'\":]+)", out.read_text(encoding="utf-8")):
            assert (out.parent / ref).is_file(), ref  # rewritten for the exported folder
        back = {(r.row.test_idx, column): r.result.outcome for r in run(out, tmp_path).rows}
        assert verdicts(back) == {k: v for k, v in verdicts(direct).items() if k[1] == column}


def imported_then_exported(config: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """``config`` imported into a project and its (single) suite exported; the exported data."""
    project = tmp_path / "project"
    config = copied_into(config, project)
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code in (0, 1), output
    suite = next((project / "harness" / "evals").glob("*.yaml")).stem
    out = tmp_path / "exported" / "promptfooconfig.yaml"
    code, output = export(project, suite, out)
    assert code == 0, output
    return project, yaml.safe_load(out.read_text(encoding="utf-8"))


def test_a_defaulttest_goes_back_as_it_came_and_out_of_each_test(tmp_path: Path) -> None:
    config = PARITY / "default_file" / "promptfooconfig.yaml"
    _, exported = imported_then_exported(config, tmp_path)
    assert exported["defaultTest"] == "file://../project/promptfoo/defaults.yaml"
    first = exported["tests"][0]
    # the defaults' greeting, assertions and prefix are the defaultTest's again, not the test's
    assert first == {
        "description": "Ada",
        "vars": {"name": "Ada"},
        "assert": [{"type": "contains", "value": "Ada"}],
    }
    overridden = exported["tests"][1]
    assert overridden["vars"] == {"name": "Bob", "greeting": "Hi"}
    assert exported["tests"][3]["options"] == {"prefix": "<< "}
    original = {(r.row.test_idx, r.row.prompt_idx): r for r in run(config, tmp_path).rows}
    again = run(tmp_path / "exported" / "promptfooconfig.yaml", tmp_path).rows
    assert [(r.result.outcome.success, r.result.outcome.score) for r in again] == [
        (original[(i, 0)].result.outcome.success, original[(i, 0)].result.outcome.score)
        for i in range(len(again))
    ]


def test_csv_tests_export_no_null_metric(tmp_path: Path) -> None:
    folder = tmp_path / "source"
    folder.mkdir()
    (folder / "promptfooconfig.yaml").write_text(
        "prompts: ['{{ word }}']\nproviders: [echo]\ntests: file://tests.csv\n", encoding="utf-8"
    )
    (folder / "tests.csv").write_text("word,__expected\nhi,contains:hi\n", encoding="utf-8")
    _, exported = imported_then_exported(folder / "promptfooconfig.yaml", tmp_path / "a")
    # no __metric column: promptfoo's metric is undefined, and it rejects a null one
    assert exported["tests"][0]["assert"] == [{"type": "contains", "value": "hi"}]
    config = PARITY / "csv_defaults" / "promptfooconfig.yaml"
    _, exported = imported_then_exported(config, tmp_path / "b")
    metrics = [a.get("metric", "unset") for t in exported["tests"] for a in t.get("assert", [])]
    assert None not in metrics
    # the row with a __metric cell keeps it on both its assertions, in each of the two tones
    assert metrics.count("byes") == 4


def test_a_line_edited_after_import_is_exported_whole_without_the_defaulttest(
    tmp_path: Path,
) -> None:
    project, _ = imported_then_exported(PARITY / "default_file" / "promptfooconfig.yaml", tmp_path)
    lines_file = next((project / "harness" / "evals").glob("*.jsonl"))
    lines = [json.loads(x) for x in lines_file.read_text(encoding="utf-8").splitlines()]
    lines[0]["assert"] = [{"type": "contains", "value": "Ada"}]  # the defaults' taken out
    lines_file.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "again" / "promptfooconfig.yaml"
    code, output = export(project, lines_file.stem, out)
    assert code == 0, output
    exported = yaml.safe_load(out.read_text(encoding="utf-8"))
    # merging the defaultTest in again would add its assertions back to the edited line
    assert "defaultTest" not in exported
    assert exported["tests"][0]["assert"] == [{"type": "contains", "value": "Ada"}]
    assert exported["tests"][1]["vars"] == {"greeting": "Hi", "name": "Bob"}


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


def path_like_prompts(tmp_path: Path) -> dict[str, Path]:
    """A config whose prompts promptfoo reads from files, imported; each suite exported."""
    project = tmp_path / "project"
    source = project / "promptfoo"
    source.mkdir(parents=True)
    (source / "prompts.txt").write_text(
        "Summarize {{ topic }} a/b\n---\nRate it 1*5\n---\nRead notes.txt\n---\nPlain {{ topic }}\n"
    )
    (source / "padded.j2").write_text(" padded\\path ")  # read whole: the spaces stay
    config = source / "promptfooconfig.yaml"
    config.write_text(
        "prompts:\n"
        "  - file://prompts.txt\n"
        "  - {raw: file://padded.j2, label: padded, config: {temperature: 0}}\n"
        "providers: [echo]\n"
        "tests: [{vars: {topic: tea}}]\n"
    )
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code == 0, output
    exported = {}
    for suite in sorted((project / "harness" / "evals").glob("*.yaml")):
        out = tmp_path / "exported" / suite.stem / "promptfooconfig.yaml"
        code, output = export(project, suite.stem, out)
        assert code == 0, output
        exported[suite.stem] = out
    return exported


def test_a_prompt_text_promptfoo_reads_as_a_path_goes_to_a_file_beside_the_config(
    tmp_path: Path,
) -> None:
    prompts, files, rendered = [], {}, []
    for suite, out in path_like_prompts(tmp_path).items():
        [prompt] = yaml.safe_load(out.read_text(encoding="utf-8"))["prompts"]
        prompts.append(prompt)
        sidecar = out.parent / f"{suite}.prompt.j2"
        if sidecar.exists():
            files[prompt["label"]] = sidecar.read_bytes().decode("utf-8")
            assert prompt["raw"] == f"file://{suite}.prompt.j2"
        [row] = run(out, tmp_path).rows
        rendered.append(row.result.rendered_prompt)
    # each text promptfoo would take for a path (a / \ or *, a "." 3 or 4 from the end) is in
    # its file exactly, under its label and with its config; the plain one stays inline
    assert files == {
        "prompts.txt: Summarize {{ topic }} a/b": "Summarize {{ topic }} a/b",
        "prompts.txt: Rate it 1*5": "Rate it 1*5",
        "prompts.txt: Read notes.txt": "Read notes.txt",
        "padded": " padded\\path ",
    }
    assert {"raw": "Plain {{ topic }}", "label": "prompts.txt: Plain {{ topic }}"} in prompts
    [padded] = [p for p in prompts if p["label"] == "padded"]
    assert padded["config"] == {"temperature": 0}
    assert sorted(rendered) == sorted(
        [" padded\\path ", "Plain tea", "Rate it 1*5", "Read notes.txt", "Summarize tea a/b"]
    )


def test_live_promptfoo_reads_an_exported_prompt_file_whole(promptfoo: str, tmp_path: Path) -> None:
    [out] = [o for s, o in path_like_prompts(tmp_path).items() if s.endswith("padded")]
    [row] = run_real_promptfoo(promptfoo, out, tmp_path)["results"]["results"]
    assert row["prompt"]["raw"] == row["response"]["output"] == " padded\\path "
    assert (row["prompt"]["label"], row["prompt"]["config"]) == ("padded", {"temperature": 0})


def test_a_stored_output_is_exported_with_a_note_that_the_config_holds_one_column(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "source"
    folder.mkdir()
    (folder / "promptfooconfig.yaml").write_text(
        "prompts: ['{{ q }} {{ prev }}']\nproviders: [echo]\ntests:\n"
        "  - vars: {q: a}\n    options: {storeOutputAs: prev}\n  - vars: {q: b}\n",
        encoding="utf-8",
    )
    project = tmp_path / "project"
    config = copied_into(folder / "promptfooconfig.yaml", project)
    code, output = run_main("import", "promptfoo", str(config), "--out", str(project))
    assert code in (0, 1), output
    assert "options.storeOutputAs 'prev'" in output
    suite = next((project / "harness" / "evals").glob("*.yaml")).stem
    out = tmp_path / "exported" / "promptfooconfig.yaml"
    code, output = export(project, suite, out)
    assert code == 1, output  # exported, with what may read differently listed
    assert "options.storeOutputAs: the config holds this suite's column only" in output
    exported = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert exported["tests"][0]["options"] == {"storeOutputAs": "prev"}


def test_a_conversation_is_exported_as_its_transcript_with_a_note(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "harness" / "evals").mkdir(parents=True)
    (project / "coalmine.yaml").write_text("agents:\n  app: {provider: echo}\njudge: none\n")
    turns = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    case = {"id": "talk", "prompt": "Go on", "turns": turns,
            "graders": [{"type": "contains", "config": {"value": "Go"}}]}  # fmt: skip
    (project / "harness" / "evals" / "talk.jsonl").write_text(json.dumps(case) + "\n")
    out = tmp_path / "exported" / "promptfooconfig.yaml"
    code, output = export(project, "talk", out)
    assert code == 1, output
    assert "case talk: its turns go as one message, the conversation's transcript" in output
    [test] = yaml.safe_load(out.read_text(encoding="utf-8"))["tests"]
    assert test["vars"]["prompt"] == (
        "Conversation so far:\nUser: Hi\nAssistant: Hello\nUser: Go on"
    )
