"""STAND-IN agent: the profile resolver of the review pipeline (seed 003).

An offline placeholder, so the example runs with no model and no network. A real resolver is an
LLM agent (for instance a ``profile-resolver`` sub-agent run with ``claude -p``) that reads the
staged diff, inspects the worktree where its detection procedure says so, and decides which
review profiles and checklists apply, with a reason per file.

This one applies a few fixed rules to the diff on stdin and answers on stdout:

- every file gets ``general``;
- ``*.py`` gets ``python``;
- ``*.yaml`` / ``*.yml`` whose added lines hold a ``kind:`` gets ``kubernetes``;
- a file with a key-like string (an AWS access key id, a ``secret``/``password``/``token``
  assigned a literal) or named like a config file (``.env``, ``*.cfg``, ``*.ini``) gets
  ``secrets``.

It expects the prompt the runner builds from the ``diff`` and ``worktree`` inputs::

    Worktree root: /tmp/…/k8s-missing-limits

    Diff (git diff --cached):
    ---
    diff --git a/deploy/orders-api.yaml b/deploy/orders-api.yaml
    …
    ---

and reads the diff wherever it is in the prompt (from the first ``diff --git`` line). It prints::

    Active profiles: general, kubernetes

    Files:
    - deploy/orders-api.yaml → general, kubernetes (kind: Deployment)

Run it by hand: ``python3 agents/resolver.py < prompt.txt``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

PROFILE_ORDER = ("general", "kubernetes", "python", "secrets")
"""The order profiles are listed in."""

AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_SECRET_NAME = r"[\w.-]*(?:secret|password|passwd|token|api_?key|private_?key)[\w.-]*"
QUOTED_SECRET = re.compile(rf"""(?i)\b({_SECRET_NAME})["']?\s*[:=]\s*["']([^"'\s]{{6,}})["']""")
"""A secret-looking name assigned a quoted literal: ``password = "hunter22"``."""
BARE_SECRET = re.compile(
    rf"""(?i)^\s*(?:export\s+)?({_SECRET_NAME})\s*[:=]\s*([^\s"'$\{{(#][^\s#]{{5,}})\s*$"""
)
"""In a config file, a secret-looking key assigned a bare literal: ``DB_PASSWORD=hunter22``."""
PLACEHOLDER = re.compile(r"(?i)^(?:changeme|change-me|x+|\*+|<[^>]*>|your[-_].*|dummy|none|null)$")
CODE_SUFFIXES = (".py", ".js", ".ts", ".go", ".java", ".rb", ".rs", ".kt", ".cs", ".php")
CONFIG_SUFFIXES = (".env", ".cfg", ".ini", ".conf", ".properties")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
KIND = re.compile(r"^\s*kind:\s*([A-Za-z]+)\s*$")


@dataclass
class DiffFile:
    """One file of a diff: its path and its added lines (number in the new file, text)."""

    path: str
    added: list[tuple[int, str]] = field(default_factory=list)


def _strip_prefix(name: str) -> str:
    name = name.strip()
    if len(name) >= 2 and name[0] == name[-1] == '"':
        name = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        name = name.encode("latin-1").decode("utf-8", "replace")
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse_diff(text: str) -> list[DiffFile]:
    """The files of the ``git diff`` in ``text`` with their added lines, in diff order.

    The diff may sit anywhere in ``text``: it starts at a ``diff --git`` line and ends at the
    first line that fits neither a file header nor a hunk (whose length its ``@@`` line gives).
    """
    files: list[DiffFile] = []
    current: DiffFile | None = None
    state = "outside"  # outside | header | hunk | between
    new_line = old_left = new_left = 0
    for line in text.splitlines():
        if line.startswith("diff --git "):
            rest = line[len("diff --git ") :]
            # "a/X b/X": the halves are the same path for an added file; "+++ b/X" confirms it
            half = rest[len(rest) // 2 + 1 :] if " b/" in rest else rest
            current = DiffFile(_strip_prefix(half))
            files.append(current)
            state = "header"
            continue
        if current is None:
            continue
        hunk = _HUNK.match(line)
        if hunk and state != "hunk":
            new_line = int(hunk.group(3))
            old_left = int(hunk.group(2) or "1")
            new_left = int(hunk.group(4) or "1")
            state = "hunk" if (old_left or new_left) else "between"
            continue
        if state == "header":
            if line.startswith("+++ ") and line[4:].strip() != "/dev/null":
                current.path = _strip_prefix(line[4:])
            continue
        if state == "hunk":
            if line.startswith("\\"):  # "\ No newline at end of file"
                continue
            if line.startswith("+"):
                current.added.append((new_line, line[1:]))
                new_line += 1
                new_left -= 1
            elif line.startswith(" ") or line == "":
                new_line += 1
                new_left -= 1
                old_left -= 1
            elif line.startswith("-"):
                old_left -= 1
            if old_left <= 0 and new_left <= 0:
                state = "between"
            continue
        # between hunks: anything but a hunk or a new file ends the diff
        current = None
        state = "outside"
    return files


def secret_hits(file: DiffFile) -> list[tuple[int, str]]:
    """The added lines of ``file`` that commit a secret: (line number, what it is).

    What it is never includes the value: an AWS access key id, or the name of the key.
    """
    code = file.path.lower().endswith(CODE_SUFFIXES)
    hits: list[tuple[int, str]] = []
    for number, text in file.added:
        if AWS_KEY_ID.search(text):
            hits.append((number, "AWS access key"))
            continue
        match = QUOTED_SECRET.search(text) or (None if code else BARE_SECRET.search(text))
        if match and not PLACEHOLDER.match(match.group(2)):
            hits.append((number, match.group(1)))
    return hits


def resolve(file: DiffFile) -> list[tuple[str, str]]:
    """The profiles of one file, each with what triggered it."""
    found = [("general", "every file")]
    path = file.path.lower()
    name = path.rsplit("/", 1)[-1]
    if path.endswith((".yaml", ".yml")):
        kinds = [m.group(1) for _, text in file.added if (m := KIND.match(text))]
        if kinds:
            found.append(("kubernetes", "kind: " + ", ".join(dict.fromkeys(kinds))))
    if path.endswith(".py"):
        found.append(("python", "*.py"))
    hits = secret_hits(file)
    if any(what == "AWS access key" for _, what in hits):
        found.append(("secrets", "an AWS access key id"))
    elif hits:
        found.append(("secrets", "a secret assigned a literal value"))
    elif name.startswith(".env") or name.endswith(CONFIG_SUFFIXES):
        found.append(("secrets", "a config file"))
    return found


def answer(prompt: str) -> str:
    """The resolution of the diff in ``prompt``."""
    files = parse_diff(prompt)
    if not files:
        return "Active profiles: general\n\nFiles:\n(no files in the diff)\n"
    per_file = [(f.path, resolve(f)) for f in files]
    active = {profile for _, found in per_file for profile, _ in found}
    lines = ["Active profiles: " + ", ".join(p for p in PROFILE_ORDER if p in active), "", "Files:"]
    for path, found in per_file:
        profiles = ", ".join(profile for profile, _ in found)
        reasons = "; ".join(why for profile, why in found if profile != "general")
        lines.append(f"- {path} → {profiles}" + (f" ({reasons})" if reasons else ""))
    return "\n".join(lines) + "\n"


def main() -> None:
    prompt = sys.stdin.buffer.read().decode("utf-8", "replace")
    sys.stdout.write(answer(prompt))


if __name__ == "__main__":
    main()
