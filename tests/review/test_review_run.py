"""``coalmine review run`` end to end: each role sees only its declared inputs.

The agents are python functions that record every prompt they receive in a file, and answer
from what they were given. The grader passes an assertion when its key word is in the output
of the role the assertion targets.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt

from tests.helpers.cli import run_main
from tests.helpers.project import Project

AGENTS = """\
import json, pathlib, re

LOG = pathlib.Path(__file__).with_name("prompts.jsonl")


def _log(role, prompt):
    with LOG.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"role": role, "prompt": prompt}) + "\\n")


def resolver(prompt, context):
    _log("resolver", prompt)
    return "profiles: python" if ".py" in prompt else "profiles: general"


def reviewer(prompt, context):
    _log("reviewer", prompt)
    return "- SQL injection in query()" if "execute(f" in prompt else "No findings."


def lazy_reviewer(prompt, context):
    _log("lazy_reviewer", prompt)
    return "No findings."


def grader(prompt, context):
    _log("grader", prompt)
    outputs = dict(re.findall(r"(\\w+) output:\\n---\\n(.*?)\\n---", prompt, re.S))
    verdicts = {}
    for aid, target, text in re.findall(r"- \\[([^\\]]+)\\] \\((\\w+)\\) (.*)", prompt):
        word = text.split()[-1].lower()
        seen = outputs.get(target.capitalize(), "")
        ok = word in seen.lower()
        verdicts[aid] = {"verdict": "pass" if ok else "fail", "reason": f"{word!r} {'found' if ok else 'missing'}"}
    return json.dumps({"assertions": verdicts})
"""

FIXTURE = (
    "def query(db, name):\n    return db.execute(f\"SELECT * FROM users WHERE name = '{name}'\")\n"
)


def setup(
    project: Project, *, framing: str = "Please review my change to the user lookup."
) -> None:
    module = f"review_agents_{abs(hash(str(project.root))) % 10**8}"
    project.write(f"{module}.py", AGENTS)
    agents = {
        name: {"provider": "python", "target": f"{module}:{name}"}
        for name in ("resolver", "reviewer", "lazy_reviewer", "grader")
    }
    project.config({"agents": agents, "judge": "none"})
    pipeline = {
        "roles": {
            "resolver": {"agent": "resolver", "inputs": ["diff", "worktree"]},
            "reviewer": {"agent": "reviewer", "inputs": ["diff", "resolver", "prompt"]},
            "grader": {"agent": "grader", "inputs": ["resolver", "reviewer", "assertions"],
                       "grader": True},
        }
    }  # fmt: skip
    project.write("evals/review/pipeline.yaml", yaml.safe_dump(pipeline, sort_keys=False))
    eval_json = {
        "prompt": framing,
        "assertions": [
            {"id": "1.1", "text": "The resolver activates the profile named python", "target": "resolver"},
            {"id": "1.2", "text": "The reviewer reports the flaw as SQL injection", "target": "reviewer"},
        ],
        "trap": "the f-string inside execute is the whole point of this fixture",
        "description": "classic injection through an f-string query",
    }  # fmt: skip
    project.write("evals/review/sql/eval.json", json.dumps(eval_json, indent=2))
    project.write("evals/review/sql/test-files/app/db.py", FIXTURE)


def prompts(project: Project) -> list[dict[str, Any]]:
    path = project.root / "prompts.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_role_receives_only_its_declared_inputs(project: Project) -> None:
    setup(project)
    proc = project.run_cli("review", "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "| sql | 1.1–1.2 (2) | 2 | 0 | 0 |" in proc.stdout
    assert "| **Total** | 2 | 2 | 0 | 0 |" in proc.stdout
    seen = {p["role"]: p["prompt"] for p in prompts(project)}
    assert set(seen) == {"resolver", "reviewer", "grader"}
    secrets = ["activates the profile named python", "reports the flaw as SQL injection",
               "the whole point of this fixture", "classic injection through"]  # fmt: skip
    for role in ("resolver", "reviewer"):  # the agents under test never see the rubric
        assert not any(s in seen[role] for s in secrets), role
    # the resolver gets the real staged diff and the worktree root, not the framing
    assert "diff --git a/app/db.py b/app/db.py" in seen["resolver"]
    assert "new file mode 100644" in seen["resolver"]
    assert "Worktree root: " in seen["resolver"] and "review my change" not in seen["resolver"]
    # the reviewer gets the diff, the resolver's output and the framing
    assert "Resolver output:\n---\nprofiles: python\n---" in seen["reviewer"]
    assert "Please review my change to the user lookup." in seen["reviewer"]
    # the grader gets the outputs and the assertions, never the fixture or the worktree
    assert "reports the flaw as SQL injection" in seen["grader"]
    assert "SELECT * FROM users" not in seen["grader"] and "Worktree root" not in seen["grader"]
    assert "diff --git" not in seen["grader"]
    notes = list((project.root / "evals" / "review" / "sessions").glob("harness-*-eval-runs.md"))
    assert len(notes) == 1
    note = notes[0].read_text(encoding="utf-8")
    assert "| sql | 1.1–1.2 (2) | 2 | 0 | 0 |" in note and "Every assertion passed." in note


def test_staging_is_a_real_git_repo(project: Project) -> None:
    setup(project)
    proc = project.run_cli("review", "stage", "--keep")
    assert proc.returncode == 0, proc.stderr
    stage_dir = Path(proc.stdout.splitlines()[0])
    worktree = stage_dir / "sql"
    cached = subprocess.run(["git", "-C", str(worktree), "diff", "--cached", "--name-only"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert cached.stdout.split() == ["app/db.py"]
    assert (worktree / "app" / "db.py").read_text(encoding="utf-8") == FIXTURE


def test_a_leak_into_the_framing_stops_the_run_before_any_call(project: Project) -> None:
    setup(project, framing="Check it: the reviewer reports the flaw as SQL injection, please.")
    proc = project.run_cli("review", "run")
    assert proc.returncode == 2
    assert "sql" in proc.stderr and "assertion 1.2" in proc.stderr and "framing" in proc.stderr
    assert prompts(project) == []  # nothing was sent to any role


def test_a_worse_reviewer_shows_the_regression(project: Project) -> None:
    setup(project)
    assert project.run_cli("review", "run").returncode == 0
    pipeline = yaml.safe_load((project.root / "evals/review/pipeline.yaml").read_text())
    pipeline["roles"]["reviewer"]["agent"] = "lazy_reviewer"
    (project.root / "evals/review/pipeline.yaml").write_text(
        yaml.safe_dump(pipeline, sort_keys=False)
    )
    proc = project.run_cli("review", "run")
    assert proc.returncode == 1, proc.stderr
    assert "| sql | 1.1–1.2 (2) | 1 | 1 | 0 |" in proc.stdout
    assert "Regressions since the prior run:" in proc.stdout
    assert "- sql 1.2: pass → fail" in proc.stdout
    notes = sorted((project.root / "evals" / "review" / "sessions").glob("*.md"))
    assert [n.name.endswith("-eval-runs-2.md") for n in notes] == [True, False]
    assert "sql 1.2: pass → fail" in notes[0].read_text(encoding="utf-8")  # the second note


def test_models_and_samples_run_side_by_side(project: Project) -> None:
    setup(project)
    proc = project.run_cli("review", "run", "--models", "reviewer,lazy_reviewer", "--samples",
                           "2", "--format", "json")  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    runs = json.loads(proc.stdout)
    got = sorted((r["variant"], r["sample"], r["grades"]["1.2"]["verdict"]) for r in runs)
    assert got == [("lazy_reviewer", 0, "fail"), ("lazy_reviewer", 1, "fail"),
                   ("reviewer", 0, "pass"), ("reviewer", 1, "pass")]  # fmt: skip
    assert len([p for p in prompts(project) if p["role"] == "grader"]) == 4
    table = project.run_cli("review", "run", "--models", "reviewer,lazy_reviewer", "--samples", "2")
    assert "Pass rates over 2 samples:" in table.stdout
    assert (
        "- sql@lazy_reviewer 1.2: 0/2" in table.stdout and "- sql@reviewer 1.2: 2/2" in table.stdout
    )


@pytest.mark.slow
def test_runs_show_lets_an_audit_see_what_each_role_saw(project: Project) -> None:
    setup(project)
    assert project.run_cli("review", "run").returncode == 0
    shown = project.run_cli("runs", "show", "latest")
    assert shown.returncode == 0, shown.stderr
    assert (
        "sql: 1.1 pass, 1.2 pass  [resolver (resolver) → reviewer (reviewer) → grader (grader)]"
        in shown.stdout
    )
    audit = json.loads(project.run_cli("runs", "show", "latest", "--format", "json").stdout)
    [row] = audit
    calls = {c["role"]: c for c in row["calls"]}
    assert calls["reviewer"]["inputs"] == ["diff", "resolver", "prompt"]
    assert "reports the flaw" not in calls["reviewer"]["prompt"]
    assert calls["grader"]["prompt_sha256"].startswith("sha256:")


def test_runs_list_counts_a_review_runs_evals(project: Project) -> None:
    setup(project)
    assert project.run_cli("review", "run").returncode == 0
    listed = project.run_cli("runs", "list")
    assert listed.returncode == 0, listed.stderr
    row = next(line.split() for line in listed.stdout.splitlines() if " review " in line)
    # ID KIND (no label) STARTED (date, time) STATUS PASSED SCORE [COMMIT]
    assert row[1] == "review" and row[4:6] == ["finished", "1/1"], row
    assert float(row[6]) == 1.0, row


def test_a_failure_every_sample_shares_is_listed_once(project: Project) -> None:
    setup(project)
    proc = project.run_cli("review", "run", "--models", "lazy_reviewer", "--samples", "3")
    assert proc.returncode == 1, proc.stderr
    failed = [line for line in proc.stdout.splitlines() if " 1.2 FAIL: " in line]
    assert len(failed) == 1, proc.stdout
    assert failed[0].startswith("- **sql@lazy_reviewer** (all 3 samples) 1.2 FAIL: ")
    assert "- sql@lazy_reviewer 1.2: 0/3" in proc.stdout


HOSTILE_GRADER = """\
import json, re


def reviewer(prompt, context):
    return "No findings."


def grader(prompt, context):
    reason = "<img src=x onerror=alert(1)> missing;\\n- not an item\\n# not a heading | cell"
    ids = re.findall(r"- \\[([^\\]]+)\\]", prompt)
    return json.dumps({"assertions": {i: {"verdict": "fail", "reason": reason} for i in ids}})
"""


def test_the_session_note_escapes_what_the_roles_and_the_eval_wrote(project: Project) -> None:
    module = f"hostile_review_{abs(hash(str(project.root))) % 10**8}"
    project.write(f"{module}.py", HOSTILE_GRADER)
    agents = {n: {"provider": "python", "target": f"{module}:{n}"} for n in ("reviewer", "grader")}
    project.config({"agents": agents, "judge": "none"})
    pipeline = {"roles": {"reviewer": {"agent": "reviewer", "inputs": ["diff", "prompt"]},
                          "grader": {"agent": "grader", "inputs": ["reviewer", "assertions"],
                                     "grader": True}}}  # fmt: skip
    project.write("evals/review/pipeline.yaml", yaml.safe_dump(pipeline, sort_keys=False))
    eval_json = {"prompt": "Review it.", "assertions": [
        {"id": "1.1", "text": "Names <script>alert(1)</script> | the flaw", "target": "reviewer"},
        {"id": "1.2", "text": "Says **why**\n- twice", "target": "reviewer"}]}  # fmt: skip
    project.write("evals/review/x_y/eval.json", json.dumps(eval_json))
    project.write("evals/review/x_y/test-files/a.py", "x = 1\n")
    proc = project.run_cli("review", "run")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [note] = (project.root / "evals" / "review" / "sessions").glob("*.md")
    text = note.read_text(encoding="utf-8")
    parser = MarkdownIt("commonmark", {"html": True}).enable("table")
    tokens = [t for block in parser.parse(text) for t in [block, *(block.children or [])]]
    assert not [t for t in tokens if t.type.startswith(("html", "link", "image"))]
    assert [t.type for t in tokens].count("heading_open") == 2  # the title and Highlights
    rendered = parser.render(text)
    assert "<script" not in rendered and "<img" not in rendered
    highlights = text.split("## Highlights\n\n", 1)[1]
    assert highlights.count("\n- ") + highlights.startswith("- ") == 2  # one line a failure
    assert "| x_y | 1.1–1.2 (2) | 0 | 2 | 0 |" in text


def add_eval(project: Project, name: str) -> Path:
    """Another eval beside ``sql``, with the same framing and assertions."""
    source = project.root / "evals" / "review" / "sql" / "eval.json"
    project.write(f"evals/review/{name}/eval.json", source.read_text(encoding="utf-8"))
    project.write(f"evals/review/{name}/test-files/app/db.py", FIXTURE)
    return project.root / "evals" / "review" / name


def test_a_refused_fixture_exits_2_and_the_other_evals_run(project: Project) -> None:
    setup(project)
    fifo = add_eval(project, "fifo") / "test-files" / "pipe"
    os.mkfifo(fifo)
    escape = add_eval(project, "escape") / "test-files" / "up"
    escape.symlink_to("../../../../..")
    code, output = run_main("review", "run", "--root", str(project.root))
    assert code == 2, output
    assert "Traceback" not in output
    assert "review/fifo: test-files/pipe: not a file" in output
    assert "review/escape: test-files/up: a symlink pointing out" in output
    assert "| sql | 1.1–1.2 (2) | 2 | 0 | 0 |" in output  # the good eval ran
    assert {p["role"] for p in prompts(project)} == {"resolver", "reviewer", "grader"}
    assert len(prompts(project)) == 3  # only the good eval's pipeline was called


def test_an_eval_folder_symlinked_outside_the_project_is_refused(
    project: Project, tmp_path: Path
) -> None:
    setup(project)
    outside = tmp_path / "elsewhere" / "stolen"
    (outside / "test-files").mkdir(parents=True)
    (outside / "test-files" / "id_rsa").write_text("-----BEGIN PRIVATE KEY----- hunter2\n")
    eval_json = project.root / "evals" / "review" / "sql" / "eval.json"
    (outside / "eval.json").write_text(eval_json.read_text(encoding="utf-8"))
    (project.root / "evals" / "review" / "stolen").symlink_to(outside)
    code, output = run_main("review", "run", "--root", str(project.root))
    assert code == 2, output
    assert "outside the project" in output and "stolen" in output
    assert not any("hunter2" in p["prompt"] for p in prompts(project))
    code, output = run_main("review", "stage", "--root", str(project.root))
    assert code == 2 and "outside the project" in output
