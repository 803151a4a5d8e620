"""How init finds the agent's entry, and what it writes for each kind (small repositories)."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from coalmine.harness.adapters import plan_agent
from coalmine.harness.entry import find_entries
from coalmine.harness.init import config_problem, plan_init
from tests.helpers.adapters import run_adapter, write_adapter
from tests.helpers.cli import run_main


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def test_an_agent_file_without_front_matter_is_no_entry_and_init_says_stand_in(
    tmp_path: Path,
) -> None:
    root = write(
        tmp_path,
        {
            ".claude/agents/notes.md": "Just notes on how we prompt.\n",
            "app.py": "import anthropic\n",  # an SDK, but nothing that runs
        },
    )
    assert find_entries(root) == []
    code, out = run_main("init", "--apply", "--no-diff", "--root", str(root))
    assert code == 0, out
    assert "agent app: STAND-IN (nothing showed how the agent runs)" in out
    assert "    app: {provider: command" in out  # the one line to change, on the console
    assert "coalmine.yaml loads; its agent is a STAND-IN" in out
    assert config_problem(root, (root / "coalmine.yaml").read_text()) is None


def test_an_agent_file_with_front_matter_is_called_with_its_model(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            ".claude/agents/reviewer.md": """
                ---
                name: reviewer
                description: Reviews pull requests.
                model: sonnet
                ---
                You review pull requests.
            """,
        },
    )
    [entry] = find_entries(root)
    assert (entry.kind, entry.input) == ("agent-definition", "system-prompt")
    plan = plan_agent(root, [entry])
    assert plan.line == (
        '{provider: anthropic, agent_file: ".claude/agents/reviewer.md", model: claude-sonnet-4-5,'
        " api_key_env: ANTHROPIC_API_KEY}"
    )
    change = next(c for c in plan_init(root).changes if c.path == "coalmine.yaml")
    assert change.after is not None and config_problem(root, change.after) is None


def test_a_vector_store_loader_is_not_the_agent_but_the_query_script_is(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "create_database.py": """
                from langchain_community.document_loaders import DirectoryLoader
                from langchain_community.vectorstores import Chroma
                from langchain_openai import OpenAIEmbeddings

                if __name__ == "__main__":
                    Chroma.from_documents(DirectoryLoader("data").load(), OpenAIEmbeddings())
            """,
            "query_data.py": """
                import argparse
                from langchain_openai import ChatOpenAI

                def main():
                    parser = argparse.ArgumentParser()
                    parser.add_argument("query_text", type=str)
                    print(ChatOpenAI().invoke(parser.parse_args().query_text).content)

                if __name__ == "__main__":
                    main()
            """,
        },
    )
    [entry] = find_entries(root)
    assert (entry.kind, entry.path, entry.input) == ("script", "query_data.py", "argv")
    assert "the question goes in as its first argument" in entry.why


def test_a_class_named_agent_is_not_the_agents_sdk(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "bot.py": """
                import openai

                class Agent:
                    pass

                helper = Agent()
            """,
            "sdk.py": """
                from agents import Agent, Runner, function_tool

                @function_tool
                def refund_order(order_id: str) -> str:
                    return "refunded"

                support = Agent(name="Support", tools=[refund_order])
            """,
        },
    )
    [entry] = find_entries(root)
    assert (entry.kind, entry.path, entry.symbol) == ("agents-sdk-agent", "sdk.py", "support")
    plan = plan_agent(root, [entry])
    assert plan.adapter_text is not None and "Runner.run_sync(agent, prompt)" in plan.adapter_text
    assert "getattr(importlib.import_module('sdk'), 'support')" in plan.adapter_text


def test_a_fastapi_route_is_posted_to_with_its_models_field(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "api.py": """
                from fastapi import FastAPI
                from openai import OpenAI
                from pydantic import BaseModel

                app = FastAPI()

                class Ask(BaseModel):
                    question: str
                    user_id: str | None = None

                @app.post("/ask")
                def ask(body: Ask):
                    answer = OpenAI().responses.create(model="gpt-4o-mini", input=body.question)
                    return {"answer": answer.output_text}
            """,
        },
    )
    [entry] = find_entries(root)
    assert (entry.kind, entry.input, entry.extra["route"]) == (
        "http-endpoint", "json-field:question", "/ask"
    )  # fmt: skip
    plan = plan_agent(root, [entry])
    assert plan.line == (
        '{provider: http, url: "http://127.0.0.1:8000/ask", body: {question: "{{prompt}}"},'
        " response_path: answer}"
    )
    change = next(c for c in plan_init(root).changes if c.path == "coalmine.yaml")
    assert change.after is not None and config_problem(root, change.after) is None


def test_the_most_specific_entry_wins_and_the_others_are_listed(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "langgraph.json": '{"graphs": {"agent": "./agent/graph.py:graph"}}\n',
            "agent/__init__.py": "",
            "agent/graph.py": "from langgraph.graph import StateGraph\ngraph = None\n",
            "chat.py": """
                import sys
                import openai

                if __name__ == "__main__":
                    print(sys.stdin.read())
            """,
        },
    )
    entries = find_entries(root)
    assert [(e.kind, e.path) for e in entries] == [
        ("langgraph-graph", "agent/graph.py"),
        ("script", "chat.py"),
    ]
    config = next(c for c in plan_init(root).changes if c.path == "coalmine.yaml").after
    assert config is not None
    assert "# Chosen because langgraph.json names the graph 'agent'" in config
    assert "#   script chat.py:4: chat.py calls an LLM SDK" in config


GRAPH_REPO = {
    "langgraph.json": '{"graphs": {"agent": "./agent/graph.py:graph"}}\n',
    "agent/__init__.py": "",
    "agent/graph.py": "from langgraph.graph import StateGraph\ngraph = None\n",
}


def test_the_adapter_is_owned_by_the_agent_runtime_kit(tmp_path: Path) -> None:
    root = write(tmp_path / "repo", GRAPH_REPO)
    code, out = run_main("init", "--apply", "--no-diff", "--root", str(root))
    assert code == 0, out
    assert "create    harness/adapters/agent.py  (agent-runtime)" in out
    manifest = json.loads((root / "harness/manifest.json").read_text())
    [kit] = manifest["kits"]
    assert "harness/adapters/agent.py" in {f["path"] for f in kit["files"]}
    adapter = (root / "harness/adapters/agent.py").read_text()
    assert adapter.startswith("#!/usr/bin/env python3\n") and "Owned by coalmine kit" in adapter
    assert 'argv: ["python3", "harness/adapters/agent.py"]' in (root / "coalmine.yaml").read_text()
    (root / "harness/adapters/agent.py").write_text(adapter + "# mine\n")
    status = run_main("kits", "status", "--root", str(root))[1]
    assert "harness/adapters/agent.py" in status and "edited" in status


def test_without_the_agent_runtime_kit_init_writes_the_adapter_itself(tmp_path: Path) -> None:
    root = write(tmp_path / "repo", GRAPH_REPO)
    plan = plan_init(root, kits=["rag-system"])
    [adapter] = [c for c in plan.changes if c.path == "harness/adapters/agent.py"]
    assert adapter.kit == "" and adapter.action == "create"
    assert adapter.after is not None and "Written by `coalmine init`" in adapter.after
    assert "Owned by coalmine kit" not in adapter.after


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_a_langgraph_js_graph_is_invoked_through_node(tmp_path: Path) -> None:
    root = write(
        tmp_path / "repo",
        {
            "langgraph.json": '{"graphs": {"agent": "./src/graph.mjs:graph"}}\n',
            "src/graph.mjs": """
                export const graph = {  // stands in for a compiled StateGraph: invoke(state)
                  async invoke(input) {
                    const q = input.messages[0].content.trim();
                    return { messages: [
                      input.messages[0],
                      { content: "", tool_calls: [{ name: "search", args: { q }, id: "c1" }] },
                      { content: [{ type: "text", text: "Found: " + q }] },
                    ] };
                  },
                };
            """,
        },
    )
    [entry] = find_entries(root)
    assert (entry.kind, entry.extra.get("runtime"), entry.symbol) == (
        "langgraph-graph", "node", "graph"
    )  # fmt: skip
    adapter = write_adapter(root, [entry])
    done, calls = run_adapter(root, adapter, "refund policy\n", tmp_path, python=sys.executable)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Found: refund policy\n"
    assert calls == [
        {"type": "tool_call", "name": "search", "arguments": {"q": "refund policy"}, "id": "c1"}
    ]


CLAUDE_FUNCTION = """
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, create_sdk_mcp_server, query, tool

    @tool("refund_order", "Refund an order in full", {"order_id": str})
    async def refund_order(args):
        return {"content": [{"type": "text", "text": "refunded " + args["order_id"]}]}

    SHOP = create_sdk_mcp_server("shop", tools=[refund_order])

    def options(query: str) -> ClaudeAgentOptions:
        return ClaudeAgentOptions(system_prompt="You run the shop's support desk.",
                                  mcp_servers={"shop": SHOP}, max_turns=4,
                                  allowed_tools=["mcp__shop__refund_order"])

    async def ask(question: str) -> str:
        answer = ""
        async for message in query(prompt=question, options=options(question)):
            if isinstance(message, ResultMessage):
                answer = message.result or answer
        return answer
"""


def test_a_function_passing_its_question_into_the_claude_agent_sdk_is_the_entry(
    tmp_path: Path,
) -> None:
    root = write(tmp_path, {"support/agent.py": CLAUDE_FUNCTION})
    entries = find_entries(root)
    assert [(e.kind, e.rank, e.symbol, e.input) for e in entries] == [
        ("sdk-function", 75, "ask", "param:question")
    ]  # the tool and the options helper (whose `query` reaches no SDK call) are not entries
    assert entries[0].where == "support/agent.py:14"
    assert "passes its 'question' into an SDK call" in entries[0].why
    plan = plan_agent(root, entries)
    assert plan.line == '{provider: command, argv: ["python3", "harness/adapters/agent.py"]}'
    assert plan.adapter_text is not None
    assert "PARAM = 'question'" in plan.adapter_text
    assert "importlib.import_module('agent'), 'ask')" in plan.adapter_text
    assert "sys.path.insert(0, str(ROOT / 'support'))" in plan.adapter_text
    compile(plan.adapter_text, "agent.py", "exec")


def test_a_helper_the_entry_calls_ranks_below_it_and_a_script_running_it_wins(
    tmp_path: Path,
) -> None:
    root = write(
        tmp_path,
        {
            "bot/core.py": """
                from google import genai

                def generate(text: str) -> str:
                    return genai.Client().models.generate_content(model="gemini-2.5-flash",
                                                                  contents=text).text

                def answer(question: str) -> str:
                    return generate("Answer briefly: " + question)
            """,
        },
    )
    assert [(e.symbol, e.rank) for e in find_entries(root)] == [("answer", 75), ("generate", 74)]
    write(
        root,
        {
            "ask.py": """
                import sys
                from google import genai
                from bot.core import answer

                if __name__ == "__main__":
                    print(answer(sys.argv[1]))
            """,
        },
    )
    entries = find_entries(root)
    assert [(e.kind, e.rank, e.symbol or e.path) for e in entries] == [
        ("script", 70, "ask.py"),
        ("sdk-function", 65, "answer"),
        ("sdk-function", 64, "generate"),  # its module's entry is run by the script
    ]
    assert "ask.py runs it, as production does" in entries[1].why


def test_a_route_handler_and_a_tool_are_not_function_entries(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "app.py": """
                from fastapi import FastAPI
                from langchain_core.tools import tool
                from openai import OpenAI

                app = FastAPI()

                @tool
                def search(query: str) -> str:
                    \"\"\"Search the knowledge base.\"\"\"
                    return OpenAI().responses.create(model="gpt-4o-mini", input=query).output_text

                @app.post("/chat")
                async def chat(message: str):
                    return {"reply": OpenAI().responses.create(model="gpt-4o-mini",
                                                                input=message).output_text}
            """,
        },
    )
    assert [e.kind for e in find_entries(root)] == ["http-endpoint"]


def test_a_genkit_flow_is_an_entry_with_its_input(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "flows.py": """
                from genkit.ai import Genkit
                from pydantic import BaseModel

                ai = Genkit(model="googleai/gemini-2.5-flash")

                class Trip(BaseModel):
                    destination: str

                @ai.flow()
                async def plan_trip(trip: Trip) -> str:
                    response = await ai.generate(prompt=f"Plan a day in {trip.destination}")
                    return response.text
            """,
        },
    )
    [entry] = find_entries(root)
    assert (entry.kind, entry.rank, entry.symbol, entry.input) == (
        "genkit-flow", 85, "plan_trip", "param:trip"
    )  # fmt: skip
    assert "is a Genkit flow" in entry.why


def test_a_streaming_endpoint_is_read_by_the_route_adapter(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "server.py": """
                from fastapi import FastAPI
                from fastapi.responses import StreamingResponse
                from openai import OpenAI
                from pydantic import BaseModel

                app = FastAPI()

                class Chat(BaseModel):
                    message: str

                @app.post("/chat/stream")
                def chat(body: Chat):
                    def tokens():
                        for chunk in OpenAI().chat.completions.create(
                            model="gpt-4o-mini", stream=True,
                            messages=[{"role": "user", "content": body.message}]):
                            yield "data: " + (chunk.choices[0].delta.content or "") + "\\n\\n"
                    return StreamingResponse(tokens(), media_type="text/event-stream")
            """,
        },
    )
    [entry] = find_entries(root)
    assert (entry.kind, entry.input, entry.extra["stream"]) == (
        "http-endpoint", "json-field:message", "yes"
    )  # fmt: skip
    assert entry.why.endswith("and streams the answer")
    plan = plan_agent(root, [entry])
    assert plan.adapter_text is not None
    assert "or 'http://127.0.0.1:8000/chat/stream'" in plan.adapter_text
    assert "FIELD = 'message'" in plan.adapter_text


def test_a_genkit_js_flow_is_called_through_node_with_its_input_field(tmp_path: Path) -> None:
    root = write(
        tmp_path / "repo",
        {
            # a stand-in for the genkit package (its defineFlow returns the callable flow)
            "node_modules/genkit/package.json": '{"name": "genkit", "type": "module",'
            ' "exports": "./index.js"}\n',
            "node_modules/genkit/index.js": """
                export const z = { object: (shape) => shape, string: () => "string" };
                export const genkit = () => ({ defineFlow: (config, fn) => fn });
            """,
            "src/flows.mjs": """
                import { genkit, z } from "genkit";

                const ai = genkit({ plugins: [] });

                export const supportFlow = ai.defineFlow(
                  { name: "supportFlow", inputSchema: z.object({ question: z.string() }),
                    outputSchema: z.string() },
                  async ({ question }) => "You asked: " + question.trim(),
                );
            """,
        },
    )
    [entry] = find_entries(root)
    assert (entry.kind, entry.rank, entry.symbol, entry.extra) == (
        "genkit-flow", 85, "supportFlow", {"runtime": "node", "field": "question"}
    )  # fmt: skip
    assert entry.where == "src/flows.mjs:5"
    adapter = write_adapter(root, [entry])
    done, _ = run_adapter(root, adapter, "Where is my refund?\n", tmp_path, python=sys.executable)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You asked: Where is my refund?\n"


def test_a_genkit_flow_is_awaited_with_its_input_model(tmp_path: Path) -> None:
    root = write(
        tmp_path / "repo",
        {
            # a stand-in for Genkit: ai.flow() wraps the function, ai.generate answers
            "genkit/__init__.py": "",
            "genkit/ai.py": """
                import functools, types

                class Genkit:
                    def __init__(self, model=None):
                        self.model = model

                    def flow(self):
                        def wrap(fn):
                            @functools.wraps(fn)
                            async def flow(*args, **kwargs):
                                return await fn(*args, **kwargs)
                            return flow
                        return wrap

                    async def generate(self, prompt):
                        return types.SimpleNamespace(text="Plan: " + prompt)
            """,
            "flows.py": """
                from genkit.ai import Genkit
                from pydantic import BaseModel

                ai = Genkit(model="googleai/gemini-2.5-flash")

                class Trip(BaseModel):
                    nights: int = 1
                    destination: str

                @ai.flow()
                async def plan_trip(trip: Trip):
                    response = await ai.generate(prompt=f"a day in {trip.destination.strip()}")
                    return response
            """,
        },
    )
    entries = find_entries(root)
    assert [(e.kind, e.symbol) for e in entries] == [("genkit-flow", "plan_trip")]
    adapter = write_adapter(root, entries)
    done, _ = run_adapter(root, adapter, "Lisbon\n", tmp_path, python=sys.executable)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Plan: a day in Lisbon\n"  # Trip(destination=...) built, .text read


def test_a_function_that_only_runs_a_process_with_its_query_is_no_entry(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "bot.py": """
                import asyncio
                import subprocess
                import sys
                from openai import OpenAI

                def log_query(query: str) -> None:
                    subprocess.run(["logger", query], check=False)

                async def agent_reply(question: str) -> str:
                    return question

                def main(question: str) -> None:
                    asyncio.run(agent_reply(question))

                def answer(question: str) -> str:
                    log_query(question)
                    reply = OpenAI().responses.create(model="gpt-4o-mini", input=question)
                    return reply.output_text

                if __name__ == "__main__":
                    print(answer(sys.argv[1]))
            """,
        },
    )
    entries = find_entries(root)
    assert [(e.kind, e.symbol or e.path) for e in entries] == [
        ("script", "bot.py"),
        ("sdk-function", "answer"),
    ]  # log_query and main reach no SDK call: subprocess.run and asyncio.run are not one
    assert entries[1].rank == 65  # the script runs it
