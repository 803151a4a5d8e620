"""Judge calibrations as one self-contained HTML page (``coalmine judge report --html``).

The page has no script and loads nothing; its CSP allows inline styles only. Record data goes
through Jinja's autoescape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coalmine.reports.html import template_environment

FIGURES = (
    ("agreement", "agreement"),
    ("false-pass rate", "false_pass_rate"),
    ("false-block rate", "false_block_rate"),
    ("precision (pass)", "precision"),
    ("recall (pass)", "recall"),
    ("rerun stability", "rerun_stability"),
    ("verbosity flips", "verbosity_flip_rate"),
    ("quorum disagreement", "quorum_disagreement"),
)


def render_calibrations_html(records: Sequence[dict[str, Any]]) -> str:
    """The calibration records (each with its ``id``) as one HTML page."""
    template = template_environment().get_template("calibration.html")
    return template.render(records=wrap_records(records), figures=FIGURES)


def wrap_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records ready for ``parts/calibration.html`` (keys read as attributes, missing as None)."""
    return [_Record(r) for r in records]


class _Record(dict[str, Any]):
    """A record whose keys read as attributes in the template (missing keys read as None)."""

    def __getattr__(self, name: str) -> Any:
        value = self.get(name)
        return _Record(value) if isinstance(value, dict) else value
