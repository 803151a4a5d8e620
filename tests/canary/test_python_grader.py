"""A canary may use a ``python`` grader the config enables, as an eval suite can."""

from __future__ import annotations

from tests.helpers.project import Project

CHECK = """\
def mentions_fix(output, context):
    ok = "parameterised" in output
    return {"pass": ok, "score": 1.0 if ok else 0.0, "reason": "says how to fix" if ok else "no fix"}
"""


def test_a_canary_runs_an_enabled_python_grader(project: Project) -> None:
    argv = project.agent_script(
        "qa", "print('SQL injection in login(); use parameterised queries.')"
    )
    project.write("canary_checks.py", CHECK)
    project.config(
        {
            "agents": {"QA Coordinator": {"provider": "command", "argv": argv}},
            "judge": "none",
            "python_graders": {"fix": "canary_checks:mentions_fix"},
        }
    )
    project.canary("qa-001-fix", graders=[{"type": "python", "config": {"function": "fix"}}])
    proc = project.run_cli("canary", "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [result] = project.last_result()["results"]
    grade = result["grader_scores"]["python"]
    assert (result["verdict"], grade["score"], grade["message"]) == (
        "PASS", 1.0, "says how to fix",
    )  # fmt: skip
