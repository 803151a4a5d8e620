"""Plan a canary run: load the config and the specs, select, route each spec to its agent.

A spec whose phase routes to an agent the config does not define becomes an invalid spec (with
its file and line), so the other canaries still run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from coalmine._source import Problem, did_you_mean
from coalmine.config import AgentConfig, Config, load_config
from coalmine.engine.history import resumable_run
from coalmine.engine.policy import gate_overrides
from coalmine.errors import ConfigError, UsageError
from coalmine.graders.base import grader_configs
from coalmine.graders.base import registry as graders
from coalmine.providers.base import provider_settings
from coalmine.specs.loader import InvalidSpec, LoadedSpec, load_canary_specs, select_specs
from coalmine.store.runs import RunInfo, Store

CANARIES_DIR = Path("bench") / "canaries"
RESULTS_DIR = Path("bench") / "results"


@dataclass(frozen=True)
class PlannedCanary:
    """A valid canary, the agent it goes to, and its timeout."""

    loaded: LoadedSpec
    agent: AgentConfig
    timeout: float

    @property
    def needs_judge(self) -> bool:
        """Whether one of its graders asks a model judge."""
        return any(graders.get(g.type).needs_judge for g in self.loaded.spec.expected.graders)


@dataclass(frozen=True)
class CanaryPlan:
    """What a run will do."""

    config: Config
    canaries_dir: Path
    canaries: list[PlannedCanary]
    invalid: list[InvalidSpec]
    selectors: tuple[str, ...] = ()


def plan_canaries(
    root: Path,
    *,
    selectors: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    config: Config | None = None,
) -> CanaryPlan:
    """Load config and specs of the project at ``root`` and route every selected spec.

    ``config`` is the project's config when the caller has already loaded it.

    Raises:
        ConfigError: the configuration is invalid.
        UsageError: there are no specs, or a selector is unknown or ambiguous.
    """
    root = root.resolve()
    if not root.is_dir():
        raise UsageError(f"project root {str(root)!r} is not a folder")
    if config is None:
        config = load_config(root, providers=provider_settings(), environ=environ)
    canaries_dir = root / CANARIES_DIR
    spec_set = load_canary_specs(
        canaries_dir, phases=list(config.routing), grader_configs=grader_configs()
    )
    if not spec_set.specs and not spec_set.invalid:
        raise UsageError(
            f"no canary specs found under {canaries_dir}; add one YAML file per canary "
            f"(e.g. {CANARIES_DIR}/qa/qa-001-security-review.yaml), or point at the project root"
        )
    spec_set = select_specs(spec_set, selectors)
    canaries: list[PlannedCanary] = []
    invalid = list(spec_set.invalid)
    for loaded in spec_set.specs:
        phase = loaded.spec.phase
        agent_name = config.routing[phase]
        agent = config.agents.get(agent_name)
        if agent is None:
            invalid.append(_unrouted(loaded, agent_name, config))
            continue
        timeout = loaded.spec.timeout_seconds or config.defaults.timeout_seconds
        canaries.append(PlannedCanary(loaded, agent, timeout))
    return CanaryPlan(config, canaries_dir, canaries, invalid, tuple(selectors))


def _unrouted(loaded: LoadedSpec, agent_name: str, config: Config) -> InvalidSpec:
    defined = ", ".join(config.agents) or "none"
    where = str(config.path) if config.path is not None else "coalmine.yaml (there is none yet)"
    message = (
        f"phase {loaded.spec.phase!r} routes to agent {agent_name!r}"
        f"{did_you_mean(agent_name, config.agents)}, which {where} does not define "
        f"(agents defined: {defined}); add it under 'agents:' or route the phase to another "
        "agent under 'routing:'"
    )
    problem = Problem(loaded.doc.line_of(("phase",)), message)
    return InvalidSpec(loaded.path, (problem,), loaded.id)


def require_judge(plan: CanaryPlan, *, disabled: bool) -> None:
    """Raise when a canary needs a judge and the config neither names one nor says ``none``."""
    if disabled or plan.config.judge_mode != "unset":
        return
    needing = [c.loaded.id for c in plan.canaries if c.needs_judge]
    if not needing:
        return
    where = plan.config.path or plan.config.root / "coalmine.yaml"
    raise ConfigError(
        f"{len(needing)} canar{'y uses' if len(needing) == 1 else 'ies use'} llm-judge graders "
        f"({', '.join(needing[:5])}{', …' if len(needing) > 5 else ''}) but no judge is "
        "configured. Add a judge to the config, e.g. "
        "'judge: {provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}', "
        "or name one of your agents ('judge: Analyst'), or write 'judge: none' to skip "
        "llm-judge graders",
        path=where,
    )


def block_as_gate(plan: CanaryPlan, gate: str) -> list[str]:
    """Make every canary of ``plan`` block, for the blocking gate ``gate``; a note for each."""
    notes = []
    for i, c in enumerate(plan.canaries):
        if not c.loaded.spec.blocking:
            spec = c.loaded.spec.model_copy(update={"blocking": True})
            plan.canaries[i] = replace(c, loaded=replace(c.loaded, spec=spec))
            notes.append(gate_overrides("canary", c.loaded.id, gate))
    return notes


def run_to_resume(store: Store, ref: str, *, root: Path, config: Config) -> RunInfo:
    """The canary run ``--resume REF`` names (``latest``: the newest unfinished one).

    Raises:
        UsageError: no such unfinished run; when ``ref`` is a selector of the project's canaries
            instead (``--resume qa-001``), the hint says how to run them.
    """
    try:
        return resumable_run(store, ref)
    except UsageError as exc:
        if ref != "latest" and _selects(ref, root, config):
            exc.hint = (
                f"{ref!r} selects canaries, not a run: `coalmine canary run {ref}` runs them, "
                "and `--resume` alone finishes the latest unfinished run"
            )
        raise


def _selects(selector: str, root: Path, config: Config) -> bool:
    try:
        return bool(plan_canaries(root, selectors=[selector], config=config).canaries)
    except (UsageError, ConfigError):
        return False
