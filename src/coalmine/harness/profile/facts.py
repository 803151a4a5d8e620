"""Facts for the kit templates: what a kit needs to know of a repository beyond its signals.

Derived from the profile's evidence and a few small reads (``go.mod``, ``package.json``,
``flake.nix``/``shell.nix``, MCP configs, the first lines of text documents), read-only like
the profile itself. Every key of :class:`Facts` is always present, empty when unknown, so a
template never needs to ask whether one exists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TypedDict

from coalmine.harness.profile.documents import (
    DOC_FOLDERS,
    MAX_DOCS,
    Doc,
    NearMiss,
    find_corpus,
)
from coalmine.harness.profile.scan import read_text, walk
from coalmine.harness.profile.signals import Signal
from coalmine.harness.profile.tools import DANGER, McpServer, Tool, find_tools

__all__ = ["DOC_FOLDERS", "MAX_DOCS", "Doc", "Facts", "NixFacts", "collect_facts", "route_of"]

PACKAGE_MANAGERS = ("pnpm", "yarn", "bun", "npm")


class NixFacts(TypedDict):
    """The Nix files present, and the tools the dev shell lists."""

    flake: bool
    shell_nix: bool
    envrc: bool
    tools: list[str]


class Facts(TypedDict):
    """What the templates see as ``facts`` (a TypedDict: it is handed to Jinja2 as is)."""

    routes: list[str]
    docs: list[Doc]
    near_misses: list[NearMiss]
    """Look-alike documents (:func:`coalmine.harness.profile.documents.near_misses`)."""
    go_module: str | None
    go_mains: list[str]
    nix: NixFacts
    charm: list[str]
    mcp_servers: list[str]
    mcp: list[McpServer]
    """The MCP configs' servers, with a local server's declared tools."""
    tools: list[Tool]
    """The agent's own tools (:mod:`coalmine.harness.profile.tools`)."""
    dangerous_tools: dict[str, list[str]]
    """Danger category (``destroy``, ``pay``, ``send``, ``execute``, ``change``) → tool names."""
    agent_files: list[str]
    agent_adapter: str
    """The agent adapter's text (set by ``init``'s render context; empty here)."""
    redteam: Mapping[str, dict[str, str]]
    """The red-team suites, surface → ``{"yaml", "jsonl"}`` (set by the render context, made
    when a template first reads them)."""
    node_package_manager: str | None
    dev_command: str | None


def collect_facts(root: Path, signals: list[Signal]) -> Facts:
    """The facts of the repository at ``root`` whose profile found ``signals``."""
    paths = {s.kind: [e.path for e in s.evidence] for s in signals}
    manager = next((m for m in PACKAGE_MANAGERS if f"package-manager:{m}" in paths), None)
    if manager is None and "web-ui:framework" in paths:
        manager = "npm"
    go_mod = _text(root / "go.mod")
    tools, servers = find_tools(root)
    docs, alike = find_corpus(root)
    dangerous: dict[str, list[str]] = {category: [] for category in DANGER}
    for tool in tools:
        if tool["danger"] is not None:
            dangerous[tool["danger"]].append(tool["name"])
    return Facts(
        routes=sorted({r for p in paths.get("web-ui:routes", []) if (r := route_of(p))}),
        docs=docs,
        near_misses=alike,
        go_module=_first(r"(?m)^module\s+(\S+)", go_mod),
        go_mains=_go_mains(root),
        nix=_nix(root),
        charm=sorted(
            {_charm_name(m) for m in re.findall(r"github\.com/charmbracelet/([\w./-]+)", go_mod)}
        ),
        mcp_servers=list(dict.fromkeys(s["name"] for s in servers)),
        mcp=servers,
        tools=tools,
        dangerous_tools=dangerous,
        agent_files=paths.get("agent-runtime:agent-definitions", []),
        agent_adapter="",
        redteam={},
        node_package_manager=manager,
        dev_command=_dev_command(root, manager),
    )


def route_of(path: str) -> str | None:
    """The URL path a route file serves (``app/(shop)/cart/page.tsx`` → ``/cart``).

    ``None`` for dynamic routes (``[id]``, ``[...slug]``), which need a value to visit, and for
    files that are not routes.
    """
    parts = list(PurePosixPath(path).parts)
    for marker in ("app", "pages", "routes"):
        if marker in parts:
            segments = parts[len(parts) - parts[::-1].index(marker) :]
            break
    else:
        return None
    name = segments.pop() if segments else ""
    stem = name.split(".")[0]
    if marker == "pages" and stem != "index":
        segments.append(stem)
    if any(s.startswith("[") for s in segments):
        return None
    kept = [s for s in segments if not (s.startswith("(") and s.endswith(")"))]
    return "/" + "/".join(kept)


def _text(path: Path) -> str:
    return (read_text(str(path)) or "") if path.is_file() else ""


def _first(pattern: str, text: str) -> str | None:
    found = re.search(pattern, text)
    return found[1] if found else None


MAX_GO_MAINS = 20
_GO_EXAMPLES = frozenset({"examples", "example", "_examples", "_example", "testdata"})


def _go_mains(root: Path) -> list[str]:
    """Folders of ``package main`` programs, in any module, outside examples (``.`` first).

    An example's program belongs to the library it shows, not to the repository's programs.
    """
    mains: set[str] = set()
    for rel, path in walk(root):
        if not rel.endswith(".go") or rel.endswith("_test.go"):
            continue
        folder = rel.rpartition("/")[0]
        if set(folder.split("/")) & _GO_EXAMPLES or (f"./{folder}" if folder else ".") in mains:
            continue
        if re.search(r"(?m)^package\s+main\b", read_text(path) or ""):
            mains.add(f"./{folder}" if folder else ".")
    return sorted(mains, key=lambda m: (m != ".", m))[:MAX_GO_MAINS]


_NIX_LIST = re.compile(
    r"\b(?:packages|buildInputs|nativeBuildInputs)\s*=\s*(?:with\s+pkgs\s*;\s*)?\[([^\]]*)\]"
)
_NIX_ATTR_VALUES = re.compile(
    r"\b(?:packages|buildInputs|nativeBuildInputs)\s*=\s*(?:\([^=]*?)?builtins\.attrValues\s*\{"
    r"\s*inherit\s*\((?:pkgs|nixpkgs)\)\s*([^;]*);"
)
_NIX_SHELL = re.compile(r"\bmkShell(?:NoCC)?\s*\{|\bdevshell\.mkShell\s*\{")
_NIX_TOOL_NAMES = {
    "nodejs": "node",
    "python3": "python3",
    "python": "python3",
    "rustc": "rustc",
    "delve": "dlv",
    "ripgrep": "rg",
    "fd": "fd",
    "golangci-lint": "golangci-lint",
    "nixfmt-rfc-style": "nixfmt",
    "postgresql": "psql",
    "awscli2": "aws",
    "google-cloud-sdk": "gcloud",
    "kubectl": "kubectl",
    "kubernetes-helm": "helm",
    "gnumake": "make",
}
"""nixpkgs attribute → the command it puts on PATH, where the two differ."""


def _nix_shell_bodies(text: str) -> list[str]:
    """The attribute sets passed to ``mkShell``: what a dev shell provides.

    Not a package's build inputs, which a derivation uses to build and never puts on PATH.
    """
    bodies = []
    for m in _NIX_SHELL.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        bodies.append(text[m.end() : i])
    return bodies


def _nix(root: Path) -> NixFacts:
    tools: list[str] = []
    for name in ("flake.nix", "shell.nix", "devshell.nix"):
        text = re.sub(r"#[^\n]*", "", _text(root / name))
        for body in _nix_shell_bodies(text):
            listed = _NIX_LIST.findall(body) + _NIX_ATTR_VALUES.findall(body)
            for listing in listed:
                for token in re.findall(r"[A-Za-z][\w.-]*", listing):
                    tool = _nix_tool(token)
                    if tool and tool not in tools:
                        tools.append(tool)
    envrc = _text(root / ".envrc")
    return NixFacts(
        flake=(root / "flake.nix").is_file(),
        shell_nix=(root / "shell.nix").is_file(),
        envrc=bool(re.search(r"(?m)^\s*use\s+(?:flake|nix)\b", envrc)),
        tools=tools,
    )


def _nix_tool(token: str) -> str | None:
    """The command a nixpkgs attribute gives (``pkgs.go_1_22`` → ``go``, ``nodejs_20`` → node)."""
    name = token.removeprefix("pkgs.").split(".")[-1]
    if name in ("with", "pkgs", "inherit", "lib", "self", "system", "stdenv"):
        return None
    name = re.sub(r"[_-]\d[\w.]*$", "", name)
    return _NIX_TOOL_NAMES.get(name, name)


def _charm_name(module: str) -> str:
    """``x/vcr`` → ``vcr``, ``bubbletea/v2`` → ``bubbletea``."""
    parts = [p for p in module.split("/") if not re.fullmatch(r"v\d+", p)]
    return parts[-1] if parts[0] == "x" else parts[0]


def _dev_command(root: Path, manager: str | None) -> str | None:
    try:
        scripts = json.loads(_text(root / "package.json") or "{}").get("scripts", {})
    except (json.JSONDecodeError, AttributeError):
        return None
    if not isinstance(scripts, dict) or manager is None:
        return None
    script = next((s for s in ("dev", "start") if s in scripts), None)
    return None if script is None else f"{manager} run {script}"
