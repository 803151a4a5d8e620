"""A promptfoo config imported and run as suites, against the same config run directly.

Run: .venv/bin/python bench/perf/promptfoo_import.py [--tests 1000] [--repeat 3]

The config: ``--tests`` tests of one prompt for the ``echo`` provider, three deterministic
assertions each (``contains``, ``icontains``, ``regex``), so the agent costs nothing and what
is measured is coalmine. Three numbers, each the best of ``--repeat``:

- reading the config into its matrix (the ideal for the import: it has to read it);
- ``import promptfoo`` (read, map, write the suite and coalmine.yaml), as a ratio to that;
- ``eval run`` of the imported suite (planned, every row evaluated, stored in SQLite and
  summarised), as a ratio to ``eval run --promptfoo`` of the same config less its reading of
  the config (the ideal: the same rows evaluated the same way, nothing stored).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
import yaml
from profile_scan import best  # type: ignore[import-not-found]

from coalmine.evals.plan import plan_evals
from coalmine.evals.run import run_evals
from coalmine.promptfoo.files import import_promptfoo
from coalmine.promptfoo.matrix import load_matrix
from coalmine.promptfoo.run import run_promptfoo
from coalmine.store.runs import Store


def write_config(folder: Path, tests: int) -> Path:
    config = {
        "description": "bench",
        "prompts": ["Answer {{ n }}: {{ word }}"],
        "providers": ["echo"],
        "tests": [
            {
                "vars": {"n": i, "word": f"word{i % 17}"},
                "assert": [
                    {"type": "contains", "value": "Answer"},
                    {"type": "icontains", "value": "WORD"},
                    {"type": "regex", "value": r"\d+: word\d+$"},
                ],
            }
            for i in range(tests)
        ],
    }
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = write_config(root, args.tests)
        project = root / "project"

        def fresh_import() -> Any:
            shutil.rmtree(project, ignore_errors=True)
            return import_promptfoo(config, out_dir=project)

        read, _ = best(lambda: load_matrix(config, environ={}), args.repeat)
        imported, _ = best(fresh_import, args.repeat)
        direct, run = best(
            lambda: anyio.run(lambda: run_promptfoo(config, root=project)), args.repeat
        )

        def engine() -> Any:
            store = Store.open(project / ".coalmine" / "bench.db")
            try:
                plan = plan_evals(project)
                return anyio.run(lambda: run_evals(plan, store=store))
            finally:
                store.close()

        stored, outcome = best(engine, args.repeat)
        rows = len(run.rows)
        assert outcome.suites[0].cases == rows
        print(f"tests: {args.tests}, rows: {rows}, 3 assertions a row, echo provider")
        print(f"read the config:        {read:6.2f} s  (the ideal for import)")
        print(f"import promptfoo:       {imported:6.2f} s  ratio {imported / read:.2f}")
        evaluated = max(direct - read, 1e-9)
        print(f"eval run --promptfoo:   {direct:6.2f} s  {rows / direct:7.0f} rows/s")
        shown = f"{evaluated:6.2f} s  {rows / evaluated:7.0f} rows/s"
        print(f"  less reading:         {shown}  (the ideal)")
        print(
            f"eval run (imported):    {stored:6.2f} s  {rows / stored:7.0f} rows/s  "
            f"ratio {stored / evaluated:.2f}"
        )


if __name__ == "__main__":
    main()
