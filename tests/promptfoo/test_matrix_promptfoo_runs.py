"""The matrix gives the rows real promptfoo 0.121.20 runs gave (captured with the echo provider)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from coalmine.promptfoo.matrix import load_matrix
from tests.promptfoo.matrix_runs import ROWS_FILE, capture, ours

FIXTURES = Path(__file__).parent / "fixtures" / "matrix"
CASES = sorted(p.parent for p in FIXTURES.glob(f"run_*/{ROWS_FILE}"))


def test_every_run_fixture_is_found() -> None:
    assert [c.name for c in CASES] == [
        "run_defaults",
        "run_features",
        "run_files",
        "run_filters",
        "run_map_forms",
        "run_prompt_files",
        "run_range_scenarios",
        "run_repeat_range",
        "run_scenarios",
    ]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_rows_match_the_promptfoo_run(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = json.loads((case / ROWS_FILE).read_text(encoding="utf-8"))
    monkeypatch.chdir(case)

    got = ours(load_matrix())

    assert got["columns"] == expected["columns"]
    assert len(got["rows"]) == len(expected["rows"])
    for mine, theirs in zip(got["rows"], expected["rows"], strict=True):
        assert mine == theirs


@pytest.mark.skipif(
    not os.environ.get("COALMINE_PROMPTFOO"),
    reason="set COALMINE_PROMPTFOO to a promptfoo 0.121.20 executable to compare live",
)
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_live_promptfoo_still_gives_the_stored_rows(case: Path) -> None:
    live = capture(case, os.environ["COALMINE_PROMPTFOO"])
    stored = json.loads((case / ROWS_FILE).read_text(encoding="utf-8"))

    assert live["columns"] == stored["columns"]
    assert live["rows"] == stored["rows"]
