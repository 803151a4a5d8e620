"""A project of N canaries answered by an instant python agent, for the benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ANSWER = "# Findings\nSQL injection in login().\n## Remediation\nUse parameterised queries.\n"


def make_project(root: Path, n: int, *, echo_prompt: bool = False, jobs: int = 1) -> None:
    """Write coalmine.yaml, agents/bench_agent.py and N specs under bench/canaries/qa/."""
    (root / "agents").mkdir(parents=True)
    (root / "agents" / "__init__.py").write_text("")
    tail = " + prompt" if echo_prompt else ""  # distinct answers: one cache entry per case
    (root / "agents" / "bench_agent.py").write_text(
        f"def run(prompt, context):\n    return {ANSWER!r}{tail}\n"
    )
    config: dict[str, Any] = {
        "agents": {"QA Coordinator": {"provider": "python", "target": "agents.bench_agent:run"}},
        "judge": "none",
        "defaults": {"jobs": jobs},
    }
    (root / "coalmine.yaml").write_text(yaml.safe_dump(config))
    folder = root / "bench" / "canaries" / "qa"
    folder.mkdir(parents=True)
    for i in range(n):
        spec = {
            "id": f"qa-{i:05d}-bench",
            "phase": "qa",
            "title": f"bench {i}",
            "prompt": f"Review handler {i} for injection flaws.",
            "expected": {
                "graders": [
                    {"type": "keyword", "weight": 0.5, "config": {"required": ["injection"]}},
                    {"type": "structural", "weight": 0.5,
                     "config": {"required_sections": ["findings", "remediation"]}},
                ]
            },
        }  # fmt: skip
        (folder / f"qa-{i:05d}-bench.yaml").write_text(yaml.safe_dump(spec))
