"""The ``python`` provider: real modules written to disk, imported and called in-process."""

from __future__ import annotations

import inspect
import json
import re
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from coalmine.errors import ProviderError
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.providers.python import PythonProvider, PythonSettings
from coalmine.results import AgentOutput, ToolCall


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A uniquely named package under tmp_path; sys.path and sys.modules are restored after."""
    name = f"agents_{uuid.uuid4().hex}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def write_impl(base_dir: Path, package: str, code: str) -> None:
    (base_dir / package / "impl.py").write_text(textwrap.dedent(code), encoding="utf-8")


def make(base_dir: Path, target: str) -> PythonProvider:
    return PythonProvider(agent="Impl", settings=PythonSettings(target=target), base_dir=base_dir)


def call(
    provider: PythonProvider, prompt: str = "hello", *, context: CallContext | None = None
) -> AgentOutput:
    ctx = context or CallContext("implement-001-parser", "Impl", "implement", attempt=2)

    async def main() -> AgentOutput:
        with anyio.fail_after(10):
            return await provider.call(AgentRequest(prompt, ctx))

    return anyio.run(main)


def fail(provider: PythonProvider) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider)
    return info.value


def test_sync_function_gets_prompt_and_context(tmp_path: Path, package: str) -> None:
    write_impl(
        tmp_path,
        package,
        """
        import threading

        def run(prompt, context):
            return "|".join([prompt, context.case_id, context.agent, str(context.phase),
                             str(context.attempt), threading.current_thread().name])
        """,
    )
    output = call(make(tmp_path, f"{package}.impl:run"), "exact\r\nprompt ✓ ")
    prompt, case_id, agent, phase, attempt, thread = output.text.split("|")
    assert (prompt, case_id, agent, phase, attempt) == (
        "exact\r\nprompt ✓ ",
        "implement-001-parser",
        "Impl",
        "implement",
        "2",
    )
    assert thread != "MainThread"  # sync agents run in a worker thread, so timeouts still work


def test_base_dir_is_put_on_sys_path(tmp_path: Path, package: str) -> None:
    write_impl(tmp_path, package, "def run(prompt, context):\n    return 'found'\n")
    assert str(tmp_path) not in sys.path
    assert call(make(tmp_path, f"{package}.impl:run")).text == "found"
    assert str(tmp_path) in sys.path


def test_async_function_is_awaited(tmp_path: Path, package: str) -> None:
    write_impl(
        tmp_path,
        package,
        """
        import asyncio

        async def run(prompt, context):
            await asyncio.sleep(0.01)
            return f"async:{prompt}:{context.case_id}"
        """,
    )
    output = call(make(tmp_path, f"{package}.impl:run"), "p")
    assert output.text == "async:p:implement-001-parser"


def test_one_parameter_function_gets_only_the_prompt(tmp_path: Path, package: str) -> None:
    write_impl(tmp_path, package, "def run(prompt):\n    return prompt.upper()\n")
    assert call(make(tmp_path, f"{package}.impl:run"), "shout").text == "SHOUT"


def test_dotted_attribute_target(tmp_path: Path, package: str) -> None:
    write_impl(
        tmp_path,
        package,
        """
        class Agent:
            @staticmethod
            def answer(prompt, context):
                return "static:" + prompt
        """,
    )
    assert call(make(tmp_path, f"{package}.impl:Agent.answer"), "q").text == "static:q"


def test_function_that_raises_is_a_provider_error_with_traceback(
    tmp_path: Path, package: str
) -> None:
    write_impl(
        tmp_path,
        package,
        """
        def helper(prompt):
            raise ValueError(f"cannot parse {prompt!r}")

        def run(prompt, context):
            return helper(prompt)
        """,
    )
    error = fail(make(tmp_path, f"{package}.impl:run"))
    assert "raised ValueError" in str(error)
    assert "cannot parse 'hello'" in str(error)
    assert (error.agent, error.provider) == ("Impl", "python")
    assert error.stderr_tail is not None
    assert "impl.py" in error.stderr_tail
    assert "in helper" in error.stderr_tail
    assert error.stderr_tail.rstrip().endswith("ValueError: cannot parse 'hello'")


def test_async_function_that_raises_is_a_provider_error(tmp_path: Path, package: str) -> None:
    write_impl(
        tmp_path,
        package,
        "async def run(prompt, context):\n    raise KeyError('missing-thing')\n",
    )
    error = fail(make(tmp_path, f"{package}.impl:run"))
    assert "raised KeyError" in str(error)
    assert "missing-thing" in str(error)


@pytest.mark.parametrize(
    ("value", "type_name"), [("42", "int"), ("None", "NoneType"), ("['a']", "list")]
)
def test_non_str_result_is_a_provider_error(
    tmp_path: Path, package: str, value: str, type_name: str
) -> None:
    write_impl(tmp_path, package, f"def run(prompt, context):\n    return {value}\n")
    error = fail(make(tmp_path, f"{package}.impl:run"))
    assert f"returned {type_name}, expected str or {{'output': …, 'tool_calls': […]}}" in str(error)
    assert (error.kind, error.retryable) == ("bad_output", False)


def test_missing_module_cannot_load(tmp_path: Path, package: str) -> None:
    error = fail(make(tmp_path, f"{package}.nowhere:run"))
    assert "cannot load" in str(error)
    assert f"{package}.nowhere:run" in str(error)
    assert "ModuleNotFoundError" in str(error)


def test_module_whose_import_fails_cannot_load(tmp_path: Path, package: str) -> None:
    write_impl(tmp_path, package, "import coalmine_dependency_that_is_absent\n")
    error = fail(make(tmp_path, f"{package}.impl:run"))
    assert "cannot load" in str(error)
    assert "coalmine_dependency_that_is_absent" in str(error)


def test_missing_function_cannot_load(tmp_path: Path, package: str) -> None:
    write_impl(tmp_path, package, "def other(prompt):\n    return ''\n")
    error = fail(make(tmp_path, f"{package}.impl:run"))
    assert "cannot load" in str(error)
    assert "AttributeError" in str(error)


def test_non_callable_target_is_a_provider_error(tmp_path: Path, package: str) -> None:
    write_impl(tmp_path, package, "run = 'not a function'\n")
    assert "is not callable" in str(fail(make(tmp_path, f"{package}.impl:run")))


def test_bad_target_syntax_is_rejected_by_the_settings() -> None:
    with pytest.raises(ValueError):
        PythonSettings(target="agents/impl.py")


def test_sleeping_sync_function_is_abandoned_on_timeout(tmp_path: Path, package: str) -> None:
    write_impl(
        tmp_path,
        package,
        """
        import threading

        release = threading.Event()

        def run(prompt, context):
            release.wait(10)
            return "too late"
        """,
    )
    provider = make(tmp_path, f"{package}.impl:run")

    async def main() -> None:
        with anyio.fail_after(0.5):
            await provider.call(AgentRequest("p", CallContext("c", "Impl")))

    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError):
            anyio.run(main)
        assert time.monotonic() - started < 1.5
    finally:
        sys.modules[f"{package}.impl"].release.set()  # let the abandoned thread end


def test_sys_exit_in_the_agent_is_a_provider_error(tmp_path: Path, package: str) -> None:
    write_impl(tmp_path, package, "import sys\n\ndef run(prompt, context):\n    sys.exit(2)\n")
    try:
        error = fail(make(tmp_path, f"{package}.impl:run"))
    except SystemExit:
        pytest.fail("SystemExit escaped the python provider: it would end coalmine's whole run")
    assert "SystemExit" in str(error)


def test_object_with_async_call_is_awaited(tmp_path: Path, package: str) -> None:
    write_impl(
        tmp_path,
        package,
        """
        class Agent:
            async def __call__(self, prompt, context):
                return "awaited:" + prompt

        agent = Agent()
        """,
    )
    try:
        text = call(make(tmp_path, f"{package}.impl:agent"), "p").text
    except ProviderError as exc:
        text = f"ProviderError: {exc}"
        close_unstarted_coroutines(exc)
    assert text == "awaited:p"


def close_unstarted_coroutines(exc: BaseException) -> None:
    """Close coroutines the provider never awaited, so their warning cannot end the session."""
    tb = exc.__traceback__
    while tb is not None:
        for value in list(tb.tb_frame.f_locals.values()):
            if inspect.iscoroutine(value) and inspect.getcoroutinestate(value) == "CORO_CREATED":
                value.close()
        tb = tb.tb_next


# Trajectories: a dict with the output and the tool calls


def test_dict_return_gives_text_and_tool_calls(tmp_path: Path, package: str) -> None:
    write_impl(
        tmp_path,
        package,
        """
        def run(prompt, context):
            return {
                "output": "Found it in login.py: " + prompt,
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "login.py"}, "id": "t1"},
                    {"name": "grep", "arguments": {"pattern": "café", "flags": ["-n"]}},
                    {"name": "list_files"},
                ],
            }
        """,
    )
    output = call(make(tmp_path, f"{package}.impl:run"), "q")
    assert output.text == "Found it in login.py: q"
    assert output.tool_calls == [
        ToolCall(name="read_file", arguments={"path": "login.py"}, id="t1"),
        ToolCall(name="grep", arguments={"pattern": "café", "flags": ["-n"]}),
        ToolCall(name="list_files"),
    ]
    assert output.warnings == []


def test_async_dict_return_with_tool_call_objects(tmp_path: Path, package: str) -> None:
    write_impl(
        tmp_path,
        package,
        """
        from dataclasses import dataclass, field
        from coalmine.results import ToolCall

        @dataclass
        class MyCall:
            name: str
            arguments: dict = field(default_factory=dict)
            id: str | None = None

        async def run(prompt, context):
            return {
                "output": "",
                "tool_calls": (MyCall("search", {"q": prompt}, "c1"), ToolCall(name="done")),
            }
        """,
    )
    output = call(make(tmp_path, f"{package}.impl:run"), "ü")
    assert output.text == ""
    assert output.tool_calls == [
        ToolCall(name="search", arguments={"q": "ü"}, id="c1"),
        ToolCall(name="done"),
    ]


@pytest.mark.parametrize(
    "value",
    ["{'output': 'x'}", "{'output': 'x', 'tool_calls': []}", "{'output': 'x', 'tool_calls': None}"],
)
def test_dict_return_without_tool_calls(tmp_path: Path, package: str, value: str) -> None:
    write_impl(tmp_path, package, f"def run(prompt):\n    return {value}\n")
    output = call(make(tmp_path, f"{package}.impl:run"))
    assert (output.text, output.tool_calls, output.warnings) == ("x", [], [])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{'text': 'hi'}", "returned a dict with key(s) 'text', expected str or {'output'"),
        (
            "{'output': 'hi', 'tool_call': []}",
            "returned a dict with key(s) 'tool_call', expected str or",
        ),
        ("{'tool_calls': []}", "returned 'output' of type NoneType, expected str or"),
        ("{'output': 3}", "returned 'output' of type int, expected str or"),
        ("{'output': '', 'tool_calls': 'search'}", "returned 'tool_calls' of type str"),
        (
            "{'output': '', 'tool_calls': [{'name': 'a'}, {'arguments': {}}]}",
            "returned tool_calls[1] that is not a tool call (name: Field required)",
        ),
        (
            "{'output': '', 'tool_calls': [{'name': 'a', 'arguments': 'q=1'}]}",
            "returned tool_calls[0] that is not a tool call (arguments: Input should be",
        ),
        ("{'output': '', 'tool_calls': ['search']}", "returned tool_calls[0] that is not"),
    ],
)
def test_a_dict_that_is_not_an_answer_is_bad_output(
    tmp_path: Path, package: str, value: str, message: str
) -> None:
    write_impl(tmp_path, package, f"def run(prompt, context):\n    return {value}\n")
    error = fail(make(tmp_path, f"{package}.impl:run"))
    assert (error.kind, error.retryable) == ("bad_output", False)
    assert message in str(error)


# --- convention: promptfoo (promptfoo's Python provider) -------------------------------------

PROMPTFOO_PROVIDER = """
    import json, os, sys

    def call_api(prompt, options, context):
        return {"output": json.dumps([prompt, options, context, __name__, sys.path[0]]),
                "tokenUsage": {"total": 5, "prompt": 2, "completion": 3}}

    class Agent:
        @staticmethod
        def answer(prompt, options, context):
            return {"output": "class:" + prompt}

    async def fails(prompt, options, context):
        return {"error": "bad input: " + context["vars"]["name"], "output": "ignored"}

    def raises(prompt, options, context):
        raise ValueError("bad " + prompt)

    def nothing(prompt, options, context):
        return {"output": None}

    def shaped(prompt, options, context):
        return {"output": {"reply": prompt, "n": 1.0, "tags": ["x"], "none": None}}

    def listed(prompt, options, context):
        return {"output": [prompt, 2]}
    """


def promptfoo_agent(
    folder: Path, base_dir: Path, function: str | None = None, **settings: Any
) -> PythonProvider:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "my-provider.py").write_text(textwrap.dedent(PROMPTFOO_PROVIDER), encoding="utf-8")
    values: dict[str, Any] = {
        "convention": "promptfoo",
        "file": str(folder.relative_to(base_dir) / "my-provider.py"),
    }
    if function is not None:
        values["function"] = function
    return PythonProvider(
        agent="Impl", settings=PythonSettings(**values, **settings), base_dir=base_dir
    )


@pytest.fixture
def clean_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))


@pytest.mark.usefixtures("clean_path")
def test_promptfoo_convention_calls_call_api_with_json_arguments(tmp_path: Path) -> None:
    options = {"id": "file://p.py", "config": {"t": 1.0, "basePath": "."}, "env": {}}
    provider = promptfoo_agent(tmp_path / "providers", tmp_path, options=options)
    context = CallContext("c", "Impl", vars={"name": "Ünï"})

    output = call(provider, "exact\r\nprompt ✓ ", context=context)

    prompt, got_options, got_context, module, path0 = json.loads(output.text)
    assert prompt == "exact\r\nprompt ✓ "
    assert got_options == {
        "id": "file://p.py",
        "config": {"t": 1, "basePath": str(tmp_path.resolve())},
        "env": {},
    }
    assert got_context == {"vars": {"name": "Ünï"}}
    assert (module, path0) == ("my-provider", str((tmp_path / "providers").resolve()))
    assert output.usage == {"total_tokens": 5, "prompt_tokens": 2, "completion_tokens": 3}
    assert "my-provider" not in sys.modules


@pytest.mark.usefixtures("clean_path")
def test_promptfoo_convention_named_functions_and_failures(tmp_path: Path) -> None:
    def agent(function: str) -> PythonProvider:
        return promptfoo_agent(tmp_path, tmp_path, function)

    assert call(agent("Agent.answer"), "hi").text == "class:hi"
    context = CallContext("c", "Impl", vars={"name": "x"})
    with pytest.raises(ProviderError) as error:
        call(agent("fails"), context=context)
    assert (error.value.reason, error.value.kind) == ("bad input: x", "crash")
    raised = fail(agent("raises"))
    assert raised.reason == "Python error: bad hello"
    assert raised.stderr_tail is not None and "ValueError: bad hello" in raised.stderr_tail
    nothing = fail(agent("nothing"))
    assert (nothing.reason, nothing.kind) == ("No output", "bad_output")
    no_file = PythonSettings(convention="promptfoo", file="nowhere.py")
    lost = fail(PythonProvider(agent="Impl", settings=no_file, base_dir=tmp_path))
    assert (lost.kind, lost.reason) == ("config", f"no Python file {tmp_path / 'nowhere.py'}")
    missing = fail(agent("absent"))
    assert missing.kind == "config" and "Function 'absent' not found" in missing.reason
    assert "call_api, fails, listed, nothing, raises, shaped" in missing.reason


@pytest.mark.usefixtures("clean_path")
def test_promptfoo_convention_keeps_an_object_output_beside_its_json(tmp_path: Path) -> None:
    shaped = call(promptfoo_agent(tmp_path, tmp_path, "shaped"), "hé")
    assert shaped.data == {"reply": "hé", "n": 1.0, "tags": ["x"], "none": None}
    assert shaped.text == '{"reply":"hé","n":1,"tags":["x"],"none":null}'  # JSON.stringify's
    listed = call(promptfoo_agent(tmp_path, tmp_path, "listed"), "p")
    assert (listed.data, listed.text) == (["p", 2], '["p",2]')
    assert AgentOutput.model_validate_json(shaped.model_dump_json()) == shaped
    text = call(promptfoo_agent(tmp_path, tmp_path, "Agent.answer"), "hi")
    assert (text.text, text.data) == ("class:hi", None)
    assert "data" not in text.model_dump()


@pytest.mark.usefixtures("clean_path")
def test_promptfoo_convention_with_a_module_target(tmp_path: Path, package: str) -> None:
    write_impl(tmp_path, package, PROMPTFOO_PROVIDER)
    settings = PythonSettings(convention="promptfoo", target=f"{package}.impl:call_api")
    provider = PythonProvider(agent="Impl", settings=settings, base_dir=tmp_path)
    assert json.loads(call(provider, "p").text)[:3] == ["p", {}, {"vars": {}}]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"file": "p.py"}, "file need convention: promptfoo"),
        ({"target": "a:b", "options": {"x": 1}}, "options need convention: promptfoo"),
        ({}, "target is required"),
        ({"convention": "promptfoo"}, "give either target (module:function) or file"),
        ({"convention": "promptfoo", "file": "p.py", "target": "a:b"}, "give either"),
        ({"convention": "promptfoo", "target": "a:b", "function": "f"}, "function goes with file"),
        ({"convention": "promptfoo", "file": "p.py", "function": "a.b.c"}, "function"),
    ],
)
def test_promptfoo_settings_name_the_code_one_way(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        PythonSettings(**values)
