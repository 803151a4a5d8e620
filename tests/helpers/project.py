"""Build small coalmine projects in a temp folder: config, agent scripts, canary specs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml


class Project:
    """A project folder with helpers to write its files and run coalmine on it."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def write(self, relative: str, text: str) -> Path:
        """Write ``text`` (dedented) at ``relative``."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def config(self, data: dict[str, Any] | str) -> Path:
        """Write coalmine.yaml from a mapping or raw text."""
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        return self.write("coalmine.yaml", text)

    def agent_script(self, name: str, body: str) -> list[str]:
        """Write ``agents/<name>.py`` and return the argv that runs it."""
        self.write(f"agents/{name}.py", body)
        return [sys.executable, f"agents/{name}.py"]

    def canary(
        self,
        spec_id: str,
        *,
        phase: str = "qa",
        prompt: str = "Review the login handler.",
        graders: list[dict[str, Any]] | None = None,
        timeout: float | None = None,
        raw: str | None = None,
    ) -> Path:
        """Write ``bench/canaries/<phase>/<id>.yaml``."""
        relative = f"bench/canaries/{phase}/{spec_id}.yaml"
        if raw is not None:
            return self.write(relative, raw)
        spec: dict[str, Any] = {
            "id": spec_id,
            "phase": phase,
            "title": spec_id.replace("-", " ").title(),
            "prompt": prompt,
            "expected": {
                "graders": graders or [{"type": "keyword", "config": {"required": ["injection"]}}],
            },
        }
        if timeout is not None:
            spec["timeout_seconds"] = timeout
        return self.write(relative, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))

    def results(self) -> list[Path]:
        """Result files written so far, oldest name first."""
        return sorted((self.root / "bench" / "results").glob("canary-run-*.json"))

    def last_result(self) -> dict[str, Any]:
        """The JSON of the newest result file."""
        files = sorted(self.results(), key=lambda p: p.stat().st_mtime_ns)
        return json.loads(files[-1].read_text(encoding="utf-8"))

    def run_cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``python -m coalmine ARGS --root ROOT`` as a real subprocess."""
        return subprocess.run(
            [sys.executable, "-m", "coalmine", *args, "--root", str(self.root)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
