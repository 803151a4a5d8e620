"""A whole run with the clock pinned: the result file and the report, compared exactly."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import anyio

from coalmine._util.clock import FixedClock
from coalmine.canary.plan import plan_canaries
from coalmine.canary.run import run_canaries
from coalmine.reports.markdown import render_markdown
from tests.helpers.project import Project

AT = datetime(2026, 4, 13, 7, 30, tzinfo=UTC)

REPORT = """\
## Canary Run Results — 2026-04-13

| ID | Phase | Title | Agent | Score | Verdict |
|----|-------|-------|-------|-------|---------|
| req-001 | requirements | Req 001 Shop | Analyst | 1.00 | ✅ PASS |
| qa-001 | qa | Qa 001 Login | QA Coordinator | 0.00 | ❌ FAIL |

**Summary:** 1/2 passed | Composite: 0.50 | Results saved to bench/results/canary-run-2026-04-13.json

### Failures

- **qa-001-login** (QA Coordinator): FAIL, agent_error
  - agent 'QA Coordinator' (command): exited with code 3
  - stderr (tail):
  - boom
  - the agent failed; no grader ran
"""


def test_pinned_run_writes_the_seed_shape_and_the_report(project: Project) -> None:
    analyst = project.agent_script("analyst", "import sys\nsys.stdin.read()\nprint('# Scope')\n")
    qa = project.agent_script(
        "qa", "import sys\nsys.stdin.read()\nsys.stderr.write('boom')\nsys.exit(3)\n"
    )
    project.config(
        {
            "agents": {
                "Analyst": {"provider": "command", "argv": analyst},
                "QA Coordinator": {"provider": "command", "argv": qa},
            }
        }
    )
    project.canary(
        "req-001-shop",
        phase="requirements",
        graders=[
            {"type": "keyword", "weight": 3, "config": {"required": ["scope"]}},
            {"type": "structural", "weight": 1, "config": {"required_sections": ["Scope"]}},
        ],
    )
    project.canary("qa-001-login")
    plan = plan_canaries(project.root)
    # Every monotonic read advances 0.25 s. A canary reads it at its start and end, and an
    # answered one once more in between (the agent's latency, for the latency grader).
    clock = FixedClock(at=AT, step=0.25)
    outcome = anyio.run(lambda: run_canaries(plan, clock=clock))

    assert outcome.exit_code == 1
    assert outcome.results_path == project.root / "bench/results/canary-run-2026-04-13.json"
    data = json.loads(outcome.results_path.read_text())
    assert data["run_id"] == "canary-run-2026-04-13"
    assert data["timestamp"] == "2026-04-13T07:30:00Z"
    assert data["summary"] == {
        "total": 2, "passed": 1, "failed": 1, "composite_score": 0.5, "errored": 0, "invalid": 0,
        "call_failures": {"crash": 1},
    }  # fmt: skip  # mean of 1.0 and 0.0
    req, qa_result = data["results"]
    assert req["composite_score"] == 1.0 and req["duration_seconds"] == 0.5  # 2 steps
    assert req["grader_scores"]["keyword"]["weight"] == 3
    assert qa_result["composite_score"] == 0.0 and qa_result["grader_scores"] == {}
    assert qa_result["reason"] == "agent_error"
    # reads: run start, 3 (answered canary), 2 (failed canary), run end: 6 steps of 0.25
    assert data["duration_seconds"] == 1.5

    report = render_markdown(
        outcome.run,
        results_path=Path("bench/results/canary-run-2026-04-13.json"),
        date="2026-04-13",
    )
    assert report == REPORT
