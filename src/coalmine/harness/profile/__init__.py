"""The profiler (issue 8, point 1): a read-only scan of a repository for what it is made of.

:func:`profile_repository` walks the tree (:mod:`coalmine.harness.profile.scan`: ``.gitignore``
respected, vendored and build folders skipped), runs the detectors
(:mod:`coalmine.harness.profile.signals`) over the files they need, and names the template kits
the signals make applicable (:func:`coalmine.harness.kits.applicable`). It never writes, and never
imports or runs the project's code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from coalmine.harness.kits import applicable
from coalmine.harness.profile.scan import walk
from coalmine.harness.profile.signals import Detector, Evidence, Signal

__all__ = ["SCHEMA", "Evidence", "Profile", "Signal", "profile_repository", "scan_repository"]

SCHEMA = "coalmine.profile.v1"


class Profile(BaseModel):
    """``coalmine.profile.v1``: what a repository has, with evidence, and the kits that apply."""

    model_config = ConfigDict(populate_by_name=True)

    schema_: Literal["coalmine.profile.v1"] = Field("coalmine.profile.v1", alias="schema")
    root: str
    """The scanned folder, absolute."""
    files_scanned: int
    """Files walked: not ignored, not in a skipped folder, not symlinks."""
    signals: list[Signal]
    """Sorted by kind."""
    applicable_kits: list[str]
    """Kit ids whose ``appliesWhen`` holds, in the kits' order."""


def profile_repository(root: Path) -> Profile:
    """Profile the tree at ``root`` (read-only)."""
    return scan_repository(root)[0]


def scan_repository(root: Path) -> tuple[Profile, dict[str, set[str]]]:
    """The profile, and kind → every file that shows it (the evidence keeps ten places)."""
    root = root.resolve()
    detector = Detector()
    count = 0
    for rel, path in walk(root):
        count += 1
        detector.visit(rel, path)
    signals = detector.signals()
    profile = Profile(
        root=str(root),
        files_scanned=count,
        signals=signals,
        applicable_kits=applicable(s.kind for s in signals),
    )
    return profile, detector.files
