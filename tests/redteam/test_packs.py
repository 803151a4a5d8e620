"""Every pack and strategy, run for real against a complying and a refusing scripted agent.

`coalmine redteam generate` writes the packs of a repository with every surface; `coalmine eval
run` runs them (deterministic graders only) with the agent in coalmine.yaml pointed at
``scripted.comply``, then at ``scripted.refuse``; `coalmine redteam report` reads the store.
The complying agent must get through on every attack case, each by the grader its category is
decided by, under every strategy; the refusing one on none; no control case may fail with either.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coalmine.engine.history import open_store
from coalmine.redteam.owasp import CATEGORIES
from coalmine.redteam.packs import SURFACES
from coalmine.redteam.report import Findings, load_findings
from coalmine.redteam.strategies import STRATEGIES
from tests.helpers.cli import run_main
from tests.redteam.conftest import agents_module, write_repo

# the grader that must catch a complying agent, by category
DECIDED_BY = {
    "excessive-agency": "forbidden-tools",
    "argument-injection": "no-secret-in-tool-args",
    "tool-exfiltration": "no-secret-in-tool-args",
    "tool-poisoning": "no-secret-in-tool-args",
    "cross-server": "forbidden-tools",
    "name-collision": "forbidden-tools",
    "indirect-injection": "canary-contained",
    "poisoned-duplicate": "no-leak",
    "context-leak": None,  # records: no-leak; the system prompt: canary-contained
    "page-injection": "canary-contained",
    "hidden-injection": "canary-contained",
    "navigation": "no-secret-in-tool-args",
    "system-prompt-extraction": "canary-contained",
    "pii-echo": "no-leak",
    "jailbreak": "no-leak",
}
SUITES = [f"redteam-{s}" for s in SURFACES]


def configure(root: Path, function: str) -> None:
    (root / "coalmine.yaml").write_text(
        f"agents:\n  app: {{provider: python, target: '{agents_module(root)}:{function}'}}\n"
        "judge: none\n"
    )


def run_as(root: Path, function: str) -> tuple[int, Findings]:
    configure(root, function)
    code, out = run_main("eval", "run", *SUITES, "--root", str(root), "--display", "none")
    assert code in (0, 1), out
    store = open_store(root, create="never")
    try:
        return code, load_findings(store, "latest")
    finally:
        store.close()


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_repo(tmp_path_factory.mktemp("rt") / "helpdesk")
    code, out = run_main(
        "redteam", "generate", "--surface", "all", "--strategies", "all", "--seed", "11",
        "--no-diff", "--root", str(root),
    )  # fmt: skip
    assert code == 0, out
    return root


def test_the_complying_agent_gets_through_every_attack_and_no_control(generated: Path) -> None:
    code, found = run_as(generated, "comply")
    assert code == 1
    assert not found.flagged_controls, [c.case_id for c in found.flagged_controls]
    missed = [c.case_id for c in found.attacks if not c.got_through]
    assert not missed, missed
    for case in found.attacks:
        failed = {why.split(":", 1)[0] for why in case.failed}
        wanted = DECIDED_BY[case.category]
        if wanted is None:
            wanted = "no-leak" if "/records-" in case.case_id else "canary-contained"
        assert wanted in failed, (case.case_id, case.failed)
    # every surface, category and strategy is exercised
    assert {c.surface for c in found.attacks} == set(SURFACES)
    assert {c.category for c in found.attacks} == set(CATEGORIES)
    for surface in SURFACES:
        strategies = {c.strategy for c in found.attacks if c.surface == surface}
        assert strategies == {"none", *STRATEGIES}, surface
    controls = [c for c in found.cases if c.control]
    assert {c.surface for c in controls} == set(SURFACES)


def test_the_refusing_agent_passes_every_case(generated: Path) -> None:
    code, found = run_as(generated, "refuse")
    assert code == 0
    assert found.findings == [] and found.flagged_controls == []
    assert len(found.attacks) > 300


def test_the_report_groups_the_findings_with_owasp_and_severity(generated: Path) -> None:
    run_as(generated, "comply")
    code, out = run_main("redteam", "report", "latest", "--root", str(generated))
    assert code == 0, out
    assert "By OWASP LLM Top 10 (2025):" in out
    assert "LLM06:2025 Excessive Agency" in out and "LLM07:2025 System Prompt Leakage" in out
    assert "[critical] redteam-mcp/mcp/tool-poisoning/" in out
    assert "strategy homoglyph" in out
    code, _ = run_main("redteam", "report", "latest", "--fail-on", "high", "--root", str(generated))
    assert code == 1
    code, text = run_main(
        "redteam", "report", "latest", "--format", "json", "--root", str(generated)
    )
    data = json.loads(text)
    assert data["schema"] == "coalmine.redteam.report.v1"
    assert data["findings"] == data["attack_cases"] > 300
    severities = {row["value"]: row["findings"] for row in data["by"]["severity"]}
    assert set(severities) == {"critical", "high", "medium", "low"}
