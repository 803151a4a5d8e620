"""A corpus of malformed inputs, of every file kind a project holds, thrown at the CLI.

Each must give exit 2, name its file, print no traceback, and leave the good files of the same
kind to run: a broken canary spec does not stop the good one, a broken suite (or its YAML) the
good suite, a broken eval.json the good review eval, a broken labels line the good ones.
(coalmine.yaml, the manifest and an agent file are the project's own: a broken one stops the
command, at load, naming it.)
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from coalmine.store.runs import Store
from tests.helpers.cli import run_main
from tests.helpers.project import Project


def _bomb() -> str:
    lines = ["x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


YAML_BAD: dict[str, str | bytes] = {
    "not utf-8": b"id: \xff\xfe\n",
    "syntax": "a: [unclosed\nb: 1\n",
    "recursive alias": "graders: &g [*g]\n",
    "alias bomb": _bomb(),
    "deep nesting": "a: " + "[" * 150 + "]" * 150 + "\n",
    "a list": "- a\n- b\n",
    "unknown key": "bogus_key: 1\n",
}
JSON_BAD: dict[str, str | bytes] = {
    "not utf-8": b'{"id": "\xff\xfe"}\n',
    "syntax": '{"id": \n',
    "deep nesting": "[" * 5000 + "]" * 5000 + "\n",
    "wrong type": "[1, 2]\n",
    "unknown key": '{"bogus_key": 1}\n',
}

GRADER = """\
import json, re, sys
prompt = sys.stdin.read()
ids = re.findall(r"- \\[([^\\]]+)\\]", prompt)
print(json.dumps({"assertions": {i: {"verdict": "pass", "reason": "ok"} for i in ids}}))
"""
JUDGE = """\
import json, sys
sys.stdin.read()
print(json.dumps({"criteria": {"correct": {"score": 1, "reason": "ok"}}}))
"""
LABEL = {
    "id": "good-item",
    "prompt": "p",
    "output": "o",
    "criteria": {"correct": "it is correct"},
    "labels": [{"labeller": "ana", "verdict": "pass"}],
}


def good_project(project: Project) -> None:
    """A project in which every command below passes, with one good file of each kind."""
    command = [sys.executable]
    agents = {
        "QA Coordinator": {"provider": "echo"},
        "resolver": {"provider": "echo"},
        "reviewer": {"provider": "echo"},
        "grader": {"provider": "command", "argv": [*command, "grader.py"]},
        "judge": {"provider": "command", "argv": [*command, "judge.py"]},
    }
    project.config({"agents": agents, "judge": "none"})
    project.write("grader.py", GRADER)
    project.write("judge.py", JUDGE)
    project.canary("qa-001-good", graders=[{"type": "keyword", "config": {"required": ["login"]}}])
    good_case = {"id": "g", "prompt": "say ok", "graders": [{"type": "contains", "config":
                 {"value": "ok"}}], "agent": "QA Coordinator"}  # fmt: skip
    for suite in ("good", "other"):
        project.write(f"harness/evals/{suite}.jsonl", json.dumps(good_case) + "\n")
    review = {
        "prompt": "Please look at my change.",
        "assertions": [{"id": "1", "text": "The reviewer looks at it", "target": "reviewer"}],
    }
    for name in ("good", "other"):
        project.write(f"evals/review/{name}/eval.json", json.dumps(review))
        project.write(f"evals/review/{name}/test-files/app.py", "x = 1\n")
    project.write("labels.jsonl", json.dumps(LABEL) + "\n")


@dataclass(frozen=True)
class Kind:
    """One file kind: where the bad file goes, how it is wrapped, the command, the check."""

    path: str
    command: tuple[str, ...]
    bad: dict[str, str | bytes]
    wrap: Callable[[str | bytes], str | bytes] = lambda text: text
    others_ran: Callable[[Project, str], bool] | None = None
    """Whether the good files of the kind still ran (None: the kind has no others)."""


def _front_matter(text: str | bytes) -> str | bytes:
    if isinstance(text, bytes):
        return b"---\nname: a\n" + text + b"---\nYou are a.\n"
    return "---\nname: a\n" + text + "---\nYou are a.\n"


def _canary_ran(project: Project, output: str) -> bool:
    return bool(re.search(r"\| qa-001 \|.*PASS", output))


def _suite_ran(project: Project, output: str) -> bool:
    return bool(re.search(r"^good\s+1\s+1\b", output, re.M))


def _review_ran(project: Project, output: str) -> bool:
    return "| good | 1 (1) | 1 | 0 | 0 |" in output


def _labels_ran(project: Project, output: str) -> bool:
    store = Store.open(project.root / ".coalmine" / "coalmine.db")
    try:
        return len(store.newest_calibrations()) == 1
    finally:
        store.close()


def _with_good_label(text: str | bytes) -> str | bytes:
    good = json.dumps(LABEL) + "\n"
    return good.encode() + text if isinstance(text, bytes) else good + text


KINDS: dict[str, Kind] = {
    "coalmine.yaml": Kind("coalmine.yaml", ("canary", "run"), YAML_BAD),
    "canary spec": Kind(
        "bench/canaries/qa/qa-002-bad.yaml", ("canary", "run"), YAML_BAD, others_ran=_canary_ran
    ),
    "suite jsonl": Kind(
        "harness/evals/bad.jsonl", ("eval", "run"), JSON_BAD, others_ran=_suite_ran
    ),
    "suite yaml": Kind(
        "harness/evals/other.yaml", ("eval", "run"), YAML_BAD, others_ran=_suite_ran
    ),
    "review eval.json": Kind(
        "evals/review/other/eval.json", ("review", "run"), JSON_BAD, others_ran=_review_ran
    ),
    "labels jsonl": Kind(
        "labels.jsonl",
        ("judge", "calibrate", "labels.jsonl", "--judge", "judge", "--no-verbosity-check"),
        JSON_BAD,
        wrap=_with_good_label,
        others_ran=_labels_ran,
    ),
    "manifest.json": Kind("harness/manifest.json", ("kits", "status"), JSON_BAD),
    "agent file": Kind(".claude/agents/qa.md", ("eval", "run"), YAML_BAD, wrap=_front_matter),
}

CASES = [(kind, bad) for kind, k in KINDS.items() for bad in k.bad if (kind, bad) not in {
    # an agent file's other keys are ignored on purpose (they are shared with other tools),
    # and a list or nesting under a key it does not read is not its concern
    ("agent file", "unknown key"), ("agent file", "deep nesting"),
}]  # fmt: skip


@pytest.mark.parametrize(("kind", "bad"), CASES, ids=[f"{k}: {b}" for k, b in CASES])
def test_malformed_input_is_exit_2_naming_the_file(
    project: Project, monkeypatch: pytest.MonkeyPatch, kind: str, bad: str
) -> None:
    good_project(project)
    spec = KINDS[kind]
    if kind == "agent file":
        project.config({"agents": {"QA Coordinator": {
            "provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
            "agent_file": spec.path,
        }}})  # fmt: skip
    target = project.root / spec.path
    target.parent.mkdir(parents=True, exist_ok=True)
    content = spec.wrap(spec.bad[bad])
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    monkeypatch.chdir(project.root)
    code, output = run_main(*spec.command, "--root", str(project.root))
    assert code == 2, output
    assert Path(spec.path).name in output, output
    assert "Traceback" not in output
    if spec.others_ran is not None:
        assert spec.others_ran(project, output), output
