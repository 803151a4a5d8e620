"""Loading coalmine.yaml and [tool.coalmine]: agents, routing, judge, defaults, ${VAR}."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, field_validator

from coalmine.config import DEFAULT_ROUTING, Config, load_config
from coalmine.errors import ConfigError
from coalmine.providers.base import provider_settings
from coalmine.providers.command import CommandSettings
from coalmine.providers.openai import OpenAISettings

GRADER = "agents:\n  Grader: {provider: openai, model: m}\n"


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(root: Path, environ: Mapping[str, str] | None = None) -> Config:
    return load_config(root, providers=provider_settings(), environ=environ or {})


def judge_settings(config: Config) -> OpenAISettings:
    assert config.judge is not None
    assert isinstance(config.judge.settings, OpenAISettings)
    return config.judge.settings


def config_error(root: Path, environ: Mapping[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load(root, environ)
    return info.value


def test_no_config_file(tmp_path: Path) -> None:
    config = load(tmp_path)
    assert config.path is None
    assert config.root == tmp_path.resolve()
    assert config.agents == {}
    assert config.routing == DEFAULT_ROUTING
    assert config.judge_mode == "unset"


def test_pyproject_without_tool_coalmine_is_no_config(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    assert load(tmp_path).path is None


def test_coalmine_yaml(tmp_path: Path) -> None:
    qa = "  QA:\n    provider: command\n    argv: [python3, agents/qa.py]\n"
    text = f"agents:\n{qa}routing:\n  qa: QA\n"
    path = write(tmp_path, "coalmine.yaml", text)
    config = load(tmp_path)
    assert config.path == path
    agent = config.agents["QA"]
    assert agent.provider == "command"
    assert isinstance(agent.settings, CommandSettings)
    assert agent.settings.argv == ["python3", "agents/qa.py"]
    assert agent.base_dir == tmp_path.resolve()
    assert agent.line == 2
    assert config.routing == {**DEFAULT_ROUTING, "qa": "QA"}


def test_tool_coalmine_in_pyproject(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "pyproject.toml",
        """\
        [project]
        name = "demo"

        [tool.coalmine]
        judge = "none"

        [tool.coalmine.routing]
        qa = "QA"

        [tool.coalmine.agents.QA]
        provider = "command"
        argv = ["python3", "qa.py"]
        """,
    )
    config = load(tmp_path)
    assert config.path == path
    assert config.judge_mode == "none"
    assert config.routing["qa"] == "QA"
    assert config.agents["QA"].line == 10


def test_toml_unknown_key_points_at_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "pyproject.toml",
        """\
        [project]
        name = "demo"

        [tool.coalmine]
        judge = "none"
        routin = { qa = "QA" }
        """,
    )
    error = config_error(tmp_path)
    assert error.path == path
    assert error.line == 6
    assert "unknown key 'routin' (did you mean 'routing'?)" in error.reason


def test_toml_agent_typo_key_points_at_its_line(tmp_path: Path) -> None:
    text = '[tool.coalmine.agents.QA]\nprovider = "command"\nargvs = ["python3", "qa.py"]\n'
    path = write(tmp_path, "pyproject.toml", text)
    message = str(config_error(tmp_path))
    assert f"{path}:3: agent 'QA': unknown key 'argvs' in agents.QA" in message


def test_toml_agent_line_is_its_own_table_not_a_suffix_match(tmp_path: Path) -> None:
    # "[tool.coalmine.agents.senior-qa]" ends in "qa" but is not the table of agent "qa"
    write(
        tmp_path,
        "pyproject.toml",
        """\
        [tool.coalmine.agents.senior-qa]
        provider = "command"
        argv = ["a"]

        [tool.coalmine.agents.qa]
        argv = ["b"]
        """,
    )
    error = config_error(tmp_path)
    assert error.reason.startswith("agent 'qa' needs 'provider:'")
    assert error.line == 5


def test_toml_syntax_error_has_its_line(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.coalmine]\njudge = "none"\nrouting = {\n')
    error = config_error(tmp_path)
    assert error.reason.startswith("invalid TOML:")
    assert error.line == 3


def test_yaml_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.coalmine]\njudge = "none"\n')
    path = write(tmp_path, "coalmine.yaml", "defaults:\n  jobs: 2\n")
    config = load(tmp_path)
    assert config.path == path
    assert config.judge_mode == "unset"


def test_unknown_top_level_key(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "defaults:\n  jobs: 2\nagnets: {}\n")
    error = config_error(tmp_path)
    assert error.line == 3
    assert error.reason == (
        "unknown key 'agnets' (did you mean 'agents'?); "
        "valid keys: agents, cache, defaults, judge, judge_calibration, pricing, python_graders, routing, store"
    )


def test_agent_with_unknown_provider(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "agents:\n  QA:\n    provider: comand\n    argv: [x]\n")
    error = config_error(tmp_path)
    assert error.line == 3
    assert error.reason == (
        "agent 'QA': unknown provider 'comand' (did you mean 'command'?); "
        "valid providers: anthropic, command, echo, http, javascript, openai, python, replay"
    )


def test_agent_without_provider(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "agents:\n  QA:\n    argv: [x]\n")
    error = config_error(tmp_path)
    assert error.line == 2
    assert (
        error.reason
        == "agent 'QA' needs 'provider:' (one of: anthropic, command, echo, http, javascript, openai, python, replay)"
    )


def test_agent_typo_key_gives_line_and_valid_keys(tmp_path: Path) -> None:
    text = "agents:\n  QA:\n    provider: command\n    argvs: [python3, qa.py]\n"
    path = write(tmp_path, "coalmine.yaml", text)
    message = str(config_error(tmp_path))
    assert (
        f"{path}:4: agent 'QA': unknown key 'argvs' in agents.QA (did you mean 'argv'?); "
        "valid keys: argv, convention, cwd, env, max_output_bytes, options"
    ) in message


def test_routing_to_undefined_agent(tmp_path: Path) -> None:
    qa, deployer = "{provider: command, argv: [x]}", "{provider: command, argv: [y]}"
    agents = f"  QA Coordinator: {qa}\n  Deployer: {deployer}\n"
    write(tmp_path, "coalmine.yaml", f"agents:\n{agents}routing:\n  qa: QA Cordinator\n")
    error = config_error(tmp_path)
    assert error.line == 5
    assert error.reason == (
        "routing.qa: unknown agent 'QA Cordinator' (did you mean 'QA Coordinator'?); "
        "agents defined under 'agents:': QA Coordinator, Deployer"
    )


@pytest.mark.parametrize("value", ["none", "None", "NONE"])
def test_judge_none(tmp_path: Path, value: str) -> None:
    write(tmp_path, "coalmine.yaml", f"judge: {value}\n")
    config = load(tmp_path)
    assert config.judge_mode == "none"
    assert config.judge is None


def test_judge_by_agent_name(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", GRADER + "judge: Grader\n")
    config = load(tmp_path)
    assert config.judge_mode == "agent"
    assert config.judge is config.agents["Grader"]


def test_judge_by_unknown_agent_name(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", GRADER + "judge: Grade\n")
    error = config_error(tmp_path)
    assert error.line == 3
    assert "judge: unknown agent 'Grade' (did you mean 'Grader'?)" in error.reason


def test_inline_judge(tmp_path: Path) -> None:
    text = "judge:\n  provider: openai\n  model: judge-1\n  base_url: http://127.0.0.1:9/v1\n"
    write(tmp_path, "coalmine.yaml", text)
    config = load(tmp_path)
    assert config.judge_mode == "agent"
    assert config.judge is not None and config.judge.name == "judge"
    assert judge_settings(config).model == "judge-1"
    assert config.agents == {}


def test_env_expansion_with_explicit_environ(tmp_path: Path) -> None:
    write(
        tmp_path,
        "coalmine.yaml",
        """\
        judge:
          provider: openai
          model: ${JUDGE_MODEL}
          base_url: ${JUDGE_URL:-http://localhost:8000/v1}
          system_prompt: "literal $${NOT_A_VAR} and $${JUDGE_MODEL}"
        """,
    )
    settings = judge_settings(load(tmp_path, {"JUDGE_MODEL": "judge-7"}))
    assert settings.model == "judge-7"
    assert settings.base_url == "http://localhost:8000/v1"
    assert settings.system_prompt == "literal ${NOT_A_VAR} and ${JUDGE_MODEL}"


def test_env_default_not_used_when_variable_is_set(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "judge: {provider: openai, model: '${M:-fallback}'}\n")
    assert judge_settings(load(tmp_path, {"M": "chosen"})).model == "chosen"


def test_env_default_used_when_variable_is_empty(tmp_path: Path) -> None:
    # ${VAR:-default} takes the default when VAR is unset *or empty* (POSIX shell, compose)
    write(tmp_path, "coalmine.yaml", "judge: {provider: openai, model: '${M:-fallback}'}\n")
    assert judge_settings(load(tmp_path, {"M": ""})).model == "fallback"


def test_an_agents_unset_variable_is_an_error_only_where_its_settings_are_used(
    tmp_path: Path,
) -> None:
    text = (
        "agents:\n  QA:\n    provider: command\n    argv:\n      - python3\n      - ${QA_SCRIPT}\n"
        "  Other: {provider: command, argv: [python3]}\n"
    )
    write(tmp_path, "coalmine.yaml", text)
    config = load(tmp_path, {"OTHER": "x"})
    qa = config.agents["QA"]
    assert [(u.name, u.line, u.setting) for u in qa.unset] == [("QA_SCRIPT", 6, "argv.1")]
    assert qa.resolved is None and config.agents["Other"].unset == ()
    with pytest.raises(ConfigError) as info:
        qa.settings  # noqa: B018 - reading them is what raises
    assert info.value.line == 6
    assert info.value.reason == (
        "agent 'QA' (argv.1): the environment variable QA_SCRIPT is not set; set it, or give a "
        "default with ${QA_SCRIPT:-value}"
    )


def test_an_unset_variable_outside_the_agents_is_an_error_at_once(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "agents: {}\nstore: ${STORE_DIR}/runs.db\n")
    error = config_error(tmp_path, {"OTHER": "x"})
    assert error.line == 2
    assert error.reason == (
        "environment variable STORE_DIR is not set; set it, or give a default "
        "with ${STORE_DIR:-value}"
    )


def test_reading_the_store_key_alone_skips_the_rest(tmp_path: Path) -> None:
    write(
        tmp_path,
        "coalmine.yaml",
        "agents:\n  QA: {provider: nope, argv: '${UNSET}'}\ndefaults: {jobs: '${JOBS}'}\n"
        "store: runs/${NAME:-main}.db\n",
    )
    config = load_config(tmp_path, providers=provider_settings(), environ={}, keys=("store",))
    assert config.store_path == tmp_path.resolve() / "runs" / "main.db"
    assert config.agents == {}


def test_defaults_block(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "defaults:\n  timeout_seconds: 60\n  jobs: 4\n")
    defaults = load(tmp_path).defaults
    assert defaults.timeout_seconds == 60.0
    assert defaults.jobs == 4
    assert defaults.judge_timeout_seconds == 120.0


def test_defaults_block_rejects_bad_values(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "defaults:\n  timeout_seconds: 60\n  jobs: 0\n")
    error = config_error(tmp_path)
    assert error.line == 3
    assert error.reason.startswith("defaults.jobs:")


def test_config_that_is_not_a_mapping(tmp_path: Path) -> None:
    write(tmp_path, "coalmine.yaml", "- agents\n")
    error = config_error(tmp_path)
    assert error.reason == "the configuration must be a mapping"
    assert error.line == 1


def test_empty_coalmine_yaml_is_the_default_config(tmp_path: Path) -> None:
    path = write(tmp_path, "coalmine.yaml", "")
    config = load(tmp_path)
    assert config.path == path
    assert config.agents == {}
    assert config.judge_mode == "unset"


def test_every_agent_may_have_a_description(tmp_path: Path) -> None:
    (tmp_path / "coalmine.yaml").write_text(
        "agents:\n"
        "  A: {provider: command, argv: [x], description: the stand-in}\n"
        "judge: {provider: command, argv: [j], description: heuristic}\n"
    )
    config = load_config(tmp_path, providers=provider_settings())
    assert config.agents["A"].description == "the stand-in"
    assert config.judge is not None and config.judge.description == "heuristic"


class _QuotingSettings(BaseModel):
    """A provider whose check quotes the value it refuses (as a URL check may)."""

    model_config = ConfigDict(extra="forbid")
    url: str

    @field_validator("url")
    @classmethod
    def _refuse(cls, value: str) -> str:
        raise ValueError(f"{value!r} is not served here")


def test_an_agents_secrets_are_kept_and_never_quoted_in_an_error(tmp_path: Path) -> None:
    environ = {"KEY": "url-key-5150", "TOKEN": "env-token-7070"}
    write(tmp_path, "coalmine.yaml", """\
        agents:
          A:
            provider: quoting
            url: "https://u:pw-literal-99@h.example/run?key=${KEY}"
        """)  # fmt: skip
    providers = {**provider_settings(), "quoting": _QuotingSettings}
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, providers=providers, environ=environ)
    assert "is not served here" in str(info.value) and info.value.line == 4
    assert "url-key-5150" not in str(info.value) and "pw-literal-99" not in str(info.value)
    write(tmp_path, "coalmine.yaml", """\
        agents:
          B:
            provider: command
            argv: [agent, --api-key, "${KEY}", --model, "${TOKEN}"]
            env: {HF_TOKEN: hf-literal-1234, MODE: "${TOKEN}", NO_COLOR: "1"}
        """)  # fmt: skip
    secrets = load(tmp_path, environ).agents["B"].secrets
    assert set(secrets) == {"url-key-5150", "hf-literal-1234", "env-token-7070"}
