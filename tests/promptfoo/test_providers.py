"""promptfoo providers as coalmine agents: each mapping by hand, and real calls vs promptfoo."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from coalmine.config import Config, load_config
from coalmine.errors import ProviderError
from coalmine.promptfoo.matrix.config import load_config as load_promptfoo_config
from coalmine.promptfoo.matrix.provider_refs import ProviderRef, read_providers
from coalmine.promptfoo.matrix.sources import Problems
from coalmine.promptfoo.providers import (
    MappedProvider,
    map_provider,
    map_providers,
    readable_name,
    split_command,
)
from coalmine.providers.base import AgentRequest, CallContext, build_provider, provider_settings
from coalmine.results import AgentOutput

FIXTURE = Path(__file__).parent / "fixtures" / "providers"
OPENAI_URL = "${OPENAI_BASE_URL:-https://api.openai.com/v1}"
ANTHROPIC_URL = "${ANTHROPIC_BASE_URL:-https://api.anthropic.com}"
OLLAMA_URL = "${OLLAMA_BASE_URL:-http://localhost:11434}/v1"
HERE = {"config": {"basePath": "."}, "env": {}}
"""The options of a provider written as a string, run from its config's folder."""


def ref(provider_id: str, **fields: Any) -> ProviderRef:
    """A provider as the config reader returns it (``options`` is set for the object form)."""
    values: dict[str, Any] = {"label": None, "config": None, "transform": None}
    values |= {"implementation": provider_id, "options": None} | fields
    return ProviderRef(id=provider_id, index=0, path=Path("promptfooconfig.yaml"), line=1, **values)


def load_agents(root: Path, mapped: list[MappedProvider], environ: dict[str, str]) -> Config:
    """The agents through coalmine's real config loader (so every setting is valid)."""
    agents = {m.agent_name: dict(m.agent) for m in mapped if m.agent is not None}
    root.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump({"agents": agents}, sort_keys=False, allow_unicode=True)
    (root / "coalmine.yaml").write_text(text, encoding="utf-8")
    return load_config(root, providers=provider_settings(), environ=environ)


CASES: list[tuple[ProviderRef, dict[str, Any], list[str]]] = [
    (ref("echo"), {"provider": "echo"}, []),
    (
        ref("openai:gpt-4o-mini"),
        {"provider": "openai", "model": "gpt-4o-mini", "base_url": OPENAI_URL,
         "api_key_env": "OPENAI_API_KEY", "temperature": 0, "max_tokens": 1024},
        [],
    ),
    (
        ref("openai:chat:gpt-4o-mini", config={
            "temperature": 0.7, "max_tokens": 200, "seed": 7, "top_p": 0.9,
            "apiBaseUrl": "http://127.0.0.1:8000/v1", "apiKeyEnvar": "LOCAL_KEY"}),
        {"provider": "openai", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:8000/v1",
         "api_key_env": "LOCAL_KEY", "temperature": 0.7, "max_tokens": 200, "seed": 7},
        ["config.top_p has no setting in coalmine's openai provider: not sent"],
    ),
    (
        ref("openai:chat", config={"model": "gpt-4o", "apiHost": "llm.example.com",
                                   "apiKey": "sk-test", "omitDefaults": True}),
        {"provider": "openai", "model": "gpt-4o", "base_url": "https://llm.example.com/v1",
         "api_key_env": "OPENAI_API_KEY"},
        ["config.apiKey is not copied (coalmine reads keys from the environment): export it "
         "as OPENAI_API_KEY"],
    ),
    (
        ref("openai:chat", config={"apiKey": "{{ env.MY_OPENAI_KEY }}", "apiKeyRequired": True}),
        {"provider": "openai", "model": "gpt-4.1-2025-04-14", "base_url": OPENAI_URL,
         "api_key_env": "MY_OPENAI_KEY", "temperature": 0, "max_tokens": 1024},
        [],
    ),
    (
        ref("openai:responses:o3-mini", config={"temperature": 1, "max_completion_tokens": 50}),
        {"provider": "openai", "model": "o3-mini", "base_url": OPENAI_URL,
         "api_key_env": "OPENAI_API_KEY"},
        ["promptfoo calls the Responses API; coalmine's openai agent calls chat completions",
         "config.temperature: promptfoo does not send it to o3-mini",
         "config.max_completion_tokens has no setting in coalmine's openai provider: not sent"],
    ),
    (
        ref("openai:gpt-4o", config={
            "apiBaseUrl": "http://localhost:1234/v1", "apiKeyRequired": False,
            "temperature": "hot", "response_format": {"type": "json_object"},
            "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "auto"}),
        {"provider": "openai", "model": "gpt-4o", "base_url": "http://localhost:1234/v1",
         "max_tokens": 1024, "tools": [{"type": "function", "function": {"name": "f"}}],
         "tool_choice": "auto", "response_format": {"type": "json_object"}},
        ["config.temperature = 'hot' is not a valid value: not sent"],
    ),
    (
        ref("openai:gpt-4o", config={"tool_choice": "required", "tools": "file://tools.json"}),
        {"provider": "openai", "model": "gpt-4o", "base_url": OPENAI_URL,
         "api_key_env": "OPENAI_API_KEY", "temperature": 0, "max_tokens": 1024},
        ["config.tools = 'file://tools.json' is not a valid value: not sent",
         "config.tool_choice = 'required' is not a valid value: not sent"],
    ),
    (
        ref("anthropic:messages:claude-sonnet-4-20250514"),
        {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "base_url": ANTHROPIC_URL,
         "api_key_env": "ANTHROPIC_API_KEY", "max_tokens": 1024, "temperature": 0},
        [],
    ),
    (
        ref("anthropic:claude-3-5-haiku-latest", config={
            "top_p": 0.5, "temperature": 0.3, "top_k": 5, "stop_sequences": ["END"],
            "max_tokens": 300, "apiBaseUrl": "http://127.0.0.1:9/anthropic",
            "tools": [{"type": "function", "function": {"name": "get", "description": "Get.",
                                                         "parameters": {"type": "object"}}},
                      {"type": "function", "function": {"name": "put"}}],
            "tool_choice": "required"}),
        {"provider": "anthropic", "model": "claude-3-5-haiku-latest",
         "base_url": "http://127.0.0.1:9/anthropic", "api_key_env": "ANTHROPIC_API_KEY",
         "max_tokens": 300, "top_p": 0.5, "stop_sequences": ["END"],
         "tools": [{"name": "get", "description": "Get.", "input_schema": {"type": "object"}},
                   {"name": "put", "input_schema": {"type": "object", "properties": {}}}],
         "tool_choice": {"type": "any"}},
        ["config.temperature: promptfoo leaves it out beside top_p",
         "config.top_k has no setting in coalmine's anthropic provider: not sent"],
    ),
    (
        ref("anthropic:messages:claude-opus-4-1", config={
            "tools": [{"name": "t", "input_schema": {}}],
            "tool_choice": {"type": "function", "function": {"name": "t"}}, "temperature": 2}),
        {"provider": "anthropic", "model": "claude-opus-4-1", "base_url": ANTHROPIC_URL,
         "api_key_env": "ANTHROPIC_API_KEY", "max_tokens": 1024,
         "tools": [{"name": "t", "input_schema": {}}], "tool_choice": {"type": "tool", "name": "t"}},
        ["config.temperature = 2 is not valid: not sent"],
    ),
    (
        ref("ollama:chat:llama3.2", config={"temperature": 0.1, "num_predict": 64, "num_ctx": 4096}),
        {"provider": "openai", "model": "llama3.2", "base_url": OLLAMA_URL, "temperature": 0.1,
         "max_tokens": 64},
        ["promptfoo calls Ollama's /api/chat; coalmine sends the prompt as one chat message to "
         "its OpenAI-compatible /v1/chat/completions (OLLAMA_API_KEY is not sent)",
         "config.num_ctx has no setting in coalmine's openai provider: not sent"],
    ),
    (
        ref("ollama:llama3:8b"),
        {"provider": "openai", "model": "llama3:8b", "base_url": OLLAMA_URL},
        ["promptfoo calls Ollama's /api/generate (a completion); coalmine sends the prompt as "
         "one chat message to its OpenAI-compatible /v1/chat/completions (OLLAMA_API_KEY is not "
         "sent)"],
    ),
    (
        ref("exec:python agent.py --flag ${HOME}"),
        {"provider": "command", "argv": ["python", "agent.py", "--flag", "$${HOME}"],
         "convention": "promptfoo", "options": HERE},
        [],
    ),
    (
        ref("exec:node \"my script.js\" '' \"\" a\"b\"", label="Node"),
        {"provider": "command", "argv": ["node", "my script.js", "''", '""', "a", "b"],
         "convention": "promptfoo", "options": HERE},
        [],
    ),
    (
        ref("exec:./bin/run.sh", config={"temperature": 0.2}, transform="output.trim()",
            options={"id": "exec:./bin/run.sh", "config": {"temperature": 0.2},
                     "env": {"MODE": "x"}, "inputs": {"q": "question"}}),
        {"provider": "command", "argv": ["./bin/run.sh"], "convention": "promptfoo",
         "options": {"id": "exec:./bin/run.sh", "config": {"temperature": 0.2, "basePath": "."},
                     "env": {"MODE": "x"}}},
        ["env is passed in options, not set in the program's environment (as promptfoo)",
         "inputs (multi-variable targets) are not supported: ignored"],
    ),
    (
        ref("file://provider.py"),
        {"provider": "python", "convention": "promptfoo", "file": "provider.py", "options": HERE},
        [],
    ),
    (
        ref("file://lib/my-provider.py:answer", label="Mine", config={"workers": 2},
            options={"id": "file://lib/my-provider.py:answer", "label": "Mine",
                     "config": {"workers": 2}}),
        {"provider": "python", "convention": "promptfoo", "file": "lib/my-provider.py",
         "function": "answer",
         "options": {"id": "file://lib/my-provider.py:answer",
                     "config": {"workers": 2, "basePath": "."}, "env": {}}},
        ["config.workers is passed in options but not applied: coalmine calls the function in "
         "its own process"],
    ),
    (
        ref("python:provider.py:Agent.call_api"),
        {"provider": "python", "convention": "promptfoo", "file": "provider.py",
         "function": "Agent.call_api", "options": HERE},
        [],
    ),
    (
        ref("file://provider.js"),
        {"provider": "javascript", "convention": "promptfoo", "file": "provider.js",
         "options": {"id": "file://provider.js", **HERE}},
        [],
    ),
    (
        ref("file://lib/Agent.MJS", label="JS", config={"temperature": 0.5},
            options={"id": "file://lib/Agent.MJS", "label": "JS", "config": {"temperature": 0.5},
                     "env": {"TOKEN": "t"}}),
        {"provider": "javascript", "convention": "promptfoo", "file": "lib/Agent.MJS",
         "options": {"id": "file://lib/Agent.MJS",
                     "config": {"temperature": 0.5, "basePath": "."}, "env": {"TOKEN": "t"}},
         "label": "JS"},
        ["env is passed in options, not set in the program's environment (as promptfoo)"],
    ),
    (
        ref("providers/agent.ts"),  # promptfoo loads a JavaScript path without file:// too
        {"provider": "javascript", "convention": "promptfoo", "file": "providers/agent.ts",
         "options": {"id": "providers/agent.ts", **HERE}},
        [],
    ),
    (
        ref("openai:gpt-4o", config="file://openai.yaml"),  # type: ignore[arg-type]
        {"provider": "openai", "model": "gpt-4o", "base_url": OPENAI_URL,
         "api_key_env": "OPENAI_API_KEY", "temperature": 0, "max_tokens": 1024},
        ["config is not an object ('file://openai.yaml'): ignored"],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("provider", "agent", "notes"), CASES, ids=[c[0].id for c in CASES])
def test_each_mapping_is_a_valid_agent(
    tmp_path: Path, provider: ProviderRef, agent: dict[str, Any], notes: list[str]
) -> None:
    mapped = map_provider(provider, base_dir=tmp_path)

    assert (mapped.problem, dict(mapped.agent or {}), list(mapped.notes)) == (None, agent, notes)
    if "file" in agent:  # a file an agent names must exist when its config loads
        (tmp_path / agent["file"]).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / agent["file"]).write_text("def call_api(prompt, options, context): ...\n")
    config = load_agents(tmp_path, [mapped], environ={"HOME": "/home/x"})
    loaded = config.agents[mapped.agent_name]
    assert loaded.provider == agent["provider"]
    if "base_url" in agent:
        assert "${" not in loaded.settings.base_url
    if provider.id.startswith("exec:python"):
        assert loaded.settings.argv[-1] == "${HOME}"  # literal, not expanded


def test_environment_variables_choose_the_endpoints(tmp_path: Path) -> None:
    mapped = list(map_providers(
        [ref("openai:gpt-4o"), ref("anthropic:claude-3-5-haiku-latest"), ref("ollama:chat:m")],
        base_dir=tmp_path,
    ))  # fmt: skip
    urls = {"OPENAI_BASE_URL": "http://o/v1", "ANTHROPIC_BASE_URL": "http://a"}
    urls["OLLAMA_BASE_URL"] = "http://gpu:11434"
    for environ, expected in (
        ({}, ["https://api.openai.com/v1", "https://api.anthropic.com", "http://localhost:11434/v1"]),
        (urls, ["http://o/v1", "http://a", "http://gpu:11434/v1"]),
    ):  # fmt: skip
        config = load_agents(tmp_path, mapped, environ)
        got = [a.settings.base_url for a in config.agents.values()]
        assert got == expected


@pytest.mark.parametrize(
    ("provider_id", "reason"),
    [
        ("http://localhost:8080/chat", "promptfoo's HTTP providers template the request"),
        ("https://api.example.com/v1/agent", "promptfoo's HTTP providers"),
        ("webhook:http://localhost/hook", "promptfoo's HTTP providers"),
        ("file://provider.ts:call", "does not load 'file://provider.ts:call': name the file"),
        ("file://provider.js:Provider", "does not load"),
        ("file://provider.jsx", "promptfoo 0.121.20 does not load 'file://provider.jsx'"),
        ("golang:main.go", "promptfoo's Go provider is not supported"),
        ("file://provider.go", "promptfoo's Go provider is not supported"),
        ("ruby:provider.rb", "promptfoo's Ruby provider is not supported"),
        ("bedrock:anthropic.claude-3-haiku", "promptfoo's 'bedrock' provider is not supported"),
        ("vertex:gemini-pro", "promptfoo's 'vertex' provider is not supported"),
        ("openai:embedding:text-embedding-3-small", "is not a chat model"),
        ("openai:completion:gpt-3.5-turbo-instruct", "is not a chat model"),
        ("openai:", "no model"),
        ("anthropic:completion:claude-2", "Text Completions API is not supported"),
        ("anthropic:claude-2.1", "Text Completions API is not supported"),
        ("anthropic:claude-agent-sdk", "Claude Agent SDK"),
        ("anthropic:messages", "no model"),
        ("ollama:embeddings:nomic", "not a chat model"),
        ("exec:", "exec: needs a command"),
        ("file://provider.py:a.b.c", "is not a Python function name"),
    ],
)
def test_unsupported_providers_are_reported_with_a_reason(
    tmp_path: Path, provider_id: str, reason: str
) -> None:
    mapped = map_provider(ref(provider_id, label="L"), base_dir=tmp_path)
    assert mapped.agent is None and mapped.problem is not None
    assert reason in mapped.problem
    assert (mapped.ref_id, mapped.agent_name) == (provider_id, "L")


def test_paths_are_relative_to_the_coalmine_folder(tmp_path: Path) -> None:
    pf, out = tmp_path / "pf", tmp_path / "suite"
    mapped = map_providers(
        [ref("exec:./bin/run.sh a.txt"), ref("exec:python3 agent.py"),
         ref("file://lib/p.py:fn"), ref("file:///abs/p.py")],
        base_dir=pf, out_dir=out,
    )  # fmt: skip
    agents = [m.agent for m in mapped]
    there = {"config": {"basePath": "../pf"}, "env": {}}
    assert agents[0] == {"provider": "command", "argv": ["../pf/bin/run.sh", "a.txt"],
                         "cwd": "../pf", "convention": "promptfoo", "options": there}  # fmt: skip
    assert agents[1] == {"provider": "command", "argv": ["python3", "agent.py"], "cwd": "../pf",
                         "convention": "promptfoo", "options": there}  # fmt: skip
    assert agents[2] == {"provider": "python", "convention": "promptfoo", "file": "../pf/lib/p.py",
                         "function": "fn", "options": there}  # fmt: skip
    assert agents[3] is not None and agents[3]["file"] == "/abs/p.py"


def test_agent_names_are_the_label_or_a_short_id_and_unique(tmp_path: Path) -> None:
    refs = [
        ref("echo"), ref("echo"), ref("openai:gpt-4o", label="echo"), ref("echo", label="echo-2"),
        ref("exec:python3 /srv/agents/agent.py --fast"), ref("file://providers/p.py:fn"),
        ref("python:providers/p.py"), ref("exec:" + "x" * 80),
    ]  # fmt: skip
    names = [m.agent_name for m in map_providers(refs, base_dir=tmp_path)]
    assert names == [
        "echo", "echo-2", "echo-3", "echo-2-2", "exec:python3 agent.py --fast", "p.py:fn",
        "python:p.py", "exec:" + "x" * 54 + "…",
    ]  # fmt: skip
    assert readable_name("openai:chat:gpt-4o") == "openai:chat:gpt-4o"


def test_transform_delay_and_the_map_form_are_carried(tmp_path: Path) -> None:
    provider = ref(
        "my-model", implementation="openai:gpt-4o", transform="output.toUpperCase()", delay=250,
        options={"id": "my-model", "config": {}},
    )  # fmt: skip
    mapped = map_provider(provider, base_dir=tmp_path)
    assert (mapped.ref_id, mapped.key, mapped.agent_name) == ("my-model", "my-model", "my-model")
    assert mapped.agent is not None and mapped.agent["model"] == "gpt-4o"
    assert (mapped.transform, mapped.delay) == ("output.toUpperCase()", 250)
    assert map_provider(ref("echo", label="E"), base_dir=tmp_path).key == "E"


def test_commands_split_as_promptfoo_splits_them() -> None:
    assert split_command("python3  a.py 'two words' \"x y\" --k=v") == [
        "python3", "a.py", "two words", "x y", "--k=v",
    ]  # fmt: skip
    assert split_command("a\\ b 'it''s'") == ["a\\", "b", "it", "s"]  # no escapes, no joining


# --- the fixture: the same scripts, run by promptfoo and by coalmine ------------------------


@pytest.fixture
def fixture_agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[int, Any]:
    """The fixture's providers, mapped into a coalmine.yaml in another folder, built."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    problems = Problems()
    fixture = tmp_path / "suite" / "providers"  # inside the project, whose files it names
    shutil.copytree(FIXTURE, fixture)
    config = load_promptfoo_config(fixture / "promptfooconfig.yaml", problems=problems)
    assert config is not None and not problems.errors
    mapped = list(map_providers(read_providers(config, problems), base_dir=fixture,
                                out_dir=tmp_path / "suite"))  # fmt: skip
    for m in mapped:
        if m.agent is not None and m.agent.get("argv", [""])[0] == "python3":
            if shutil.which("python3") is None:  # pragma: no cover - CI images have python3
                m.agent["argv"][0] = sys.executable  # type: ignore[index]
    loaded = load_agents(tmp_path / "suite", mapped, environ={})
    return {i: build_provider(loaded.agents[m.agent_name]) for i, m in enumerate(mapped)}


def run(provider: Any, row: dict[str, Any]) -> AgentOutput | ProviderError:
    async def main() -> AgentOutput:
        context = CallContext("case", "agent", vars=row["vars"])
        with anyio.fail_after(20):
            return await provider.call(AgentRequest(row["prompt"], context))  # type: ignore[no-any-return]

    try:
        return anyio.run(main)
    except ProviderError as exc:
        return exc


def rows(*providers: int) -> list[dict[str, Any]]:
    found = json.loads((FIXTURE / "promptfoo-output.json").read_text(encoding="utf-8"))
    return [r for r in found if r["promptIdx"] in providers]


EXEC_ROWS = rows(0, 1)


@pytest.mark.parametrize(
    "row", EXEC_ROWS, ids=[f"{r['promptIdx']}-{r['vars']['mode']}" for r in EXEC_ROWS]
)
def test_exec_answers_as_promptfoo_did(fixture_agents: dict[int, Any], row: dict[str, Any]) -> None:
    got = run(fixture_agents[row["promptIdx"]], row)
    if row["failureReason"] == 2:  # promptfoo's ERROR
        assert isinstance(got, ProviderError), row
        if row["vars"]["mode"] == "error":  # stderr and no answer: the stderr is the error
            assert got.reason == row["error"].removeprefix("Error: ")
        else:  # a non-zero exit
            assert got.process_exit_code == 3
    else:
        assert isinstance(got, AgentOutput), (row, got)
        assert got.text == row["output"]  # the arguments, stdin, cwd, trim and ANSI strip


def test_python_answers_as_promptfoo_did(fixture_agents: dict[int, Any]) -> None:
    for row in rows(2, 3, 4):
        got = run(fixture_agents[row["promptIdx"]], row)
        if row["error"] is not None:  # the error key, a raise, or promptfoo's "No output"
            assert isinstance(got, ProviderError), row
            assert got.reason == row["error"].removeprefix("Error: ")
        else:
            assert isinstance(got, AgentOutput), (row, got)
            if isinstance(row["output"], str):
                assert got.text == row["output"]
            else:
                assert json.loads(got.text) == row["output"]
            usage = row["tokenUsage"] or {}
            expected = {f"{k}_tokens": v for k, v in usage.items() if k != "numRequests"}
            assert (got.usage or {}) == expected


def test_a_python_object_answer_is_its_json_text(fixture_agents: dict[int, Any]) -> None:
    (row,) = [r for r in rows(3) if r["vars"]["mode"] == "object"]
    got = run(fixture_agents[3], row)
    assert isinstance(got, AgentOutput)
    assert got.text == '{"greeting":"Hello Ünïcode \\"q\\" ✓","n":1.5,"ok":true,"none":null}'


def test_echo_answers_as_promptfoo_did(fixture_agents: dict[int, Any]) -> None:
    for row in rows(5):
        got = run(fixture_agents[5], row)
        assert isinstance(got, AgentOutput)
        assert got.text == row["output"] == row["prompt"]
        assert row["tokenUsage"] == {"total": 0, "prompt": 0, "completion": 0, "numRequests": 1}
        assert got.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
