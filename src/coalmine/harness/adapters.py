"""From the chosen entry to what calls it: the agent's line in ``coalmine.yaml``, and an adapter.

An adapter is a small Python script in ``harness/adapters/``, run by coalmine's ``command``
provider with the prompt on stdin, that calls the entry the way production does and prints the
answer. Where the entry is an SDK object (a LangGraph graph, an OpenAI Agents SDK agent) or a
function calling the Claude Agent SDK or Gemini, it also appends every tool call the agent made
to ``$COALMINE_TRAJECTORY``, so ``forbidden-tools`` and the
tool-call graders see the real trajectory. It is the agent-runtime kit's
``harness/adapters/agent.py`` (reviewable, yours to edit; ``kits update`` merges the kit's new
text with your edits), or written by ``init`` beside ``coalmine.yaml`` when that kit is not
adopted.

Entries that need no adapter: an HTTP endpoint (the ``http`` provider posts to it) and an agent
definition file (the ``openai`` or ``anthropic`` provider sends its body as the system prompt).
With no entry, :func:`plan_agent` gives a marked stand-in that fails every case and says which
line to change.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from coalmine.harness.entry import Entry, module_of

__all__ = ["ADAPTERS_DIR", "ADAPTER_PATH", "AgentPlan", "plan_agent"]

ADAPTERS_DIR = "harness/adapters"
ADAPTER_PATH = f"{ADAPTERS_DIR}/agent.py"
"""The adapter's one path: the agent-runtime kit owns it, so the entry may change kind later
(``kits update`` re-renders it) while coalmine.yaml's line stays the same."""
STAND_IN = (
    '{provider: command, argv: ["sh", "-c", "echo \'coalmine: point the agent in'
    " coalmine.yaml at your agent' >&2; exit 2\"]}"
)
_PYTHON_NOTE = (
    "It runs with the python3 on PATH: activate the project's environment first (or say",
    'argv: ["uv", "run", "python", …]).',
)
_CLAUDE_ALIASES = {
    "sonnet": "claude-sonnet-4-5",
    "opus": "claude-opus-4-1",
    "haiku": "claude-haiku-4-5",
    "inherit": "claude-sonnet-4-5",
}


@dataclass(frozen=True)
class AgentPlan:
    """How ``coalmine.yaml``'s agent is called."""

    line: str
    """The agent's settings, a YAML flow mapping."""
    why: str
    entry: Entry | None
    adapter_path: str | None = None
    adapter_text: str | None = None
    notes: tuple[str, ...] = ()
    """Lines for coalmine.yaml's comments: what to check or start first."""

    @property
    def stand_in(self) -> bool:
        """Whether no entry was found: the config holds the stand-in."""
        return self.entry is None


def stand_in(why: str) -> AgentPlan:
    """The marked stand-in: every case fails until its line is changed."""
    return AgentPlan(STAND_IN, why, None)


def plan_agent(root: Path, entries: list[Entry]) -> AgentPlan:
    """The plan for the best entry of ``entries`` (as :func:`find_entries` sorts them)."""
    if not entries:
        return stand_in("nothing showed how the agent runs")
    entry = entries[0]
    if entry.kind == "http-endpoint" and (
        entry.extra.get("framework") == "nextjs" or entry.extra.get("stream")
    ):
        return _route_adapter(entry)  # a streamed answer is read by the adapter
    if entry.kind == "http-endpoint":
        return _http(entry)
    if entry.kind == "agent-definition":
        return _definition(entry)
    if entry.kind == "script" and entry.input == "stdin":  # called as it is: no adapter
        line = f"{{provider: command, argv: {_python_argv(entry.path)}}}"
        return AgentPlan(line, entry.why, entry, notes=_PYTHON_NOTE)
    return _adapter(root, entry)


def _python_argv(adapter: str) -> str:
    return json.dumps(["python3", adapter])


def _adapter(root: Path, entry: Entry) -> AgentPlan:
    path = ADAPTER_PATH
    folder, module = module_of(root, entry.path)
    if entry.kind == "project-script":
        module = entry.extra.get("module", module)
        folder = _package_folder(root, module, entry.path)
    if entry.kind == "langgraph-graph" and entry.extra.get("runtime") == "node":
        body = _LANGGRAPH_JS
    elif entry.kind == "genkit-flow" and entry.extra.get("runtime") == "node":
        body = _FLOW_JS
    elif entry.extra.get("runtime") == "node":
        package = entry.extra.get("package", str(Path(entry.path).parent))
        inside = Path(entry.path).relative_to(package).as_posix() if package != "." else entry.path
        runner = ["npx", "tsx"] if entry.path.endswith((".ts", ".mts", ".tsx")) else ["node"]
        folder, module = package, inside
        values_extra = {"runner": runner}
        body = _NODE_SCRIPT
    elif entry.kind == "langgraph-graph":
        body = _LANGGRAPH
    elif entry.kind == "agents-sdk-agent":
        body = _AGENTS_SDK
    elif entry.kind == "project-script":
        body = _PROJECT_SCRIPT
    elif entry.kind in ("sdk-function", "genkit-flow"):
        body = _FUNCTION
    else:
        body = _SCRIPT
    values: dict[str, object] = {
        "path": entry.path,
        "why": entry.why,
        "folder": folder,
        "module": module,
        "symbol": entry.symbol or "",
        "how": entry.input,
        "script": entry.extra.get("script", Path(entry.path).stem),
        "adapter": path,
        "runner": ["python3"],
        "env": _langgraph_env(root, entry) if entry.kind == "langgraph-graph" else None,
        "param": entry.extra.get("param", ""),
        "field": entry.extra.get("field", ""),
    }
    if entry.extra.get("runtime") == "node" and entry.kind not in (
        "langgraph-graph",
        "genkit-flow",
    ):
        values.update(values_extra)
    text = _header(values) + body.format(**{k: repr(v) for k, v in values.items()})
    line = f"{{provider: command, argv: {_python_argv(path)}}}"
    notes = (f"{path} calls it, as production does (review it).", *_PYTHON_NOTE)
    return AgentPlan(line, entry.why, entry, path, text, notes)


def _langgraph_env(root: Path, entry: Entry) -> object:
    """langgraph.json's ``env`` (a file, relative to the root, or a mapping), or ``None``."""
    config = entry.extra.get("config", "langgraph.json")
    try:
        env = json.loads((root / config).read_text(encoding="utf-8")).get("env")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(env, str):
        return (Path(config).parent / env).as_posix()
    return env if isinstance(env, dict) else None


def _header(values: Mapping[str, object]) -> str:
    written = textwrap.fill(f"Chosen by `coalmine init` because {values['why']}.", width=95)
    return _HEADER.format(written=written, **values)


def _package_folder(root: Path, module: str, file: str) -> str:
    top = module.split(".")[0]
    for folder in ("src", "."):
        if (root / folder / top).is_dir() or (root / folder / f"{top}.py").is_file():
            return folder
    return module_of(root, file)[0]


def _route_adapter(entry: Entry) -> AgentPlan:
    """A Next.js route or a streaming endpoint: the adapter posts as the app's own UI does.

    It reads the answer as it comes: server-sent events, a data stream, JSON or text.
    """
    route = entry.extra.get("route", "/api/chat")
    path = ADAPTER_PATH
    values = {
        "path": entry.path,
        "why": entry.why,
        "adapter": path,
        "url": f"http://127.0.0.1:{_port(entry)}{route}",
        "field": entry.input.partition(":")[2] or "messages",
    }
    text = _header(values) + _ROUTE.format(**{k: repr(v) for k, v in values.items()})
    line = f"{{provider: command, argv: {_python_argv(path)}}}"
    notes = [
        f"{path} posts to {values['url']} (start the app first, e.g. its dev server;",
        "COALMINE_AGENT_URL points it elsewhere) and reads the streamed answer and tool calls.",
    ]
    if entry.extra.get("auth"):
        notes.append(
            "The route answers 401 without a session: set COALMINE_AGENT_COOKIE to a signed-in"
        )
        notes.append("session's Cookie header (read from the environment, never written down).")
    return AgentPlan(line, entry.why, entry, path, text, tuple(notes))


def _http(entry: Entry) -> AgentPlan:
    field = entry.input.partition(":")[2] or "prompt"
    route = entry.extra.get("route", "/")
    port = _port(entry)
    parts = [
        "provider: http",
        f"url: {json.dumps(f'http://127.0.0.1:{port}{route}')}",
        f"body: {{{field}: {json.dumps('{{prompt}}')}}}",
    ]
    if entry.extra.get("response"):
        parts.append(f"response_path: {entry.extra['response']}")
    notes = (
        f"start the app first (it serves {route} on port {port} here: change the url if not);",
        "the answer is read at response_path of its JSON reply.",
    )
    return AgentPlan("{" + ", ".join(parts) + "}", entry.why, entry, notes=notes)


def _port(entry: Entry) -> int:
    """The port the framework's own dev server listens on."""
    return {"flask": 5000, "nextjs": 3000}.get(entry.extra.get("framework", ""), 8000)


def _definition(entry: Entry) -> AgentPlan:
    model = entry.extra.get("model", "inherit")
    if model.startswith(("gpt-", "o1", "o3", "o4")):
        line = (
            f"{{provider: openai, agent_file: {json.dumps(entry.path)}, model: {model},"
            " api_key_env: OPENAI_API_KEY}"
        )
    else:
        name = _CLAUDE_ALIASES.get(model, model if model.startswith("claude") else "")
        name = name or _CLAUDE_ALIASES["inherit"]
        line = (
            f"{{provider: anthropic, agent_file: {json.dumps(entry.path)}, model: {name},"
            " api_key_env: ANTHROPIC_API_KEY}"
        )
    notes = ("its tools are not run here: coalmine sends the definition to the model API.",)
    return AgentPlan(line, entry.why, entry, notes=notes)


_HEADER = '''\
#!/usr/bin/env python3
"""coalmine adapter: calls {path} as production does, one prompt at a time.

Owned by coalmine kit agent-runtime (see harness/manifest.json). Edit freely: `coalmine kits
status` shows your edits and `coalmine kits update` merges kit updates.

{written}
coalmine.yaml's agent runs it (the `command` provider) with the prompt on stdin; the answer goes
to stdout. Try it by hand:  echo "What can you do?" | python3 {adapter}
"""
'''

_TRAJECTORY = '''
def record(name, arguments, call_id=None):
    """Append one tool call to the trajectory file coalmine reads (when it gave one)."""
    target = os.environ.get("COALMINE_TRAJECTORY")
    if not target or not name:
        return
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{{}}")
        except ValueError:
            arguments = {{"raw": arguments}}
    line = {{"type": "tool_call", "name": name, "arguments": arguments or {{}}}}
    if call_id:
        line["id"] = str(call_id)
    with open(target, "a", encoding="utf-8") as f:
        f.write(json.dumps(line, default=str) + "\\n")

'''

_IMPORT = """
import asyncio
import importlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / {folder}))
os.chdir(ROOT)
"""

_LANGGRAPH = (
    _IMPORT
    + """ENV = {env}
"""
    + _TRAJECTORY
    + '''
def text_of(content):
    """A message's text: a string, or the text blocks of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b if isinstance(b, str) else b.get("text", "") for b in content
                       if isinstance(b, (str, dict)))
    return "" if content is None else str(content)


def first_input(graph, prompt):
    """The graph's input: a user message, or its one text field when it takes no messages."""
    try:
        fields = graph.get_input_jsonschema().get("properties", {{}})
    except Exception:  # an older LangGraph, or a schema it cannot build
        fields = {{}}
    if not fields or "messages" in fields:
        return {{"messages": [{{"role": "user", "content": prompt}}]}}
    for name in ("question", "input", "query", "prompt", "task", "topic", "text"):
        if name in fields:
            return {{name: prompt}}
    return {{next(iter(fields)): prompt}}


def load_env(env):
    """langgraph.json's "env" (a file or a mapping), as `langgraph dev` reads it; yours wins."""
    if isinstance(env, dict):
        for key, value in env.items():
            os.environ.setdefault(key, str(value))
    elif isinstance(env, str) and (ROOT / env).is_file():
        for line in (ROOT / env).read_text(encoding="utf-8").splitlines():
            key, sep, value = line.strip().removeprefix("export ").partition("=")
            if sep and key and not key.startswith("#"):
                os.environ.setdefault(key.strip(), value.strip().strip(chr(34) + chr(39)))


def default_context(graph):
    """The graph's context, built from its context_schema's defaults as the server does."""
    schema = getattr(graph, "context_schema", None)
    schema = schema or getattr(getattr(graph, "builder", None), "context_schema", None)
    if schema is None:
        return None
    try:
        return schema()
    except TypeError:  # a field without a default: the graph must be given one
        return None


def main():
    prompt = sys.stdin.read()
    load_env(ENV)
    graph = getattr(importlib.import_module({module}), {symbol})
    if not hasattr(graph, "ainvoke") and callable(graph):
        graph = graph()  # a function that builds the graph
    context = default_context(graph)
    extra = {{"context": context}} if context is not None else {{}}
    state = asyncio.run(graph.ainvoke(first_input(graph, prompt), **extra))
    messages = state.get("messages", []) if isinstance(state, dict) else []
    for message in messages:
        for call in getattr(message, "tool_calls", None) or []:
            record(call.get("name"), call.get("args"), call.get("id"))
    if messages:
        print(text_of(getattr(messages[-1], "content", messages[-1])))
    elif isinstance(state, dict):
        keys = ("answer", "output", "response", "generation", "result")
        print(next((str(state[k]) for k in keys if k in state), json.dumps(state, default=str)))
    else:
        print(state)


if __name__ == "__main__":
    main()
'''
)

_AGENTS_SDK = (
    _IMPORT
    + _TRAJECTORY
    + """
def main():
    from agents import Runner

    prompt = sys.stdin.read()
    agent = getattr(importlib.import_module({module}), {symbol})
    result = Runner.run_sync(agent, prompt)
    for item in result.new_items:
        if getattr(item, "type", "") == "tool_call_item":
            raw = item.raw_item
            get = raw.get if isinstance(raw, dict) else lambda key: getattr(raw, key, None)
            record(get("name"), get("arguments"), get("call_id") or get("id"))
    output = result.final_output
    if hasattr(output, "model_dump_json"):
        output = output.model_dump_json()
    print(output)


if __name__ == "__main__":
    main()
"""
)

_FUNCTION = (
    _IMPORT
    + _TRAJECTORY
    + '''
import contextlib
import inspect
import io
import typing

PARAM = {param}
SEEN = set()


def watch(message):
    """Record the tool calls a message carries (Claude Agent SDK blocks, Gemini calls), once."""
    calls = [(getattr(b, "name", None), getattr(b, "input", None), getattr(b, "id", None))
             for b in getattr(message, "content", None) or [] if hasattr(b, "input")]
    calls += [(getattr(c, "name", None), getattr(c, "args", None), getattr(c, "id", None))
              for c in getattr(message, "function_calls", None) or []]
    for name, arguments, call_id in calls:
        key = call_id or (name, json.dumps(arguments, sort_keys=True, default=str))
        if key not in SEEN:
            SEEN.add(key)
            record(name, arguments, call_id)
    return message


def watch_claude_agent_sdk():
    """Let the Claude Agent SDK's messages pass through watch() on their way to the function.

    Done before the module is imported, so its `from claude_agent_sdk import query` gets the
    watched one; the function still sees every message, unchanged.
    """
    try:
        import claude_agent_sdk as sdk
    except ImportError:
        return
    query, receive = sdk.query, sdk.ClaudeSDKClient.receive_messages

    async def watched_query(*args, **kwargs):
        async for message in query(*args, **kwargs):
            yield watch(message)

    async def watched_receive(self):
        async for message in receive(self):
            yield watch(message)

    sdk.query = watched_query
    sdk.ClaudeSDKClient.receive_messages = watched_receive


def argument(function, prompt):
    """The prompt as the parameter takes it: a string, or a pydantic model of one field."""
    try:
        kind = typing.get_type_hints(inspect.unwrap(function)).get(PARAM)
    except Exception:  # annotations it cannot resolve: a string it is
        kind = None
    fields = getattr(kind, "model_fields", None)
    if not fields:
        return prompt
    names = ("question", "prompt", "query", "message", "input", "text", "topic", "task")
    texts = [n for n, f in fields.items() if getattr(f, "annotation", None) is str]
    name = next((n for n in names if n in fields), (texts or list(fields))[0])
    return kind(**{{name: prompt}})


def text_of(value):
    """The answer in what the function gave back."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "".join(value)  # streamed tokens
    if isinstance(value, (list, tuple)):  # messages: the result, else the last text said
        for message in reversed(value):
            if isinstance(getattr(message, "result", None), str):
                return message.result
        texts = [text_of(m) for m in value]
        return next((t for t in reversed(texts) if t), "")
    for key in ("result", "text", "final_output", "output_text", "output", "answer"):
        found = getattr(value, key, None)
        if isinstance(found, str):
            return found
    content = getattr(value, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(getattr(b, "text", "") or "" for b in content)
    if hasattr(value, "model_dump_json"):
        return value.model_dump_json()
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return str(value)


async def call(function, prompt):
    value = function(**{{PARAM: argument(function, prompt)}})
    if inspect.isawaitable(value):
        value = await value
    if hasattr(value, "__aiter__"):
        value = [watch(message) async for message in value]
    elif inspect.isgenerator(value):
        value = [watch(message) for message in value]
    else:
        watch(value)
    return value


def main():
    prompt = sys.stdin.read()
    watch_claude_agent_sdk()
    function = getattr(importlib.import_module({module}), {symbol})
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # its prints are the answer only if it returns None
        value = asyncio.run(call(function, prompt))
    if value is None:
        print(printed.getvalue().strip())
    else:
        sys.stderr.write(printed.getvalue())
        print(text_of(value))


if __name__ == "__main__":
    main()
'''
)

_RUN = '''
def arguments(how, prompt):
    """The command line that hands the prompt over as the entry reads it."""
    if how == "argv":
        return [prompt]
    if how.startswith("option:"):
        return [how.partition(":")[2], prompt]
    return []


def main():
    prompt = sys.stdin.read()
    how = {how}
    stdin = prompt if how == "stdin" else None
    argv = [*RUNNER, *ENTRY, *arguments(how, prompt.rstrip("\\n"))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / {folder}), *filter(None, [os.environ.get("PYTHONPATH")])]))
    try:
        done = subprocess.run(argv, input=stdin, text=True, cwd=CWD, env=env)
    except OSError as exc:
        sys.exit(f"cannot run {{argv[0]}}: {{exc}}")
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
'''

_SCRIPT = (
    """
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CWD = ROOT
RUNNER = [sys.executable]
ENTRY = [str(ROOT / {path})]
"""
    + _RUN
)

_NODE_SCRIPT = (
    """
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CWD = ROOT / {folder}  # the package: its node_modules and its tsconfig
RUNNER = {runner}
ENTRY = [{module}]
"""
    + _RUN
)

_PROJECT_SCRIPT = (
    """
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CWD = ROOT
RUNNER = [sys.executable]
# the console script {script}: its function, called with sys.argv as the installed command sees it
ENTRY = ["-c", "import sys; from " + {module} + " import " + {symbol}
         + " as main; sys.argv[0] = " + repr({script}) + "; sys.exit(main())"]
"""
    + _RUN
)

_ROUTE = (
    """
import json
import os
import sys
import urllib.error
import urllib.request
import uuid

URL = os.environ.get("COALMINE_AGENT_URL") or {url}
FIELD = {field}
"""
    + _TRAJECTORY
    + """
def body(prompt):
    \"\"\"A chat request as the app's UI sends it: one user message, in both message forms.\"\"\"
    if FIELD != "messages":
        return {{FIELD: prompt}}
    message = {{"id": uuid.uuid4().hex, "role": "user", "content": prompt,
               "parts": [{{"type": "text", "text": prompt}}]}}
    return {{"id": uuid.uuid4().hex, "messages": [message]}}


def delta_of(event):
    \"\"\"The text an event carries: an AI SDK text delta, an OpenAI chunk, or a text field.\"\"\"
    if not isinstance(event, dict):
        return event if isinstance(event, str) else ""
    if event.get("type") == "text-delta":
        return event.get("delta") or event.get("textDelta") or ""
    choices = event.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return (choices[0].get("delta") or {{}}).get("content") or ""
    for key in ("delta", "token", "content", "text", "answer", "output"):
        if isinstance(event.get(key), str) and event.get("type") in (None, "text", "token", key):
            return event[key]
    return ""


def read_stream(response):
    \"\"\"The answer's text: a UI message stream (SSE), a data stream (0:"…"), JSON or text.\"\"\"
    kind = response.headers.get("Content-Type", "")
    raw = response.read().decode("utf-8", "replace")
    if "json" in kind:
        data = json.loads(raw)
        for key in ("text", "answer", "output", "response", "content", "message"):
            if isinstance(data, dict) and isinstance(data.get(key), str):
                return data[key]
        return raw
    text = []
    for line in raw.splitlines():
        if line.startswith("data:"):
            payload = line[6:] if line.startswith("data: ") else line[5:]  # one space, as SSE says
            if payload.strip() in ("", "[DONE]"):
                continue
            try:
                event = json.loads(payload)
            except ValueError:
                text.append(payload)  # a plain text token
                continue
            kind_of = event.get("type") if isinstance(event, dict) else None
            if kind_of in ("tool-input-available", "tool-call"):
                record(event.get("toolName"), event.get("input", event.get("args")),
                       event.get("toolCallId"))
            elif kind_of == "error":
                sys.exit("the route streamed an error: " + str(event.get("errorText", event)))
            else:
                text.append(delta_of(event))
        elif "event-stream" in kind:
            continue  # event:, id:, retry: and comments
        elif len(line) > 2 and line[0].isdigit() and line[1] == ":":
            try:
                value = json.loads(line[2:])
            except ValueError:
                text.append(line + "\\n")
                continue
            if line[0] == "0":
                text.append(value)
            elif line[0] == "9":
                record(value.get("toolName"), value.get("args"), value.get("toolCallId"))
        else:
            text.append(line + "\\n")
    return "".join(text).strip()


def main():
    prompt = sys.stdin.read()
    headers = {{"Content-Type": "application/json", "Accept": "text/event-stream, */*"}}
    cookie = os.environ.get("COALMINE_AGENT_COOKIE")
    if cookie:
        headers["Cookie"] = cookie
    request = urllib.request.Request(URL, json.dumps(body(prompt)).encode(), headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
    try:
        with opener.open(request, timeout=300) as response:
            print(read_stream(response))
    except urllib.error.HTTPError as exc:
        said = exc.read(300).decode("utf-8", "replace")
        sys.exit(f"{{URL}} answered HTTP {{exc.code}}: {{said}}")
    except OSError as exc:
        sys.exit(f"cannot reach {{URL}} ({{exc}}): start the app first, or set COALMINE_AGENT_URL")


if __name__ == "__main__":
    main()
"""
)

_GRAPH_JS = r"""
import { appendFileSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [file, name] = process.argv.slice(2);
const mod = await import(pathToFileURL(file).href);
let graph = mod[name] ?? mod.default?.[name];
if (typeof graph === "function" && typeof graph.invoke !== "function") graph = await graph();
const record = (tool, args, id) => {
  const target = process.env.COALMINE_TRAJECTORY;
  if (!target || !tool) return;
  const line = { type: "tool_call", name: tool, arguments: args ?? {} };
  if (id) line.id = String(id);
  appendFileSync(target, JSON.stringify(line) + "\n");
};
const prompt = readFileSync(0, "utf8");
const state = await graph.invoke({ messages: [{ role: "user", content: prompt }] });
const messages = state?.messages ?? [];
for (const m of messages) for (const c of m.tool_calls ?? []) record(c.name, c.args, c.id);
const content = messages.length ? messages[messages.length - 1].content : undefined;
const text = typeof content === "string" ? content
  : Array.isArray(content) ? content.map((b) => (typeof b === "string" ? b : b.text ?? "")).join("")
  : JSON.stringify(state);
process.stdout.write(text + "\n");
"""

_FLOW_PROGRAM = r"""
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [file, name, field] = process.argv.slice(2);
const mod = await import(pathToFileURL(file).href);
const flow = mod[name] ?? mod.default?.[name];
const prompt = readFileSync(0, "utf8");
const output = await flow(field ? { [field]: prompt } : prompt);
const text = typeof output === "string" ? output
  : typeof output?.text === "string" ? output.text : JSON.stringify(output);
process.stdout.write(text + "\n");
"""


def _node_runner(what: str, program: str, extra: str) -> str:
    """An adapter that has node (tsx for TypeScript) run a small ES module beside the entry."""
    return (
        """
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / {path}
NAME = {symbol}
"""
        + f"# {what}: a small ES module imports it and calls it, run by node (tsx for\n"
        + """# TypeScript, from the repository's node_modules), with the prompt on stdin.
RUNNER = ["npx", "tsx"] if ENTRY.suffix in (".ts", ".mts", ".tsx") else ["node"]
PROGRAM = """
        + repr(program).replace("{", "{{").replace("}", "}}")  # kept whole by .format
        + """


def main():
    prompt = sys.stdin.read()
    with tempfile.TemporaryDirectory(prefix="coalmine-node-") as folder:
        runner = Path(folder) / "invoke.mjs"
        runner.write_text(PROGRAM, encoding="utf-8")
        argv = [*RUNNER, str(runner), str(ENTRY), NAME"""
        + extra
        + """]
        try:
            done = subprocess.run(argv, input=prompt, text=True, cwd=ROOT)
        except OSError as exc:
            sys.exit(f"cannot run {{RUNNER[0]}}: {{exc}}")
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
"""
    )


_LANGGRAPH_JS = _node_runner("LangGraph.js", _GRAPH_JS, "")
_FLOW_JS = _node_runner("A Genkit flow", _FLOW_PROGRAM, ", {field}")
