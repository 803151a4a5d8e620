"""The detectors: what a repository's files say about it, as signals with evidence.

A signal is a ``kind`` (``language:python``, ``agent-runtime:mcp``, ``nix`` …) and the places
that show it: ``{"path", "line"}``, ``line`` being ``None`` when the file itself is the
evidence (``flake.nix``, ``.mcp.json``). At most :data:`MAX_EVIDENCE` places per kind, the
first ones in walk order (a folder's files before its subfolders', by name).

Two kinds of detector, so the scan stays fast on large trees:

- **by name**: the path alone (a language by extension, ``go.mod``, ``.github/workflows/*.yml``,
  ``app/**/page.tsx``). Nothing is read.
- **by content**: only Python, JavaScript/TypeScript and Go sources, and a few manifests
  (``package.json``, ``pyproject.toml``, ``requirements*.txt``, ``go.mod``, ``.envrc``) are
  read, through :func:`coalmine.harness.profile.scan.read_text` (1 MB and binary files skipped, the
  first 256 KB read). Python and JS/TS imports are found by line-anchored regexes (an import in
  a string literal at the start of a line counts too: the profile is a heuristic, not a
  parser); ``package.json`` dependencies by their keys, Python requirements by their names.

Compound kinds are decided once the walk is over: ``go-service`` needs a ``go.mod`` and a Go
file importing ``net/http`` or declaring ``package main``; ``package-manager:npm`` is a
``package-lock.json``, or a ``package.json`` with no pnpm, yarn or bun lockfile beside it;
``eval-harness:inspect`` counts ``@task`` lines only in files that import ``inspect_ai``.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache

from pydantic import BaseModel

from coalmine.harness.profile.libraries import table
from coalmine.harness.profile.scan import read_text

__all__ = [
    "FRONT_MATTER",
    "MAX_EVIDENCE",
    "Detector",
    "Evidence",
    "Signal",
    "js_imports",
    "python_imports",
]

MAX_EVIDENCE = 10
"""Evidence kept per signal kind."""


class Evidence(BaseModel):
    """Where a signal shows: a file, and the line (1-based) unless the file itself is the proof."""

    path: str
    """Relative to the scanned root, ``/``-separated."""
    line: int | None = None


class Signal(BaseModel):
    """One kind of thing the repository has, with (up to ten of) the places that show it."""

    kind: str
    evidence: list[Evidence]


LLM = "agent-runtime:llm-sdk"
MCP = "agent-runtime:mcp"
AGENT_DEFS = "agent-runtime:agent-definitions"
ROUTER = "agent-runtime:prompt-router"
EMBEDDINGS = "retrieval:embeddings"
VECTOR_DB = "retrieval:vector-db"
RETRIEVER = "retrieval:retriever"
WEB = "web-ui:framework"
ROUTES = "web-ui:routes"
PLAYWRIGHT = "web-ui:playwright"
PROMPTFOO = "eval-harness:promptfoo"
INSPECT = "eval-harness:inspect"
DEEPEVAL = "eval-harness:deepeval"
CANARIES = "coalmine:canaries"
"""coalmine's own canary specs: a coding agent here may be asked to run them."""

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".swift": "swift",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".nix": "nix",
    ".sh": "shell",
    ".svelte": "svelte",
    ".vue": "vue",
}
"""File extension → ``language:<name>``."""

_JS_EXTS = frozenset({".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"})

# -- by name ----------------------------------------------------------------------------------

_FILE_SIGNALS = {
    "setup.py": "package-manager:pip",
    "setup.cfg": "package-manager:pip",
    "Pipfile": "package-manager:pipenv",
    "poetry.lock": "package-manager:poetry",
    "uv.lock": "package-manager:uv",
    "package-lock.json": "package-manager:npm",
    "npm-shrinkwrap.json": "package-manager:npm",
    "pnpm-lock.yaml": "package-manager:pnpm",
    "pnpm-workspace.yaml": "package-manager:pnpm",
    "yarn.lock": "package-manager:yarn",
    ".yarnrc.yml": "package-manager:yarn",
    "bun.lockb": "package-manager:bun",
    "bun.lock": "package-manager:bun",
    "go.mod": "package-manager:go-modules",
    "Cargo.toml": "package-manager:cargo",
    ".mcp.json": MCP,
    "mcp.json": MCP,
    "claude_desktop_config.json": MCP,
    "AGENTS.md": AGENT_DEFS,
    "flake.nix": "nix",
    "shell.nix": "nix",
    "default.nix": "nix",
    "Jenkinsfile": "ci:jenkins",
}
"""A file's name (at any depth) → the kind it shows by itself."""

_NON_NPM_FILES = frozenset(
    {"pnpm-lock.yaml", "pnpm-workspace.yaml", "yarn.lock", "bun.lockb", "bun.lock"}
)

_PATH_SIGNALS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?:.*/)?requirements[\w.-]*\.txt"), "package-manager:pip"),
    (re.compile(r"(?:.*/)?agents/[^/]+\.ya?ml"), AGENT_DEFS),
    (re.compile(r"(?:.*/)?app/(?:.+/)?page\.(?:tsx|ts|jsx|js|mdx)"), ROUTES),
    (re.compile(r"(?:.*/)?pages/(?!api/)(?:.+/)?[^_/][^/]*\.(?:tsx|ts|jsx|js|mdx)"), ROUTES),
    (re.compile(r"(?:.*/)?routes/(?:.+/)?\+page\.svelte"), ROUTES),
    (re.compile(r"(?:.*/)?playwright\.config\.(?:ts|js|mjs|cjs|mts)"), PLAYWRIGHT),
    (re.compile(r"(?:.*/)?promptfooconfig\.(?:ya?ml|json|js|ts)"), PROMPTFOO),
    (re.compile(r"bench/canaries/(?:.+/)?[^/]+\.ya?ml"), CANARIES),
    (re.compile(r"\.github/workflows/[^/]+\.ya?ml"), "ci:github-actions"),
    (re.compile(r"\.gitlab-ci\.ya?ml"), "ci:gitlab"),
    (re.compile(r"\.circleci/config\.ya?ml"), "ci:circleci"),
    (re.compile(r"azure-pipelines\.ya?ml"), "ci:azure-pipelines"),
    (re.compile(r"\.buildkite/[^/]*pipeline[^/]*\.ya?ml"), "ci:buildkite"),
    (re.compile(r"\.travis\.ya?ml"), "ci:travis"),
    (re.compile(r"bitbucket-pipelines\.ya?ml"), "ci:bitbucket"),
    (re.compile(r"\.woodpecker\.ya?ml|\.woodpecker/[^/]+\.ya?ml"), "ci:woodpecker"),
]
"""Whole relative path (``fullmatch``) → kind. Filenames alone are in ``_FILE_SIGNALS``."""

# All of them at once: one fullmatch per file instead of one per pattern (they are disjoint).
_PATH_SIGNAL = re.compile(
    "|".join(f"(?P<p{i}>{p.pattern})" for i, (p, _) in enumerate(_PATH_SIGNALS))
)
_PATH_SIGNAL_KINDS = {f"p{i}": kind for i, (_, kind) in enumerate(_PATH_SIGNALS)}

# -- by content -------------------------------------------------------------------------------

_INSPECT_TASK = re.compile(r"^[ \t]*@task\b", re.M)
_JS_SKIP = re.compile(
    r"(?P<s>\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')|(?P<c>//[^\n]*|/\*[\s\S]*?(?:\*/|\Z))"
)
"""A string literal (kept) or a comment (blanked) in JavaScript, TypeScript and Go."""
_JS_IMPORT = re.compile(
    r"(?=[eir])(?<![\w$.])"  # a lookahead on the first letter lets the engine skip ahead
    r"(?:(?:import|export)[ \t]+(?:type[ \t]+)?(?:[\w$*{}\s,]+?[ \t\n]+from[ \t]*)?"
    r"|(?:require|import)[ \t]*\([ \t]*)[\"']([^\"'\n]+)[\"']"
)
"""``import … from "x"``, ``import "x"``, ``export … from "x"``, ``require("x")``, ``import("x")``.
"""
_GO_IMPORT = re.compile(r"^[ \t]*import[ \t]*(?:\(([^)]*)\)|(?:[\w.]+[ \t]+)?(\"[^\"\n]+\"))", re.M)
_GO_QUOTED = re.compile(r"\"([^\"\n]+)\"")
_GO_HTTP = re.compile(r"\"net/http\"")
_GO_MAIN = re.compile(r"^package[ \t]+main\b", re.M)
_GO_REQUIRE = re.compile(
    r"^[ \t]*(?:require[ \t]+)?([a-z0-9][\w.-]*\.[a-z]+(?:/\S+)?)[ \t]+v\S+(.*)$", re.M
)
"""A requirement of go.mod (alone or in a block), the rest of its line after."""
_GO_EXAMPLE_DIRS = frozenset({"examples", "example", "_examples", "_example", "testdata"})
"""Folders whose Go programs are examples of a library, not the repository's own service."""
_ENVRC_NIX = re.compile(r"^[ \t]*use[ \t]+(?:flake|nix)\b", re.M)
_TOML_TOOL = re.compile(r"^\[tool\.(poetry|uv|pdm)[.\]]", re.M)
_PY_REQUIREMENT = re.compile(r"^[ \t]*([A-Za-z0-9][A-Za-z0-9._-]*)", re.M)
_TOML_REQUIREMENT = re.compile(
    r"^[ \t]*[\"']([A-Za-z0-9][A-Za-z0-9._-]*)[ \t]*(?:\[[^\]\n]*\])?[ \t]*"
    r"(?:[<>=!~;@(][^\"'\n]*)?[\"']",
    re.M,
)
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n((?:.*\r?\n)*?)---[ \t]*(?:\r?\n|\Z)")
"""YAML front matter at the top of a markdown file; group 1 is its text."""
_PYTHON_LOCKS = frozenset({"uv.lock", "poetry.lock", "Pipfile", "Pipfile.lock", "pdm.lock"})
_CLAUDE_AGENT = re.compile(r"(?:.*/)?\.claude/agents/[^/]+\.md")
_PACKAGE_MANAGER_FIELD = re.compile(r"^(pnpm|yarn|bun|npm)@")
_DEP_TABLES = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")


def _blank(text: str, pattern: re.Pattern[str], group: str | None = None) -> str:
    """``text`` with ``pattern``'s matches (only its ``group``'s) blanked, newlines kept."""

    def keep_lines(m: re.Match[str]) -> str:
        if group is not None and m[group] is None:
            return m[0]
        return re.sub(r"[^\n]", " ", m[0])

    return pattern.sub(keep_lines, text)


_AI_KINDS = frozenset({LLM, VECTOR_DB, RETRIEVER, EMBEDDINGS, MCP})


@cache
def _python_import() -> re.Pattern[str]:
    """Import statements of the modules the table knows (the rest are never looked at)."""
    tops = "|".join(re.escape(t) for t in sorted(table().python_tops, key=len, reverse=True))
    return re.compile(
        rf"^[ \t]*(?:from[ \t]+((?:{tops})(?![\w])[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)"
        rf"|import[ \t]+([^\n#;]*?\b(?:{tops})\b[^\n#;]*))",
        re.M,
    )


def python_imports(text: str) -> Iterator[tuple[int, frozenset[str]]]:
    """``(offset, kinds)`` of each import of a library the table knows, docstrings skipped.

    Each imported name is judged on its own (:meth:`Table.python`): ``from m import a, b``.
    Shared by the detector and :mod:`coalmine.harness.entry` ("does this module call an LLM?").
    """
    t = table()
    quoted = '"""' in text or "'''" in text
    for m in _python_import().finditer(text):
        if quoted and _in_docstring(text, m.start()):
            continue  # an example in a docstring, not an import
        if m[1]:
            parts = m[2].strip("() \t\n").split(",")
            names = [w[0] for part in parts if (w := part.split()) and w[0] != "*"]
            found = t.python(m[1], names)
        else:  # "import a.b as c, d": the first word of each comma-separated part
            found = frozenset().union(
                *(t.python(w[0]) for p in m[3].split(",") if (w := p.split()))
            )
        if found:
            yield m.start(), found


def js_imports(text: str) -> Iterator[tuple[int, frozenset[str]]]:
    """``(offset, kinds)`` of each import of a package the table knows, comments skipped.

    A package imported again is left out (the evidence keeps its first place).
    """
    t = table()
    commented = "//" in text or "/*" in text
    seen: set[str] = set()
    for m in _JS_IMPORT.finditer(text):
        specifier = m[1]
        if specifier in seen:
            continue
        found = t.npm(specifier)
        if found and not (commented and _in_comment(text, m.start())):
            seen.add(specifier)
            yield m.start(), found


def _in_comment(text: str, pos: int) -> bool:
    """Whether ``pos`` is in a ``//`` line comment or a ``/* */`` block (JS, TS, Go)."""
    line_start = text.rfind("\n", 0, pos) + 1
    before = text[line_start:pos]
    if "//" in before and not re.search(r"[\"'`][^\"'`]*//", before):
        return True
    return text.rfind("/*", 0, pos) > text.rfind("*/", 0, pos)


def _in_docstring(text: str, pos: int) -> bool:
    """Whether ``pos`` is inside a triple-quoted string (an odd number of them open before)."""
    return (text.count('"""', 0, pos) % 2 == 1) or (text.count("'''", 0, pos) % 2 == 1)


def _terms(language: str) -> tuple[re.Pattern[str] | None, dict[str, str]]:
    named = table().terms.get(language, {})
    if not named:
        return None, {}
    return _alternatives(named), {f"g{i}": kind for i, kind in enumerate(named)}


def _alternatives(named: dict[str, str]) -> re.Pattern[str]:
    r"""One regex of whole words, group ``g<i>`` for the ``i``-th kind.

    A lookahead on the alternatives' first letters lets the regex engine skip most positions
    (a leading ``\b`` alone makes it try every alternative at every word boundary).
    """
    firsts = {alt[0] for pattern in named.values() for alt in pattern.split("|")}
    groups = "|".join(f"(?P<g{i}>{pattern})" for i, pattern in enumerate(named.values()))
    return re.compile(f"(?=[{''.join(sorted(firsts))}])\\b(?:{groups})\\b")


class _Lines:
    """Line numbers of ascending offsets in one text, counting newlines only once."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.line = 1

    def at(self, pos: int) -> int:
        if pos < self.pos:  # out of order: count from the start again
            self.pos, self.line = 0, 1
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


class Detector:
    """Feed it the walk's files (:meth:`visit`), then read the signals (:meth:`signals`)."""

    def __init__(self) -> None:
        self._table = table()
        self._py_terms, self._py_term_kinds = _terms("python")
        self._js_terms, self._js_term_kinds = _terms("js")
        self._evidence: dict[str, list[Evidence]] = {}
        self._seen: set[tuple[str, str, int | None]] = set()
        self.files: dict[str, set[str]] = {}
        """Kind → every file that shows it (the evidence keeps only the first ten places)."""
        self._go_mods: list[str] = []
        self._go_service: list[tuple[str, int]] = []
        self._package_jsons: list[str] = []
        self._non_npm_dirs: set[str] = set()
        self._pyprojects: list[str] = []
        """pyproject.toml files that name no package manager of their own (pip's, then)."""
        self._python_lock_dirs: set[str] = set()
        """Folders holding a pnpm, yarn or bun lockfile or workspace file."""
        self._readers: dict[str, Callable[[str, str], None]] = {
            "package.json": self._package_json,
            "pyproject.toml": self._pyproject,
            "go.mod": self._go_mod,
            ".envrc": self._envrc,
        }

    def add(self, kind: str, path: str, line: int | None = None) -> None:
        """Record evidence of ``kind`` (ignored past :data:`MAX_EVIDENCE` or when repeated)."""
        self.files.setdefault(kind, set()).add(path)
        found = self._evidence.setdefault(kind, [])
        if len(found) < MAX_EVIDENCE and (kind, path, line) not in self._seen:
            self._seen.add((kind, path, line))
            found.append(Evidence(path=path, line=line))

    def _add_at(self, kinds: Iterable[str], path: str, lines: _Lines, pos: int) -> None:
        """:meth:`add` each kind at the line of offset ``pos`` (counted only if one wants more)."""
        line: int | None = None
        for kind in sorted(kinds):
            found = self._evidence.get(kind)
            if found is None or len(found) < MAX_EVIDENCE:
                if line is None:
                    line = lines.at(pos)
                self.add(kind, path, line)
            else:
                self.files[kind].add(path)

    def visit(self, rel: str, path: str) -> None:
        """Look at one file: ``rel`` to the root (``/``-separated), ``path`` to open it."""
        name = posixpath.basename(rel)
        ext = posixpath.splitext(name)[1]
        language = LANGUAGES.get(ext)
        if language is not None:
            self.add(f"language:{language}", rel)
        kind = _FILE_SIGNALS.get(name)
        if kind is not None:
            self.add(kind, rel)
        for kind in self._table.files.get(name, ()):
            self.add(kind, rel)
        m = _PATH_SIGNAL.fullmatch(rel)
        if m is not None and m.lastgroup is not None:
            self.add(_PATH_SIGNAL_KINDS[m.lastgroup], rel)
        if name in _NON_NPM_FILES:
            self._non_npm_dirs.add(posixpath.dirname(rel))
        if name in _PYTHON_LOCKS:
            self._python_lock_dirs.add(posixpath.dirname(rel))
        if ext == ".py":
            self._read(rel, path, self._python)
        elif ext in _JS_EXTS:
            self._read(rel, path, self._javascript)
        elif ext == ".go":
            self._read(rel, path, self._go)
        elif name in self._readers:
            self._read(rel, path, self._readers[name])
        elif name.startswith("requirements") and name.endswith(".txt"):
            self._read(rel, path, self._requirements)
        elif ext == ".md" and _CLAUDE_AGENT.fullmatch(rel):
            self._read(rel, path, self._agent_definition)

    def signals(self) -> list[Signal]:
        """Every kind seen, sorted by kind, with the compound kinds decided."""
        if self._go_mods and self._go_service:
            for rel in self._go_mods:
                self.add("go-service", rel)
            for rel, line in self._go_service:
                self.add("go-service", rel, line)
        for rel in self._package_jsons:
            if not self._under(posixpath.dirname(rel), self._non_npm_dirs):
                self.add("package-manager:npm", rel)
        for rel in self._pyprojects:
            if not self._under(posixpath.dirname(rel), self._python_lock_dirs):
                self.add("package-manager:pip", rel)
        return [
            Signal(kind=kind, evidence=evidence)
            for kind, evidence in sorted(self._evidence.items())
            if evidence
        ]

    @staticmethod
    def _under(folder: str, marked: set[str]) -> bool:
        """Whether ``folder`` or a folder above it is ``marked`` (a workspace's lock is above)."""
        while True:
            if folder in marked:
                return True
            if not folder:
                return False
            folder = posixpath.dirname(folder)

    @staticmethod
    def _read(rel: str, path: str, parse: Callable[[str, str], None]) -> None:
        text = read_text(path)
        if text:
            parse(rel, text)

    def _python(self, rel: str, text: str) -> None:
        lines = _Lines(text)
        imports_inspect = False
        for pos, found in python_imports(text):
            self._add_at(found, rel, lines, pos)
            imports_inspect |= INSPECT in found
        if self._py_terms is not None:
            for m in self._py_terms.finditer(text):
                assert m.lastgroup is not None
                self._add_at((self._py_term_kinds[m.lastgroup],), rel, lines, m.start())
        if imports_inspect:
            for m in _INSPECT_TASK.finditer(text):
                self._add_at((INSPECT,), rel, lines, m.start())

    def _javascript(self, rel: str, text: str) -> None:
        lines = _Lines(text)
        ai = False  # the code words are looked for only where an AI or retrieval library is used
        for pos, found in js_imports(text):
            self._add_at(found, rel, lines, pos)
            ai |= bool(found & _AI_KINDS)
        if ai and self._js_terms is not None:
            for m in self._js_terms.finditer(text):
                assert m.lastgroup is not None
                self._add_at((self._js_term_kinds[m.lastgroup],), rel, lines, m.start())

    def _go(self, rel: str, text: str) -> None:
        if "/*" in text:  # a block comment may hold an import block: blank them first
            text = _blank(text, _JS_SKIP, "c")
        lines = _Lines(text)
        for m in _GO_IMPORT.finditer(text):
            block = m[1] if m[1] is not None else m[2]
            for q in _GO_QUOTED.finditer(block):
                found = self._table.go(q[1])
                if found:
                    start = m.start(1) if m[1] is not None else m.start(2)
                    self._add_at(found, rel, lines, start + q.start())
        if set(rel.split("/")[:-1]) & _GO_EXAMPLE_DIRS:
            return  # an example's main package is not the repository's program
        found_at = [m.start() for m in _GO_MAIN.finditer(text)]
        found_at += [m.start() for m in _GO_HTTP.finditer(text)][:1]
        for pos in sorted(found_at)[:MAX_EVIDENCE]:
            if len(self._go_service) < MAX_EVIDENCE:
                self._go_service.append((rel, lines.at(pos)))

    def _go_mod(self, rel: str, text: str) -> None:
        self._go_mods.append(rel)
        lines = _Lines(text)
        for m in _GO_REQUIRE.finditer(text):
            if "// indirect" in m[2]:
                continue  # a dependency of a dependency: not what this module uses
            found = self._table.go(m[1])
            if found:
                self._add_at(found, rel, lines, m.start())

    def _envrc(self, rel: str, text: str) -> None:
        lines = _Lines(text)
        for m in _ENVRC_NIX.finditer(text):
            self._add_at(("nix",), rel, lines, m.start())

    def _agent_definition(self, rel: str, text: str) -> None:
        """A ``.claude/agents/*.md`` is an agent definition only with its YAML front matter."""
        if FRONT_MATTER.match(text):
            self.add(AGENT_DEFS, rel)

    def _package_json(self, rel: str, text: str) -> None:
        self._package_jsons.append(rel)
        try:
            data = json.loads(text)
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        lines = _Lines(text)
        manager = data.get("packageManager")
        m = _PACKAGE_MANAGER_FIELD.match(manager) if isinstance(manager, str) else None
        if m is not None:
            at = text.find('"packageManager"')
            self.add(f"package-manager:{m[1]}", rel, lines.at(at) if at >= 0 else None)
            if m[1] != "npm":
                self._non_npm_dirs.add(posixpath.dirname(rel))
        names: list[str] = []
        for table_name in _DEP_TABLES:
            deps = data.get(table_name)
            if isinstance(deps, dict):
                names += [name for name in deps if isinstance(name, str)]
        for name in dict.fromkeys(names):
            found = self._table.npm(name)
            if found:
                dep = re.search(rf"\"{re.escape(name)}\"\s*:", text)
                for kind in sorted(found):
                    self.add(kind, rel, lines.at(dep.start()) if dep else None)

    def _pyproject(self, rel: str, text: str) -> None:
        lines = _Lines(text)
        tools = list(_TOML_TOOL.finditer(text))
        for m in tools:
            self._add_at((f"package-manager:{m[1]}",), rel, lines, m.start())
        if not tools and re.search(r"(?m)^\[(?:project|build-system)\]", text):
            self._pyprojects.append(rel)
        self._python_requirements(rel, _TOML_REQUIREMENT.finditer(text), lines)

    def _requirements(self, rel: str, text: str) -> None:
        self._python_requirements(rel, _PY_REQUIREMENT.finditer(text), _Lines(text))

    def _python_requirements(self, rel: str, found: Iterable[re.Match[str]], lines: _Lines) -> None:
        for m in found:
            kinds = self._table.pypi(m[1])
            if kinds:
                self._add_at(kinds, rel, lines, m.start())
