r"""Walk a repository read-only: which files count, which are ignored, what a detector may read.

The walk never writes, never follows a symlink (it may lead out of the tree) and never runs
anything: ignore rules come from the repository's own ``.gitignore`` files, matched here by
:class:`IgnoreFile`, not by git. Why our own matcher rather than ``git ls-files``: the same
tree profiles the same with or without a ``.git`` folder (a tarball, a fresh checkout), and no
subprocess is started. What it reads:

- every ``.gitignore`` at or below the root, each applying to its own folder and below; a
  deeper file's rules win over a shallower one's, and within a file the last matching line
  wins (``!`` re-includes). ``.git/info/exclude``, global excludes and ``.gitignore`` files
  above the root are not read.
- the pattern syntax of gitignore(5): blank lines and ``#`` comments, ``\#`` and ``\!``
  escapes, trailing spaces dropped unless escaped, ``!`` negation, a trailing ``/`` for
  folders only, a ``/`` at the start or in the middle anchoring the pattern to the
  ``.gitignore``'s folder (otherwise it matches at any depth), ``*``, ``?``, ``[...]``
  (``[!...]`` negated) within one path segment, and ``**/``, ``/**/`` and ``/**`` across
  segments. As in git, an ignored folder is not entered, so nothing under it can be
  re-included.

Folders named in :data:`ALWAYS_SKIPPED` are never entered, ignored or not. Entries are visited
in name order, a folder's files before its subfolders, so a profile is the same on every run.

:func:`read_text` is the one way a detector reads a file: files over :data:`MAX_FILE_BYTES`
and binary files (a NUL byte in the first :data:`BINARY_SNIFF_BYTES`) are skipped, and at most
:data:`READ_LIMIT` bytes are read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "ALWAYS_SKIPPED",
    "BINARY_SNIFF_BYTES",
    "MAX_FILE_BYTES",
    "READ_LIMIT",
    "IgnoreFile",
    "IgnoreRule",
    "read_text",
    "walk",
]

ALWAYS_SKIPPED = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build", ".coalmine"}
)
"""Folder names never entered, at any depth."""

MAX_FILE_BYTES = 1024 * 1024
"""A file larger than this (1 MB) is never read."""
READ_LIMIT = 256 * 1024
"""At most this much of a file is read (256 KB)."""
BINARY_SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes makes a file binary (never read further)."""

_GITIGNORE = ".gitignore"


@dataclass(frozen=True)
class IgnoreRule:
    """One pattern line of a ``.gitignore``, compiled."""

    pattern: str
    """The line as written (trailing spaces dropped)."""
    regex: re.Pattern[str]
    """Matches a whole path relative to the ``.gitignore``'s folder."""
    negate: bool
    dir_only: bool


class IgnoreFile:
    """The rules of one ``.gitignore``, for paths relative to its folder (``base``)."""

    def __init__(self, base: str, rules: list[IgnoreRule]):
        self.base = base
        """The folder holding the file, relative to the root (``""`` for the root)."""
        self.rules = rules
        # One alternation of every rule: most paths match none, and one search says so.
        self._any = re.compile("|".join(f"(?:{r.regex.pattern})" for r in rules)) if rules else None

    @classmethod
    def parse(cls, text: str, base: str = "") -> IgnoreFile:
        """Compile the lines of a ``.gitignore`` in folder ``base`` (skipping unusable ones)."""
        rules = [rule for line in text.splitlines() if (rule := _compile(line)) is not None]
        return cls(base, rules)

    def match(self, path: str, is_dir: bool) -> bool | None:
        """Whether ``path`` (relative to :attr:`base`) is ignored, or ``None`` if no rule matches.

        The last matching rule decides: ``True`` for a pattern, ``False`` for a ``!`` pattern.
        """
        if self._any is None or self._any.match(path) is None:
            return None
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(path):
                return not rule.negate
        return None


def _compile(line: str) -> IgnoreRule | None:
    line = line.rstrip("\r")
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    body = line[1:] if negate else line
    if body.startswith(("\\!", "\\#")):
        body = body[1:]
    dir_only = body.endswith("/")
    body = body.rstrip("/")
    if not body:
        return None
    anchored = "/" in body
    body = body.lstrip("/")
    if not body:
        return None
    segments = body.split("/")
    parts = [] if anchored else ["(?:[^/]*/)*"]
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]*/)*")
        else:
            parts.append(_glob(segment) + ("" if last else "/"))
    try:
        regex = re.compile("".join(parts) + r"\Z")
    except re.error:  # a malformed class such as "[z-a]": git ignores the line too
        return None
    return IgnoreRule(line, regex, negate, dir_only)


def _glob(segment: str) -> str:
    r"""One path segment's glob as a regex: ``*``, ``?``, ``[...]`` and ``\`` escapes."""
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        c = segment[i]
        if c == "*":
            while i + 1 < n and segment[i + 1] == "*":
                i += 1  # "**" inside a segment is a plain "*"
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(segment[i]))
        elif c == "[":
            # a "]" right after "[" (or "[!") is a member, not the end
            end = segment.find("]", i + 3 if segment[i + 1 : i + 2] in ("!", "^") else i + 2)
            if end == -1:
                out.append(re.escape(c))
            else:
                inner = segment[i + 1 : end]
                negated = inner[:1] in ("!", "^")
                if negated:
                    inner = inner[1:]
                inner = re.sub(r"([\\\[\]^])", r"\\\1", inner)
                out.append(f"[{'^/' if negated else ''}{inner}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _ignored(chain: tuple[IgnoreFile, ...], rel: str, is_dir: bool) -> bool:
    for ignore in reversed(chain):  # the deepest .gitignore speaks first
        sub = rel[len(ignore.base) + 1 :] if ignore.base else rel
        verdict = ignore.match(sub, is_dir)
        if verdict is not None:
            return verdict
    return False


def walk(root: str | os.PathLike[str]) -> Iterator[tuple[str, str]]:
    """Yield ``(relative posix path, absolute path)`` for every file the profile counts.

    Regular files only (no symlinks), outside :data:`ALWAYS_SKIPPED` folders and not ignored by
    a ``.gitignore``. Unreadable folders are skipped.
    """
    top = os.fspath(root)
    stack: list[tuple[str, str, tuple[IgnoreFile, ...]]] = [(top, "", ())]
    while stack:
        path, rel, chain = stack.pop()
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name == _GITIGNORE and entry.is_file(follow_symlinks=False):
                text = read_text(entry.path)
                if text:
                    chain = (*chain, IgnoreFile.parse(text, rel))
                break
        subdirs: list[tuple[str, str, tuple[IgnoreFile, ...]]] = []
        for entry in entries:
            name = entry.name
            child = f"{rel}/{name}" if rel else name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if name not in ALWAYS_SKIPPED and not _ignored(chain, child, True):
                        subdirs.append((entry.path, child, chain))
                elif entry.is_file(follow_symlinks=False) and not _ignored(chain, child, False):
                    yield child, entry.path
            except OSError:  # pragma: no cover - vanished while we looked
                continue
        stack.extend(reversed(subdirs))


def read_text(path: str) -> str | None:
    """The start of a text file (at most :data:`READ_LIMIT` bytes), or ``None``.

    ``None`` for a file over :data:`MAX_FILE_BYTES`, a binary file, or one that cannot be read.
    Bytes that are not UTF-8 are replaced, never fatal.
    """
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_FILE_BYTES:
                return None
            data = f.read(READ_LIMIT)
    except OSError:
        return None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return None
    return data.decode("utf-8", errors="replace")
