"""Suites that keep another tool's meaning (``compat: NAME``): how the eval engine runs them.

The engine knows no such tool. A compat kind registers here, as a plugin would, what the engine
asks of its lines: whether a line can be read, which graders its assertions are (for the judge
policy and ``judge label``), and a runner that turns a line into a stored attempt (or holds it
back until every line of the run ran, when its verdict depends on other lines). The built-in
kind is promptfoo's (:mod:`coalmine.promptfoo.suite`), found on the first lookup like the
built-in graders; nothing is imported before a suite needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from coalmine._util.clock import Clock
from coalmine._util.registry import Registry
from coalmine.config import Price
from coalmine.engine.call import Caller
from coalmine.graders.base import JudgeFn
from coalmine.specs.models import GraderSpec
from coalmine.specs.suite import SuiteCase, SuiteMeta
from coalmine.store.evals import Attempt

__all__ = [
    "COMPAT_KINDS",
    "CompatKind",
    "CompatRunner",
    "case_graders",
    "compat_kind",
    "get_compat_kind",
]


class CompatRunner(Protocol):
    """What one run shares to evaluate the lines of one compat kind (a Node.js worker …)."""

    async def run(
        self,
        case: SuiteCase,
        rep: int,
        *,
        suite: str,
        suite_path: Path,
        meta: SuiteMeta,
        caller: Caller | None,
        judge: JudgeFn | None,
        judge_blocks: Callable[[str, Mapping[str, Any]], bool] | None,
    ) -> Attempt | None:
        """Evaluate repeat ``rep`` of ``case``; the record is scrubbed by the engine.

        ``None``: the line's verdict depends on other lines of the run; :meth:`finish` gives it.
        """
        ...

    async def finish(self) -> list[Attempt]:
        """The attempts :meth:`run` held back, final now that every line of the run ran.

        Not called when the run is interrupted: the lines held back run again on resume.
        """
        ...

    async def aclose(self) -> None:
        """End what the runner started (it is called once, when the run ends)."""
        ...


class CompatKind(Protocol):
    """A compat kind: how the engine reads, plans and runs its suites' lines."""

    def check(self, case: SuiteCase) -> str | None:
        """Why the line cannot be read (it becomes a bad line), or ``None``."""
        ...

    def graders(self, case: SuiteCase) -> list[GraderSpec]:
        """The coalmine graders the line's assertions are, in its order."""
        ...

    def needs_judge(self, case: SuiteCase) -> bool:
        """Whether the line has a model-graded assertion (the project's judge grades it)."""
        ...

    def runner(
        self, *, timeout: float, pricing: Mapping[str, Price], clock: Clock, root: Path
    ) -> CompatRunner:
        """A runner for one run's lines of this kind.

        ``root`` is the project: the files its lines name must stay in it.
        """
        ...


COMPAT_KINDS: Registry[CompatKind] = Registry(
    "compat suite kind", builtins=("coalmine.promptfoo.suite",)
)


def compat_kind(name: str) -> Callable[[CompatKind], CompatKind]:
    """Register a compat kind under ``name`` (the value of ``compat:`` in a suite's YAML)."""

    def register(kind: CompatKind) -> CompatKind:
        return COMPAT_KINDS.register(name, kind)

    return register


def get_compat_kind(name: str) -> CompatKind:
    """The compat kind called ``name`` (``PluginError`` listing the known ones)."""
    return COMPAT_KINDS.get(name)


def case_graders(case: SuiteCase) -> list[GraderSpec]:
    """A case's graders: its own, or, in a compat suite, those its assertions map to."""
    if case.compat is None:
        return list(case.graders)
    return get_compat_kind(case.compat).graders(case)
