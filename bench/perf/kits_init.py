"""``coalmine init`` (a dry run) and ``kits status`` on a 50k-file tree, against the profile alone.

Run: .venv/bin/python bench/perf/kits_init.py [--files 50000] [--repeat 3]

Both start with a profile of the tree (the read-only scan), then: init collects the facts and
renders every applicable kit; status also hashes every owned file and checks the evolution
rules' globs (a second walk). The ideal is the profile's time: the ratio says what planning and
drift add on top. The tree is profile_scan.py's (Python, TypeScript and Go sources, a Next.js
package.json, an LLM SDK and a vector-DB client), so four kits apply. Best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from profile_scan import best, build  # type: ignore[import-not-found]

from coalmine.harness.drift import harness_status
from coalmine.harness.init import apply_changes, plan_init
from coalmine.harness.profile import profile_repository


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, args.files)
        profiled, profile = best(lambda: profile_repository(root), args.repeat)
        planned, plan = best(lambda: plan_init(root), args.repeat)
        apply_changes(root, plan.changes, plan.manifest)
        status_time, status = best(lambda: harness_status(root, None), args.repeat)
        print(
            f"files: {profile.files_scanned}, kits: {', '.join(p.kit.id for p in plan.proposals)}"
        )
        print(f"profile:     {profiled:6.2f} s  (the ideal)")
        print(f"init plan:   {planned:6.2f} s  ratio {planned / profiled:.2f}")
        print(f"kits status: {status_time:6.2f} s  ratio {status_time / profiled:.2f}"
              f"  ({len(status.files)} owned files, drifted: {status.drifted})")  # fmt: skip


if __name__ == "__main__":
    main()
