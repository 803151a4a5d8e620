"""The project configuration: ``coalmine.yaml`` or ``[tool.coalmine]`` in ``pyproject.toml``.

It names the agents (each backed by a provider), the phase → agent routing of the canary
runner, the judge and run defaults. Strings may use ``${VAR}`` or ``${VAR:-default}`` (``$${``
writes a literal ``${``). Relative paths in agent settings resolve against the config file's
folder, which is also the working directory of command agents. Every problem names file:line.

Provider settings are validated against the models the caller passes (the provider registry
lives a tier above this module), so an unknown key in an agent is caught here, at load time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from coalmine._source import (
    Document,
    Problem,
    SourceError,
    did_you_mean,
    load_toml_table,
    load_yaml,
    validation_problems,
)
from coalmine._util.interpolation import Expanded, expand
from coalmine._util.locations import project_context
from coalmine._util.secrets import config_secrets, redact
from coalmine.errors import ConfigError

CONFIG_FILE = "coalmine.yaml"
DEFAULT_STORE = ".coalmine/coalmine.db"
INLINE_JUDGE = "judge"
"""The agent name of a judge written inline under ``judge:``."""

#: The seed's phase → agent table; ``routing:`` in the config adds to it or overrides it.
DEFAULT_ROUTING: dict[str, str] = {
    "requirements": "Analyst",
    "design": "Analyst",
    "scaffold": "Scaffolder",
    "implement": "Implementer",
    "qa": "QA Coordinator",
    "document": "Documenter",
    "deploy": "Deployer",
    "release": "Release Manager",
    "rai": "RAI Reviewer",
}


class Defaults(BaseModel):
    """Run defaults that a spec or the command line may override."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_seconds: float = Field(300.0, gt=0)
    """Agent timeout (the whole call, retries included) for a spec without ``timeout_seconds``."""
    judge_timeout_seconds: float = Field(120.0, gt=0)
    """How long one judge call may take."""
    jobs: int = Field(1, ge=1)
    """How many canaries run at once (sequential by default, as the seed asks)."""


class CallPolicy(BaseModel):
    """How coalmine calls an agent, whatever its provider: retries and limits.

    These keys sit beside ``provider:`` in an agent's entry.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    retries: int | None = Field(None, ge=0)
    """Extra attempts after a retryable failure (429, 5xx, timeout, dropped connection).

    The default is the provider's: 2 for HTTP providers, 0 for commands and functions."""
    backoff_seconds: float = Field(1.0, gt=0)
    """The first wait before a retry; it doubles each time, with full jitter."""
    max_backoff_seconds: float = Field(60.0, gt=0)
    """The longest wait between two attempts (a server's Retry-After is honoured up to it)."""
    max_concurrency: int | None = Field(None, ge=1)
    """Calls in flight at once to this agent, across every case (and the judge)."""
    requests_per_minute: float | None = Field(None, gt=0)
    """Calls started per minute to this agent, across every case (and the judge)."""
    tokens_per_minute: float | None = Field(None, gt=0)
    """Tokens (prompt + completion, as reported) per minute; a call waits while the last
    minute's calls used more."""


POLICY_KEYS = frozenset(CallPolicy.model_fields)


class Price(BaseModel):
    """What one model costs, in your currency per million tokens (coalmine has no price list)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0)
    """Price of prompt tokens served from the provider's prompt cache (default: ``input``)."""


_TARGET = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _target(value: str) -> str:
    if not _TARGET.fullmatch(value):
        raise ValueError(f"{value!r} is not module:function (e.g. graders.sql:is_valid)")
    return value


class CalibrationLimits(BaseModel):
    """What a calibration must show before its judge may block (``judge_calibration:``).

    The rates and kappa are judged on one-sided 95% bounds (``coalmine.judge.evidence``), not on
    the point estimates: a judge earns the right to block on evidence. The defaults: 0 false
    passes on 20 held-out human-fail items qualify (bound 0.119), 1 in 20 does not (0.196), nor
    0 in 15 (0.153); 0 false blocks on 11 human-pass items qualify (0.197), and 1 in 20 does
    (0.196); kappa's lower bound at 0.7 is the agreement asked for gating a release (below 0.4
    is for exploring, 0.4–0.7 for watching a trend).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_false_pass_rate: float = Field(0.15, ge=0, le=1)
    """The false-pass rate's one-sided 95% upper bound (Wilson) must be at most this."""
    max_false_block_rate: float = Field(0.20, ge=0, le=1)
    """The false-block rate's one-sided 95% upper bound (Wilson) must be at most this."""
    min_kappa: float = Field(0.7, ge=-1, le=1)
    """Cohen's kappa's one-sided 95% lower bound must be at least this."""
    min_stability: float = Field(0.95, ge=0, le=1)
    """Share of held-out items whose verdict is the same on every rerun (the observed share)."""
    min_heldout: int = Field(20, ge=1)
    """Held-out items (with a human verdict and a judge verdict) needed at least, whatever the
    bounds say. The bounds ask more by themselves: with the default rates, 16 human-fail and 11
    human-pass items for a judge with no error."""


class _ConfigFile(BaseModel):
    """The top level of coalmine.yaml (agents are checked against their provider's model)."""

    model_config = ConfigDict(extra="forbid")

    agents: dict[str, dict[str, Any]] = {}
    """Agent name → ``{provider: …, description: …, <provider settings>}``."""
    routing: dict[str, str] = {}
    """Phase → agent name, merged over the default table."""
    judge: str | dict[str, Any] | None = None
    """``none``, the name of an agent, or an inline provider config."""
    defaults: Defaults = Defaults()
    """Run defaults: timeouts, and how many canaries run at once."""
    store: str = DEFAULT_STORE
    """The run store's database file, relative to the config file's folder."""
    cache: bool = False
    """Answer repeated agent and judge calls from the response cache."""
    pricing: dict[str, Price] = {}
    """Model name → price per million tokens, for the run's cost."""
    python_graders: dict[str, Annotated[str, AfterValidator(_target)]] = {}
    """Name → ``module:function`` (module relative to this file's folder): the only code a
    suite's ``python`` grader may run. A suite line names one; it cannot name any other."""
    judge_calibration: CalibrationLimits = CalibrationLimits()
    """What a judge's calibration must show before its failures may fail a run."""


@dataclass(frozen=True)
class UnsetVariable:
    """A ``${VAR}`` of an agent whose variable is not set and has no default."""

    name: str
    line: int | None
    setting: str
    """Where it is written in the agent's entry, e.g. ``env.OPENAI_API_KEY``."""


@dataclass(frozen=True)
class AgentConfig:
    """One configured agent: its provider and validated provider settings."""

    name: str
    provider: str
    resolved: BaseModel | None
    """The validated provider settings; ``None`` while one of its variables is unset."""
    base_dir: Path
    """The config file's folder: relative paths resolve here; commands run here."""
    path: Path | None = None
    line: int | None = None
    description: str | None = None
    """Free text about the agent (every agent may have it, whatever its provider)."""
    policy: CallPolicy = CallPolicy()
    """Retries and limits (keys beside ``provider:``)."""
    secrets: tuple[str, ...] = ()
    """The values of its entry that are secrets: scrubbed from all a run writes or prints."""
    unset: tuple[UnsetVariable, ...] = ()
    """Its ``${VAR}`` whose variables are unset: a run that uses it stops before any call."""

    @property
    def settings(self) -> BaseModel:
        """The validated provider settings.

        Raises:
            ConfigError: a variable the settings need is unset (named, with its line).
        """
        if self.resolved is None:
            raise config_error(self.unset_problems(), self.path)
        return self.resolved

    def unset_problems(self) -> list[Problem]:
        """Each unset variable of this agent, at its line."""
        return [
            Problem(
                u.line,
                f"agent {self.name!r} ({u.setting}): the environment variable {u.name} is not "
                f"set; set it, or give a default with ${{{u.name}:-value}}",
            )
            for u in self.unset
        ] or [Problem(self.line, f"agent {self.name!r}: its settings could not be resolved")]


JudgeMode = Literal["unset", "none", "agent"]


@dataclass(frozen=True)
class Config:
    """The loaded project configuration."""

    root: Path
    path: Path | None = None
    agents: dict[str, AgentConfig] = field(default_factory=dict)
    routing: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_ROUTING))
    judge_mode: JudgeMode = "unset"
    judge: AgentConfig | None = None
    judge_blocking: bool = False
    """The config lets the judge block without a calibration record (flagged in reports)."""
    defaults: Defaults = Defaults()
    """Run defaults: timeouts, and how many canaries run at once."""
    store: str = DEFAULT_STORE
    cache: bool = False
    pricing: dict[str, Price] = field(default_factory=dict)
    python_graders: dict[str, str] = field(default_factory=dict)
    judge_calibration: CalibrationLimits = CalibrationLimits()

    @property
    def store_path(self) -> Path:
        """The run store's database file."""
        return self.base_dir / self.store

    @property
    def base_dir(self) -> Path:
        """The folder relative paths resolve against."""
        return self.path.parent if self.path is not None else self.root


def find_config_file(root: Path) -> tuple[Path, Literal["yaml", "toml"]] | None:
    """Return the config file of the project at ``root``, if any (coalmine.yaml first)."""
    yaml_path = root / CONFIG_FILE
    if yaml_path.is_file():
        return yaml_path, "yaml"
    toml_path = root / "pyproject.toml"
    if toml_path.is_file():
        return toml_path, "toml"
    return None


def load_config(
    root: Path,
    *,
    providers: Mapping[str, type[BaseModel]],
    environ: Mapping[str, str] | None = None,
    keys: Collection[str] | None = None,
    base_dir: Path | None = None,
    project_root: Path | None = None,
) -> Config:
    """Load the configuration of the project at ``root``.

    Args:
        root: the project folder.
        providers: provider name → its settings model, to validate each agent.
        environ: the variables ``${VAR}`` expands from (default: ``os.environ``).
        keys: read only these top-level keys (a command that reads the store needs ``store``
            alone): the others are neither expanded nor checked.
        base_dir: where relative paths in agent settings resolve (default: the config file's
            folder).
        project_root: the folder files named by agents must stay in (default: ``root``).

    Raises:
        ConfigError: every problem found, each with file and line.
    """
    root = root.resolve()
    found = find_config_file(root)
    if found is None:
        return Config(root=root)
    path, kind = found
    try:
        doc = load_yaml(path) if kind == "yaml" else load_toml_table(path, ("tool", "coalmine"))
    except SourceError as exc:
        raise ConfigError(exc.message, path=exc.path, line=exc.line) from None
    if doc is None:
        return Config(root=root)
    if doc.data is None:
        doc = Document(doc.path, {}, doc.lines, doc.first_line)
    if not isinstance(doc.data, dict):
        raise ConfigError("the configuration must be a mapping", path=path, line=doc.first_line)
    if keys is not None:
        doc = Document(
            doc.path, {k: v for k, v in doc.data.items() if k in keys}, doc.lines, doc.first_line
        )
    expanded = expand(doc.data, os.environ if environ is None else environ)
    data = expanded.data
    doc = Document(doc.path, data, doc.lines, doc.first_line)
    # an agent's variables are needed only by a run that calls it: that run checks them
    listed = data.get("agents")
    deferred: list[tuple[str, ...]] = [
        ("agents", n) for n in (listed if isinstance(listed, dict) else {})
    ]
    if isinstance(data.get("judge"), dict):
        deferred.append(("judge",))
    problems = [
        Problem(
            doc.line_of(u.loc),
            f"environment variable {u.var} is not set; set it, or give a default "
            f"with ${{{u.var}:-value}}",
        )
        for u in expanded.unset
        if u.loc[:2] not in deferred and u.loc[:1] not in deferred
    ]
    _raise_if(problems, path)
    try:
        raw = _ConfigFile.model_validate(data)
    except ValidationError as exc:
        _raise_if(validation_problems(exc, doc, _ConfigFile), path)
        raise  # pragma: no cover - validation_problems always yields one problem per error
    context = project_context(base_dir=base_dir or path.parent, root=project_root or root)
    agents = {}
    for name, entry in raw.agents.items():
        agent = _agent(name, entry, ("agents", name), doc, expanded, providers, context, problems)
        if agent is not None:
            agents[name] = agent
    routing = dict(DEFAULT_ROUTING)
    for phase, agent_name in raw.routing.items():
        if agent_name not in raw.agents:
            problems.append(_unknown_agent(agent_name, raw.agents, doc, ("routing", phase)))
        routing[phase] = agent_name
    judge_mode: JudgeMode = "unset"
    judge: AgentConfig | None = None
    judge_blocking: object = False
    if isinstance(raw.judge, str) and raw.judge.strip().lower() == "none":
        judge_mode = "none"
    elif isinstance(raw.judge, str):
        judge_mode = "agent"
        if raw.judge in agents:
            judge = agents[raw.judge]
        elif raw.judge not in raw.agents:
            problems.append(_unknown_agent(raw.judge, raw.agents, doc, ("judge",)))
    elif isinstance(raw.judge, dict):
        judge_mode = "agent"
        judge_blocking = raw.judge.get("blocking", False)
        if not isinstance(judge_blocking, bool):
            problems.append(
                Problem(doc.line_of(("judge", "blocking")), "judge.blocking must be true or false")
            )
        judge = _agent(
            INLINE_JUDGE, raw.judge, ("judge",), doc, expanded, providers, context, problems
        )
    _raise_if(problems, path)
    return Config(
        root=root,
        path=path,
        agents=agents,
        routing=routing,
        judge_mode=judge_mode,
        judge=judge,
        judge_blocking=judge_blocking is True,
        defaults=raw.defaults,
        store=raw.store,
        cache=raw.cache,
        pricing=raw.pricing,
        python_graders=raw.python_graders,
        judge_calibration=raw.judge_calibration,
    )


def _agent(
    name: str,
    entry: dict[str, Any],
    loc: tuple[str, ...],
    doc: Document,
    expanded: Expanded,
    providers: Mapping[str, type[BaseModel]],
    context: dict[str, Path],
    problems: list[Problem],
) -> AgentConfig | None:
    """The agent at ``loc`` with its secrets; while a variable of it is unset, unvalidated."""
    own = expanded.under(loc)
    secrets = tuple(config_secrets(entry, [(f.loc, f.value) for f in own.from_env]))
    base_dir = context["base_dir"]
    if own.unset:
        provider = entry.get("provider")
        description = entry.get("description")
        unset = tuple(
            UnsetVariable(u.var, doc.line_of((*loc, *u.loc)), ".".join(map(str, u.loc)))
            for u in own.unset
        )
        return AgentConfig(
            name, provider if isinstance(provider, str) else "", None, base_dir, doc.path,
            doc.line_of(loc), description if isinstance(description, str) else None,
            secrets=secrets, unset=unset,
        )  # fmt: skip
    known = len(problems)
    agent = _build_agent(name, entry, loc, doc, providers, context, problems)
    for i in range(known, len(problems)):  # a message may quote a value: never a secret
        problems[i] = Problem(problems[i].line, redact(problems[i].message, secrets))
    return replace(agent, secrets=secrets) if agent is not None else None


def _build_agent(
    name: str,
    entry: dict[str, Any],
    loc: tuple[str, ...],
    doc: Document,
    providers: Mapping[str, type[BaseModel]],
    context: dict[str, Path],
    problems: list[Problem],
) -> AgentConfig | None:
    """One agent, its settings validated against the project (files inside it, URLs)."""
    base_dir = context["base_dir"]
    settings = dict(entry)
    provider = settings.pop("provider", None)
    description = settings.pop("description", None)
    if loc == ("judge",):
        settings.pop("blocking", None)  # a judge setting, not the provider's
    policy_keys = {k: settings.pop(k) for k in list(settings) if k in POLICY_KEYS}
    try:
        policy = CallPolicy.model_validate(policy_keys)
    except ValidationError as exc:
        for problem in validation_problems(exc, doc, CallPolicy, prefix=loc):
            problems.append(Problem(problem.line, f"agent {name!r}: {problem.message}"))
        return None
    line = doc.line_of(loc)
    if not isinstance(provider, str):
        choices = ", ".join(sorted(providers))
        problems.append(Problem(line, f"agent {name!r} needs 'provider:' (one of: {choices})"))
        return None
    model = providers.get(provider)
    if model is None:
        choices = ", ".join(sorted(providers))
        problems.append(
            Problem(
                doc.line_of((*loc, "provider")),
                f"agent {name!r}: unknown provider {provider!r}"
                f"{did_you_mean(provider, providers)}; valid providers: {choices}",
            )
        )
        return None
    try:
        validated = model.model_validate(settings, context=context)
    except ValidationError as exc:
        for problem in validation_problems(exc, doc, model, prefix=loc):
            problems.append(Problem(problem.line, f"agent {name!r}: {problem.message}"))
        return None
    if description is not None and not isinstance(description, str):
        problems.append(Problem(doc.line_of((*loc, "description")), "description must be text"))
        return None
    return AgentConfig(name, provider, validated, base_dir, doc.path, line, description, policy)


def _unknown_agent(
    name: str, agents: Mapping[str, Any], doc: Document, loc: tuple[str, ...]
) -> Problem:
    defined = ", ".join(agents) or "none"
    return Problem(
        doc.line_of(loc),
        f"{'.'.join(loc)}: unknown agent {name!r}{did_you_mean(name, agents)}; "
        f"agents defined under 'agents:': {defined}",
    )


def _raise_if(problems: list[Problem], path: Path) -> None:
    if problems:
        raise config_error(problems, path)


def config_error(problems: list[Problem], path: Path | None) -> ConfigError:
    """One error for every problem, each at its line."""
    first = problems[0]
    rest = "".join(f"\n{path}:{p.line}: {p.message}" for p in problems[1:])
    return ConfigError(first.message + rest, path=path, line=first.line)
