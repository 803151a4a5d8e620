"""The reporter registry: each report format renders a run (and, optionally, a comparison).

``@reporter("junit", suffix=".xml")`` registers a function ``(run, comparison) -> str`` exactly
as a third-party package would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from coalmine._util.files import write_file
from coalmine._util.registry import Registry
from coalmine.compare import Comparison
from coalmine.results import CanaryRun


class RenderFn(Protocol):
    """Render a run as text."""

    def __call__(self, run: CanaryRun, *, comparison: Comparison | None = None) -> str:
        """Return the report."""
        ...


@dataclass(frozen=True)
class Reporter:
    """A registered report format."""

    name: str
    render: RenderFn
    suffix: str


registry: Registry[Reporter] = Registry(
    "reporter",
    builtins=(
        "coalmine.reports.json",
        "coalmine.reports.markdown",
        "coalmine.reports.junit",
        "coalmine.reports.html",
    ),
)

F = TypeVar("F", bound=RenderFn)


def reporter(name: str, *, suffix: str) -> Callable[[F], F]:
    """Register a render function under ``name``."""

    def decorate(function: F) -> F:
        registry.register(name, Reporter(name, function, suffix))
        return function

    return decorate


def write_report(
    fmt: str, path: Path, run: CanaryRun, *, comparison: Comparison | None = None
) -> Path:
    """Render ``run`` with reporter ``fmt`` into ``path`` (folders are created)."""
    return write_file(path, registry.get(fmt).render(run, comparison=comparison))
