"""The adapters ``init`` writes, run for real: each calls the repository's own entry.

The agents' SDKs (LangGraph with LangChain's OpenAI model, the OpenAI Agents SDK, the OpenAI
client) are installed in the dev environment and take their base URL from ``OPENAI_BASE_URL``:
every model call goes to the loopback OpenAI-compatible server, which answers in the API the
SDK speaks (chat completions, or the Responses API). The Claude Agent SDK runs the CLI its wheel
carries, which takes ``ANTHROPIC_BASE_URL``: the loopback Anthropic server streams its replies. ``python3`` on PATH is this interpreter,
as it is in a developer's activated environment. A Next.js route is stood in for by a loopback
server that streams the AI SDK's UI message stream, as the route does.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from coalmine.harness.adapters import plan_agent
from coalmine.harness.entry import Entry, find_entries
from tests.harness.test_entry import CLAUDE_FUNCTION, write
from tests.harness.test_repos import copy
from tests.helpers.adapters import run_adapter, write_adapter
from tests.helpers.anthropic_server import FakeAnthropic, tool_use_block
from tests.helpers.anthropic_server import Reply as AnthropicReply
from tests.helpers.cli import run_main
from tests.helpers.openai_server import FakeOpenAI, Reply, tool_call

pytestmark = pytest.mark.slow  # real SDKs imported in real subprocesses


@pytest.fixture
def python_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An environment whose ``python3`` is this interpreter (the project's, activated)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "python3"  # a script, not a link: a venv's python finds its site beside it
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)
    return {**os.environ, "PATH": path}


def adopted(name: str, tmp_path: Path) -> Path:
    root = copy(name, tmp_path)
    code, out = run_main("init", "--apply", "--no-diff", "--root", str(root))
    assert code == 0 and "coalmine.yaml loads" in out, out
    return root


def test_the_langgraph_adapter_runs_the_graph_langgraph_json_names(
    tmp_path: Path, openai_server: FakeOpenAI, python_on_path: dict[str, str]
) -> None:
    root = adopted("langgraph-agent", tmp_path)
    config = (root / "coalmine.yaml").read_text()
    assert 'argv: ["python3", "harness/adapters/agent.py"]' in config
    openai_server.enqueue(
        Reply(text=None, tool_calls=[tool_call("get_current_time", {})]), "It is noon UTC."
    )
    env = {**python_on_path, "OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "sk-t"}
    done, calls = run_adapter(
        root, "harness/adapters/agent.py", "What time is it?", tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It is noon UTC."
    assert calls == [
        {"type": "tool_call", "name": "get_current_time", "arguments": {}, "id": "call_1"}
    ]
    first, second = openai_server.requests
    assert first.path == "/v1/chat/completions" and first.body["model"] == "gpt-4o-mini"
    assert first.body["messages"][-1] == {"role": "user", "content": "What time is it?"}
    assert {t["function"]["name"] for t in first.body["tools"]} == {
        "search", "fetch_page", "get_current_time"
    }  # fmt: skip
    assert second.body["messages"][-1]["role"] == "tool"  # the graph ran the tool, then asked


def test_a_suite_runs_through_the_config_init_wrote(
    tmp_path: Path,
    openai_server: FakeOpenAI,
    python_on_path: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = adopted("langgraph-agent", tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.enqueue(
        "This repository is a LangGraph ReAct agent. Its graph lives in src/react_agent/graph.py,"
        " which langgraph.json names as the entry point, and it answers with web search tools."
    )
    code, out = run_main(
        "eval", "run", "trajectory-goal-success", "--filter", "explain-repository",
        "--root", str(root), "--display", "plain", "--no-judge",
    )  # fmt: skip
    assert code == 0, out
    assert "1 passed" in out or "PASS" in out, out
    assert len(openai_server.requests) == 1, out


def test_the_project_script_adapter_runs_the_console_command(
    tmp_path: Path, openai_server: FakeOpenAI, python_on_path: dict[str, str]
) -> None:
    root = adopted("openai-agents-app", tmp_path)
    assert 'argv: ["python3", "harness/adapters/agent.py"]' in (root / "coalmine.yaml").read_text()
    openai_server.enqueue("Order A1002 shipped yesterday.")
    env = {
        **python_on_path,
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",  # traces would go to the vendor's service
    }
    done, _ = run_adapter(
        root, "harness/adapters/agent.py", "Where is order A1002?", tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Order A1002 shipped yesterday."
    [request] = openai_server.requests
    assert request.path == "/v1/responses"  # the Agents SDK's own API, as in production
    assert request.body["input"] == [{"content": "Where is order A1002?", "role": "user"}]
    assert "first point of contact" in request.body["instructions"]  # the triage agent starts


def test_a_script_adapter_hands_the_question_over_as_argv(
    tmp_path: Path, openai_server: FakeOpenAI, python_on_path: dict[str, str]
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "ask.py").write_text(
        "import argparse\nfrom openai import OpenAI\n\n"
        "def main():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('question')\n"
        "    question = parser.parse_args().question\n"
        "    reply = OpenAI().chat.completions.create(\n"
        "        model='gpt-4o-mini', messages=[{'role': 'user', 'content': question}])\n"
        "    print(reply.choices[0].message.content)\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    [entry] = find_entries(root)
    assert (entry.kind, entry.input) == ("script", "argv")
    adapter = write_adapter(root, [entry])
    openai_server.enqueue("Paris.")
    env = {**python_on_path, "OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "sk-t"}
    done, _ = run_adapter(root, adapter, "Capital of France?\n", tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Paris."
    assert openai_server.requests[0].body["messages"] == [
        {"role": "user", "content": "Capital of France?"}
    ]


class _ChatRoute(BaseHTTPRequestHandler):
    """Answers POST /api/chat with an AI SDK UI message stream, as a Next.js route does."""

    bodies: list[Any] = []

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("Content-Length", "0"))
        _ChatRoute.bodies.append(
            (self.path, self.headers.get("Cookie"), json.loads(self.rfile.read(length)))
        )
        events = [
            {"type": "start"},
            {"type": "tool-input-available", "toolCallId": "t1", "toolName": "getTeamPlan",
             "input": {}},
            {"type": "text-delta", "id": "x", "delta": "Your team is on "},
            {"type": "text-delta", "id": "x", "delta": "the Pro plan."},
            {"type": "finish"},
        ]  # fmt: skip
        data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def chat_route() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatRoute)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _ChatRoute.bodies = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/chat"
    finally:
        server.shutdown()
        server.server_close()


def test_the_route_adapter_posts_as_the_chat_ui_and_reads_the_stream(
    tmp_path: Path, chat_route: str, python_on_path: dict[str, str]
) -> None:
    root = adopted("nextjs-saas", tmp_path)
    config = (root / "coalmine.yaml").read_text()
    assert 'argv: ["python3", "harness/adapters/agent.py"]' in config
    assert "COALMINE_AGENT_COOKIE" in config  # the route answers 401 without a session
    env = {**python_on_path, "COALMINE_AGENT_URL": chat_route, "COALMINE_AGENT_COOKIE": "s=1"}
    done, calls = run_adapter(root, "harness/adapters/agent.py", "Which plan?", tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Your team is on the Pro plan."
    assert calls == [{"type": "tool_call", "name": "getTeamPlan", "arguments": {}, "id": "t1"}]
    [(path, cookie, body)] = _ChatRoute.bodies
    assert path == "/api/chat" and cookie == "s=1"
    [message] = body["messages"]
    assert message["role"] == "user" and message["parts"] == [
        {"type": "text", "text": "Which plan?"}
    ]


def test_an_unreachable_route_is_a_clear_error(
    tmp_path: Path, python_on_path: dict[str, str]
) -> None:
    root = adopted("nextjs-saas", tmp_path)
    env = {**python_on_path, "COALMINE_AGENT_URL": "http://127.0.0.1:9/api/chat"}
    done, _ = run_adapter(root, "harness/adapters/agent.py", "hi", tmp_path, env=env)
    assert done.returncode == 1
    assert "cannot reach http://127.0.0.1:9/api/chat" in done.stderr
    assert "Traceback" not in done.stderr


def test_entries_are_found_without_the_sdks(tmp_path: Path) -> None:
    """The entry finder reads files only: a repository whose SDK is not installed is fine."""
    entries: list[Entry] = find_entries(copy("claude-agent-monorepo", tmp_path))
    assert entries[0].kind == "project-script" and entries[0].extra["runtime"] == "node"
    plan = plan_agent(tmp_path / "claude-agent-monorepo", entries)
    assert plan.adapter_text is not None
    assert "RUNNER = ['npx', 'tsx']" in plan.adapter_text
    assert "CWD = ROOT / 'demos/research-agent'" in plan.adapter_text


def test_the_function_adapter_runs_the_claude_agent_sdk_and_records_its_tool_calls(
    tmp_path: Path, python_on_path: dict[str, str]
) -> None:
    root = write(tmp_path / "repo", {"support/agent.py": CLAUDE_FUNCTION})
    adapter = write_adapter(root)
    home = tmp_path / "home"  # the CLI keeps its settings and sessions under HOME
    home.mkdir()
    with FakeAnthropic() as server:
        server.enqueue(
            AnthropicReply(blocks=[tool_use_block("mcp__shop__refund_order", {"order_id": "A1"})]),
            "Refunded order A1 in full.",
        )
        env = {
            **python_on_path,
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        done, calls = run_adapter(root, adapter, "Refund order A1, please.", tmp_path, env=env)
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Refunded order A1 in full."
    assert calls == [
        {
            "type": "tool_call",
            "name": "mcp__shop__refund_order",
            "arguments": {"order_id": "A1"},
            "id": "toolu_01",
        }
    ]
    first, second = requests
    assert first.body["stream"] is True
    assert "You run the shop's support desk." in json.dumps(first.body["system"])
    assert "Refund order A1, please." in json.dumps(first.body["messages"][0])
    # the SDK ran the repository's own tool and sent its result back
    assert "refunded A1" in json.dumps(second.body["messages"][-1])


def test_the_function_adapter_builds_a_model_argument_and_reads_a_generator(
    tmp_path: Path, openai_server: FakeOpenAI, python_on_path: dict[str, str]
) -> None:
    root = write(
        tmp_path / "repo",
        {
            "helpdesk.py": """
                from openai import OpenAI
                from pydantic import BaseModel

                class Ticket(BaseModel):
                    question: str
                    customer: str = "anonymous"

                def answer(question: Ticket):
                    print("log: answering", question.customer)  # a log line, not the answer
                    reply = OpenAI().chat.completions.create(
                        model="gpt-4o-mini",
                        messages=[{"role": "user", "content": question.question}])
                    for word in reply.choices[0].message.content.split(" "):
                        yield word + " "  # handed on piece by piece, as a UI shows it
            """,
        },
    )
    adapter = write_adapter(root)
    openai_server.enqueue("Reset it from the login page.")
    env = {**python_on_path, "OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "sk-t"}
    done, _ = run_adapter(root, adapter, "How do I reset my password?", tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Reset it from the login page."
    assert "log: answering anonymous" in done.stderr
    [request] = openai_server.requests
    assert request.body["messages"] == [{"role": "user", "content": "How do I reset my password?"}]


class _TokenStream(BaseHTTPRequestHandler):
    """A streaming endpoint: plain-text SSE tokens, or OpenAI chunks (as a proxy forwards)."""

    form = "tokens"
    bodies: list[Any] = []

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("Content-Length", "0"))
        _TokenStream.bodies.append(json.loads(self.rfile.read(length)))
        words = ["Paris", " is", " the", " capital."]
        if _TokenStream.form == "tokens":
            events = [f"data: {w}\n\n" for w in words]
        else:
            events = [
                f"data: {json.dumps({'choices': [{'delta': {'content': w}}]})}\n\n" for w in words
            ]
        data = (": keep-alive\n\n" + "".join(events) + "data: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("form", ["tokens", "openai-chunks"])
def test_the_stream_adapter_reads_a_streaming_endpoints_tokens(
    tmp_path: Path, python_on_path: dict[str, str], form: str
) -> None:
    root = write(
        tmp_path / "repo",
        {
            "server.py": """
                from fastapi import FastAPI
                from fastapi.responses import StreamingResponse
                from openai import OpenAI

                app = FastAPI()

                @app.post("/chat/stream")
                def chat(payload: dict):
                    question = payload["question"]
                    def tokens():
                        for chunk in OpenAI().chat.completions.create(model="gpt-4o-mini",
                                stream=True, messages=[{"role": "user", "content": question}]):
                            yield "data: " + (chunk.choices[0].delta.content or "") + "\\n\\n"
                    return StreamingResponse(tokens(), media_type="text/event-stream")
            """,
        },
    )
    adapter = write_adapter(root)
    _TokenStream.form, _TokenStream.bodies = form, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TokenStream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/chat/stream"
        env = {**python_on_path, "COALMINE_AGENT_URL": url}
        done, _ = run_adapter(root, adapter, "Capital of France?", tmp_path, env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Paris is the capital."
    assert _TokenStream.bodies == [{"question": "Capital of France?"}]
