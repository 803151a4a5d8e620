"""The ``command`` provider against real subprocess agents (no mocks, real pipes and signals)."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from coalmine.errors import ProviderError
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.providers.command import CommandProvider, CommandSettings
from coalmine.results import AgentOutput
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
