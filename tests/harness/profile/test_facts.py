"""The facts kit templates see: routes, documents, Go mains, Nix tools, Charm, MCP servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coalmine.harness.profile import profile_repository
from coalmine.harness.profile.facts import MAX_DOCS, collect_facts, route_of
from tests.helpers.kit_project import EMPTY_FACTS


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("app/page.tsx", "/"),
        ("src/app/(shop)/cart/page.tsx", "/cart"),
        ("app/blog/[slug]/page.tsx", None),
        ("pages/index.tsx", "/"),
        ("pages/about.tsx", "/about"),
        ("pages/blog/index.jsx", "/blog"),
        ("pages/blog/[id].tsx", None),
        ("src/routes/settings/+page.svelte", "/settings"),
        ("src/lib/util.ts", None),
    ],
)
def test_route_of(path: str, route: str | None) -> None:
    assert route_of(path) == route


def facts_of(root: Path):  # type: ignore[no-untyped-def]
    return collect_facts(root, profile_repository(root).signals)


def test_an_empty_repository_has_every_key_empty(tmp_path: Path) -> None:
    assert facts_of(tmp_path) == EMPTY_FACTS


def test_web_routes_and_the_dev_command(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "package.json": json.dumps({"dependencies": {"next": "15"}, "scripts": {"dev": "x"}}),
            "pnpm-lock.yaml": "",
            "app/page.tsx": "export default 1",
            "app/about/page.tsx": "export default 1",
            "app/posts/[id]/page.tsx": "export default 1",
        },
    )
    facts = facts_of(tmp_path)
    assert facts["routes"] == ["/", "/about"]
    assert facts["node_package_manager"] == "pnpm"
    assert facts["dev_command"] == "pnpm run dev"


def test_docs_take_their_heading_or_first_line_and_stop_at_the_cap(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "docs/a-setup.md": "intro\n# Setting up\n",
            "docs/b.rst": "Deploying\n=========\n",
            "docs/c_notes.txt": "no heading here\n",
            "docs/img.png": "not a doc",
            **{f"knowledge/k{i:02}.md": f"# K {i}\n" for i in range(20)},
        },
    )
    docs = facts_of(tmp_path)["docs"]
    assert [(d["id"], d["title"]) for d in docs[:3]] == [
        ("docs/a-setup.md", "Setting up"),
        ("docs/b.rst", "Deploying"),
        ("docs/c_notes.txt", "no heading here"),  # its first line, not its file name
    ]
    assert len(docs) == MAX_DOCS
    assert docs[-1]["id"] == "knowledge/k08.md" and docs[-1]["title"] == "K 8"


def test_the_readme_is_the_corpus_when_there_is_no_docs_folder(tmp_path: Path) -> None:
    write(tmp_path, {"README.md": "# My project\n"})
    assert facts_of(tmp_path)["docs"] == [
        {"id": "README.md", "title": "My project", "excerpt": "", "passages": []}
    ]


def test_a_licence_header_is_never_the_title(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "data/books/alice.md": (
                "The Project Gutenberg eBook of Alice's Adventures in Wonderland\n\n"
                "This ebook is for the use of anyone anywhere at no cost.\n\n"
                "Title: Alice's Adventures in Wonderland\n\nAuthor: Lewis Carroll\n\n"
                "*** START OF THE PROJECT GUTENBERG EBOOK ALICE'S ADVENTURES IN WONDERLAND ***\n\n"
                "CHAPTER I.\nDown the Rabbit-Hole\n\nAlice was beginning to get very tired of"
                " sitting by her sister on the bank.\n"
            ),
            "data/books/notes.md": (
                "<!-- SPDX-License-Identifier: MIT -->\nCopyright (c) 2024 The authors\n\n"
                "Notes on the garden\n\nThe roses in the garden were painted red by the cards.\n"
            ),
            "load.py": 'from x import DirectoryLoader\nDATA_PATH = "data/books"\n',
        },
    )
    docs = {d["id"]: d for d in facts_of(tmp_path)["docs"]}
    assert docs["data/books/alice.md"]["title"] == "Alice's Adventures in Wonderland"
    assert docs["data/books/alice.md"]["passages"] == [
        "Alice was beginning to get very tired of sitting by her sister on the bank."
    ]
    assert docs["data/books/notes.md"]["title"] == "Notes on the garden"


def test_passages_are_the_sentences_particular_to_a_document(tmp_path: Path) -> None:
    common = "The system stores every record in the main database table."
    write(
        tmp_path,
        {
            "docs/a.md": f"# A\n\n{common} Refunds reach the customer card within five days.\n",
            "docs/b.md": f"# B\n\n{common} Invoices are mailed on the first of each month.\n",
        },
    )
    a, b = facts_of(tmp_path)["docs"]
    # both sentences qualify; the particular one scores higher (its words are in one document)
    assert a["passages"] == [common, "Refunds reach the customer card within five days."]
    assert a["excerpt"] == " ".join(a["passages"])


def test_go_module_mains_and_charm_libraries(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "go.mod": "module example.com/shop\n\nrequire (\n"
            "\tgithub.com/charmbracelet/wish v1.4.0\n"
            "\tgithub.com/charmbracelet/bubbletea/v2 v2.0.0\n"
            "\tgithub.com/charmbracelet/x/vcr v0.1.0\n)\n",
            "main.go": "package main\n",
            "cmd/server/main.go": "package main\n",
            "cmd/lib/lib.go": "package lib\n",
        },
    )
    facts = facts_of(tmp_path)
    assert facts["go_module"] == "example.com/shop"
    assert facts["go_mains"] == [".", "./cmd/server"]
    assert facts["charm"] == ["bubbletea", "vcr", "wish"]


def test_nix_tools_from_the_dev_shell(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "flake.nix": "{ outputs = { ... }: { devShells.default = pkgs.mkShell {\n"
            "  packages = with pkgs; [ go_1_22 gopls nodejs_20 # editor\n jq ];\n"
            "  buildInputs = [ pkgs.python3 pkgs.go_1_22 ];\n}; }; }\n",
            ".envrc": "use flake\n",
        },
    )
    assert facts_of(tmp_path)["nix"] == {
        "flake": True,
        "shell_nix": False,
        "envrc": True,
        "tools": ["go", "gopls", "node", "jq", "python3"],
    }


def test_mcp_servers_and_agent_files(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".mcp.json": json.dumps({"mcpServers": {"github": {}, "files": {}}}),
            ".vscode/mcp.json": json.dumps({"servers": {"github": {}, "db": {}}}),
            "broken/mcp.json": "{not json",
            ".claude/agents/reviewer.md": "---\nname: reviewer\n---\nReview.\n",
        },
    )
    facts = facts_of(tmp_path)
    assert facts["mcp_servers"] == ["github", "files", "db"]
    assert facts["agent_files"] == [".claude/agents/reviewer.md"]


def test_an_excerpt_is_the_key_passages_cut_at_a_word(tmp_path: Path) -> None:
    sentence = "Every ticket of the support queue gets an answer within one working day."
    write(tmp_path, {"docs/long.md": "# Long\n\n" + f"{sentence} " * 10})
    [long] = facts_of(tmp_path)["docs"]
    assert long["passages"] == [sentence] * 3
    joined = " ".join([sentence] * 3)  # 3 x 72 + 2 = 218 chars: under the cap, kept whole
    assert long["excerpt"] == joined
