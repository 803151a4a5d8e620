"""Every entry of the library table, on a small fixture of each ecosystem it lists.

Each entry is shown in the way it names: an import (Python, JS/TS, Go), a dependency
(requirements.txt, package.json, go.mod) or a file; the profile must give every kind of the
entry. The same import commented out (or in a docstring) must give none of its ``sdk:`` kinds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coalmine.harness.profile import profile_repository
from coalmine.harness.profile.libraries import Library, compile_table, table


def _kinds(root: Path) -> set[str]:
    return {s.kind for s in profile_repository(root).signals}


def _cases() -> list[tuple[str, Library, str, str]]:
    cases = []
    for i, library in enumerate(table().libraries):
        label = "+".join(k for k in library.kinds if k.startswith("sdk:")) or library.kinds[0]
        for ecosystem in ("python", "pypi", "npm", "go", "files"):
            for spec in getattr(library, ecosystem):
                cases.append((f"{i}:{label}:{ecosystem}:{spec}", library, ecosystem, spec))
    return cases


CASES = _cases()


def _python_source(spec: str) -> str:
    module, _, names = spec.partition(":")
    if names:
        return f"from {module} import {names.split(',')[0]}\n"
    return f"import {module}\n"


def _npm_name(spec: str) -> str:
    return spec + "pkg" if spec.endswith("/") else spec


def _go_path(spec: str) -> str:
    return spec + "x/v2" if spec.endswith("/") else spec


def _write(root: Path, ecosystem: str, spec: str) -> None:
    if ecosystem == "python":
        (root / "app.py").write_text(_python_source(spec))
    elif ecosystem == "pypi":
        name = spec[:-1] + "extra" if spec.endswith("*") else spec
        (root / "requirements.txt").write_text(f"{name}>=1.0\n")
    elif ecosystem == "npm":
        deps = {"dependencies": {_npm_name(spec): "^1.0.0"}}
        (root / "package.json").write_text(json.dumps(deps))
        (root / "index.ts").write_text(f'import x from "{_npm_name(spec)}";\n')
    elif ecosystem == "go":
        (root / "go.mod").write_text(f"module example.com/m\n\nrequire {_go_path(spec)} v1.0.0\n")
        (root / "lib.go").write_text(f'package lib\n\nimport (\n\t"fmt"\n\t"{_go_path(spec)}"\n)\n')
    else:
        (root / spec).write_text("{}\n")


@pytest.mark.parametrize(
    ("library", "ecosystem", "spec"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_entry_is_found_in_each_of_its_ecosystems(
    tmp_path: Path, library: Library, ecosystem: str, spec: str
) -> None:
    _write(tmp_path, ecosystem, spec)
    assert set(library.kinds) <= _kinds(tmp_path)


SUBMODULES = [c for c in CASES if c[2] == "python" and ":" not in c[3] and "." in c[3]]


@pytest.mark.parametrize(
    ("library", "spec"), [(c[1], c[3]) for c in SUBMODULES], ids=[c[0] for c in SUBMODULES]
)
def test_a_submodule_imported_by_name_is_found(tmp_path: Path, library: Library, spec: str) -> None:
    """``from google import genai`` imports ``google.genai``, as the SDK's own docs write it."""
    parent, _, last = spec.rpartition(".")
    (tmp_path / "app.py").write_text(f"from {parent} import {last}\n")
    assert set(library.kinds) <= _kinds(tmp_path)


COMMENTED = [
    c
    for c in CASES
    if c[2] in ("python", "npm", "go") and any(k.startswith("sdk:") for k in c[1].kinds)
]


@pytest.mark.parametrize(
    ("library", "ecosystem", "spec"), [c[1:] for c in COMMENTED], ids=[c[0] for c in COMMENTED]
)
def test_a_commented_out_import_is_no_evidence(
    tmp_path: Path, library: Library, ecosystem: str, spec: str
) -> None:
    if ecosystem == "python":
        line = _python_source(spec)
        (tmp_path / "app.py").write_text(f'"""Usage:\n\n{line}"""\n\n# {line}x = 1\n')
    elif ecosystem == "npm":
        line = f'import x from "{_npm_name(spec)}";'
        (tmp_path / "index.ts").write_text(f'// {line}\n/*\n{line}\n*/\nconst url = "http://x";\n')
    else:
        path = _go_path(spec)
        (tmp_path / "go.mod").write_text(f"module example.com/m\n\n// require {path} v1.0.0\n")
        (tmp_path / "lib.go").write_text(
            f'package lib\n\n// import "{path}"\n/* import "{path}" */\n'
        )
    sdks = {k for k in library.kinds if k.startswith("sdk:")}
    assert not sdks & _kinds(tmp_path)


def test_the_most_specific_rule_wins() -> None:
    t = table()
    # a vector store inside langchain_community is a vector database, not an LLM call
    assert t.python("langchain_community.vectorstores", ["Chroma"]) == {
        "retrieval:vector-db",
        "sdk:chroma",
    }
    assert t.python("langchain_community.vectorstores", ["SKLearnVectorStore"]) == {
        "retrieval:vector-db"
    }
    assert "agent-runtime:llm-sdk" in t.python("langchain_community.chat_models", ["ChatOllama"])
    # per name: embeddings and a chat model from one import
    assert t.python("langchain_openai", ["OpenAIEmbeddings"]) == {"retrieval:embeddings"}
    assert "sdk:langchain" in t.python("langchain_openai", ["ChatOpenAI"])
    # "agents" is the OpenAI Agents SDK only with its names: a local package of that name is not
    assert t.python("agents", ["Agent", "Runner"]) == {"agent-runtime:llm-sdk", "sdk:openai-agents"}
    assert t.python("agents", ["my_helper"]) == frozenset()
    assert t.python("agents") == frozenset()
    assert t.pypi("langchain_chroma") == {"retrieval:vector-db", "sdk:chroma"}  # exact over prefix
    assert "sdk:langchain" in t.pypi("langchain-openai")
    assert t.npm("@langchain/langgraph/prebuilt") == {"agent-runtime:llm-sdk", "sdk:langgraph"}
    assert t.npm("./openai") == frozenset()
    assert t.go("charm.land/bubbletea/v2") == {"charm"}
    assert t.go("github.com/charmbracelet/bubbletea") == {"charm"}
    assert t.go("github.com/openai/openai-go/v2/option") == {"agent-runtime:llm-sdk", "sdk:openai"}
    assert t.go("github.com/openai/openai-gopher") == frozenset()


def test_a_broken_entry_is_refused() -> None:
    with pytest.raises(ValueError):
        compile_table({"libraries": [{"kinds": [], "python": ["x"]}]})
    with pytest.raises(ValueError):
        compile_table({"libraries": [{"kinds": ["a"], "ruby": ["x"]}]})
    with pytest.raises(ValueError):
        compile_table({"libraries": [], "terms": {"k": {"python": ["(unclosed"]}}})
