"""Reading a promptfoo config file as promptfoo 0.121.20 reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from coalmine.errors import ConfigError
from coalmine.promptfoo.matrix import load_matrix
from coalmine.promptfoo.matrix.config import RawConfig, load_config
from coalmine.promptfoo.matrix.sources import Problems

FIXTURES = Path(__file__).parent / "fixtures" / "matrix"


def _write(tmp_path: Path, text: str, name: str = "promptfooconfig.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _load(path: Path, **kwargs: object) -> tuple[RawConfig | None, Problems]:
    problems = Problems()
    return load_config(path, problems=problems, **kwargs), problems  # type: ignore[arg-type]


def test_yaml_is_read_as_yaml_1_2_like_js_yaml(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "prompts: [p]\nproviders: [echo]\nmetadata:\n"
        "  yes_word: yes\n  on_word: on\n  octal_like: 017\n  hex: 0x1F\n  one: 1.0\n"
        "  half: 0.5\n  big: 1e3\n  sexagesimal: 1:30\n  upper: TRUE\n  tilde: ~\n",
    )

    config, problems = _load(path)

    assert config is not None
    assert config.data["metadata"] == {
        "yes_word": "yes",
        "on_word": "on",
        "octal_like": 17,
        "hex": 31,
        "one": 1,
        "half": 0.5,
        "big": 1000,
        "sexagesimal": "1:30",
        "upper": True,
        "tilde": None,
    }
    assert type(config.data["metadata"]["one"]) is int  # JavaScript has one number type
    assert problems.errors == []


def test_a_json_config_is_read_too() -> None:
    matrix = load_matrix(FIXTURES / "json_config" / "promptfooconfig.json")

    assert [p.label for p in matrix.prompts] == ["Say {{word}}"]
    assert [t.vars for t in matrix.tests] == [{"word": "hi"}, {"word": "bye"}]


def test_unknown_and_unsupported_keys_are_warnings_with_their_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "prompts: [p]\n"
        "providers: [echo]\n"
        "tags: {team: x}\n"
        "outputPath: out.json\n"
        "redteam:\n"
        "  purpose: x\n"
        "extensions: []\n"
        "evaluateOptions:\n"
        "  maxConcurrency: 2\n"
        "  generateSuggestions: true\n"
        "promptz: [typo]\n",
    )

    _, problems = _load(path)

    assert [str(w) for w in problems.warnings] == [
        f"{path}:5: key 'redteam' is not supported: ignored",
        f"{path}:7: key 'extensions' is not supported: ignored",
        f"{path}:11: key 'promptz' is not supported: ignored",
        f"{path}:10: key 'evaluateOptions.generateSuggestions' is not supported: ignored",
    ]


def test_targets_is_providers(tmp_path: Path) -> None:
    config, problems = _load(_write(tmp_path, "prompts: [p]\ntargets: [echo]\n"))

    assert config is not None and config.data["providers"] == ["echo"]
    assert "targets" not in config.data and problems.warnings == []


def test_with_both_targets_and_providers_promptfoo_uses_targets(tmp_path: Path) -> None:
    path = _write(tmp_path, "prompts: [p]\nproviders: [a]\ntargets: [b]\n")

    config, problems = _load(path)

    assert config is not None and config.data["providers"] == ["b"]
    assert [str(w) for w in problems.warnings] == [
        f"{path}:2: both 'targets' and 'providers' are given: promptfoo uses 'targets'"
    ]


def test_without_prompts_the_prompt_is_the_prompt_var(tmp_path: Path) -> None:
    quiet, problems = _load(_write(tmp_path, "providers: [echo]\ntests:\n  - vars: {prompt: Hi}\n"))
    assert quiet is not None and quiet.data["prompts"] == ["{{prompt}}"]
    assert problems.warnings == []

    _, problems = _load(_write(tmp_path, "providers: [echo]\ntests:\n  - vars: {x: 1}\n", "b.yaml"))
    assert [w.message for w in problems.warnings] == [
        "no 'prompts': promptfoo uses the single prompt '{{prompt}}'"
    ]


def test_malformed_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "prompts: [p]\nproviders:\n  - echo\n bad: [\n")

    with pytest.raises(ConfigError) as caught:
        load_matrix(path)

    assert caught.value.path == path
    assert caught.value.line == 4
    assert str(caught.value).startswith(f"{path}:4: invalid YAML:")


def test_a_config_must_be_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must be a mapping of keys"):
        load_matrix(_write(tmp_path, "- just\n- a list\n"))


def test_a_javascript_config_is_not_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="only YAML and JSON configs are read"):
        load_matrix(_write(tmp_path, "module.exports = {}", "promptfooconfig.js"))


def test_env_templates_are_substituted_as_promptfoo_does(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "env:\n"
        "  GREETING: 'Hello {{ env.NAME }}'\n"
        "prompts:\n"
        "  - '{{ env.GREETING }}, {{ name }}'\n"
        "  - \"{{ env['NAME'] }} / {{ env.UNSET }} / {{ env.UNSET | default('dflt') }}\"\n"
        "  - '{{ env.NAME | upper }}'\n"
        "providers: [echo]\n",
    )

    config, problems = _load(path, environ={"NAME": "Ann"})

    assert config is not None
    assert config.data["prompts"] == [
        "Hello Ann, {{ name }}",
        "Ann / {{ env.UNSET }} / dflt",
        "{{ env.NAME | upper }}",
    ]
    assert [w.message for w in problems.warnings] == [
        "{{ env.NAME | upper }} uses a Nunjucks filter only promptfoo can apply: left as written"
    ]


def test_refs_are_resolved_and_their_targets_are_not_unknown_keys(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "assertionTemplates:\n"
        "  short:\n"
        "    type: javascript\n"
        "    value: output.length < 10\n"
        "prompts: [p]\n"
        "providers: [echo]\n"
        "tests:\n"
        "  - assert:\n"
        "      - $ref: '#/assertionTemplates/short'\n"
        "      - $ref: '#/assertionTemplates/short'\n"
        "        weight: 2\n",
    )

    config, problems = _load(path)

    assert config is not None
    assert config.data["tests"][0]["assert"] == [
        {"type": "javascript", "value": "output.length < 10"},
        {"type": "javascript", "value": "output.length < 10", "weight": 2},
    ]
    assert problems.warnings == [] and problems.errors == []


def test_a_dangling_ref_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "prompts: [p]\nproviders: [echo]\ntests:\n  - assert:\n      - $ref: '#/nope'\n",
    )

    _, problems = _load(path)

    assert [str(e) for e in problems.errors] == [f"{path}:5: $ref '#/nope' points at nothing"]


def test_every_problem_is_reported_at_once() -> None:
    path = FIXTURES / "broken" / "promptfooconfig.yaml"

    with pytest.raises(ConfigError) as caught:
        load_matrix(path)

    folder = path.parent
    assert str(caught.value).splitlines() == [
        "6 problems in the promptfoo config:",
        f"  {folder / 'tests/bad.yaml'}:3: invalid YAML: expected ',' or ']', but got '<stream end>'",
        f"  {folder / 'tests/rows.csv'}:3: Invalid Record Length: columns length is 3, got 2",
        f"  {folder / 'tests/rows.csv'}:4: column '__config:__expected:threshold': "
        "Invalid numeric value 'high' for threshold",
        f"  {path}:9: Test case must contain one of the following properties: assert, vars, "
        "options, metadata, provider, providerOutput, threshold",
        f"  {path}:10: test references prompt 'Nope' which does not exist. "
        "Available prompts: ['Hi {{name}}']",
        f"  {path}:14: invalid assertion at test.assert[0]: missing required 'type' property",
    ]
    assert caught.value.path == folder / "tests/bad.yaml"


def test_nunjucks_filters_are_found_as_promptfoo_finds_them(tmp_path: Path) -> None:
    for name in ("filters/shout.js", "filters/b/wrap.js"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("module.exports = (v) => v;\n")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: [hi]\n"
        "providers: [echo]\n"
        "nunjucksFilters:\n"
        "  shout: ./filters/shout.js\n"
        "  wrap: filters/*/wrap.js\n"
        "  url: file://filters/shout.js\n"
        "  gone: filters/gone.js\n"
        "  abs: /filters/shout.js\n"
    )
    matrix = load_matrix(config)
    # a path (a glob too) is joined to the config's folder as written: file:// and a missing
    # file define no filter, and a leading / stays inside the folder
    assert matrix.filters == {
        "shout": "filters/shout.js",
        "wrap": "filters/b/wrap.js",
        "abs": "filters/shout.js",
    }
    assert "nunjucksFilters" not in matrix.extras
    assert matrix.warnings == (
        f"{config}:6: nunjucksFilters.url: file://filters/shout.js matches no file, so promptfoo "
        "defines no 'url' filter and a template that uses it fails to render (promptfoo reads it "
        "as a path: write it without file://)",
        f"{config}:7: nunjucksFilters.gone: filters/gone.js matches no file, so promptfoo "
        "defines no 'gone' filter and a template that uses it fails to render",
    )


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (
            "nunjucksFilters: [a.js]",
            ":3: nunjucksFilters must map filter names to JavaScript files",
        ),
        ("nunjucksFilters:\n  x: 3", ":4: nunjucksFilters.x must be a path, not 3"),
        ("nunjucksFilters:\n  x: ../out.js", ":4: nunjucksFilters.x: "),
    ],
)
def test_bad_nunjucks_filters_are_errors_at_their_line(
    tmp_path: Path, filters: str, message: str
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (tmp_path / "out.js").write_text("module.exports = (v) => v;\n")
    config = folder / "promptfooconfig.yaml"
    config.write_text(f"prompts: [hi]\nproviders: [echo]\n{filters}\n")
    with pytest.raises(ConfigError) as caught:
        load_matrix(config)
    assert str(caught.value).startswith(f"{config}{message}")
