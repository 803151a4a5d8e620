"""STAND-IN agent: the code reviewer of the review pipeline (seed 003).

An offline placeholder, so the example runs with no model and no network. A real reviewer is an
LLM agent (for instance a ``code-reviewer`` sub-agent run with ``claude -p``) that applies the
checklists of the profiles the resolver picked to the staged diff and reports findings; it does
not redo the profile detection.

This one reads the prompt on stdin: the diff, the resolver's output and the requester's framing,
as the runner builds them from the ``diff``, ``resolver`` and ``prompt`` inputs::

    Resolver output:
    ---
    Active profiles: general, kubernetes
    …
    ---

    Diff (git diff --cached):
    ---
    diff --git a/deploy/orders-api.yaml b/deploy/orders-api.yaml
    …
    ---

    Context from the requester:
    ---
    Please review my change …
    ---

It takes the profiles from the ``Active profiles:`` line (all of them when there is none: no
resolver ran) and checks only the ADDED lines of the diff, one rule set per profile:

- ``kubernetes``: a container of a workload without ``resources.limits`` (or without its cpu or
  its memory limit);
- ``python``: a SQL query built by string formatting (f-string, ``%``, ``+``, ``.format``) and
  passed to ``execute``, in the call or through a variable;
- ``secrets``: an AWS access key id (``AKIA…``) or a secret-looking name assigned a literal;
- ``general``: a leftover merge-conflict marker.

It prints the profiles it applied, then one markdown bullet per finding,
``- [severity] file:line (profile): message``, or the line ``No findings.``

Run it by hand: ``python3 agents/reviewer.py < prompt.txt``. It shares the diff parsing and the
secret patterns of ``resolver.py``, beside it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resolver import PROFILE_ORDER, DiffFile, parse_diff, secret_hits  # noqa: E402


@dataclass(frozen=True)
class Finding:
    severity: str
    path: str
    line: int
    profile: str
    message: str

    def __str__(self) -> str:
        return f"- [{self.severity}] {self.path}:{self.line} ({self.profile}): {self.message}"


# -- kubernetes ---------------------------------------------------------------------------------

_CONTAINERS = re.compile(r"^(\s*)(?:-\s+)?(?:containers|initContainers):\s*$")
_ITEM = re.compile(r"^(\s*)-\s+(.*)$")
_NAME = re.compile(r"^\s*(?:-\s+)?name:\s*[\"']?([^\"'#\s]+)")


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def _skip(text: str) -> bool:
    return not text.strip() or text.lstrip().startswith("#")


def _container_items(lines: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """The list items under every ``containers:`` / ``initContainers:`` key."""
    items: list[list[tuple[int, str]]] = []
    i = 0
    while i < len(lines):
        key = _CONTAINERS.match(lines[i][1])
        i += 1
        if not key:
            continue
        key_indent = _indent(lines[i - 1][1])
        item_indent: int | None = None
        current: list[tuple[int, str]] | None = None
        while i < len(lines):
            number, text = lines[i]
            if _skip(text):
                i += 1
                continue
            indent = _indent(text)
            if item_indent is None:
                if not _ITEM.match(text) or indent < key_indent:
                    break
                item_indent = indent
            if indent == item_indent and _ITEM.match(text):
                current = [(number, text)]
                items.append(current)
            elif indent > item_indent and current is not None:
                current.append((number, text))
            else:
                break
            i += 1
    return items


def check_kubernetes(file: DiffFile) -> list[Finding]:
    if not file.path.lower().endswith((".yaml", ".yml")):
        return []
    found = []
    for item in _container_items(file.added):
        name_match = next((m for _, t in item if (m := _NAME.match(t))), None)
        name = name_match.group(1) if name_match else "?"
        limits = next((k for k, (_, t) in enumerate(item) if t.strip() == "limits:"), None)
        if limits is None:
            inline = any(re.match(r"^\s*limits:\s*\{.+\}", t) for _, t in item)
            missing = [] if inline else ["cpu", "memory"]
        else:
            base = _indent(item[limits][1])
            block = []
            for _, text in item[limits + 1 :]:
                if not _skip(text) and _indent(text) <= base:
                    break
                block.append(text.strip())
            missing = [
                r for r in ("cpu", "memory") if not any(t.startswith(f"{r}:") for t in block)
            ]
        if missing == ["cpu", "memory"]:
            message = (
                f'container "{name}" has no resource limits (cpu/memory): without them one pod '
                "can starve its node; set resources.limits.cpu and resources.limits.memory"
            )
        elif missing:
            message = (
                f'container "{name}" has no {missing[0]} limit: set resources.limits.{missing[0]}'
            )
        else:
            continue
        found.append(Finding("medium", file.path, item[0][0], "kubernetes", message))
    return found


# -- python -------------------------------------------------------------------------------------

_SQL = re.compile(
    r"(?i)\b(?:select\b.+\bfrom|insert\s+into|update\s+\w+\s+set|delete\s+from|"
    r"replace\s+into|drop\s+table|create\s+table)\b"
)
_FORMATTED = re.compile(
    r"""(?x)
      \b(?:[fF][rR]?|[rR][fF])(["'])(?:(?!\1).)*\{            # an f-string with a placeholder
    | (?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*%\s*[\w(]    # "..." % value
    | ["']\s*\+\s*[\w(]  |  [\w)]\s*\+\s*["']                  # "..." + value, value + "..."
    | ["']\s*\.format\(                                       # "...".format(value)
    """
)
_EXECUTE = re.compile(r"\.(?:execute|executemany|executescript)\(\s*(\w+)?")
_ASSIGN = re.compile(r"^\s*(\w+)\s*\+?=\s*")
SQL_MESSAGE = (
    "SQL injection: query built by string formatting; use parameterised queries "
    "(placeholders such as ? with the values passed separately)"
)


def check_python(file: DiffFile) -> list[Finding]:
    if not file.path.lower().endswith(".py"):
        return []
    built: dict[str, int] = {}  # variable -> line where a formatted SQL string was assigned
    flagged: dict[int, str] = {}
    previous = ""
    for number, text in file.added:
        code = text
        formatted_sql = bool(_SQL.search(code) and _FORMATTED.search(code))
        call = _EXECUTE.search(code)
        if formatted_sql:
            assign = _ASSIGN.match(code)
            if call or previous.rstrip().endswith(("execute(", "executemany(")):
                flagged.setdefault(number, SQL_MESSAGE)
            elif assign:
                built[assign.group(1)] = number
        if call and call.group(1) in built:
            at = built[call.group(1)]
            flagged.setdefault(at, f"{SQL_MESSAGE}; executed at line {number}")
        if code.strip():
            previous = code
    return [Finding("high", file.path, n, "python", m) for n, m in sorted(flagged.items())]


# -- secrets and general ------------------------------------------------------------------------


def check_secrets(file: DiffFile) -> list[Finding]:
    found = []
    for number, what in secret_hits(file):
        label = what if what == "AWS access key" else f"{what}, a secret"
        message = (
            f"hard-coded secret ({label}) committed: treat it as leaked, rotate the key and read "
            "it from the environment or a secret manager instead"
        )
        found.append(Finding("critical", file.path, number, "secrets", message))
    return found


def check_general(file: DiffFile) -> list[Finding]:
    return [
        Finding("high", file.path, n, "general", "leftover merge-conflict marker")
        for n, text in file.added
        if re.match(r"^(?:<{7}|>{7})(?: |$)", text)
    ]


Check = Callable[[DiffFile], list[Finding]]
CHECKS: dict[str, Check] = {
    "general": check_general,
    "kubernetes": check_kubernetes,
    "python": check_python,
    "secrets": check_secrets,
}
"""Profile -> the rules applied under it."""

_ACTIVE = re.compile(r"^\s*\**Active profiles:?\**:?\s*(.*)$", re.MULTILINE | re.IGNORECASE)


def active_profiles(prompt: str) -> list[str] | None:
    """The profiles on the resolver's ``Active profiles:`` line, or None without one."""
    match = _ACTIVE.search(prompt)
    if not match:
        return None
    names = [p.strip(" .*`").lower() for p in match.group(1).split(",")]
    return [p for p in names if p]


def review(prompt: str, checks: dict[str, Check] = CHECKS) -> str:
    """The review of the diff in ``prompt`` under the resolver's profiles."""
    profiles = active_profiles(prompt)
    if profiles is None:
        applied = [p for p in PROFILE_ORDER if p in checks]
        head = f"Profiles applied: {', '.join(applied)} (no resolver output found: all of them)"
    else:
        applied = [p for p in profiles if p in checks]
        unknown = [p for p in profiles if p not in checks]
        head = f"Profiles applied: {', '.join(applied) or 'none'} (from the resolver)"
        if unknown:
            head += f"; no checklist here for: {', '.join(unknown)}"
    findings: list[Finding] = []
    for file in parse_diff(prompt):
        for profile in applied:
            findings.extend(checks[profile](file))
    lines = [head, ""]
    if findings:
        lines.append("Findings:")
        lines.extend(str(f) for f in findings)
    else:
        lines.append("No findings.")
    return "\n".join(lines) + "\n"


def main(checks: dict[str, Check] = CHECKS) -> None:
    prompt = sys.stdin.buffer.read().decode("utf-8", "replace")
    sys.stdout.write(review(prompt, checks))


if __name__ == "__main__":
    main()
