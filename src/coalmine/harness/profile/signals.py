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
from collections.abc import Callable, Iterable

from pydantic import BaseModel

from coalmine.harness.profile.scan import read_text

__all__ = ["MAX_EVIDENCE", "Detector", "Evidence", "Signal"]

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

_NON_NPM_LOCKS = frozenset({"pnpm-lock.yaml", "yarn.lock", "bun.lockb", "bun.lock"})

_PATH_SIGNALS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?:.*/)?requirements[\w.-]*\.txt"), "package-manager:pip"),
    (re.compile(r"(?:.*/)?\.claude/agents/[^/]+\.md"), AGENT_DEFS),
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

_PY_MODULES = {
    **dict.fromkeys(
        "openai anthropic langchain langchain_core langchain_community langchain_openai "
        "langchain_anthropic langgraph llama_index litellm google.generativeai google.genai "
        "vertexai cohere mistralai groq ollama dspy crewai autogen autogen_agentchat pydantic_ai "
        "smolagents together".split(),
        LLM,
    ),
    **dict.fromkeys("mcp fastmcp".split(), MCP),
    **dict.fromkeys("semantic_router".split(), ROUTER),
    **dict.fromkeys(
        "chromadb pinecone qdrant_client weaviate faiss pgvector lancedb pymilvus milvus".split(),
        VECTOR_DB,
    ),
    **dict.fromkeys("sentence_transformers voyageai fastembed".split(), EMBEDDINGS),
    **dict.fromkeys("rank_bm25 bm25s".split(), RETRIEVER),
    **dict.fromkeys("streamlit gradio django".split(), WEB),
    "playwright": PLAYWRIGHT,
    "inspect_ai": INSPECT,
    "deepeval": DEEPEVAL,
}
"""A Python module (its first one or two dotted parts) → kind."""

_PYPI = {
    **dict.fromkeys(
        "openai anthropic langchain langgraph litellm google-generativeai google-genai cohere "
        "mistralai groq ollama dspy dspy-ai crewai pyautogen autogen-agentchat pydantic-ai "
        "smolagents together llama-index".split(),
        LLM,
    ),
    **dict.fromkeys("mcp fastmcp".split(), MCP),
    "semantic-router": ROUTER,
    **dict.fromkeys(
        "chromadb pinecone pinecone-client qdrant-client weaviate-client faiss-cpu faiss-gpu "
        "pgvector lancedb pymilvus".split(),
        VECTOR_DB,
    ),
    **dict.fromkeys("sentence-transformers voyageai fastembed".split(), EMBEDDINGS),
    **dict.fromkeys("rank-bm25 bm25s".split(), RETRIEVER),
    **dict.fromkeys("streamlit gradio django".split(), WEB),
    **dict.fromkeys("playwright pytest-playwright".split(), PLAYWRIGHT),
    "inspect-ai": INSPECT,
    "deepeval": DEEPEVAL,
}
"""A normalised PyPI distribution name (``langchain-*`` and ``llama-index-*`` too) → kind."""

_NPM = {
    **dict.fromkeys(
        "openai @anthropic-ai/sdk ai langchain llamaindex @google/generative-ai @google/genai "
        "@mistralai/mistralai cohere-ai groq-sdk ollama @openai/agents".split(),
        LLM,
    ),
    "@modelcontextprotocol/sdk": MCP,
    **dict.fromkeys(
        "chromadb @pinecone-database/pinecone @qdrant/js-client-rest weaviate-client "
        "weaviate-ts-client faiss-node vectordb @lancedb/lancedb @zilliz/milvus2-sdk-node "
        "pgvector".split(),
        VECTOR_DB,
    ),
    **dict.fromkeys(
        "next react vue svelte @sveltejs/kit solid-js @angular/core astro nuxt @remix-run/react "
        "preact".split(),
        WEB,
    ),
    **dict.fromkeys("@playwright/test playwright".split(), PLAYWRIGHT),
    "promptfoo": PROMPTFOO,
}
"""An npm package name → kind (``@ai-sdk/*``, ``@langchain/*``, ``@llamaindex/*`` too)."""

_NPM_SCOPES = {"@ai-sdk/": LLM, "@langchain/": LLM, "@llamaindex/": LLM}

_MODULES = "|".join(re.escape(m) for m in sorted(_PY_MODULES, key=len, reverse=True))
_PY_IMPORT = re.compile(
    rf"^[ \t]*(?:from[ \t]+((?:{_MODULES})(?![\w])[\w.]*)[ \t]+import\b"
    rf"|import[ \t]+([^\n#;]*?\b(?:{_MODULES})\b[^\n#;]*))",
    re.M,
)
"""Import lines that name a module of ``_PY_MODULES`` (the rest are never looked at)."""
_PY_TERMS = {
    EMBEDDINGS: r"OpenAIEmbeddings|HuggingFaceEmbeddings|SentenceTransformer|embeddings\.create"
    r"|embed_documents|embed_query|text-embedding-[\w.-]+",
    RETRIEVER: r"as_retriever|BM25Retriever|VectorStoreRetriever|VectorIndexRetriever"
    r"|BaseRetriever|similarity_search|max_marginal_relevance_search",
    ROUTER: r"RouterChain|LLMRouterChain|MultiPromptChain|RouterQueryEngine|LLMSingleSelector"
    r"|RunnableBranch",
    WEB: r"render_template|Jinja2Templates|TemplateResponse",
}
"""Names in Python code that show a kind (each alternative starts with a plain letter)."""


def _alternatives(named: dict[str, str]) -> re.Pattern[str]:
    r"""One regex of whole words, group ``g<i>`` for the ``i``-th kind.

    A lookahead on the alternatives' first letters lets the regex engine skip most positions
    (a leading ``\b`` alone makes it try every alternative at every word boundary).
    """
    firsts = {alt[0] for pattern in named.values() for alt in pattern.split("|")}
    groups = "|".join(f"(?P<g{i}>{pattern})" for i, pattern in enumerate(named.values()))
    return re.compile(f"(?=[{''.join(sorted(firsts))}])\\b(?:{groups})\\b")


_PY_TERM = _alternatives(_PY_TERMS)
_PY_TERM_KINDS = {f"g{i}": kind for i, kind in enumerate(_PY_TERMS)}
_INSPECT_TASK = re.compile(r"^[ \t]*@task\b", re.M)
_PACKAGES = "|".join(re.escape(name) for name in sorted(_NPM, key=len, reverse=True))
_SCOPES = "|".join(re.escape(scope) for scope in _NPM_SCOPES)
_JS_IMPORT = re.compile(
    r"(?=[fir])(?<![\w$.])(?:from|import|require)[ \t]*\(?[ \t]*[\"']"
    rf"((?:{_PACKAGES})(?:/[^\"'\n]*)?|(?:{_SCOPES})[^\"'\n]+)[\"']"
)
"""Imports and requires of a package of ``_NPM`` (or a scope of ``_NPM_SCOPES``)."""
_GO_HTTP = re.compile(r"^[ \t]*(?:import[ \t]+)?(?:[\w.]+[ \t]+)?\"net/http\"", re.M)
_GO_MAIN = re.compile(r"^package[ \t]+main\b", re.M)
_GO_MOD_DEPS = re.compile(
    r"(?P<charm>github\.com/charmbracelet/)"
    r"|(?P<llm>github\.com/(?:anthropics/anthropic-sdk-go|openai/openai-go"
    r"|sashabaranov/go-openai|tmc/langchaingo)\b)"
    r"|(?P<mcp>github\.com/(?:mark3labs/mcp-go|modelcontextprotocol/go-sdk)\b)"
)
_GO_MOD_KINDS = {"charm": "charm", "llm": LLM, "mcp": MCP}
_ENVRC_NIX = re.compile(r"^[ \t]*use[ \t]+(?:flake|nix)\b", re.M)
_TOML_TOOL = re.compile(r"^\[tool\.(poetry|uv)[.\]]", re.M)
_PY_REQUIREMENT = re.compile(r"^[ \t]*([A-Za-z0-9][A-Za-z0-9._-]*)", re.M)
_TOML_REQUIREMENT = re.compile(
    r"^[ \t]*[\"']([A-Za-z0-9][A-Za-z0-9._-]*)[ \t]*(?:\[[^\]\n]*\])?[ \t]*"
    r"(?:[<>=!~;@(][^\"'\n]*)?[\"']",
    re.M,
)
_NORMALISE = re.compile(r"[-_.]+")
_DEP_TABLES = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")


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
        self._evidence: dict[str, list[Evidence]] = {}
        self._seen: set[tuple[str, str, int | None]] = set()
        self._go_mods: list[str] = []
        self._go_service: list[tuple[str, int]] = []
        self._package_jsons: list[str] = []
        self._non_npm_lock_dirs: set[str] = set()
        self._readers: dict[str, Callable[[str, str], None]] = {
            "package.json": self._package_json,
            "pyproject.toml": self._pyproject,
            "go.mod": self._go_mod,
            ".envrc": self._envrc,
        }

    def add(self, kind: str, path: str, line: int | None = None) -> None:
        """Record evidence of ``kind`` (ignored past :data:`MAX_EVIDENCE` or when repeated)."""
        found = self._evidence.setdefault(kind, [])
        if len(found) < MAX_EVIDENCE and (kind, path, line) not in self._seen:
            self._seen.add((kind, path, line))
            found.append(Evidence(path=path, line=line))

    def _add_at(self, kind: str, path: str, lines: _Lines, pos: int) -> None:
        """:meth:`add` at the line of offset ``pos``, counted only if the kind wants more."""
        found = self._evidence.get(kind)
        if found is None or len(found) < MAX_EVIDENCE:
            self.add(kind, path, lines.at(pos))

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
        m = _PATH_SIGNAL.fullmatch(rel)
        if m is not None and m.lastgroup is not None:
            self.add(_PATH_SIGNAL_KINDS[m.lastgroup], rel)
        if name in _NON_NPM_LOCKS:
            self._non_npm_lock_dirs.add(posixpath.dirname(rel))
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

    def signals(self) -> list[Signal]:
        """Every kind seen, sorted by kind, with the compound kinds decided."""
        if self._go_mods and self._go_service:
            for rel in self._go_mods:
                self.add("go-service", rel)
            for rel, line in self._go_service:
                self.add("go-service", rel, line)
        for rel in self._package_jsons:
            if posixpath.dirname(rel) not in self._non_npm_lock_dirs:
                self.add("package-manager:npm", rel)
        return [
            Signal(kind=kind, evidence=evidence)
            for kind, evidence in sorted(self._evidence.items())
            if evidence
        ]

    @staticmethod
    def _read(rel: str, path: str, parse: Callable[[str, str], None]) -> None:
        text = read_text(path)
        if text:
            parse(rel, text)

    def _python(self, rel: str, text: str) -> None:
        lines = _Lines(text)
        imports_inspect = False
        for m in _PY_IMPORT.finditer(text):
            if m[1]:
                modules = [m[1]]
            else:  # "import a.b as c, d": the first word of each comma-separated part
                modules = [words[0] for part in m[2].split(",") if (words := part.split())]
            for module in modules:
                parts = module.split(".")
                kind = _PY_MODULES.get(".".join(parts[:2])) or _PY_MODULES.get(parts[0])
                if kind is not None:
                    self._add_at(kind, rel, lines, m.start())
                    imports_inspect |= kind == INSPECT
        for m in _PY_TERM.finditer(text):
            assert m.lastgroup is not None
            self._add_at(_PY_TERM_KINDS[m.lastgroup], rel, lines, m.start())
        if imports_inspect:
            for m in _INSPECT_TASK.finditer(text):
                self._add_at(INSPECT, rel, lines, m.start())

    def _javascript(self, rel: str, text: str) -> None:
        lines = _Lines(text)
        for m in _JS_IMPORT.finditer(text):
            kind = _npm_kind(m[1])
            if kind is not None:
                self._add_at(kind, rel, lines, m.start())

    def _go(self, rel: str, text: str) -> None:
        if "package main" not in text and '"net/http"' not in text:
            return
        lines = _Lines(text)
        found = [*_GO_MAIN.finditer(text), *_GO_HTTP.finditer(text)]
        for m in sorted(found, key=lambda m: m.start())[:MAX_EVIDENCE]:
            if len(self._go_service) < MAX_EVIDENCE:
                self._go_service.append((rel, lines.at(m.start())))

    def _go_mod(self, rel: str, text: str) -> None:
        self._go_mods.append(rel)
        lines = _Lines(text)
        for m in _GO_MOD_DEPS.finditer(text):
            assert m.lastgroup is not None
            self._add_at(_GO_MOD_KINDS[m.lastgroup], rel, lines, m.start())

    def _envrc(self, rel: str, text: str) -> None:
        lines = _Lines(text)
        for m in _ENVRC_NIX.finditer(text):
            self._add_at("nix", rel, lines, m.start())

    def _package_json(self, rel: str, text: str) -> None:
        self._package_jsons.append(rel)
        try:
            data = json.loads(text)
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        names: list[str] = []
        for table in _DEP_TABLES:
            deps = data.get(table)
            if isinstance(deps, dict):
                names += [name for name in deps if isinstance(name, str)]
        lines = _Lines(text)
        for name in dict.fromkeys(names):
            kind = _npm_kind(name)
            if kind is not None:
                m = re.search(rf"\"{re.escape(name)}\"\s*:", text)
                self.add(kind, rel, lines.at(m.start()) if m else None)

    def _pyproject(self, rel: str, text: str) -> None:
        lines = _Lines(text)
        for m in _TOML_TOOL.finditer(text):
            self._add_at(f"package-manager:{m[1]}", rel, lines, m.start())
        self._python_requirements(rel, _TOML_REQUIREMENT.finditer(text), lines)

    def _requirements(self, rel: str, text: str) -> None:
        self._python_requirements(rel, _PY_REQUIREMENT.finditer(text), _Lines(text))

    def _python_requirements(self, rel: str, found: Iterable[re.Match[str]], lines: _Lines) -> None:
        for m in found:
            kind = _pypi_kind(m[1])
            if kind is not None:
                self._add_at(kind, rel, lines, m.start())


def _npm_kind(specifier: str) -> str | None:
    """The kind of an npm import specifier or dependency name (``pkg/sub`` → ``pkg``)."""
    if specifier.startswith((".", "/", "node:")):
        return None
    parts = specifier.split("/")
    package = "/".join(parts[:2]) if specifier.startswith("@") else parts[0]
    kind = _NPM.get(package)
    if kind is None and package.startswith("@"):
        kind = _NPM_SCOPES.get(parts[0] + "/")
    return kind


def _pypi_kind(name: str) -> str | None:
    """The kind of a Python distribution name, normalised as PEP 503 says."""
    name = _NORMALISE.sub("-", name).lower()
    kind = _PYPI.get(name)
    if kind is None and name.startswith(("langchain-", "llama-index-")):
        kind = LLM
    return kind
