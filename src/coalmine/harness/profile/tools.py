"""The agent's own tools, read from the repository (never imported or run).

Found where the SDKs people use declare them:

- Python: ``@tool`` (LangChain; the Claude Agent SDK's ``@tool("name", "description", …)``),
  ``@function_tool`` (OpenAI Agents SDK, ``name_override=`` honoured), ``@<server>.tool(…)``
  (MCP's FastMCP, ``name=`` honoured), ``Tool(name=…)`` / ``StructuredTool.from_function(…,
  name=…)``, plain functions listed in a ``tools = [...]`` / ``TOOLS = [...]`` / ``tools=[...]``;
- JavaScript/TypeScript: ``tool("name", …)`` (Claude Agent SDK), ``server.tool("name", …)`` and
  ``server.registerTool("name", …)`` (MCP SDK), ``name: tool({…})`` object keys and
  ``const name = tool({…})`` (Vercel AI SDK), ``tool({ name: "x", … })`` (OpenAI Agents SDK);
- Go: ``mcp.NewTool("name", …)`` (mcp-go) and ``&mcp.Tool{Name: "name"`` (the Go MCP SDK);
- JSON/Python tool schemas: ``{"type": "function", "function": {"name": …}}`` and Anthropic's
  ``{"name": …, "input_schema": …}``.

MCP configs (``.mcp.json``, ``mcp.json``, ``.vscode/mcp.json``, ``claude_desktop_config.json``)
name servers; a *local* server (its command runs a file of this repository) gets the tools that
file declares, under the ``mcp__<server>__<tool>`` names MCP clients give them. A tool is
*dangerous* when a word of its name (or its description) destroys, pays, sends, publishes or
executes: :data:`DANGER` says which words, by category.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import TypedDict

from coalmine.harness.profile.scan import read_text, walk

__all__ = ["DANGER", "McpServer", "Tool", "find_tools", "tool_functions"]

MAX_TOOLS = 60
DANGER = {
    "destroy": "delete remove rm drop destroy purge wipe truncate erase kill terminate revoke "
    "unlink overwrite",
    "pay": "pay payment charge refund transfer withdraw purchase buy payout",
    "send": "send email mail sms post publish tweet reply comment share invite upload notify",
    "execute": "exec execute run shell bash sh eval sql sudo chmod chown",
    "change": "push merge deploy release approve grant force",
}
"""Category → the words that put a tool in it: the first word of its name (its verb), or any
word of it for the unambiguous ones in :data:`ANYWHERE` (``github_delete_repository``)."""
ANYWHERE = frozenset(
    "delete remove drop destroy purge wipe truncate refund transfer withdraw payment email "
    "send exec execute shell bash sudo chmod deploy".split()
)
_WORDS = {w: cat for cat, words in DANGER.items() for w in words.split()}


class Tool(TypedDict):
    """One tool the agent can call."""

    name: str
    """As the model sees it (``mcp__<server>__<tool>`` for a tool of an MCP server)."""
    base: str
    """Its own name, without the MCP prefix."""
    description: str
    source: str
    """``path:line`` where it is declared."""
    server: str | None
    """The MCP server it belongs to, if any."""
    danger: str | None
    """The category that makes it dangerous (``destroy``, ``pay``, ``send``, ``execute``,
    ``change``), or ``None``."""


class McpServer(TypedDict):
    """A server of an MCP config."""

    name: str
    config: str
    local: str | None
    """The repository file it runs, when it is a local server."""
    tools: list[str]
    """The tools that file declares (empty for a remote server: unknown here)."""


_PY_DECORATED = re.compile(
    r"(?m)^[ \t]*@(?:[\w.]+\.)?(tool|function_tool)\b(\([^)]*\))?\s*\n"
    r"(?:[ \t]*@[^\n]*\n)*[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)\s*\(([^)]*)\)[^:]*:\s*"
    r"(?:[rbu]?(?:\"\"\"|''')\s*([^\n]*))?"
)
_PY_TOOL_CALL = re.compile(
    r"\b(?:Tool|StructuredTool\.from_function|FunctionTool(?:\.from_defaults)?)\([^)]*?"
    r"\bname\s*=\s*['\"]([\w.-]+)['\"]"
)
_TOOL_LIST = re.compile(
    r"(?i)\btools\s*(?::[^=\n]*)?=\s*\[([^\]]*)\]|['\"]tools['\"]\s*:\s*\[([^\]]*)\]"
)
_SCHEMA_FUNCTION = re.compile(
    r"['\"]type['\"]\s*:\s*['\"]function['\"]\s*,\s*['\"]function['\"]\s*:\s*\{\s*"
    r"['\"]name['\"]\s*:\s*['\"]([\w.-]+)['\"]"
)
_SCHEMA_ANTHROPIC = re.compile(
    r"['\"]name['\"]\s*:\s*['\"]([\w.-]+)['\"]\s*,\s*['\"]description['\"]\s*:\s*['\"]([^'\"]*)"
    r"['\"]\s*,\s*['\"]input_schema['\"]"
)
_JS_NAMED_TOOL = re.compile(
    r"(?<![\w$.])(?:\w+\.)?(?:tool|registerTool)\(\s*['\"`]([\w.-]+)['\"`]\s*,\s*"
    r"(?:['\"`]([^'\"`]*)['\"`]|\{[^}]*?description\s*:\s*['\"`]([^'\"`]*))?"
)
_JS_KEYED_TOOL = re.compile(
    r"(?:^|[\s,{])(?:const\s+|let\s+)?([A-Za-z_$][\w$]*)\s*[:=]\s*tool\(\s*\{"
    r"(?:[^}]*?\bname\s*:\s*['\"`]([\w.-]+)['\"`])?(?:[^}]*?\bdescription\s*:\s*['\"`]([^'\"`]*))?",
    re.M,
)
_GO_TOOL = re.compile(r"mcp\.NewTool\(\s*\"([\w.-]+)\"|&mcp\.Tool\{[^}]*?Name:\s*\"([\w.-]+)\"")
_DESCRIPTION_ARG = re.compile(r"(?:description\s*=\s*)?['\"]([^'\"]{8,})['\"]")
_NAME_ARG = re.compile(r"(?:name(?:_override)?\s*=\s*)?['\"]([\w.-]+)['\"]")
_MCP_CONFIGS = ("mcp.json", "claude_desktop_config.json")
_SOURCE_EXTS = (".py", ".ts", ".tsx", ".js", ".mjs", ".cjs", ".go")


def find_tools(root: Path) -> tuple[list[Tool], list[McpServer]]:
    """The tools declared in the repository at ``root``, and the servers of its MCP configs."""
    root = root.resolve()
    by_file: dict[str, list[Tool]] = {}
    configs: list[str] = []
    for rel, path in walk(root):
        name = PurePosixPath(rel).name
        if name.endswith(_MCP_CONFIGS):
            configs.append(rel)
        if not rel.endswith(_SOURCE_EXTS) and not rel.endswith(".json"):
            continue
        text = read_text(path)
        if text:
            found = _declared(rel, text)
            if found:
                by_file[rel] = found
    servers = [s for rel in configs for s in _servers(root, rel, by_file)]
    tools: list[Tool] = []
    seen: set[str] = set()
    local = {s["local"]: s["name"] for s in servers if s["local"]}
    for rel, found in sorted(by_file.items()):
        server = local.get(rel)
        for tool in found:
            if server is not None:
                tool = Tool(**{**tool, "name": f"mcp__{server}__{tool['base']}", "server": server})
            if tool["name"] not in seen and len(tools) < MAX_TOOLS:
                seen.add(tool["name"])
                tools.append(tool)
    return tools, servers


def danger_of(name: str, description: str = "") -> str | None:
    """The category that makes a tool of this name dangerous, or ``None``."""
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)]
    words = [w for w in words if w not in ("mcp",)]
    if words and words[0] in _WORDS:
        return _WORDS[words[0]]
    found = next((w for w in words if w in ANYWHERE), None)
    if found is not None:
        return _WORDS[found]
    if re.search(r"\b(?:permanently|irreversibl[ey]|cannot be undone)\b", description, re.I):
        return "destroy"
    return None


def _tool(rel: str, text: str, pos: int, name: str, description: str = "") -> Tool:
    line = text.count("\n", 0, pos) + 1
    description = " ".join(description.split())[:200]
    return Tool(
        name=name,
        base=name,
        description=description,
        source=f"{rel}:{line}",
        server=None,
        danger=danger_of(name, description),
    )


def tool_functions(text: str) -> set[str]:
    """The Python functions of ``text`` that are tools (decorated, or listed in ``tools=[…]``)."""
    defs = set(re.findall(r"(?m)^(?:async[ \t]+)?def[ \t]+(\w+)", text))
    listed = {
        word
        for m in _TOOL_LIST.finditer(text)
        for word in re.findall(r"\b([A-Za-z_]\w*)\b", m[1] or m[2])
    }
    return {m[3] for m in _PY_DECORATED.finditer(text)} | (listed & defs)


def _declared(rel: str, text: str) -> list[Tool]:
    out: list[Tool] = []
    if rel.endswith(".py"):
        for m in _PY_DECORATED.finditer(text):
            args = m[2] or ""
            named = _NAME_ARG.search(args) if m[1] == "tool" or "name" in args else None
            name = named[1] if named and (m[1] == "tool" or "name" in args) else m[3]
            described = _DESCRIPTION_ARG.findall(args)
            description = described[1] if len(described) > 1 else (m[5] or "")
            out.append(_tool(rel, text, m.start(), name, description.strip("\"' ")))
        for m in _PY_TOOL_CALL.finditer(text):
            out.append(_tool(rel, text, m.start(), m[1]))
        defs = {d[1]: d.start() for d in re.finditer(r"(?m)^(?:async[ \t]+)?def[ \t]+(\w+)", text)}
        for m in _TOOL_LIST.finditer(text):
            for word in re.findall(r"\b([A-Za-z_]\w*)\b", m[1] or m[2]):
                if word in defs:
                    doc = re.search(
                        r"def[ \t]+\w+\([^)]*\)[^:]*:\s*[rbu]?(?:\"\"\"|''')\s*([^\n]*)",
                        text[defs[word] :],
                    )
                    out.append(_tool(rel, text, defs[word], word, doc[1] if doc else ""))
    elif rel.endswith(".go"):
        for m in _GO_TOOL.finditer(text):
            out.append(_tool(rel, text, m.start(), m[1] or m[2]))
    elif not rel.endswith(".json"):
        for m in _JS_NAMED_TOOL.finditer(text):
            out.append(_tool(rel, text, m.start(), m[1], m[2] or m[3] or ""))
        for m in _JS_KEYED_TOOL.finditer(text):
            out.append(_tool(rel, text, m.start(), m[2] or m[1], m[3] or ""))
    for m in _SCHEMA_FUNCTION.finditer(text):
        out.append(_tool(rel, text, m.start(), m[1]))
    for m in _SCHEMA_ANTHROPIC.finditer(text):
        out.append(_tool(rel, text, m.start(), m[1], m[2]))
    unique: dict[str, Tool] = {}
    for tool in out:
        if tool["name"] not in unique or not unique[tool["name"]]["description"]:
            unique[tool["name"]] = tool
    return list(unique.values())


def _servers(root: Path, rel: str, by_file: dict[str, list[Tool]]) -> list[McpServer]:
    try:
        data = json.loads(read_text(str(root / rel)) or "null")
    except ValueError:
        return []
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return []
    out = []
    for name, spec in servers.items():
        if not isinstance(name, str):
            continue
        local = _local_file(root, rel, spec, by_file) if isinstance(spec, dict) else None
        tools = [t["base"] for t in by_file.get(local, [])] if local else []
        out.append(McpServer(name=name, config=rel, local=local, tools=tools))
    return out


_FOLDER_FLAGS = ("--directory", "--project", "--cwd", "--prefix", "-C")


def _local_file(
    root: Path, config: str, spec: dict[str, object], by_file: dict[str, list[Tool]]
) -> str | None:
    """The repository file a server's command runs (``python server.py``, ``uv run x.py`` …)."""
    args = spec.get("args")
    words = [spec.get("command"), *(args if isinstance(args, list) else [])]
    cwd = spec.get("cwd")
    bases = [PurePosixPath(config).parent, PurePosixPath(".")]
    folders = [cwd] if isinstance(cwd, str) else []
    for flag, value in zip(words, words[1:], strict=False):  # uv --directory, npm --prefix …
        if flag in ("--directory", "--project", "--cwd", "--prefix", "-C") and isinstance(
            value, str
        ):
            folders.append(value)
    for folder in folders:
        bases.insert(0, PurePosixPath(folder.replace("${workspaceFolder}", ".").lstrip("/")))
    for word in words:
        if not isinstance(word, str) or not word.endswith(_SOURCE_EXTS):
            continue
        for base in bases:
            candidate = (base / word.removeprefix("./")).as_posix().removeprefix("./")
            candidate = str(PurePosixPath(*[p for p in PurePosixPath(candidate).parts if p != "."]))
            if candidate in by_file or (root / candidate).is_file():
                return candidate
    return None
