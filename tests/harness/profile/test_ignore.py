"""The walk's .gitignore matcher: gitignore(5) syntax, nesting, and git itself as the oracle."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from coalmine.harness.profile.scan import ALWAYS_SKIPPED, READ_LIMIT, IgnoreFile, read_text, walk


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "ignored"),
    [
        ("*.log", "a.log", False, True),
        ("*.log", "deep/er/.hidden.log", False, True),
        ("*.log", "a.logs", False, None),
        ("/top.txt", "top.txt", False, True),
        ("/top.txt", "sub/top.txt", False, None),
        ("out/", "x/out", True, True),
        ("out/", "out", False, None),
        ("doc/*.txt", "doc/a.txt", False, True),
        ("doc/*.txt", "doc/x/a.txt", False, None),
        ("doc/*.txt", "src/doc/a.txt", False, None),
        ("**/cache", "cache", True, True),
        ("**/cache", "a/b/cache", False, True),
        ("a/**/b", "a/b", False, True),
        ("a/**/b", "a/x/y/b", False, True),
        ("a/**/b", "a/xb", False, None),
        ("abc/**", "abc/x/y", False, True),
        ("abc/**", "abc", True, None),
        ("?.py", "a.py", False, True),
        ("?.py", "ab.py", False, None),
        ("[!a]bc", "xbc", False, True),
        ("[!a]bc", "abc", False, None),
        ("[a-c]*.md", "b.md", False, True),
        ("[]x]y", "]y", False, True),
        ("\\#lit", "#lit", False, True),
        ("\\!lit", "!lit", False, True),
        ("trail\\ ", "trail ", False, True),
        ("spaces   ", "spaces", False, True),
        ("# comment", "# comment", False, None),
        ("", "x", False, None),
    ],
)
def test_pattern(pattern: str, path: str, is_dir: bool, ignored: bool | None) -> None:
    assert IgnoreFile.parse(pattern).match(path, is_dir) is ignored


def test_the_last_matching_line_wins() -> None:
    rules = IgnoreFile.parse("*.log\n!keep.log\n")
    assert rules.match("x.log", False) is True
    assert rules.match("keep.log", False) is False
    assert IgnoreFile.parse("!keep.log\n*.log\n").match("keep.log", False) is True


def files(root: Path) -> list[str]:
    return sorted(rel for rel, _ in walk(root))


def make(root: Path, paths: list[str], ignores: dict[str, str]) -> None:
    for rel in paths:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n", encoding="utf-8")
    for rel, text in ignores.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


TREE = [
    "a.log", "keep.log", "logs/keep.txt", "logs/other.txt", "src/main.py", "src/gen/x.py",
    "src/gen/keep.py", "src/notes.txt", "docs/a.txt", "docs/sub/b.txt", "top.txt", "sub/top.txt",
    "x/y/cache/c.bin", "cache", "tmp1/f", "tmp2/f", "[weird].py", "lib/build.py", "b/c/d/e.md",
]  # fmt: skip
IGNORES = {
    ".gitignore": (
        "# root rules\n*.log\n!keep.log\nlogs/\n!logs/keep.txt\n/top.txt\ndocs/*.txt\n"
        "**/cache/\ntmp?/\n\\[weird].py\nb/**/e.md\n*.txt\n"
    ),
    "src/.gitignore": "gen/*\n!gen/keep.py\n!notes.txt\n",
}


def test_nested_rules_and_excluded_folders(tmp_path: Path) -> None:
    make(tmp_path, TREE, IGNORES)
    assert files(tmp_path) == [
        ".gitignore", "cache", "keep.log", "lib/build.py", "src/.gitignore", "src/gen/keep.py",
        "src/main.py", "src/notes.txt",
    ]  # fmt: skip


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_agrees_with_git(tmp_path: Path) -> None:
    make(tmp_path, TREE, IGNORES)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    git = ["git", "-c", "core.excludesFile=/dev/null", "-c", "core.quotePath=false"]
    subprocess.run([*git, "init", "-q", "--template="], cwd=tmp_path, env=env, check=True)
    out = subprocess.run(
        [*git, "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=tmp_path, env=env, capture_output=True, check=True,
    ).stdout  # fmt: skip
    assert files(tmp_path) == sorted(os.fsdecode(p) for p in out.split(b"\0") if p)


def test_skipped_folders_and_symlinks(tmp_path: Path) -> None:
    make(tmp_path, [f"{name}/f.py" for name in ALWAYS_SKIPPED] + ["deep/node_modules/m.js"], {})
    (tmp_path / "real.py").write_text("x\n", encoding="utf-8")
    os.symlink(tmp_path / "real.py", tmp_path / "link.py")
    os.symlink(tmp_path / "deep", tmp_path / "linkdir")
    assert files(tmp_path) == ["real.py"]


def test_read_text_limits(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"abc" + b"\0" + b"x" * 10)
    (tmp_path / "late-nul").write_bytes(b"a" * 9000 + b"\0")
    (tmp_path / "latin").write_bytes(b"caf\xe9\n")
    assert read_text(str(tmp_path / "bin")) is None
    assert read_text(str(tmp_path / "late-nul")) == "a" * 9000 + "\0"
    assert read_text(str(tmp_path / "latin")) == "caf\ufffd\n"
    assert read_text(str(tmp_path / "missing")) is None


def test_read_text_reads_the_first_256_kb(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text("x" * (READ_LIMIT + 5000), encoding="utf-8")
    assert read_text(str(tmp_path / "long.py")) == "x" * READ_LIMIT
