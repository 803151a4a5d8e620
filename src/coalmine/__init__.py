"""coalmine: a local-first, repo-native evaluation harness for AI agents.

The names below are the supported public API; everything else may change without notice.
"""

from __future__ import annotations

from importlib import import_module

from coalmine._version import __version__ as __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (half of this import)
if TYPE_CHECKING:  # the names as type checkers and IDEs see them; at run time, __getattr__
    from coalmine.canary.plan import CanaryPlan, plan_canaries
    from coalmine.canary.run import CanaryOutcome, run_canaries
    from coalmine.engine.events import CaseEnd, CaseStart, Hooks, RunEnd, RunStart
    from coalmine.errors import (
        AgentTimeout,
        CoalmineError,
        ConfigError,
        GradeError,
        Interrupted,
        PluginError,
        ProviderError,
        RunError,
        SpecError,
        StoreError,
        UsageError,
    )
    from coalmine.graders.base import GradeContext, JudgeReply, grader
    from coalmine.providers.base import AgentRequest, CallContext, Provider, provider
    from coalmine.results import AgentOutput, CanaryRun, CaseResult, Grade

__all__ = [
    "AgentOutput",
    "AgentRequest",
    "AgentTimeout",
    "CallContext",
    "CanaryOutcome",
    "CanaryPlan",
    "CanaryRun",
    "CaseEnd",
    "CaseResult",
    "CaseStart",
    "CoalmineError",
    "ConfigError",
    "Grade",
    "GradeContext",
    "GradeError",
    "Hooks",
    "Interrupted",
    "JudgeReply",
    "PluginError",
    "Provider",
    "ProviderError",
    "RunEnd",
    "RunError",
    "RunStart",
    "SpecError",
    "StoreError",
    "UsageError",
    "grader",
    "plan_canaries",
    "provider",
    "run_canaries",
]

# Where each public name lives. ``import coalmine`` imports none of these modules: a name's
# module is imported on its first use, so ``coalmine --version`` need not load the engine,
# the providers or pydantic.
_EXPORTS: dict[str, str] = {
    "AgentOutput": "coalmine.results",
    "AgentRequest": "coalmine.providers.base",
    "AgentTimeout": "coalmine.errors",
    "CallContext": "coalmine.providers.base",
    "CanaryOutcome": "coalmine.canary.run",
    "CanaryPlan": "coalmine.canary.plan",
    "CanaryRun": "coalmine.results",
    "CaseEnd": "coalmine.engine.events",
    "CaseResult": "coalmine.results",
    "CaseStart": "coalmine.engine.events",
    "CoalmineError": "coalmine.errors",
    "ConfigError": "coalmine.errors",
    "Grade": "coalmine.results",
    "GradeContext": "coalmine.graders.base",
    "GradeError": "coalmine.errors",
    "Hooks": "coalmine.engine.events",
    "Interrupted": "coalmine.errors",
    "JudgeReply": "coalmine.graders.base",
    "PluginError": "coalmine.errors",
    "Provider": "coalmine.providers.base",
    "ProviderError": "coalmine.errors",
    "RunEnd": "coalmine.engine.events",
    "RunError": "coalmine.errors",
    "RunStart": "coalmine.engine.events",
    "SpecError": "coalmine.errors",
    "StoreError": "coalmine.errors",
    "UsageError": "coalmine.errors",
    "grader": "coalmine.graders.base",
    "plan_canaries": "coalmine.canary.plan",
    "provider": "coalmine.providers.base",
    "run_canaries": "coalmine.canary.run",
}


if not TYPE_CHECKING:  # hidden from type checkers, so that a misspelt name stays an error

    def __getattr__(name: str) -> object:
        """Import a public name's module on first use, and keep the name (PEP 562)."""
        try:
            module = _EXPORTS[name]
        except KeyError:
            raise AttributeError(f"module 'coalmine' has no attribute {name!r}") from None
        value = getattr(import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*__all__, *globals()})
