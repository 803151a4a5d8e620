"""STAND-IN agent: a deliberately weaker code reviewer, to show a regression (seed 003).

An offline placeholder like ``reviewer.py``, and the same in every way but one: it skips the
python checklist's SQL-injection rule, the way a hurried reviewer skims the Python and never
follows the query string to the ``execute`` call. Everything else (Kubernetes limits, committed
secrets, conflict markers) it still finds.

Point the ``reviewer`` role of ``evals/review/pipeline.yaml`` at the ``reviewer-sloppy`` agent
(or run ``coalmine review run --root examples/review --models reviewer,reviewer-sloppy``) and
the ``python-sql-injection`` assertions that need the finding fail: a regression against the
prior run with ``reviewer.py``.

Same prompt and output format as ``reviewer.py``. Run it by hand:
``python3 agents/reviewer_sloppy.py < prompt.txt``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resolver import DiffFile  # noqa: E402
from reviewer import CHECKS, Finding, main  # noqa: E402


def check_python_skimmed(file: DiffFile) -> list[Finding]:
    """The python checklist, skimmed: no rule fires."""
    return []


SLOPPY_CHECKS = {**CHECKS, "python": check_python_skimmed}

if __name__ == "__main__":
    main(SLOPPY_CHECKS)
