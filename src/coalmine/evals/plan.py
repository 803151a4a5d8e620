"""Plan an eval run: find the suites, check every line, select and order the cases.

Suites are ``harness/evals/<suite>.jsonl`` (or the files and names given). Every line is
checked before anything is called, so a bad line is reported with its file and line while the
rest runs; a suite whose YAML is broken is reported and the other suites run. Only an index of
the selected cases is kept (see ``SuiteIndex``), so planning 100,000 cases takes megabytes.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from coalmine._source import SourceError, did_you_mean
from coalmine._util.estimate import check_reducer
from coalmine._util.hashing import canonical_json
from coalmine.config import AgentConfig, Config, load_config
from coalmine.engine.policy import gate_overrides
from coalmine.errors import ConfigError, UsageError
from coalmine.evals.compat import get_compat_kind
from coalmine.graders.base import grader_configs
from coalmine.graders.base import registry as graders
from coalmine.providers.base import provider_settings
from coalmine.specs.models import GraderSpec
from coalmine.specs.suite import SUITES_DIR, BadLine, EvalCase, SuiteCase, SuiteIndex, scan_suite


@dataclass(frozen=True)
class Selection:
    """Which cases run, in what order, how often."""

    filters: tuple[str, ...] = ()
    """Id globs (``math-*``) or ``tag:NAME``; a case runs when one matches (all when empty)."""
    limit: int | None = None
    """At most this many cases of each suite (after shuffling)."""
    shuffle: int | None = None
    """Shuffle each suite's cases with this seed (the same seed gives the same order)."""
    repeats: int | None = None
    """Run each case this many times (default: the suite's ``repeats``)."""
    reducer: str = "mean"
    """How a case's repeats reduce to one value: mean, majority, pass@k, pass^k."""

    def keeps(self, case: EvalCase) -> bool:
        """Whether ``case`` passes the filters."""
        if not self.filters:
            return True
        for pattern in self.filters:
            if pattern.startswith("tag:"):
                if pattern[4:] in case.tags:
                    return True
            elif fnmatch.fnmatchcase(case.id, pattern):
                return True
        return False


@dataclass
class PlannedSuite:
    """A suite to run: its index, who answers by default, and how often each case runs."""

    index: SuiteIndex
    default_agent: AgentConfig | None
    repeats: int
    reducer: str
    needs_judge: bool = False
    judge_specs: frozenset[str] = frozenset()
    """Every judge grader of the suite (type and config as canonical JSON)."""
    agents: frozenset[str] = frozenset()
    """The agents its selected cases name (``agent`` on the line)."""

    @property
    def name(self) -> str:
        """The suite's name (its file's stem)."""
        return self.index.name


@dataclass(frozen=True)
class BrokenSuite:
    """A suite that cannot run at all (its YAML is invalid, its file unreadable)."""

    path: Path
    message: str


@dataclass
class EvalPlan:
    """What an eval run will do."""

    config: Config
    suites: list[PlannedSuite]
    broken: list[BrokenSuite] = field(default_factory=list)
    selection: Selection = field(default_factory=Selection)
    names: tuple[str, ...] = ()
    """The suites as the command line named them (kept to resume the same run)."""

    @property
    def attempts(self) -> int:
        """Case runs planned, repeats included."""
        return sum(len(s.index) * s.repeats for s in self.suites)


def compat_judge(compat: str) -> str:
    """What a compat suite's model-graded assertions count as among a suite's judge graders."""
    return canonical_json({"type": compat, "config": {"model-graded": True}})


def find_suites(root: Path, names: Sequence[str]) -> list[Path]:
    """The suite files: every ``harness/evals/*.jsonl``, or those ``names`` give.

    A name is a path to a ``.jsonl`` file (relative to the working directory or the root) or
    a suite name under ``harness/evals/``.

    Raises:
        UsageError: a name matches no suite, or there are no suites.
    """
    folder = root / SUITES_DIR
    if not names:
        found = sorted(folder.glob("*.jsonl"))
        if not found:
            raise UsageError(
                f"no eval suites in {folder}; add one JSONL file per suite, e.g. "
                f"{SUITES_DIR}/smoke.jsonl with a line like "
                '{"id": "hello", "prompt": "Say hello", "graders": [{"type": "icontains", '
                '"config": {"value": "hello"}}]}'
            )
        return found
    paths: list[Path] = []
    for name in names:
        candidates = [Path(name), root / name, folder / f"{name}.jsonl"]
        path = next((p for p in candidates if p.suffix == ".jsonl" and p.is_file()), None)
        if path is None:
            known = [p.stem for p in sorted(folder.glob("*.jsonl"))]
            raise UsageError(
                f"no eval suite {name!r}{did_you_mean(name, known)} "
                f"(suites in {folder}: {', '.join(known) or 'none'})"
            )
        if path.resolve() not in paths:
            paths.append(path.resolve())
    return paths


def _unique_names(paths: list[Path]) -> None:
    """Suites are known by their file's stem (in the store, in report paths): no two alike."""
    seen: dict[str, Path] = {}
    for path in paths:
        if path.stem in seen:
            raise UsageError(
                f"two suites are named {path.stem!r} ({seen[path.stem]} and {path}); "
                "rename one: a suite is known by its file name"
            )
        seen[path.stem] = path


def plan_evals(
    root: Path,
    names: Sequence[str] = (),
    *,
    selection: Selection | None = None,
    config: Config | None = None,
) -> EvalPlan:
    """Load the config, check every suite line, and select the cases that will run.

    Raises:
        ConfigError: the configuration is invalid.
        UsageError: a suite name is unknown, or a reducer does not fit the repeats.
    """
    root = root.resolve()
    if not root.is_dir():
        raise UsageError(f"project root {str(root)!r} is not a folder")
    if config is None:
        config = load_config(root, providers=provider_settings())
    selection = selection or Selection()
    plan = EvalPlan(config, [], selection=selection, names=tuple(names))
    configs = grader_configs()
    paths = find_suites(root, names)
    _unique_names(paths)
    for path in paths:
        try:
            planned = _plan_suite(path, config, selection, configs)
        except SourceError as exc:
            plan.broken.append(BrokenSuite(path, str(exc)))
            continue
        plan.suites.append(planned)
    return plan


def block_as_gate(plan: EvalPlan, gate: str) -> list[str]:
    """Make every suite of ``plan`` block, for the blocking gate ``gate``; a note for each.

    A gate the manifest calls blocking decides: a suite's ``blocking: false`` must not let it
    pass with failing cases.
    """
    notes = []
    for suite in plan.suites:
        if not suite.index.meta.blocking:
            suite.index.meta = suite.index.meta.model_copy(update={"blocking": True})
            notes.append(gate_overrides("suite", suite.name, gate))
    return notes


def _plan_suite(
    path: Path, config: Config, selection: Selection, configs: Mapping[str, type[BaseModel]]
) -> PlannedSuite:
    meta_agent: AgentConfig | None = None
    meta_path = path.with_suffix(".yaml")
    judge_specs: set[str] = set()
    named: set[str] = set()
    planned_agents = config.agents

    def note_judges(specs: Sequence[GraderSpec]) -> None:
        for g in specs:
            if graders.get(g.type).needs_judge:
                judge_specs.add(canonical_json({"type": g.type, "config": g.config}))

    def keep(case: EvalCase) -> bool:
        if not selection.keeps(case):
            return False
        note_judges(case.graders)
        return True

    def check(case: SuiteCase) -> str | None:
        if case.case.agent in planned_agents:
            named.add(case.case.agent)
        if case.compat is not None:
            kind = get_compat_kind(case.compat)
            problem = kind.check(case)
            if problem is None and kind.needs_judge(case):
                judge_specs.add(compat_judge(case.compat))
            return problem
        if case.case.agent is not None and case.case.agent not in planned_agents:
            return _unknown_agent(case.case.agent, config)
        return _disabled_python_grader(case.graders, config)

    index = scan_suite(path, grader_configs=configs, select=keep, check=check)
    meta = index.meta
    problem = _disabled_python_grader(meta.graders, config)
    if problem is not None:
        raise SourceError(problem, path=meta_path)
    if meta.agent is not None:
        meta_agent = config.agents.get(meta.agent)
        if meta_agent is None:
            raise SourceError(_unknown_agent(meta.agent, config), path=meta_path)
    elif len(config.agents) == 1 and meta.compat is None:
        meta_agent = next(iter(config.agents.values()))
    note_judges(meta.graders)
    repeats = selection.repeats or meta.repeats
    try:
        reducer = check_reducer(selection.reducer, repeats)
    except ValueError as exc:
        raise UsageError(f"--reducer {exc}") from None
    if selection.shuffle is not None or (
        selection.limit is not None and selection.limit < len(index)
    ):  # a list of every position only then: at a million cases it is ~36 MB
        order = list(range(len(index)))
        if selection.shuffle is not None:
            random.Random(selection.shuffle).shuffle(order)
        index.keep_only(order[: selection.limit])
    if meta_agent is None and meta.compat is None:
        _require_agents(index, config)
    return PlannedSuite(
        index, meta_agent, repeats, reducer, bool(judge_specs), frozenset(judge_specs),
        frozenset(named),
    )  # fmt: skip


def plan_agents(plan: EvalPlan) -> list[AgentConfig]:
    """The agents the plan's cases go to (so a run can check them before its first call)."""
    names = {name for suite in plan.suites for name in suite.agents}
    defaults = [s.default_agent for s in plan.suites if s.default_agent is not None]
    return [*defaults, *(plan.config.agents[n] for n in sorted(names))]


def _require_agents(index: SuiteIndex, config: Config) -> None:
    """Without a default agent every case must name its own; move the others to bad lines."""
    with index.path.open("rb") as handle:
        keep = [i for i in range(len(index)) if index.read(i, handle).agent is not None]
    if len(keep) == len(index):
        return
    missing = set(range(len(index))) - set(keep)
    for i in sorted(missing):
        message = (
            "no agent: name one on the case ('agent') or for the suite ('agent:' in "
            f"{index.path.with_suffix('.yaml').name}); agents: {', '.join(config.agents) or 'none'}"
        )
        index.bad.append(_bad(index, i, message))
    index.keep_only(keep)


def _bad(index: SuiteIndex, position: int, message: str) -> BadLine:
    return BadLine(index.path, index.lines[position], message, index.ids[position])


def _disabled_python_grader(specs: Sequence[GraderSpec], config: Config) -> str | None:
    """A ``python`` grader may only name a function the config's ``python_graders`` lists."""
    for spec in specs:
        name = spec.config.get("function") if spec.type == "python" else None
        if isinstance(name, str) and name not in config.python_graders:
            enabled = ", ".join(sorted(config.python_graders)) or "none"
            return (
                f"python grader {name!r}{did_you_mean(name, config.python_graders)} is not "
                f"enabled: list it under 'python_graders:' in the config (enabled: {enabled})"
            )
    return None


def _unknown_agent(name: str, config: Config) -> str:
    where = str(config.path) if config.path is not None else "the config"
    return (
        f"agent {name!r}{did_you_mean(name, config.agents)} is not defined in {where} "
        f"(agents: {', '.join(config.agents) or 'none'})"
    )


def require_eval_judge(plan: EvalPlan, *, disabled: bool) -> None:
    """Raise when a suite uses judge graders and the config neither names a judge nor ``none``."""
    if disabled or plan.config.judge_mode != "unset":
        return
    needing = [s.name for s in plan.suites if s.needs_judge]
    if needing:
        raise ConfigError(
            f"suites {', '.join(needing)} use judge graders (llm-rubric, llm-judge, context-…) "
            "but no judge is configured: add 'judge:' to the config (an agent's name or a "
            "provider), or 'judge: none' to skip them",
            path=plan.config.path or plan.config.root / "coalmine.yaml",
        )
