"""``coalmine import promptfoo`` and ``export promptfoo``: the files each direction writes.

:func:`import_promptfoo` plans with :func:`coalmine.promptfoo.importer.plan_import`, then writes
each suite's ``.yaml`` and ``.jsonl`` under ``<out>/harness/evals/`` and adds the agents to
``<out>/coalmine.yaml`` (creating it when there is none). Nothing is overwritten unless asked:
a suite file that exists with other content stops the import before anything is written; an
identical one is left as it is, so importing again changes nothing.

:func:`export_promptfoo` writes one suite (found as ``eval run`` finds it, with the agent that
runs it) as a promptfoo config: :mod:`coalmine.promptfoo.exporter`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from coalmine._source import safe_load
from coalmine.config import load_config
from coalmine.errors import UsageError
from coalmine.evals.plan import find_suites
from coalmine.graders.base import grader_configs
from coalmine.promptfoo.config_code import RunConfigCode
from coalmine.promptfoo.exporter import Exported, export_suite
from coalmine.promptfoo.importer import ImportPlan, add_agents, dump_yaml, plan_import
from coalmine.promptfoo.matrix.config import CONFIG_FILE
from coalmine.providers.base import provider_settings
from coalmine.specs.suite import load_suite

__all__ = ["ImportResult", "export_promptfoo", "import_promptfoo"]

CONFIG_NAME = "coalmine.yaml"


@dataclass(frozen=True)
class ImportResult:
    """What the import wrote."""

    plan: ImportPlan
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    config: Path | None = None
    """coalmine.yaml, when agents were added to it (or it was created)."""


def import_promptfoo(
    config: Path = Path(CONFIG_FILE),
    *,
    out_dir: Path = Path("."),
    name: str | None = None,
    force: bool = False,
) -> ImportResult:
    """Import the promptfoo config at ``config`` into the coalmine project at ``out_dir``.

    Raises:
        ConfigError: the promptfoo config (or coalmine.yaml) is broken.
        UsageError: a suite file exists with other content and ``force`` is not set.
    """
    config_file = out_dir / CONFIG_NAME
    current = config_file.read_text(encoding="utf-8") if config_file.is_file() else None
    existing = _agents(current)
    plan = plan_import(
        config, out_dir=out_dir, name=name, existing_agents=existing, code=RunConfigCode()
    )
    files: dict[Path, str] = {}
    for suite in plan.suites:
        files[plan.suites_dir / f"{suite.name}.yaml"] = suite.yaml_text()
        files[plan.suites_dir / f"{suite.name}.jsonl"] = suite.jsonl_text()
    clashes = [
        p for p, text in files.items() if p.exists() and p.read_text(encoding="utf-8") != text
    ]
    if clashes and not force:
        shown = ", ".join(str(p) for p in clashes)
        raise UsageError(
            f"{len(clashes)} suite file{'s' if len(clashes) != 1 else ''} already exist with "
            f"other content ({shown}); give --force to replace them, or --name to import "
            "under another name"
        )
    new_config = add_agents(current, plan.agents)
    if new_config is not None and current is None:
        new_config = _header(plan) + new_config
    result = ImportResult(plan)
    plan.suites_dir.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            result.unchanged.append(path)
            continue
        path.write_text(text, encoding="utf-8")
        result.written.append(path)
    if new_config is not None:
        config_file.parent.mkdir(parents=True, exist_ok=True)
        config_file.write_text(new_config, encoding="utf-8")
        return ImportResult(plan, result.written, result.unchanged, config_file)
    return result


def _agents(text: str | None) -> dict[str, object]:
    if not text:
        return {}
    try:
        data = safe_load(text)
    except yaml.YAMLError:
        return {}  # add_agents reports it
    agents = data.get("agents") if isinstance(data, dict) else None
    return dict(agents) if isinstance(agents, dict) else {}


def _header(plan: ImportPlan) -> str:
    lines = [f"# coalmine config, begun by `coalmine import promptfoo` ({plan.matrix.path.name})"]
    if plan.needs_judge:
        lines.append(
            "# Model-graded assertions (llm-rubric …) need a judge: add 'judge:' (an agent's "
            "name or a provider)."
        )
    return "\n".join(lines) + "\n"


def export_promptfoo(root: Path, suite_name: str, out: Path) -> Exported:
    """Write the suite ``suite_name`` of the project at ``root`` as a promptfoo config at ``out``.

    Raises:
        ConfigError: coalmine.yaml is broken, or the suite's agent is not defined.
        UsageError: no such suite.
        SourceError: the suite's YAML is broken.
    """
    config = load_config(root, providers=provider_settings())
    [path] = find_suites(root, [suite_name])
    suite = load_suite(path, grader_configs=grader_configs())
    if suite.bad:
        raise UsageError(
            f"suite {suite.name} has {len(suite.bad)} bad line(s), first {suite.bad[0]}; "
            "mend them before exporting"
        )
    agent = None
    if suite.meta.agent is not None:
        agent = config.agents.get(suite.meta.agent)
        if agent is None:
            raise UsageError(f"suite {suite.name}: agent {suite.meta.agent!r} is not defined")
    elif suite.meta.compat is None and len(config.agents) == 1:
        agent = next(iter(config.agents.values()))
    exported = export_suite(suite, agent, out_dir=out.parent)
    head = f"# Exported by `coalmine export promptfoo` from suite {suite.name}.\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(head + dump_yaml(exported.config), encoding="utf-8")
    for name, text in exported.files.items():  # beside it, exactly (a prompt's text)
        (out.parent / name).write_text(text, encoding="utf-8", newline="")
    return exported
