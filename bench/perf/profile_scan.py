"""The profiler on a synthetic 50k-file tree: files/s, and the ratio to a bare ``os.walk``.

Run: .venv/bin/python bench/perf/profile_scan.py [--files 50000] [--repeat 3]

The tree mixes what real repositories hold: Python, TypeScript and Go sources (a few importing
LLM SDKs and vector-DB clients), Markdown, JSON and binary assets, nested ``.gitignore`` files
with a mix of patterns, and a ``node_modules`` folder the scan must skip. The bare walk lists
every file (``node_modules`` too) without reading any, so the ratio is the cost of ignore
matching plus reading the files the detectors need. Best of ``--repeat`` runs, warm cache.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

from coalmine.harness.profile import profile_repository

PY = "import os\nimport json\n\n\ndef f(x):\n    return json.dumps(x)\n" * 20
PY_LLM = "import anthropic\nfrom qdrant_client import QdrantClient\n" + PY
TS = 'import { useState } from "react";\n\nexport const x = () => useState(1);\n' * 20
GO = 'package svc\n\nimport (\n\t"fmt"\n)\n\nfunc F() { fmt.Println("x") }\n' * 20
MD = "# Notes\n\nSome text.\n" * 30
BIN = bytes(range(256)) * 8


def build(root: Path, n: int) -> None:
    rng = random.Random(7)
    (root / ".gitignore").write_text("*.log\n/generated/\n**/tmp/\n!keep.log\ncoverage/\n")
    (root / "go.mod").write_text("module example.com/big\n\ngo 1.22\n")
    (root / "package.json").write_text('{"dependencies": {"next": "15", "react": "19"}}\n')
    kinds = [("py", PY), ("ts", TS), ("go", GO), ("md", MD), ("json", '{"a": 1}\n'), ("png", BIN),
             ("log", "x\n")]  # fmt: skip
    weights = [30, 25, 10, 15, 10, 5, 5]
    written = 3
    d = 0
    while written < n:
        top = ["src", "pkg", "web", "generated", "node_modules", "docs"][d % 6]
        folder = root / top / f"m{d // 6:04}" / ("tmp" if d % 17 == 0 else "core")
        folder.mkdir(parents=True, exist_ok=True)
        if d % 9 == 0:
            (folder / ".gitignore").write_text("*.pyc\n/scratch/\n[!a]*.bak\n")
            written += 1
        for i in range(min(20, n - written)):
            ext, body = rng.choices(kinds, weights)[0]
            if ext == "py" and rng.random() < 0.01:
                body = PY_LLM
            path = folder / f"f{i:02}.{ext}"
            if isinstance(body, bytes):
                path.write_bytes(body)
            else:
                path.write_text(body)
            written += 1
        d += 1


def bare_walk(root: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


def best(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coalmine-profile-bench-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        build(root, args.files)
        print(f"built {args.files} files in {time.perf_counter() - t0:.1f} s")
        walk_s, total = best(lambda: bare_walk(root), args.repeat)
        scan_s, profile = best(lambda: profile_repository(root), args.repeat)
        scanned = profile.files_scanned  # type: ignore[attr-defined]
        kinds = [s.kind for s in profile.signals]  # type: ignore[attr-defined]
        print(f"os.walk:  {total} files in {walk_s:.3f} s ({total / walk_s:,.0f} files/s)")
        print(
            f"profile:  {scanned} files scanned (of {total}) in {scan_s:.3f} s "
            f"({total / scan_s:,.0f} tree files/s, {scanned / scan_s:,.0f} scanned files/s)"
        )
        print(f"ratio:    {scan_s / walk_s:.1f}x a bare os.walk")
        print(f"signals:  {', '.join(kinds)}")


if __name__ == "__main__":
    main()
