"""coalmine: a local-first, repo-native evaluation harness for AI agents.

The names below are the supported public API; everything else may change without notice.
"""

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
    "RunStart",
    "SpecError",
    "StoreError",
    "UsageError",
    "grader",
    "plan_canaries",
    "provider",
    "run_canaries",
]
