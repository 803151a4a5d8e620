from tests.helpers.project import Project


def test_cli_runs_a_canary_end_to_end(project: Project) -> None:
    argv = project.agent_script(
        "qa", "import sys\nsys.stdin.read()\nprint('SQL injection found')\n"
    )
    project.config({"agents": {"QA Coordinator": {"provider": "command", "argv": argv}}})
    project.canary("qa-001-login")
    proc = project.run_cli("canary", "run")
    assert proc.returncode == 0, proc.stderr
    assert "| qa-001 | qa |" in proc.stdout
    assert project.last_result()["summary"]["passed"] == 1
