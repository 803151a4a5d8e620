"""Where a repository's agent really starts: candidates read from its files, best first.

``init`` calls the agent the way production does, so it looks for what production runs, read
only (nothing is imported or run):

- ``langgraph-graph`` (rank 100): ``langgraph.json`` names it (``"./f.py:graph"``);
- ``agents-sdk-agent`` (90): ``X = Agent(…)`` of the OpenAI Agents SDK, the one ``Runner`` starts;
- ``genkit-flow`` (85): a Genkit flow (``@ai.flow()``, or ``ai.defineFlow(…)`` in TypeScript),
  the unit Genkit serves and runs;
- ``project-script`` (80): a ``[project.scripts]`` function of a package that calls an LLM SDK;
- ``sdk-function`` (75): a function whose question parameter goes into an SDK call in its body
  (``query(prompt=question, …)`` of the Claude Agent SDK, ``generate_content``, ``Runner.run``,
  ``.invoke`` …); one that another such function of its module calls ranks a step lower;
- ``script`` (70): a ``__main__`` script calling an LLM SDK that reads argv or stdin;
- ``http-endpoint`` (60): a FastAPI/Flask POST route in a module that calls an LLM SDK;
- ``agent-definition`` (50): ``.claude/agents/*.md`` with YAML front matter (``name:`` …).

The SDK-level entries outrank the scripts around them because an adapter calling the graph or
the agent object sees its tool calls (the trajectory the safety suites grade); a script shows
only its printed answer. But an agent or function that a script of the repository runs drops to
65, below that script: the script passes what production passes. Within a rank, the shallower
path wins, then the name. "Calls an LLM SDK" is the library table's ``agent-runtime:llm-sdk``
kind, judged per import: a module that only loads documents into a vector store is not an agent.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from coalmine.harness.profile.scan import read_text, walk
from coalmine.harness.profile.signals import FRONT_MATTER, js_imports, python_imports
from coalmine.harness.profile.tools import tool_functions

__all__ = ["Entry", "find_entries", "module_of"]

LLM = "agent-runtime:llm-sdk"


@dataclass(frozen=True)
class Entry:
    """One way the repository's agent can be started."""

    kind: str
    rank: int
    path: str
    """The file, relative to the root, ``/``-separated."""
    why: str
    """A sentence with the evidence (file and line)."""
    line: int | None = None
    symbol: str | None = None
    """The graph, agent object or function (``None`` for a script or a definition file)."""
    input: str = "stdin"
    """How the prompt goes in: ``messages``, ``prompt``, ``argv``, ``option:--question``,
    ``stdin``, ``json-field:<name>``, ``param:<name>``, ``system-prompt``."""
    extra: dict[str, str] = field(default_factory=dict)
    """Kind-specific details: a script's name, a route's path and method, a response key."""

    @property
    def where(self) -> str:
        """``path:line``, or the path."""
        return f"{self.path}:{self.line}" if self.line else self.path


_MAIN_GUARD = re.compile(r"(?m)^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:")
_ARGPARSE_POSITIONAL = re.compile(r"add_argument\(\s*['\"]([A-Za-z_][\w-]*)['\"]")
_ARGPARSE_OPTION = re.compile(
    r"add_argument\(\s*(?:['\"]-\w['\"]\s*,\s*)?['\"](--[\w-]+)['\"]"
    r"(?=[^)]*\b(?:help|type|required|dest)\b)"
)
_ARGV = re.compile(r"\bsys\.argv\[1\]|\bsys\.argv\[1:\]|click\.argument\(|typer\.Argument\(")
_STDIN = re.compile(r"\bsys\.stdin\b|\binput\(")
_AGENT_ASSIGN = re.compile(r"(?m)^([A-Za-z_]\w*)\s*(?::[^=\n]+)?=\s*Agent(?:\[[^\]]*\])?\(")
_RUNNER = re.compile(
    r"Runner\.run(?:_sync|_streamed)?\(\s*(?:starting_agent\s*=\s*)?([A-Za-z_]\w*)"
)
_ROUTE = re.compile(
    r"(?m)^@(\w+)\.(?:(post)\(\s*['\"]([^'\"]+)['\"]"
    r"|route\(\s*['\"]([^'\"]+)['\"][^)]*methods\s*=\s*\[[^\]]*['\"]POST['\"])"
)
_STREAMS = re.compile(
    r"\b(?:StreamingResponse|EventSourceResponse|stream_with_context)\(|text/event-stream"
)
_DEF = re.compile(r"(?m)^(?:async\s+)?def\s+(\w+)\s*\(([^)]*)\)")
_PROMPT_FIELDS = ("message", "question", "prompt", "query", "input", "text", "content")


def module_of(root: Path, rel: str) -> tuple[str, str]:
    """``(sys.path folder, dotted module)`` of a Python file: up through its packages.

    ``src/pkg/graph.py`` with ``src/pkg/__init__.py`` is ``("src", "pkg.graph")``; a file
    outside any package is its own module, found from its folder.
    """
    parts = list(PurePosixPath(rel).parts)
    name = [parts.pop()[: -len(".py")]]
    while parts and (root.joinpath(*parts) / "__init__.py").is_file():
        name.insert(0, parts.pop())
    return "/".join(parts) or ".", ".".join(name)


def find_entries(root: Path) -> list[Entry]:
    """Every candidate entry of the repository at ``root``, the best first."""
    root = root.resolve()
    found: list[Entry] = []
    sources: dict[str, str] = {}
    js_scripts: dict[str, Entry] = {}
    package_jsons: list[str] = []
    for rel, path in walk(root):
        if rel.endswith(".py"):
            text = read_text(path)
            if text:
                sources[rel] = text
        elif rel.endswith(_JS_EXTS) and _JS_ROUTE_FILE.fullmatch(rel):
            entry = _js_route(rel, read_text(path) or "")
            if entry is not None:
                found.append(entry)
        elif rel.endswith(_JS_EXTS + (".cjs", ".tsx")):
            text = read_text(path) or ""
            entry = _js_script(rel, text)
            if entry is not None:
                js_scripts[rel] = entry
            found += _js_flows(rel, text)
        elif rel.rsplit("/", 1)[-1] == "package.json":
            package_jsons.append(rel)
        elif rel.rsplit("/", 1)[-1] == "langgraph.json":
            found += _langgraph(root, rel, read_text(path) or "")
        elif re.fullmatch(r"(?:.*/)?\.claude/agents/[^/]+\.md", rel):
            entry = _agent_definition(rel, read_text(path) or "")
            if entry is not None:
                found.append(entry)
    calls_llm = {rel for rel, text in sources.items() if _calls_llm(text)}
    for rel in sorted(calls_llm):
        text = sources[rel]
        found += _agents_sdk(rel, text)
        if _MAIN_GUARD.search(text):
            entry = _script(rel, text)
            if entry is not None:
                found.append(entry)
        found += _http_routes(rel, text)
        found += _functions(rel, text)
    found += _project_scripts(root, sources, calls_llm)
    found += _package_scripts(root, package_jsons, js_scripts)
    found = _demote_run_agents(found, sources)
    # a script that a graph, a project script or a package script already names is that entry
    named = {e.path for e in found if e.kind in ("langgraph-graph", "project-script")}
    found = [e for e in found if e.kind != "script" or e.path not in named]
    return sorted(found, key=lambda e: (-e.rank, e.path.count("/"), e.path, e.line or 0))


_JS_EXTS = (".ts", ".js", ".mjs", ".mts")
_JS_GRAPH_EXTS = (".ts", ".mts", ".js", ".mjs", ".cjs", ".tsx")
_JS_ROUTE_FILE = re.compile(
    r"(?:.*/)?(?:app|pages)/(?:.*/)?api/(?:.*/)?(?:route|[\w-]+)\.(?:ts|js|mjs|mts)"
)
_JS_POST = re.compile(r"export\s+(?:async\s+function\s+POST\b|const\s+POST\s*=)")
_JS_BODY_FIELDS = re.compile(
    r"\{\s*([\w\s,:?<>\[\]]+?)\s*\}\s*(?::[^=]+)?=\s*await\s+\w+\.json\(\)"
)


_JS_ARGV = re.compile(r"\bprocess\.argv\b")
_JS_STDIN = re.compile(r"\bprocess\.stdin\b|\breadline\b")
_RUNS_FILE = re.compile(
    r"(?:^|\s)(?:tsx|node|ts-node|bun|deno\s+run(?:\s+-\S+)*)\s+(\S+\.[cm]?[jt]sx?)\b"
)


_RUNS = {
    "agents-sdk-agent": r"Runner\.run\w*\(\s*(?:starting_agent\s*=\s*)?{symbol}\b",
    "sdk-function": r"(?<![\w.]){symbol}\(",
    "genkit-flow": r"(?<![\w.]){symbol}\(",
}


def _demote_run_agents(found: list[Entry], sources: dict[str, str]) -> list[Entry]:
    """An agent or function that a script of the repository runs is best called through it.

    The script passes what production passes (a ``context=``, ``max_turns``, a session, the
    options it builds), which an adapter calling the object would leave out; the object stays,
    as an alternative.
    """
    scripts = {e.path for e in found if e.kind in ("script", "project-script")}

    def runner(entry: Entry) -> str | None:
        pattern = _RUNS.get(entry.kind)
        if not pattern or not entry.symbol:
            return None
        wanted = re.compile(pattern.format(symbol=re.escape(entry.symbol)))
        definition = re.compile(rf"\bdef\s+{re.escape(entry.symbol)}\s*\(")  # no call
        return next(
            (p for p in sorted(scripts) if wanted.search(definition.sub("", sources[p]))), None
        )

    runs = {id(e): r for e in found if (r := runner(e))}
    run_files = {e.path for e in found if id(e) in runs and e.kind == "sdk-function"}
    out = []
    for entry in found:
        script = runs.get(id(entry))
        if script is not None:
            why = f"{entry.why}; {script} runs it, as production does, so that is the entry"
            rank = 65
        elif entry.kind == "sdk-function" and entry.path in run_files:
            why, rank = f"{entry.why}; a script runs a function of its module", 64
        else:
            out.append(entry)
            continue
        out.append(replace(entry, rank=rank, why=why))
    return out


def _calls_llm_js(text: str) -> bool:
    return any(LLM in kinds for _, kinds in js_imports(text))


def _js_script(rel: str, text: str) -> Entry | None:
    """A JavaScript/TypeScript program that calls an LLM SDK with the question from argv/stdin."""
    if not _calls_llm_js(text):
        return None
    argv, stdin = _JS_ARGV.search(text), _JS_STDIN.search(text)
    if argv is None and stdin is None:
        return None
    how = "argv" if argv is not None else "stdin"
    said = "its arguments" if how == "argv" else "stdin"
    why = f"{rel} calls an LLM SDK and runs as a program; the question goes in as {said}"
    at = argv if argv is not None else stdin
    line = _line(text, at.start()) if at is not None else None
    return Entry("script", 70, rel, why, line, input=how, extra={"runtime": "node"})


_JS_FLOW = re.compile(
    r"(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:[\w$]+\.)?defineFlow\(\s*"
    r"(?:\{(?P<config>[^{}]*(?:\{[^{}]*\}[^{}]*)*?)\}|['\"`](?P<name>[\w-]+)['\"`])"
)
_JS_OBJECT_FIELD = re.compile(r"inputSchema\s*:\s*z\.object\(\s*\{\s*([A-Za-z_$][\w$]*)\s*:")


def _js_flows(rel: str, text: str) -> list[Entry]:
    """Genkit flows (``const f = ai.defineFlow({name, inputSchema …}, async (input) => …)``)."""
    if "defineFlow" not in text or not any("sdk:genkit" in k for _, k in js_imports(text)):
        return []
    out = []
    for m in _JS_FLOW.finditer(text):
        tail = text[m.start() : m.start() + 600]
        field = _JS_OBJECT_FIELD.search(tail)
        why = f"{rel}:{_line(text, m.start())} defines the Genkit flow {m[1]!r}"
        extra = {"runtime": "node", "field": field[1] if field else ""}
        if field:
            why += f" (its input's {field[1]!r} takes the question)"
        line = _line(text, m.start())
        out.append(Entry("genkit-flow", 85, rel, why, line, m[1], input="param", extra=extra))
    return out


def _package_scripts(
    root: Path, package_jsons: list[str], scripts: dict[str, Entry]
) -> list[Entry]:
    """``package.json`` scripts that run one of ``scripts``: what the repository's users run."""
    out = list(scripts.values())
    for rel in sorted(package_jsons):
        try:
            data = json.loads(read_text(str(root / rel)) or "null")
        except ValueError:
            continue
        commands = data.get("scripts") if isinstance(data, dict) else None
        if not isinstance(commands, dict):
            continue
        folder = PurePosixPath(rel).parent
        for name, command in commands.items():
            if not isinstance(command, str):
                continue
            for m in _RUNS_FILE.finditer(command):
                target = (folder / m[1].removeprefix("./")).as_posix().removeprefix("./")
                script = scripts.get(target)
                if script is None:
                    continue
                why = (
                    f"{rel} runs it as the script {name!r} ({command!r}); {target} calls an LLM"
                    f" SDK and takes the question from {script.input}"
                )
                extra = {**script.extra, "script": str(name), "package": folder.as_posix()}
                out.append(
                    Entry(
                        "project-script",
                        80,
                        target,
                        why,
                        script.line,
                        input=script.input,
                        extra=extra,
                    )  # fmt: skip
                )
    return out


def _js_route(rel: str, text: str) -> Entry | None:
    """A Next.js route handler (``app/**/api/**/route.ts``) that posts to an LLM SDK."""
    post = _JS_POST.search(text)
    if post is None or not _calls_llm_js(text):
        return None
    parts = [p for p in PurePosixPath(rel).parts]
    base = parts.index("app") if "app" in parts else parts.index("pages")
    segments = [p for p in parts[base + 1 : -1] if not (p.startswith("(") and p.endswith(")"))]
    stem = PurePosixPath(rel).stem
    if stem != "route" and stem != "index":
        segments.append(stem)
    route = "/" + "/".join(segments)
    fields = _JS_BODY_FIELDS.search(text)
    named = re.findall(r"\b(\w+)\b\s*(?=[,:}]|$)", fields[1]) if fields else []
    field = next((f for f in ("messages", *_PROMPT_FIELDS) if f in named), "messages")
    streams = bool(
        re.search(
            r"\bstream(?:Text|Object|UI)\b|toUIMessageStreamResponse|"
            r"toDataStreamResponse|toTextStreamResponse|ReadableStream",
            text,
        )
    )
    line = _line(text, post.start())
    why = f"{rel}:{line} handles POST {route} (Next.js) and calls an LLM SDK"
    why += "; it streams its answer" if streams else ""
    return Entry(
        "http-endpoint",
        60,
        rel,
        why,
        line,
        "POST",
        input=f"json-field:{field}",
        extra={
            "route": route,
            "framework": "nextjs",
            "stream": "yes" if streams else "",
            "auth": "yes" if re.search(r"\b401\b|Unauthorized", text) else "",
        },
    )


def _calls_llm(text: str) -> bool:
    return any(LLM in kinds for _, kinds in python_imports(text))


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _langgraph(root: Path, rel: str, text: str) -> list[Entry]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    graphs = data.get("graphs") if isinstance(data, dict) else None
    if not isinstance(graphs, dict):
        return []
    base = PurePosixPath(rel).parent
    out = []
    for name, spec in graphs.items():
        if isinstance(spec, dict):
            spec = spec.get("path")
        if not isinstance(spec, str) or ":" not in spec:
            continue
        file, _, symbol = spec.rpartition(":")
        target = (base / file).as_posix().removeprefix("./")
        target = str(PurePosixPath(*[p for p in PurePosixPath(target).parts if p != "."]))
        if not target.endswith((".py", *_JS_GRAPH_EXTS)) or not (root / target).is_file():
            continue  # a file that is not there
        extra = {"graph": str(name), "config": rel}
        if target.endswith(_JS_GRAPH_EXTS):
            extra["runtime"] = "node"  # LangGraph.js
        out.append(
            Entry(
                "langgraph-graph",
                100,
                target,
                f"{rel} names the graph {name!r}: {spec}",
                symbol=symbol,
                input="messages",
                extra=extra,
            )
        )
    return out


def _agents_sdk(rel: str, text: str) -> list[Entry]:
    if not any("sdk:openai-agents" in kinds for _, kinds in python_imports(text)):
        # the SDK's Agent (its names imported from `agents`), not a class of the repository's
        return []
    agents = {m[1]: m.start() for m in _AGENT_ASSIGN.finditer(text)}
    if not agents:
        return []
    started = [m[1] for m in _RUNNER.finditer(text) if m[1] in agents]
    name = started[0] if started else list(agents)[-1]
    why = f"{rel}:{_line(text, agents[name])} defines the OpenAI Agents SDK agent {name!r}"
    why += " that Runner starts" if started else " (the last one defined: it hands off to the rest)"
    return [
        Entry("agents-sdk-agent", 90, rel, why, _line(text, agents[name]), name, input="prompt")
    ]


_QUESTION_PARAM = re.compile(
    r"^\*?\s*(question|prompt|query|message|user_input|user_message|user_query|task"
    r"|input|text|topic)\b\s*(?::\s*([\w.\[\]| ]+?))?\s*(?:=.*)?$"
)
_SDK_CALL = re.compile(
    r"(?<![\w.])query\(|\.query\(|\.aquery\(|generate_content(?:_stream)?\(|\.generate\("
    r"|\.generate_stream\(|Runner\.run\w*\(|\.a?invoke\(|\.a?stream\(|\.create\(|\.a?chat\("
    r"|\.complete\(|(?<![\w.])a?completion\(|\.send_message\("
    # an agent object's run (LlamaIndex, AutoGen teams, workflows), not asyncio's or subprocess's
    r"|(?i:agent|crew|chain|graph|team|workflow|executor)\w*\.a?run\(|\.kickoff\("
)
_FLOW = re.compile(r"@\w+\.flow\(")
_ROUTE_DECORATOR = re.compile(
    r"@\w+\.(?:get|post|put|patch|delete|route|api_route|websocket)\(|@\w+\.(?:tool|command)\b"
)


def _functions(rel: str, text: str) -> list[Entry]:
    """Functions that take the question and pass it into an SDK call, and Genkit flows."""
    defs = list(_DEF.finditer(text))
    bodies = []
    for i, m in enumerate(defs):  # a body ends at the next line that is not indented
        body = text[m.end() : defs[i + 1].start() if i + 1 < len(defs) else len(text)]
        e = re.compile(r"(?m)^[^\s#@)]").search(body, body.find("\n") + 1)  # not the def line
        bodies.append(body[: e.start()] if e else body)
    genkit = "sdk:genkit" in _sdks(text)
    tools = tool_functions(text)  # the agent's tools are not its entry
    candidates: dict[str, tuple[re.Match[str], str, str, bool]] = {}
    for m, body in zip(defs, bodies, strict=True):
        name, params = m[1], [p.strip() for p in m[2].split(",") if p.strip()]
        if name.startswith(("_", "test")) or not params or name in tools:
            continue
        decorators = text[max(0, m.start() - 300) : m.start()].rstrip().rsplit("\n\n", 1)[-1]
        if _ROUTE_DECORATOR.search(decorators):
            continue  # a web handler: called through its route, with a request
        flow = genkit and bool(_FLOW.search(decorators))
        param = next((q for p in params if (q := _QUESTION_PARAM.match(p))), None)
        if flow:
            first = re.match(r"\*?\s*(\w+)", params[0])
            candidates[name] = (m, body, param[1] if param else first[1] if first else name, True)
        elif param is not None and re.search(rf"\b{param[1]}\b", body):
            candidates[name] = (m, body, param[1], False)
    # an SDK call in the body, or a call of a function of the module that makes one
    reaching = {n for n, (_, body, _, flow) in candidates.items() if flow or _SDK_CALL.search(body)}
    while grown := {
        n
        for n, (_, body, _, _) in candidates.items()
        if n not in reaching and any(re.search(rf"(?<![\w.]){r}\(", body) for r in reaching)
    }:
        reaching |= grown
    out = []
    for name in sorted(reaching, key=lambda n: candidates[n][0].start()):
        m, body, param_name, flow = candidates[name]
        called = any(re.search(rf"(?<![\w.]){name}\(", b) for b in bodies if b is not body)
        line = _line(text, m.start())
        kind, rank = ("genkit-flow", 85) if flow else ("sdk-function", 74 if called else 75)
        what = "is a Genkit flow" if flow else f"passes its {param_name!r} into an SDK call"
        why = f"{rel}:{line} {name}({param_name}) {what}"
        if called and not flow:
            why += " (another function of the module calls it)"
        extra = {"param": param_name, "async": "yes" if m[0].startswith("async") else ""}
        out.append(
            Entry(kind, rank, rel, why, line, name, input=f"param:{param_name}", extra=extra)
        )
    return out


def _sdks(text: str) -> set[str]:
    return {k for _, kinds in python_imports(text) for k in kinds}


def _script_input(text: str) -> str | None:
    positional = _ARGPARSE_POSITIONAL.search(text)
    if positional:
        return "argv"
    option = _ARGPARSE_OPTION.search(text)
    if option and re.search(r"question|query|prompt|message|input|text|task", option[1]):
        return f"option:{option[1]}"
    if _ARGV.search(text):
        return "argv"
    if _STDIN.search(text):
        return "stdin"
    return None


def _script(rel: str, text: str) -> Entry | None:
    how = _script_input(text)
    if how is None:
        return None
    said = {"argv": "its first argument", "stdin": "stdin"}.get(how, how.partition(":")[2])
    line = _line(text, m.start()) if (m := _MAIN_GUARD.search(text)) else None
    why = f"{rel} calls an LLM SDK and runs as a script; the question goes in as {said}"
    return Entry("script", 70, rel, why, line, input=how)


def _http_routes(rel: str, text: str) -> list[Entry]:
    out = []
    for m in _ROUTE.finditer(text):
        route = m[3] or m[4]
        after = text[m.end() :]
        fn = _DEF.search(after)
        body = after[fn.end() : fn.end() + 2000] if fn else ""
        fields = [f for f in _PROMPT_FIELDS if re.search(rf"\b{f}\b", (fn[2] if fn else "") + body)]
        model = re.search(r"(\w+)\s*:\s*([A-Z]\w*)", fn[2]) if fn else None
        if model:
            declared = re.search(rf"(?ms)^class\s+{model[2]}\b[^\n]*:\n(.*?)(?=^\S|\Z)", text)
            if declared:
                named = re.findall(r"(?m)^\s+(\w+)\s*:", declared[1])
                fields = [f for f in _PROMPT_FIELDS if f in named] or named[:1] or fields
        returned = re.search(r"return\s*\{\s*['\"](\w+)['\"]", body)
        framework = "FastAPI" if m[2] else "Flask"
        field_name = fields[0] if fields else "prompt"
        why = (
            f"{rel}:{_line(text, m.start())} serves POST {route} ({framework}); it calls an LLM SDK"
        )
        if _STREAMS.search(body):
            why += " and streams the answer"
        out.append(
            Entry(
                "http-endpoint",
                60,
                rel,
                why,
                _line(text, m.start()),
                fn[1] if fn else None,
                input=f"json-field:{field_name}",
                extra={
                    "route": route,
                    "framework": framework.lower(),
                    "response": returned[1] if returned else "",
                    "stream": "yes" if _STREAMS.search(body) else "",
                },
            )
        )
    return out


def _project_scripts(root: Path, sources: dict[str, str], calls_llm: set[str]) -> list[Entry]:
    out = []
    for rel in sorted(sources.keys() | {"pyproject.toml"}):
        if not rel.endswith("pyproject.toml"):
            continue
        try:
            data = tomllib.loads(read_text(str(root / rel)) or "")
        except (tomllib.TOMLDecodeError, OSError):
            continue
        scripts = data.get("project", {}).get("scripts", {})
        if not isinstance(scripts, dict):
            continue
        for name, target in scripts.items():
            if not isinstance(target, str) or ":" not in target:
                continue
            module, _, function = target.partition(":")
            file = _module_file(sources, PurePosixPath(rel).parent, module)
            if file is None or file not in calls_llm and not _package_calls_llm(file, calls_llm):
                continue
            how = _script_input(sources[file]) or "argv"
            said = {"argv": "its first argument", "stdin": "stdin"}.get(how, how.partition(":")[2])
            why = (
                f"{rel} declares the command {name!r} = {target!r}, whose package calls an LLM"
                f" SDK; the question goes in as {said}"
            )
            out.append(
                Entry(
                    "project-script",
                    80,
                    file,
                    why,
                    symbol=function.strip(),
                    input=how,
                    extra={"script": str(name), "module": module.strip()},
                )
            )
    return out


def _module_file(sources: dict[str, str], base: PurePosixPath, module: str) -> str | None:
    path = module.strip().replace(".", "/")
    for folder in ("", "src/"):
        for candidate in (f"{folder}{path}.py", f"{folder}{path}/__init__.py"):
            rel = (base / candidate).as_posix().removeprefix("./")
            if rel in sources:
                return rel
    return None


def _package_calls_llm(file: str, calls_llm: set[str]) -> bool:
    package = file.rsplit("/", 1)[0] + "/" if "/" in file else ""
    return bool(package) and any(p.startswith(package) for p in calls_llm)


def _agent_definition(rel: str, text: str) -> Entry | None:
    m = FRONT_MATTER.match(text)
    if m is None or not re.search(r"(?m)^name\s*:", m[1]):
        return None
    model = re.search(r"(?m)^model\s*:\s*['\"]?([\w.:/-]+)", m[1])
    why = f"{rel} defines an agent (YAML front matter with name:): its body is the system prompt"
    extra = {"model": model[1]} if model else {}
    return Entry("agent-definition", 50, rel, why, 1, input="system-prompt", extra=extra)
