"""Loading canary specs from real YAML files: valid specs, file:line problems, selection."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from coalmine.errors import UsageError
from coalmine.graders.base import grader_configs
from coalmine.specs.loader import InvalidSpec, SpecSet, load_canary_specs, select_specs

PHASES = ["requirements", "design", "qa", "deploy"]

VALID = """\
id: {id}
phase: {phase}
title: A canary
prompt: Review the login handler.
expected:
  graders:
    - type: keyword
      weight: 0.6
      config:
        required: [injection]
    - type: structural
      weight: 0.4
      config:
        required_sections: [Risks]
"""


def write(root: Path, relative: str, text: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def valid(spec_id: str, phase: str = "qa") -> str:
    return VALID.format(id=spec_id, phase=phase)


def load(root: Path) -> SpecSet:
    return load_canary_specs(root, phases=PHASES, grader_configs=grader_configs())


def only_invalid(spec_set: SpecSet) -> InvalidSpec:
    assert spec_set.specs == []
    assert len(spec_set.invalid) == 1
    return spec_set.invalid[0]


def test_valid_spec(tmp_path: Path) -> None:
    path = write(tmp_path, "qa/qa-001.yaml", valid("qa-001-login"))
    spec_set = load(tmp_path)
    assert spec_set.invalid == []
    [loaded] = spec_set.specs
    assert loaded.id == "qa-001-login"
    assert loaded.path == path
    assert loaded.line == 1
    assert loaded.spec.prompt == "Review the login handler."
    assert [g.type for g in loaded.spec.expected.graders] == ["keyword", "structural"]
    assert [g.weight for g in loaded.spec.expected.graders] == [0.6, 0.4]


def test_unknown_key_has_line_and_did_you_mean(tmp_path: Path) -> None:
    text = valid("qa-001").replace("prompt: Review", "promt: Review")
    path = write(tmp_path, "qa/qa-001.yaml", text)
    bad = only_invalid(load(tmp_path))
    assert bad.spec_id == "qa-001"
    assert bad.path == path
    [unknown] = [p for p in bad.problems if p.message.startswith("unknown key 'promt'")]
    assert unknown.line == 4
    assert "(did you mean 'prompt'?)" in unknown.message
    assert "valid keys: blocking, description, expected, id, phase, prompt" in unknown.message
    assert f"{path}:4: unknown key 'promt'" in bad.reason


def test_missing_key(tmp_path: Path) -> None:
    text = valid("qa-001").replace("title: A canary\n", "")
    write(tmp_path, "qa/qa-001.yaml", text)
    bad = only_invalid(load(tmp_path))
    assert [p.message for p in bad.problems] == ["missing required key 'title'"]


def test_unknown_phase_names_valid_phases_at_its_line(tmp_path: Path) -> None:
    write(tmp_path, "qa/qa-001.yaml", valid("qa-001", phase="qa2"))
    bad = only_invalid(load(tmp_path))
    [problem] = bad.problems
    assert problem.line == 2
    assert problem.message.startswith("unknown phase 'qa2' (did you mean 'qa'?)")
    assert "valid phases: requirements, design, qa, deploy" in problem.message


def test_unknown_grader_type_lists_valid_types(tmp_path: Path) -> None:
    text = valid("qa-001").replace("type: structural", "type: structure")
    write(tmp_path, "qa/qa-001.yaml", text)
    [problem] = only_invalid(load(tmp_path)).problems
    assert problem.line == 11
    assert problem.message.startswith(
        "unknown grader type 'structure' (did you mean 'structural'?); valid types: "
    )
    assert "keyword" in problem.message and "llm-judge" in problem.message
    assert "not-keyword" not in problem.message  # negated forms are folded into a note


def test_bad_grader_config_points_at_the_key(tmp_path: Path) -> None:
    text = valid("qa-001").replace("required: [injection]", "requird: [injection]")
    write(tmp_path, "qa/qa-001.yaml", text)
    [problem] = only_invalid(load(tmp_path)).problems
    assert problem.line == 10
    assert "unknown key 'requird' in expected.graders.0.config" in problem.message
    assert "(did you mean 'required'?)" in problem.message
    assert "valid keys: forbidden, required" in problem.message


def test_weights_summing_to_zero(tmp_path: Path) -> None:
    text = valid("qa-001").replace("weight: 0.6", "weight: 0").replace("weight: 0.4", "weight: 0")
    write(tmp_path, "qa/qa-001.yaml", text)
    [problem] = only_invalid(load(tmp_path)).problems
    assert problem.line == 6
    assert "grader weights sum to 0" in problem.message


def test_yaml_syntax_error_has_its_line(tmp_path: Path) -> None:
    write(tmp_path, "qa/qa-001.yaml", "id: qa-001\nphase: qa\ntitle: [unclosed\nprompt: x\n")
    [problem] = only_invalid(load(tmp_path)).problems
    assert problem.message.startswith("invalid YAML:")
    assert problem.line == 4


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    write(tmp_path, "qa/qa-001.yaml", valid("qa-001") + "phase: deploy\n")
    [problem] = only_invalid(load(tmp_path)).problems
    assert problem.line == 15
    assert problem.message == "duplicate key 'phase' (first given at line 2)"


@pytest.mark.parametrize(
    ("text", "kind"), [("", "empty"), ("# only a comment\n", "empty"), ("- a\n- b\n", "a list")]
)
def test_file_that_is_not_a_mapping(tmp_path: Path, text: str, kind: str) -> None:
    write(tmp_path, "qa/qa-001.yaml", text)
    [problem] = only_invalid(load(tmp_path)).problems
    assert problem.line == 1
    assert problem.message == f"a canary spec must be a mapping of keys, but this file is {kind}"


def test_non_utf8_file(tmp_path: Path) -> None:
    write(tmp_path, "qa/qa-001.yaml", "id: qa-001\ntitle: caf\xe9\n".encode("latin-1"))
    bad = only_invalid(load(tmp_path))
    assert bad.problems[0].message.startswith("not valid UTF-8")
    assert bad.line is None


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    first = write(tmp_path, "qa/a.yaml", valid("qa-001"))
    second = write(tmp_path, "qa/b.yaml", valid("qa-001"))
    spec_set = load(tmp_path)
    assert [s.path for s in spec_set.specs] == [first]
    [bad] = spec_set.invalid
    assert bad.path == second
    assert bad.spec_id == "qa-001"
    assert bad.line == 1
    assert f"already used by {first}:1" in bad.problems[0].message


def test_a_broken_spec_does_not_stop_the_valid_ones(tmp_path: Path) -> None:
    write(tmp_path, "qa/a.yaml", valid("qa-001"))
    write(tmp_path, "qa/b.yaml", "id: [broken\n")
    write(tmp_path, "qa/c.yaml", valid("qa-003"))
    spec_set = load(tmp_path)
    assert [s.id for s in spec_set.specs] == ["qa-001", "qa-003"]
    assert [i.path.name for i in spec_set.invalid] == ["b.yaml"]


def test_order_is_by_phase_then_id(tmp_path: Path) -> None:
    write(tmp_path, "a/deploy.yaml", valid("deploy-001", "deploy"))
    write(tmp_path, "b/qa-b.yaml", valid("qa-002", "qa"))
    write(tmp_path, "c/qa-a.yaml", valid("qa-001", "qa"))
    write(tmp_path, "d/req.yaml", valid("req-001", "requirements"))
    spec_set = load(tmp_path)
    assert [s.id for s in spec_set.specs] == ["req-001", "qa-001", "qa-002", "deploy-001"]


def test_hidden_folders_and_files_skipped_yml_found(tmp_path: Path) -> None:
    write(tmp_path, ".drafts/qa-009.yaml", valid("qa-009"))
    write(tmp_path, "qa/.qa-008.yaml", valid("qa-008"))
    write(tmp_path, "qa/qa-001.yml", valid("qa-001"))
    write(tmp_path, "qa/notes.txt", "id: not-a-spec\n")
    spec_set = load(tmp_path)
    assert [s.id for s in spec_set.specs] == ["qa-001"]
    assert spec_set.invalid == []


def test_missing_directory_is_empty(tmp_path: Path) -> None:
    spec_set = load(tmp_path / "nope")
    assert spec_set.specs == [] and spec_set.invalid == []


# --- select_specs ---------------------------------------------------------------------------


def specs_with(tmp_path: Path, *ids: str) -> SpecSet:
    for spec_id in ids:
        write(tmp_path, f"qa/{spec_id}.yaml", valid(spec_id))
    return load(tmp_path)


def test_select_exact_id(tmp_path: Path) -> None:
    spec_set = specs_with(tmp_path, "qa-001", "qa-002")
    assert [s.id for s in select_specs(spec_set, ["qa-002"]).specs] == ["qa-002"]


def test_select_no_selector_keeps_all(tmp_path: Path) -> None:
    spec_set = specs_with(tmp_path, "qa-001", "qa-002")
    assert select_specs(spec_set, []) == spec_set


def test_select_by_prefix(tmp_path: Path) -> None:
    spec_set = specs_with(tmp_path, "qa-001-x", "qa-0011-y")
    # "qa-001" matches "qa-001-x" (prefix + "-"), not "qa-0011-y"
    assert [s.id for s in select_specs(spec_set, ["qa-001"]).specs] == ["qa-001-x"]


def test_select_ambiguous_prefix_lists_both(tmp_path: Path) -> None:
    spec_set = specs_with(tmp_path, "qa-001-a", "qa-001-b", "qa-002")
    with pytest.raises(UsageError) as info:
        select_specs(spec_set, ["qa-001"])
    assert str(info.value) == "'qa-001' is ambiguous; it matches: qa-001-a, qa-001-b"
    assert info.value.exit_code == 2


def test_select_unknown_lists_candidates(tmp_path: Path) -> None:
    spec_set = specs_with(tmp_path, "qa-001", "qa-002")
    with pytest.raises(UsageError) as info:
        select_specs(spec_set, ["qa-003"])
    message = str(info.value)
    assert message.startswith("no canary matches 'qa-003' (did you mean")
    assert message.endswith("canaries: qa-001, qa-002")


def test_select_exact_id_wins_over_prefix(tmp_path: Path) -> None:
    spec_set = specs_with(tmp_path, "qa-001", "qa-001-a", "qa-001-b")
    assert [s.id for s in select_specs(spec_set, ["qa-001"]).specs] == ["qa-001"]


def test_select_invalid_spec_by_id_keeps_it_in_invalid(tmp_path: Path) -> None:
    write(tmp_path, "qa/qa-001.yaml", valid("qa-001"))
    write(tmp_path, "qa/qa-002.yaml", valid("qa-002").replace("title: A canary\n", ""))
    chosen = select_specs(load(tmp_path), ["qa-002"])
    assert chosen.specs == []
    assert [i.spec_id for i in chosen.invalid] == ["qa-002"]
    assert chosen.invalid[0].problems[0].message == "missing required key 'title'"


@pytest.mark.parametrize(
    ("grader", "words"),
    [
        ("{type: equals}", "equals has nothing to compare with: give it a 'value'"),
        ("{type: json-path, config: {path: a}}", "give it an 'equals' or a 'matches'"),
        ("{type: recall@k}", "recall@k needs a case's 'relevant', which a canary has not"),
        (
            "{type: forbidden-tools}",
            "forbidden-tools has nothing to compare with: give it a 'tools'",
        ),
    ],
)
def test_a_grader_a_canary_cannot_feed_is_invalid_at_its_line(
    tmp_path: Path, grader: str, words: str
) -> None:
    text = valid("qa-001-x").replace(
        "    - type: structural", f"    - {grader}\n    - type: structural"
    )
    write(tmp_path, "qa/qa-001.yaml", text)
    invalid = only_invalid(load(tmp_path))
    assert invalid.line == 11
    assert words in invalid.reason
    assert "(a canary" not in invalid.reason and "the case" not in invalid.reason
