"""Throw malformed files of every kind at the CLI; count how each one ends.

Run: .venv/bin/python bench/faults/malformed.py [--only SUBSTRING] [--verbose]

Each case copies a bundled example project to a tmp dir, breaks one file, and runs the command
that reads it, as a user would (``python -m coalmine ...``, memory capped at 2 GiB, 60 s). The
outcome is one of:

- ``clear``: exit 2, the broken file's name in the message, no traceback (the target);
- ``traceback``: a Python traceback reached the user;
- ``silent``: exit 0, as if nothing were wrong;
- ``unclear``: any other exit without the file's name (exit 1 means "a gate failed");
- ``hang``: no answer within 60 s, or the memory cap was hit.

Cases marked ``others`` also check that the good files beside the broken one still ran.
Prints a table and a tally; exits 1 unless every case is ``clear``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@dataclass(frozen=True)
class Case:
    name: str
    example: str  # sdlc or review
    file: str  # the file broken, relative to the project
    command: tuple[str, ...]
    write: Callable[[Path], None]
    others: bool = False  # the other files must still run (their ids appear in the output)


def text(content: str | bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)

    return write


def append(content: str | bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        extra = content if isinstance(content, bytes) else content.encode()
        path.write_bytes(path.read_bytes() + extra)

    return write


def replace(old: str, new: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        body = path.read_text()
        if old not in body:
            raise SystemExit(f"bench bug: {old!r} not in {path}")
        path.write_text(body.replace(old, new, 1))

    return write


def symlink_out(path: Path) -> None:
    path.unlink()
    path.symlink_to("/etc/hostname")


def fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


CANARY = ("canary", "run", "--display", "plain", "--no-judge")
EVAL = ("eval", "run", "--display", "plain")
REVIEW = ("review", "run")
SPEC = "bench/canaries/qa/qa-001-security-review.yaml"
SUITE = "harness/evals/triage.jsonl"
META = "harness/evals/triage.yaml"
FIXTURE = "evals/review/clean-change"

CASES = [
    # coalmine.yaml
    Case("config: bad YAML", "sdlc", "coalmine.yaml", CANARY, append("agents: [unclosed\n")),
    Case("config: top-level list", "sdlc", "coalmine.yaml", CANARY, text("- a\n- b\n")),
    Case("config: unknown key", "sdlc", "coalmine.yaml", CANARY, append("agnets: {}\n")),
    Case(
        "config: agent not a mapping",
        "sdlc",
        "coalmine.yaml",
        CANARY,
        replace("\n  Analyst: {provider: command", "\n  Analyst: 3\n  X: {provider: command"),
    ),
    Case(
        "config: unknown provider",
        "sdlc",
        "coalmine.yaml",
        CANARY,
        replace("\n  Analyst: {provider: command", "\n  Analyst: {provider: telepathy"),
    ),
    Case(
        "config: argv a string",
        "sdlc",
        "coalmine.yaml",
        CANARY,
        replace('argv: ["python3", "agents/analyst.py"]', 'argv: "python3 agents/analyst.py"'),
    ),
    Case(
        "config: recursive alias", "sdlc", "coalmine.yaml", CANARY, append("routing: &r {x: *r}\n")
    ),
    Case(
        "config: alias bomb",
        "sdlc",
        "coalmine.yaml",
        CANARY,
        append("x-bomb:\n" + "".join("  " + line + "\n" for line in BOMB.splitlines())),
    ),
    Case("config: empty", "sdlc", "coalmine.yaml", CANARY, text("")),
    Case("config: binary", "sdlc", "coalmine.yaml", CANARY, text(b"\x00\xff\xfe garbage \x80")),
    Case(
        "config: base_url not a url",
        "sdlc",
        "coalmine.yaml",
        CANARY,
        replace(
            '\n  Analyst: {provider: command, argv: ["python3", "agents/analyst.py"]}',
            "\n  Analyst: {provider: openai, model: m, base_url: 'not a url'}",
        ),
    ),
    Case(
        "config: system prompt outside",
        "sdlc",
        "coalmine.yaml",
        CANARY,
        replace(
            '\n  Analyst: {provider: command, argv: ["python3", "agents/analyst.py"]}',
            "\n  Analyst: {provider: openai, model: m, base_url: 'http://127.0.0.1:9/v1',"
            " system_prompt_file: ../../../../../../etc/passwd}",
        ),
    ),
    Case(
        "config: missing cassette",
        "sdlc",
        "coalmine.yaml",
        CANARY,
        replace(
            '\n  Analyst: {provider: command, argv: ["python3", "agents/analyst.py"]}',
            "\n  Analyst: {provider: replay, cassette: nowhere/cassette.jsonl}",
        ),
    ),
    Case(
        "config: negative concurrency",
        "sdlc",
        "coalmine.yaml",
        CANARY,
        replace(
            "\n  Analyst: {provider: command,",
            "\n  Analyst: {provider: command, max_concurrency: -1,",
        ),
    ),
    Case(
        "config: route to no agent",
        "sdlc",
        "coalmine.yaml",
        CANARY,
        append("routing: {qa: Nobody}\n"),
    ),
    # canary specs
    Case("spec: bad YAML", "sdlc", SPEC, CANARY, append("  - [unclosed\n"), others=True),
    Case("spec: top-level list", "sdlc", SPEC, CANARY, text("- id: x\n"), others=True),
    Case("spec: unknown key", "sdlc", SPEC, CANARY, append("colour: blue\n"), others=True),
    Case("spec: no prompt", "sdlc", SPEC, CANARY, replace("prompt: |", "promptx: |"), others=True),
    Case(
        "spec: unknown grader",
        "sdlc",
        SPEC,
        CANARY,
        replace("type: keyword", "type: vibes"),
        others=True,
    ),
    Case(
        "spec: negative weight",
        "sdlc",
        SPEC,
        CANARY,
        replace("weight: 0.3", "weight: -1"),
        others=True,
    ),
    Case(
        "spec: required not a list",
        "sdlc",
        SPEC,
        CANARY,
        replace("required: [OWASP", "required: 3\n        x: [OWASP"),
        others=True,
    ),
    Case(
        "spec: timeout a word",
        "sdlc",
        SPEC,
        CANARY,
        replace("timeout_seconds: 120", "timeout_seconds: soon"),
        others=True,
    ),
    Case("spec: recursive alias", "sdlc", SPEC, CANARY, append("x: &g [*g]\n"), others=True),
    Case("spec: alias bomb", "sdlc", SPEC, CANARY, append(BOMB), others=True),
    Case("spec: empty", "sdlc", SPEC, CANARY, text(""), others=True),
    Case(
        "spec: not UTF-8",
        "sdlc",
        SPEC,
        CANARY,
        text(b"id: qa-001\nprompt: \xff\xfe\n"),
        others=True,
    ),
    Case(
        "spec: unknown phase",
        "sdlc",
        SPEC,
        CANARY,
        replace("phase: qa", "phase: astrology"),
        others=True,
    ),
    # eval suites
    Case("suite: bad JSON line", "sdlc", SUITE, EVAL, append('{"id": "x", \n')),
    Case("suite: a line is a list", "sdlc", SUITE, EVAL, append("[1, 2]\n")),
    Case("suite: unknown key", "sdlc", SUITE, EVAL, append('{"id": "x", "varz": {}}\n')),
    Case(
        "suite: duplicate id",
        "sdlc",
        SUITE,
        EVAL,
        append('{"id": "login-reset", "vars": {"report": "r"}}\n'),
    ),
    Case("suite: empty", "sdlc", SUITE, EVAL, text("")),
    Case("suite: whitespace", "sdlc", SUITE, EVAL, text("\n   \n\t\n")),
    Case(
        "suite: not UTF-8",
        "sdlc",
        SUITE,
        EVAL,
        append(b'{"id": "\xff"}\n'),  # a byte that is no UTF-8
    ),
    Case(
        "suite: equals with nothing",
        "sdlc",
        SUITE,
        EVAL,
        append('{"id": "x", "vars": {"report": "r"}, "graders": [{"type": "equals"}]}\n'),
    ),
    Case("suite yaml: bad YAML", "sdlc", META, EVAL, append("graders: [unclosed\n")),
    Case("suite yaml: unknown key", "sdlc", META, EVAL, append("colour: blue\n")),
    Case(
        "suite yaml: wrong type", "sdlc", META, EVAL, replace("min_score: 0.8", "min_score: lots")
    ),
    Case("suite yaml: top-level list", "sdlc", META, EVAL, text("- a\n")),
    Case("suite yaml: recursive alias", "sdlc", META, EVAL, text("graders: &g [*g]\n")),
    Case("suite yaml: alias bomb", "sdlc", META, EVAL, text(BOMB)),
    Case("suite yaml: min_score 2", "sdlc", META, EVAL, replace("min_score: 0.8", "min_score: 2")),
    # review fixtures
    Case("review: bad JSON", "review", f"{FIXTURE}/eval.json", REVIEW, append("{"), others=True),
    Case(
        "review: unknown key",
        "review",
        f"{FIXTURE}/eval.json",
        REVIEW,
        replace('"trap":', '"colour": "blue", "trap":'),
        others=True,
    ),
    Case(
        "review: symlink escape",
        "review",
        f"{FIXTURE}/test-files/app/text.py",
        REVIEW,
        symlink_out,
        others=True,
    ),
    Case("review: FIFO", "review", f"{FIXTURE}/test-files/app/text.py", REVIEW, fifo, others=True),
    Case(
        "review: pipeline bad YAML",
        "review",
        "evals/review/pipeline.yaml",
        REVIEW,
        append("roles: [unclosed\n"),
    ),
    # the store
    Case(
        "store: garbage", "sdlc", ".coalmine/coalmine.db", ("runs", "list"), text(b"garbage" * 100)
    ),
    Case(
        "store: garbage, report",
        "sdlc",
        ".coalmine/coalmine.db",
        ("report", "latest"),
        text(b"garbage" * 100),
    ),
    Case(
        "store: truncated",
        "sdlc",
        ".coalmine/coalmine.db",
        ("runs", "list"),
        text(b"SQLite format 3\x00" + b"\x00" * 50),
    ),
]


@dataclass(frozen=True)
class Outcome:
    verdict: str
    code: int | None
    excerpt: str


def cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run_case(case: Case, tmp: Path) -> Outcome:
    root = tmp / "project"
    shutil.copytree(EXAMPLES / case.example, root, symlinks=True)
    target = root / case.file
    if case.file.startswith(".coalmine/"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"")
    case.write(target)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "coalmine", *case.command, "--root", str(root)],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=cap_memory,
            check=False,
            stdin=subprocess.DEVNULL,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        return Outcome("hang", None, "no answer in 60 s")
    said = done.stdout + done.stderr
    excerpt = " ".join(said.split())[:150]
    if "Traceback (most recent call last)" in said or "MemoryError" in said:
        return Outcome("traceback", done.returncode, excerpt)
    if done.returncode == 0:
        return Outcome("silent", 0, excerpt)
    if done.returncode != 2 or Path(target.name).stem.split(".")[0] not in said:
        return Outcome("unclear", done.returncode, excerpt)
    if case.others and not others_ran(case, said):
        return Outcome("unclear", done.returncode, "the other files did not run: " + excerpt)
    return Outcome("clear", 2, excerpt)


def others_ran(case: Case, said: str) -> bool:
    """The good files beside the broken one appear in the output."""
    if case.example == "review":
        return "k8s-missing-limits" in said
    return "dep-001" in said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    tally: Counter[str] = Counter()
    for case in CASES:
        if args.only not in case.name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            got = run_case(case, Path(tmp))
        tally[got.verdict] += 1
        if got.verdict != "clear" or args.verbose:
            print(f"{got.verdict:9} exit {got.code}  {case.name}: {got.excerpt}")
    print(
        f"\n{sum(tally.values())} malformed inputs: "
        + ", ".join(f"{k} {v}" for k, v in tally.most_common())
    )
    return 0 if set(tally) <= {"clear"} else 1


if __name__ == "__main__":
    sys.exit(main())
