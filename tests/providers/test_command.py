"""The ``command`` provider against real subprocess agents (no mocks, real pipes and signals)."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from coalmine.errors import ProviderError
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.providers.command import CommandProvider, CommandSettings
from coalmine.results import AgentOutput, ToolCall
from tests.helpers.processes import wait_gone

TRICKY_PROMPT = (
    "---\nid: x\n---\r\nÜnïcødé 🚀 日本語\tTAB  \r\n\n  trailing spaces   \nno newline ->\t "
)


def make(base_dir: Path, code: str, **settings: object) -> CommandProvider:
    argv = [sys.executable, "-c", textwrap.dedent(code)]
    return CommandProvider(
        agent="A", settings=CommandSettings(argv=argv, **settings), base_dir=base_dir
    )


def request(prompt: str) -> AgentRequest:
    return AgentRequest(prompt, CallContext("case-1", "A", "qa"))


def call(provider: CommandProvider, prompt: str = "hello", *, limit: float = 20) -> AgentOutput:
    async def main() -> AgentOutput:
        with anyio.fail_after(limit):
            return await provider.call(request(prompt))

    return anyio.run(main)


def fail(provider: CommandProvider, prompt: str = "hello") -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider, prompt)
    return info.value


def test_agent_receives_exactly_the_prompt_bytes(tmp_path: Path) -> None:
    provider = make(
        tmp_path,
        """
        import sys
        data = sys.stdin.buffer.read()
        open("received.bin", "wb").write(data)
        print("ok")
        """,
    )
    call(provider, TRICKY_PROMPT)
    assert (tmp_path / "received.bin").read_bytes() == TRICKY_PROMPT.encode("utf-8")


def test_stdout_is_the_response_verbatim(tmp_path: Path) -> None:
    provider = make(
        tmp_path,
        """
        import sys
        sys.stdin.buffer.read()
        sys.stdout.buffer.write("# Réponse\\r\\n\\tindented  \\n\\n  last line   ".encode())
        """,
    )
    output = call(provider)
    assert output.text == "# Réponse\r\n\tindented  \n\n  last line   "
    assert output.exit_code == 0
    assert output.warnings == []


def test_echoed_prompt_round_trips(tmp_path: Path) -> None:
    provider = make(tmp_path, "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())")
    assert call(provider, TRICKY_PROMPT).text == TRICKY_PROMPT


def test_exit_1_is_an_error_with_exit_code_and_stderr_tail(tmp_path: Path) -> None:
    provider = make(
        tmp_path,
        """
        import sys
        sys.stdin.read()
        print("partial answer")
        print("boom: the model is unreachable", file=sys.stderr)
        sys.exit(1)
        """,
    )
    error = fail(provider)
    assert error.process_exit_code == 1
    assert error.stderr_tail is not None
    assert "boom: the model is unreachable" in error.stderr_tail
    assert "exited with code 1" in str(error)
    assert (error.agent, error.provider) == ("A", "command")


def test_stderr_tail_keeps_only_the_end(tmp_path: Path) -> None:
    provider = make(
        tmp_path,
        """
        import sys
        sys.stderr.write("noise " * 20000)
        sys.stderr.write("LAST-WORDS")
        sys.exit(3)
        """,
    )
    error = fail(provider)
    assert error.process_exit_code == 3
    assert error.stderr_tail is not None
    assert error.stderr_tail.endswith("LAST-WORDS")
    assert len(error.stderr_tail.encode()) <= 4096


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL])
def test_crash_by_signal_is_reported(tmp_path: Path, sig: signal.Signals) -> None:
    provider = make(tmp_path, f"import os; os.kill(os.getpid(), {int(sig)})")
    error = fail(provider)
    assert "crashed" in str(error)
    assert f"killed by {sig.name}" in str(error)
    assert error.process_exit_code == -int(sig)


def test_timeout_kills_the_agent_and_its_grandchild(tmp_path: Path) -> None:
    provider = make(
        tmp_path,
        """
        import os, subprocess, time
        helper = subprocess.Popen(["sleep", "300"])
        with open("pids.tmp", "w") as f:
            f.write(f"{os.getpid()} {helper.pid}")
        os.replace("pids.tmp", "pids.txt")
        time.sleep(300)
        """,
    )

    async def main() -> None:
        with anyio.fail_after(1):
            await provider.call(request("hang please"))

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        anyio.run(main)
    assert time.monotonic() - started < 3
    pids = [int(p) for p in (tmp_path / "pids.txt").read_text().split()]
    try:
        for pid in pids:
            assert wait_gone(pid), f"process {pid} survived the timeout"
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize("code", [0, 3])
def test_the_answer_ends_when_the_agent_exits_whatever_its_helpers_hold(
    tmp_path: Path, code: int
) -> None:
    # The helper inherits stdout and stderr and outlives the agent: no EOF comes until it dies.
    provider = make(
        tmp_path,
        f"""
        import subprocess, sys
        helper = subprocess.Popen(["sleep", "30"])
        open("helper.pid", "w").write(str(helper.pid))
        print("the answer")
        sys.stdout.flush()
        print("a warning", file=sys.stderr)
        sys.exit({code})
        """,
    )
    started = time.monotonic()
    if code == 0:
        output = call(provider, limit=10)
        assert (output.text, output.stderr_tail) == ("the answer\n", "a warning")
    else:
        error = fail(provider)
        assert (error.process_exit_code, error.stderr_tail) == (3, "a warning")
    assert time.monotonic() - started < 5  # not the helper's 30 s, not a timeout
    helper = int((tmp_path / "helper.pid").read_text())
    try:
        assert wait_gone(helper), "the helper left behind by the agent survived"
    finally:
        try:
            os.kill(helper, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_huge_output_returns_complete(tmp_path: Path) -> None:
    provider = make(
        tmp_path,
        """
        import sys
        sys.stdout.write("".join(f"{i:07d}\\n" for i in range(655360)))
        """,
    )
    expected = "".join(f"{i:07d}\n" for i in range(655360))
    assert len(expected) == 5 * 1024 * 1024
    output = call(provider)
    assert output.text == expected
    assert output.warnings == []


def test_output_above_max_output_bytes_is_cut_with_a_warning(tmp_path: Path) -> None:
    provider = make(tmp_path, "import sys; sys.stdout.write('abcde' * 1000)", max_output_bytes=1000)
    output = call(provider)
    assert output.text == ("abcde" * 1000)[:1000]
    assert len(output.warnings) == 1
    assert "cut at 1000 bytes" in output.warnings[0]
    assert "4000 bytes dropped" in output.warnings[0]


def test_non_utf8_stdout_is_replaced_with_a_warning(tmp_path: Path) -> None:
    provider = make(tmp_path, r"import sys; sys.stdout.buffer.write(b'ok \xff\xfe end \xe6\x97')")
    output = call(provider)
    assert output.text == "ok \ufffd\ufffd end \ufffd"
    assert len(output.warnings) == 1
    assert "not valid UTF-8" in output.warnings[0]
    assert "3 invalid" in output.warnings[0]


def test_a_real_replacement_character_is_not_counted_as_invalid(tmp_path: Path) -> None:
    provider = make(tmp_path, r"import sys; sys.stdout.buffer.write('\ufffd'.encode() + b'\xff')")
    output = call(provider)
    assert output.text == "\ufffd\ufffd"
    assert "1 invalid" in output.warnings[0]


@pytest.mark.parametrize("program", ["/nonexistent/agent-bin", "coalmine-no-such-program-xyz"])
def test_program_not_found_cannot_start(tmp_path: Path, program: str) -> None:
    provider = CommandProvider(
        agent="A", settings=CommandSettings(argv=[program, "--flag"]), base_dir=tmp_path
    )
    error = fail(provider)
    assert "cannot start" in str(error)
    assert program in str(error)
    assert error.process_exit_code is None


def test_program_without_execute_permission_cannot_start(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    provider = CommandProvider(
        agent="A", settings=CommandSettings(argv=["./agent.sh"]), base_dir=tmp_path
    )
    assert "cannot start" in str(fail(provider))


def test_large_prompt_to_a_streaming_echo_does_not_deadlock(tmp_path: Path) -> None:
    # Echo chunk by chunk: a provider that wrote all of stdin before reading stdout would block.
    provider = make(
        tmp_path,
        """
        import sys
        while chunk := sys.stdin.buffer.read1(65536):
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
        """,
    )
    prompt = "".join(f"line {i:06d} ✓\n" for i in range(4 * 1024 * 1024 // 16))
    assert len(prompt.encode()) >= 4 * 1024 * 1024
    output = call(provider, prompt, limit=15)
    assert output.text == prompt


@pytest.mark.parametrize("size", [5, 2 * 1024 * 1024])
def test_agent_that_ignores_stdin_and_exits_0_is_fine(tmp_path: Path, size: int) -> None:
    provider = make(tmp_path, "print('done without reading')")
    output = call(provider, "x" * size)
    assert output.text == "done without reading\n"
    assert output.exit_code == 0


def test_cwd_is_the_base_dir(tmp_path: Path) -> None:
    provider = make(tmp_path, "import os; print(os.getcwd(), end='')")
    assert os.path.realpath(call(provider).text) == os.path.realpath(tmp_path)


def test_cwd_setting_is_relative_to_the_base_dir(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    provider = make(tmp_path, "import os; print(os.getcwd(), end='')", cwd="work")
    assert os.path.realpath(call(provider).text) == os.path.realpath(tmp_path / "work")


@pytest.mark.parametrize("program", ["./agents/run.sh", "agents/run.sh"])
def test_relative_program_resolves_against_base_dir(tmp_path: Path, program: str) -> None:
    script = tmp_path / "agents" / "run.sh"
    script.parent.mkdir()
    script.write_text('#!/bin/sh\nprintf "script:%s|" "$1"\ncat\n')
    script.chmod(0o755)
    assert Path.cwd() != tmp_path
    provider = CommandProvider(
        agent="A", settings=CommandSettings(argv=[program, "arg one"]), base_dir=tmp_path
    )
    assert call(provider, "the prompt").text == "script:arg one|the prompt"


def test_extra_env_reaches_the_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COALMINE_TEST_INHERITED", "from-parent")
    monkeypatch.setenv("COALMINE_TEST_OVERRIDE", "parent-value")
    provider = make(
        tmp_path,
        """
        import os
        print(os.environ["COALMINE_TEST_EXTRA"], os.environ["COALMINE_TEST_INHERITED"],
              os.environ["COALMINE_TEST_OVERRIDE"], sep="|", end="")
        """,
        env={"COALMINE_TEST_EXTRA": "extra value", "COALMINE_TEST_OVERRIDE": "setting-value"},
    )
    assert call(provider).text == "extra value|from-parent|setting-value"


def test_context_is_not_added_to_the_prompt(tmp_path: Path) -> None:
    provider = make(tmp_path, "import sys; sys.stdout.write(repr(sys.stdin.read()))")
    assert call(provider, "exact").text == repr("exact")


# Trajectories

# The agent notes where its trajectory file is (in its cwd), so the test can check it is gone.
WRITE_TRAJECTORY = """
import json, os, sys
path = os.environ["COALMINE_TRAJECTORY"]
open("trajectory-path.txt", "w").write(path)
prompt = sys.stdin.read()
with open(path, "a", encoding="utf-8") as f:
    f.write(LINES)
sys.stdout.write("done: " + prompt)
"""


def trajectory_agent(tmp_path: Path, lines: list[str], **settings: object) -> CommandProvider:
    code = WRITE_TRAJECTORY.replace("LINES", repr("".join(line + "\n" for line in lines)))
    return make(tmp_path, code, **settings)


def written_path(tmp_path: Path) -> Path:
    return Path((tmp_path / "trajectory-path.txt").read_text())


def test_a_three_line_trajectory_with_a_bad_line(tmp_path: Path) -> None:
    lines = [
        json.dumps(
            {"type": "tool_call", "name": "read_file", "arguments": {"path": "é.py"}, "id": "t1"}
        ),
        '{"type": "tool_call", "name": "grep", "arguments": {',
        json.dumps({"type": "tool_call", "name": "grep", "arguments": {"pattern": "TODO"}}),
    ]
    output = call(trajectory_agent(tmp_path, lines), TRICKY_PROMPT)
    assert output.text == "done: " + TRICKY_PROMPT  # the prompt reached stdin untouched
    assert output.tool_calls == [
        ToolCall(name="read_file", arguments={"path": "é.py"}, id="t1"),
        ToolCall(name="grep", arguments={"pattern": "TODO"}),
    ]
    [warning] = output.warnings
    assert warning.startswith("trajectory line 2: not JSON, skipped:")
    assert output.exit_code == 0
    path = written_path(tmp_path)
    assert path.name == "trajectory.jsonl"
    assert not path.exists() and not path.parent.exists()


def test_messages_unknown_types_and_unnamed_calls(tmp_path: Path) -> None:
    lines = [
        json.dumps({"type": "message", "role": "assistant", "content": "Let me look."}),
        "",
        json.dumps({"type": "tool_result", "id": "t1", "output": "..."}),
        json.dumps({"type": "tool_call", "arguments": {"q": 1}}),
        json.dumps({"type": "tool_call", "name": "", "arguments": {}}),
        json.dumps(["tool_call", "search"]),
        json.dumps({"type": "tool_call", "name": "search", "arguments": '{"q": "ü"}', "id": 7}),
        json.dumps({"type": "tool_call", "name": "list_files"}),
        json.dumps({"type": "tool_call", "name": "run", "arguments": ["ls", "-l"]}),
        json.dumps({"name": "not a call: no type"}),
    ]
    output = call(trajectory_agent(tmp_path, lines))
    assert output.tool_calls == [
        ToolCall(name="search", arguments={"q": "ü"}, id="7"),
        ToolCall(name="list_files"),
        ToolCall(name="run", arguments={"_raw": ["ls", "-l"]}),
    ]
    assert output.warnings == [
        "trajectory line 4: a tool_call without a name, skipped",
        "trajectory line 5: a tool_call without a name, skipped",
        "trajectory line 6: not a JSON object, skipped",
        "trajectory line 9: the arguments of tool_call 'run' are not an object; kept as _raw",
    ]


def test_the_trajectory_file_is_fresh_empty_and_private(tmp_path: Path) -> None:
    provider = make(
        tmp_path,
        """
        import os, stat
        path = os.environ["COALMINE_TRAJECTORY"]
        folder = os.path.dirname(path)
        print(path, os.path.getsize(path), oct(stat.S_IMODE(os.stat(folder).st_mode)),
              os.listdir(folder), sep="|", end="")
        """,
    )
    first = call(provider).text.split("|")
    second = call(provider).text.split("|")
    assert first[1:] == ["0", oct(stat.S_IRWXU), "['trajectory.jsonl']"]
    assert first[0] != second[0]
    assert not Path(first[0]).parent.exists() and not Path(second[0]).parent.exists()


def test_no_trajectory_is_no_tool_calls(tmp_path: Path) -> None:
    output = call(make(tmp_path, "print('plain agent')"))
    assert (output.text, output.tool_calls, output.warnings) == ("plain agent\n", [], [])


def test_our_trajectory_path_wins_over_an_env_setting(tmp_path: Path) -> None:
    provider = make(
        tmp_path,
        "import os; print(os.environ['COALMINE_TRAJECTORY'], end='')",
        env={"COALMINE_TRAJECTORY": str(tmp_path / "mine.jsonl")},
    )
    assert call(provider).text.endswith(os.sep + "trajectory.jsonl")
    assert not (tmp_path / "mine.jsonl").exists()


def test_bad_line_warnings_are_capped(tmp_path: Path) -> None:
    lines = ["oops"] * 14 + [json.dumps({"type": "tool_call", "name": "last"})]
    output = call(trajectory_agent(tmp_path, lines))
    assert output.tool_calls == [ToolCall(name="last")]
    assert len(output.warnings) == 11
    assert output.warnings[0] == "trajectory line 1: not JSON, skipped: 'oops'"
    assert output.warnings[-1] == "trajectory: 4 more bad line(s)"


def test_a_trajectory_beyond_max_output_bytes_is_cut(tmp_path: Path) -> None:
    line = json.dumps({"type": "tool_call", "name": "step", "arguments": {"pad": "x" * 60}})
    output = call(trajectory_agent(tmp_path, [line] * 40, max_output_bytes=1000))
    assert 0 < len(output.tool_calls) < 40
    assert output.warnings[-1] == "trajectory cut at 1000 bytes (max_output_bytes)"


def test_an_agent_that_removes_its_trajectory_gets_a_warning(tmp_path: Path) -> None:
    provider = make(tmp_path, "import os; os.remove(os.environ['COALMINE_TRAJECTORY'])")
    output = call(provider)
    assert output.tool_calls == []
    assert output.warnings == ["trajectory file could not be read: No such file or directory"]


def test_the_trajectory_is_removed_after_a_failed_exit(tmp_path: Path) -> None:
    code = WRITE_TRAJECTORY.replace("LINES", repr('{"type": "tool_call", "name": "x"}\n'))
    error = fail(make(tmp_path, code + "sys.exit(4)\n"))
    assert error.process_exit_code == 4
    assert not written_path(tmp_path).parent.exists()


def test_the_trajectory_is_removed_after_a_timeout(tmp_path: Path) -> None:
    provider = make(
        tmp_path,
        """
        import os, time
        path = os.environ["COALMINE_TRAJECTORY"]
        with open(path, "a") as f:
            f.write('{"type": "tool_call", "name": "slow_tool"}\\n')
        with open("pid.tmp", "w") as f:
            f.write(f"{os.getpid()} {path}")
        os.replace("pid.tmp", "pid.txt")
        time.sleep(300)
        """,
    )

    async def main() -> None:
        with anyio.fail_after(1):
            await provider.call(request("hang please"))

    with pytest.raises(TimeoutError):
        anyio.run(main)
    pid, path = (tmp_path / "pid.txt").read_text().split(" ", 1)
    try:
        assert wait_gone(int(pid))
        assert not Path(path).parent.exists()
    finally:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_no_trajectory_folder_is_left_behind_whatever_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    call(make(tmp_path, "print('ok')"))
    fail(make(tmp_path, "import sys; sys.exit(2)"))
    missing = CommandSettings(argv=["coalmine-no-such-program-xyz"])
    fail(CommandProvider(agent="A", settings=missing, base_dir=tmp_path))
    assert list(temp.iterdir()) == []


# --- convention: promptfoo (promptfoo's exec: provider) ---------------------------------------

ARGV_DUMP = """
    import json, os, sys
    json.dump({"args": sys.argv[1:], "stdin": sys.stdin.read(), "cwd": os.getcwd()},
              open("seen.json", "w"))
    print("\\x1b[32m  answer \\x1b[0m\\n")
    """


def test_promptfoo_convention_passes_prompt_options_and_context_as_arguments(
    tmp_path: Path,
) -> None:
    options = {"id": "exec:x", "config": {"t": 0.5, "n": 1.0, "basePath": "."}, "env": {}}
    provider = make(tmp_path, ARGV_DUMP, convention="promptfoo", options=options)

    async def main() -> AgentOutput:
        context = CallContext("c", "A", vars={"name": "Ünï", "n": 2})
        return await provider.call(AgentRequest(TRICKY_PROMPT, context))

    output = anyio.run(main)

    seen = json.loads((tmp_path / "seen.json").read_text())
    base = str(tmp_path.resolve())
    assert seen["args"] == [
        TRICKY_PROMPT,
        '{"id":"exec:x","config":{"t":0.5,"n":1,"basePath":' + json.dumps(base) + '},"env":{}}',
        '{"vars":{"name":"Ünï","n":2}}',
    ]
    assert seen["stdin"] == ""
    assert output.text == "  answer "  # trimmed, then the escapes removed (promptfoo's order)


def test_promptfoo_convention_stderr_without_an_answer_is_a_failure(tmp_path: Path) -> None:
    quiet = "import sys; sys.stderr.write('\\x1b[31mno key\\x1b[0m\\n')"
    error = fail(make(tmp_path, quiet, convention="promptfoo"))
    assert (error.reason, error.kind) == ("no key", "crash")

    talkative = "import sys; sys.stderr.write('warning\\n'); print('fine')"
    output = call(make(tmp_path, talkative, convention="promptfoo"))
    assert (output.text, output.stderr_tail) == ("fine", "warning")

    silent = call(make(tmp_path, "pass", convention="promptfoo"))
    assert silent.text == ""


def test_promptfoo_convention_keeps_exit_codes_and_trajectories(tmp_path: Path) -> None:
    error = fail(make(tmp_path, "import sys; sys.exit(3)", convention="promptfoo"))
    assert error.process_exit_code == 3
    code = """
        import json, os
        with open(os.environ["COALMINE_TRAJECTORY"], "a") as f:
            f.write(json.dumps({"type": "tool_call", "name": "t", "arguments": {}}) + "\\n")
        print("ok")
        """
    output = call(make(tmp_path, code, convention="promptfoo"))
    assert [c.name for c in output.tool_calls] == ["t"]


def test_options_need_the_promptfoo_convention() -> None:
    with pytest.raises(ValueError, match="options are sent only with convention: promptfoo"):
        CommandSettings(argv=["x"], options={"config": {}})
    assert CommandSettings(argv=["x"]).convention == "coalmine"
