"""``coalmine profile``: small real repositories, each with its signals, evidence and kits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coalmine.cli.profile import render_profile
from coalmine.harness.kits import all_kits, applicable
from coalmine.harness.profile import Profile, profile_repository
from coalmine.harness.profile.scan import MAX_FILE_BYTES
from coalmine.harness.profile.signals import MAX_EVIDENCE

Where = tuple[str, int | None]


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


def found(profile: Profile) -> dict[str, list[Where]]:
    return {s.kind: [(e.path, e.line) for e in s.evidence] for s in profile.signals}


AGENT_REPO: dict[str, str | bytes] = {
    ".mcp.json": '{"mcpServers": {"files": {"command": "npx", "args": ["files-mcp"]}}}\n',
    "pyproject.toml": """
        [project]
        name = "helper"
        dependencies = [
          "anthropic>=0.40",
          "mcp>=1.2",
        ]

        [tool.uv]
        dev-dependencies = []
    """,
    "uv.lock": "version = 1\n",
    "AGENTS.md": "# Agents\n",
    ".claude/agents/reviewer.md": "---\nname: reviewer\n---\n",
    ".github/workflows/ci.yml": "on: push\n",
    "helper/agent.py": '''
        """The agent loop."""
        import os
        import anthropic

        from mcp.server.fastmcp import FastMCP

        client = anthropic.Anthropic()
    ''',
    "helper/__init__.py": "",
}


def test_python_agent_repo_with_an_mcp_config(tmp_path: Path) -> None:
    profile = profile_repository(write(tmp_path, AGENT_REPO))
    assert found(profile) == {
        "agent-runtime:agent-definitions": [
            ("AGENTS.md", None),
            (".claude/agents/reviewer.md", None),
        ],
        "agent-runtime:llm-sdk": [("pyproject.toml", 4), ("helper/agent.py", 3)],
        "agent-runtime:mcp": [(".mcp.json", None), ("pyproject.toml", 5), ("helper/agent.py", 5)],
        "sdk:anthropic": [("pyproject.toml", 4), ("helper/agent.py", 3)],
        "sdk:mcp": [("pyproject.toml", 5), ("helper/agent.py", 5)],
        "ci:github-actions": [(".github/workflows/ci.yml", None)],
        "language:python": [("helper/__init__.py", None), ("helper/agent.py", None)],
        "package-manager:uv": [("pyproject.toml", 8), ("uv.lock", None)],
    }
    assert profile.applicable_kits == ["agent-runtime"]
    assert profile.files_scanned == len(AGENT_REPO)
    assert profile.root == str(tmp_path.resolve())
    assert [s.kind for s in profile.signals] == sorted(s.kind for s in profile.signals)


def test_rag_repo_with_vector_db_clients(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "requirements.txt": "# pinned\nchromadb==0.5.5\nqdrant-client[fastembed]>=1.9\nrequests\n",
            "rag/index.py": """
                import chromadb
                from sentence_transformers import SentenceTransformer

                from qdrant_client import QdrantClient

                model = SentenceTransformer("all-MiniLM-L6-v2")
            """,
            "rag/search.py": """
                def search(store, query):
                    retriever = store.as_retriever(k=5)
                    return retriever.invoke(query)
            """,
        },
    )
    assert found(profile_repository(tmp_path)) == {
        "language:python": [("rag/index.py", None), ("rag/search.py", None)],
        "package-manager:pip": [("requirements.txt", None)],
        "retrieval:embeddings": [("rag/index.py", 2), ("rag/index.py", 6)],
        "retrieval:retriever": [("rag/search.py", 2)],
        "retrieval:vector-db": [
            ("requirements.txt", 2),
            ("requirements.txt", 3),
            ("rag/index.py", 1),
            ("rag/index.py", 4),
        ],  # fmt: skip
        "sdk:chroma": [("requirements.txt", 2), ("rag/index.py", 1)],
        "sdk:qdrant": [("requirements.txt", 3), ("rag/index.py", 4)],
    }
    assert profile_repository(tmp_path).applicable_kits == ["rag-system"]


def test_nextjs_app(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "package.json": """
                {
                  "name": "site",
                  "dependencies": {
                    "next": "15.0.0",
                    "react": "19.0.0",
                    "openai": "4.0.0"
                  },
                  "devDependencies": {
                    "@playwright/test": "1.48.0",
                    "typescript": "5.6.0"
                  }
                }
            """,
            "app/page.tsx": """
                import Link from "next/link";

                export default function Home() {
                  return <Link href="/about">About</Link>;
                }
            """,
            "app/about/page.tsx": "export default function About() { return null; }\n",
            "app/layout.tsx": 'import "./globals.css";\n',
            "pages/api/hello.ts": "export default function handler() {}\n",
            "lib/llm.ts": "const x = 1;\nconst OpenAI = require('openai');\n",
            "playwright.config.ts": 'import { defineConfig } from "@playwright/test";\n',
        },
    )
    profile = profile_repository(tmp_path)
    assert found(profile) == {
        "agent-runtime:llm-sdk": [("package.json", 6), ("lib/llm.ts", 2)],
        "language:typescript": [
            ("playwright.config.ts", None),
            ("app/layout.tsx", None),
            ("app/page.tsx", None),
            ("app/about/page.tsx", None),
            ("lib/llm.ts", None),
            ("pages/api/hello.ts", None),
        ],  # fmt: skip
        "package-manager:npm": [("package.json", None)],
        "sdk:openai": [("package.json", 6), ("lib/llm.ts", 2)],
        "web-ui:framework": [("package.json", 4), ("package.json", 5), ("app/page.tsx", 1)],
        "web-ui:playwright": [
            ("package.json", 9),
            ("playwright.config.ts", None),
            ("playwright.config.ts", 1),
        ],  # fmt: skip
        "web-ui:routes": [("app/page.tsx", None), ("app/about/page.tsx", None)],
    }
    assert profile.applicable_kits == ["agent-runtime", "web-app"]


def test_a_lockfile_names_the_js_package_manager(tmp_path: Path) -> None:
    write(tmp_path, {"package.json": "{}", "pnpm-lock.yaml": "", "tools/package.json": "{}"})
    kinds = found(profile_repository(tmp_path))
    assert kinds["package-manager:pnpm"] == [("pnpm-lock.yaml", None)]
    # a package below the lockfile's folder is part of that workspace, not an npm project
    assert "package-manager:npm" not in kinds
    write(tmp_path / "other", {"package.json": "{}"})
    (tmp_path / "pnpm-lock.yaml").unlink()
    write(tmp_path / "site", {"package.json": '{"packageManager": "yarn@4.1.0"}'})
    kinds = found(profile_repository(tmp_path))
    assert kinds["package-manager:yarn"] == [("site/package.json", 1)]
    assert kinds["package-manager:npm"] == [
        ("package.json", None), ("other/package.json", None), ("tools/package.json", None)
    ]  # fmt: skip


def test_go_service(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "go.mod": "module example.com/svc\n\ngo 1.22\n",
            "cmd/svc/main.go": """
                package main

                import (
                    "fmt"
                    "net/http"
                )

                func main() { fmt.Println(http.ListenAndServe(":8080", nil)) }
            """,
        },
    )
    profile = profile_repository(tmp_path)
    assert found(profile) == {
        "go-service": [("go.mod", None), ("cmd/svc/main.go", 1), ("cmd/svc/main.go", 5)],
        "language:go": [("cmd/svc/main.go", None)],
        "package-manager:go-modules": [("go.mod", None)],
    }
    assert profile.applicable_kits == ["go-service"]


def test_go_code_without_a_module_or_server_is_not_a_service(tmp_path: Path) -> None:
    write(tmp_path, {"lib/x.go": 'package lib\n\nimport "net/http"\n'})
    assert "go-service" not in found(profile_repository(tmp_path))
    write(tmp_path / "mod", {"go.mod": "module m\n", "lib.go": "package lib\n"})
    assert "go-service" not in found(profile_repository(tmp_path / "mod"))


def test_charm_service(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "go.mod": """
                module example.com/ssh

                require (
                    github.com/charmbracelet/wish v1.4.0
                    github.com/charmbracelet/bubbletea v1.1.0
                    github.com/mark3labs/mcp-go v0.8.0
                )
            """,
            "main.go": "package main\n",
        },
    )
    profile = profile_repository(tmp_path)
    kinds = found(profile)
    assert kinds["charm"] == [("go.mod", 4), ("go.mod", 5)]
    assert kinds["agent-runtime:mcp"] == [("go.mod", 6)]
    assert profile.applicable_kits == ["agent-runtime", "go-service", "charm-service"]


def test_nix_flake(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "flake.nix": '{ description = "dev shell"; outputs = { self }: { }; }\n',
            ".envrc": "# direnv\nuse flake\n",
            "nix/.envrc": "dotenv\n",
        },
    )
    profile = profile_repository(tmp_path)
    assert found(profile) == {
        "language:nix": [("flake.nix", None)],
        "nix": [(".envrc", 2), ("flake.nix", None)],
    }
    assert profile.applicable_kits == ["nix-project"]


def test_eval_harnesses_and_ci(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "promptfooconfig.yaml": "prompts: []\n",
            ".gitlab-ci.yml": "test: {}\n",
            ".circleci/config.yml": "version: 2.1\n",
            "evals/tasks.py": """
                from inspect_ai import Task, task


                @task
                def qa() -> Task: ...
            """,
            "evals/other.py": "@task\ndef not_inspect(): ...\n",
            "tests/test_llm.py": "from deepeval import assert_test\n",
        },
    )
    kinds = found(profile_repository(tmp_path))
    assert kinds["eval-harness:promptfoo"] == [("promptfooconfig.yaml", None)]
    assert kinds["eval-harness:inspect"] == [("evals/tasks.py", 1), ("evals/tasks.py", 4)]
    assert kinds["eval-harness:deepeval"] == [("tests/test_llm.py", 1)]
    assert kinds["ci:gitlab"] == [(".gitlab-ci.yml", None)]
    assert kinds["ci:circleci"] == [(".circleci/config.yml", None)]


def test_ignored_vendored_large_and_binary_files_are_not_reported(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "secrets/\n*.gen.py\n",
            "app.py": "print('no sdk here')\n",
            "secrets/agent.py": "import openai\n",
            "client.gen.py": "import litellm\n",
            "node_modules/openai/index.js": "require('openai')\n",
            ".venv/lib/site.py": "import anthropic\n",
            "web/build/out.js": "import 'openai'\n",
            "big.py": "import openai\n" + "#" * MAX_FILE_BYTES,
            "blob.py": b"import openai\n\0\x01\x02",
            "pkg/.gitignore": "/local.py\n",
            "pkg/local.py": "import cohere\n",
            "pkg/deep/local.py": "import groq\n",
        },
    )
    profile = profile_repository(tmp_path)
    kinds = found(profile)
    assert kinds["agent-runtime:llm-sdk"] == [("pkg/deep/local.py", 1)]
    paths = {e.path for s in profile.signals for e in s.evidence}
    assert paths.isdisjoint(
        {"secrets/agent.py", "client.gen.py", "node_modules/openai/index.js", "pkg/local.py",
         ".venv/lib/site.py", "web/build/out.js"}
    )  # fmt: skip
    assert profile.files_scanned == 6  # .gitignore ×2, app.py, big.py, blob.py, pkg/deep/local.py


def test_evidence_is_capped_per_kind(tmp_path: Path) -> None:
    write(tmp_path, {f"m{i:02}.py": "import openai\nimport openai\n" for i in range(15)})
    (signal,) = [s for s in profile_repository(tmp_path).signals if s.kind.startswith("agent")]
    assert len(signal.evidence) == MAX_EVIDENCE
    assert [(e.path, e.line) for e in signal.evidence[:3]] == [
        ("m00.py", 1), ("m00.py", 2), ("m01.py", 1),
    ]  # fmt: skip


def test_kits_apply_on_any_of_their_kinds() -> None:
    assert [k.id for k in all_kits()] == [
        "agent-runtime", "rag-system", "web-app", "go-service", "nix-project", "charm-service",
        "coding-agent-skill", "red-team",
    ]  # fmt: skip
    assert applicable(["retrieval:vector-db", "language:go"]) == ["rag-system"]
    assert applicable(["coalmine:canaries"]) == ["coding-agent-skill"]
    assert applicable(["agent-runtime:prompt-router", "nix", "charm"]) == [
        "agent-runtime", "nix-project", "charm-service",
    ]  # fmt: skip
    assert applicable(["language:python", "go"]) == []


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            out[os.path.relpath(os.path.join(dirpath, name), root)] = (st.st_mtime_ns, st.st_size)
    st = os.stat(root)
    out["."] = (st.st_mtime_ns, st.st_size)
    return out


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coalmine", "profile", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_scan_writes_nothing(tmp_path: Path) -> None:
    write(tmp_path, {**AGENT_REPO, ".gitignore": "*.log\n", "run.log": "x\n"})
    before = snapshot(tmp_path)
    profile_repository(tmp_path)
    assert run_cli(tmp_path, "--json").returncode == 0
    assert run_cli(tmp_path).returncode == 0
    assert snapshot(tmp_path) == before
    assert not (tmp_path / ".coalmine").exists()


def test_cli_json_is_the_profile(tmp_path: Path) -> None:
    write(tmp_path, AGENT_REPO)
    proc = run_cli(tmp_path, "--json", "--root", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    printed = Profile.model_validate_json(proc.stdout)
    assert printed == profile_repository(tmp_path)
    raw = json.loads(proc.stdout)
    assert raw["schema"] == "coalmine.profile.v1"
    assert raw["applicable_kits"] == ["agent-runtime"]
    assert {"kind": "agent-runtime:mcp", "evidence": [
        {"path": ".mcp.json", "line": None},
        {"path": "pyproject.toml", "line": 5},
        {"path": "helper/agent.py", "line": 5},
    ]} in raw["signals"]  # fmt: skip


def test_cli_table(tmp_path: Path) -> None:
    write(tmp_path, AGENT_REPO)
    proc = run_cli(tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["KIND", "EVIDENCE", "FIRST"]
    assert "agent-runtime:llm-sdk  2  pyproject.toml:4".split() in [line.split() for line in lines]
    assert lines[-1] == "kits: agent-runtime"


def test_table_of_an_empty_tree(tmp_path: Path) -> None:
    text = render_profile(profile_repository(tmp_path))
    assert text.splitlines()[0] == "no signals"
    assert text.endswith("kits: none")


@pytest.mark.parametrize("missing", ["nowhere"])
def test_cli_rejects_a_missing_root(tmp_path: Path, missing: str) -> None:
    proc = run_cli(tmp_path, "--root", str(tmp_path / missing))
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr


def test_javascript_import_forms(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "src/a.mjs": """
                import { generateText } from "ai";
                import { anthropic } from "@ai-sdk/anthropic";
                const http = require("aiohttp-ish");
                const client = await import("@modelcontextprotocol/sdk/client/index.js");
                const x = Array.from("openai");
                export * from "@qdrant/js-client-rest";
            """,
        },
    )
    kinds = found(profile_repository(tmp_path))
    assert kinds["agent-runtime:llm-sdk"] == [("src/a.mjs", 1), ("src/a.mjs", 2)]
    assert kinds["agent-runtime:mcp"] == [("src/a.mjs", 4)]
    assert kinds["retrieval:vector-db"] == [("src/a.mjs", 6)]
