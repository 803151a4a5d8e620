"""A promptfoo config as coalmine files: one ``compat: promptfoo`` suite per column, and agents.

:func:`plan_import` reads the config into its test matrix (:mod:`coalmine.promptfoo.matrix`)
and gives, for each column promptfoo shows (a prompt run by a provider, numbered by
``promptIdx``), a suite whose YAML says ``compat: promptfoo`` and whose lines are the tests of
that column as promptfoo prepares them (``defaultTest`` merged, one combination of list vars,
the prefix and suffix put around the prompt): :mod:`coalmine.specs.compat`. The providers
become agents (:mod:`coalmine.promptfoo.providers`); a provider no coalmine agent runs is
reported and its suites kept, their rows ERRORs saying why, as ``eval run --promptfoo`` gives.

Nothing is written here: the plan holds each file's text, and :func:`add_agents` adds the
agents to a coalmine.yaml's text, keeping what is there (comments included).

The config is read without the process environment: a ``{{ env.NAME }}`` stays as written in
the files, and is rendered when the suite runs, so no key is copied from the environment. Of
the config's own ``env:`` (and a provider's, kept in its suites for export), names that look
like secrets (``…KEY``, ``…TOKEN``, ``…SECRET``, ``…PASSWORD``) are not copied into the suites
either: they are listed, to be set in the environment.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from coalmine._source import safe_load
from coalmine.errors import ConfigError
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.assertions import JUDGED, map_assertion
from coalmine.promptfoo.comparison import check_max_scores
from coalmine.promptfoo.matrix import Column, Matrix, load_matrix
from coalmine.promptfoo.matrix.code import ConfigCode
from coalmine.promptfoo.matrix.config import CONFIG_FILE
from coalmine.promptfoo.matrix.prepared import (
    config_env,
    default_delay_ms,
    prepared_test,
    timeout_ms,
    unsupported_reason,
)
from coalmine.promptfoo.providers import MappedProvider, map_providers, unique_name
from coalmine.specs.suite import SUITES_DIR

__all__ = [
    "ImportPlan",
    "ImportedSuite",
    "add_agents",
    "dump_yaml",
    "plain_data",
    "plan_import",
    "suite_names",
]

_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
_SLUG = re.compile(r"[^a-z0-9]+")
SLUG_LENGTH = 40
BASE_LENGTH = 24


@dataclass(frozen=True)
class ImportedSuite:
    """One column of the config as a suite: its name, its YAML and its lines."""

    name: str
    meta: Mapping[str, Any]
    lines: tuple[Mapping[str, Any], ...]
    column: Column
    provider: MappedProvider

    def yaml_text(self) -> str:
        """``<name>.yaml``."""
        head = "# Imported by `coalmine import promptfoo`; its lines are promptfoo tests.\n"
        return head + dump_yaml(dict(self.meta))

    def jsonl_text(self) -> str:
        """``<name>.jsonl``: one test a line."""
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self.lines)


@dataclass(frozen=True)
class ImportPlan:
    """What importing a config writes, and what it could not carry over."""

    matrix: Matrix
    suites: tuple[ImportedSuite, ...]
    agents: Mapping[str, Mapping[str, Any]]
    """The agents to add to coalmine.yaml, by name (providers with no coalmine agent excluded)."""
    providers: tuple[MappedProvider, ...]
    warnings: tuple[str, ...] = ()
    """What differs or is not carried over (``file:line: …`` where known)."""
    unsupported_assertions: tuple[str, ...] = ()
    """Assertion types coalmine cannot grade, each with why and how many use it."""
    unsupported_rows: tuple[str, ...] = ()
    """Why some rows cannot run (a prompt function, a test's own provider …), with counts."""
    needs_judge: bool = False
    """Some assertion is model-graded: coalmine.yaml needs a ``judge:``."""
    suites_dir: Path = field(default=SUITES_DIR)

    @property
    def unsupported_providers(self) -> tuple[MappedProvider, ...]:
        """Providers no coalmine agent runs (their rows will be ERRORs)."""
        return tuple(p for p in self.providers if p.agent is None)


def plan_import(
    path: Path | str = CONFIG_FILE,
    *,
    out_dir: Path,
    name: str | None = None,
    existing_agents: Mapping[str, Any] | None = None,
    code: ConfigCode | None = None,
) -> ImportPlan:
    """Plan the suites and agents that mean what the promptfoo config at ``path`` means.

    Args:
        path: The promptfoo config.
        out_dir: The coalmine project the files go to (its ``harness/evals/`` and coalmine.yaml).
        name: The suites' name (default: the config's description, else its folder's name);
            a config with several columns adds the prompt and provider to it.
        existing_agents: coalmine.yaml's agents already there: an agent of the same name and
            entry is reused, one of the same name and another entry makes the new one renamed.
        code: Runs the config's test generators (their tests become the suites' lines).

    Raises:
        ConfigError: the config is broken (every problem, each with its file and line).
    """
    config_path = Path(path)
    matrix = load_matrix(config_path, environ={}, root=out_dir, code=code)
    check_max_scores(matrix)  # where promptfoo stops the eval, the suites would fail alike
    out_dir = Path(out_dir)
    suites_dir = out_dir / SUITES_DIR
    mapped = map_providers(matrix.providers, base_dir=matrix.base_dir, out_dir=out_dir)
    mapped = _rename_taken(mapped, existing_agents or {})
    warnings = list(matrix.warnings)
    warnings += [f"provider {m.key}: {note}" for m in mapped for note in m.notes]
    warnings += [f"provider {m.key}: {m.problem}" for m in mapped if m.agent is None]
    env, held_back = _env(matrix)
    if held_back:
        warnings.append(
            f"{matrix.path}: env: {', '.join(held_back)} not copied into the suites (they look "
            "like secrets): set them in the environment"
        )
    for ref in matrix.providers:
        own = ref.options.get("env") if ref.options is not None else None
        held = [str(k) for k in own if _SECRET.search(str(k))] if isinstance(own, Mapping) else []
        if held:
            warnings.append(
                f"provider {ref.label or ref.id}: env: {', '.join(held)} not copied into the "
                "suites (they look like secrets)"
            )
    names = suite_names(matrix, name)
    delay = default_delay_ms(matrix.extras, {})
    timeout = timeout_ms(matrix.extras)
    ids = _line_ids(matrix)
    position = {id(ref): i for i, ref in enumerate(matrix.providers)}
    by_column: dict[int, list[dict[str, Any]]] = {c.index: [] for c in matrix.columns}
    for row in matrix.rows():
        by_column[row.prompt_idx].append(_line(row.test, ids[row.test_idx]))
    suites = []
    for column, suite_name in zip(matrix.columns, names, strict=True):
        provider = mapped[position[id(column.provider)]]
        meta = _meta(matrix, column, provider, suites_dir, env, delay, timeout)
        lines = tuple(by_column[column.index])
        suites.append(ImportedSuite(suite_name, meta, lines, column, provider))
    types = [a for t in matrix.tests for a in _flatten(t.assertions)]
    unsupported = _unsupported_assertions(types)
    warnings += unsupported
    rows = _unsupported_rows(matrix)
    warnings += rows
    warnings += _stored_outputs(matrix)
    needs_judge = any(_judged(a) for a in types)
    agents = {m.agent_name: plain_data(m.agent) for m in mapped if m.agent is not None}
    return ImportPlan(
        matrix=matrix,
        suites=tuple(suites),
        agents=agents,
        providers=mapped,
        warnings=tuple(warnings),
        unsupported_assertions=tuple(unsupported),
        unsupported_rows=tuple(rows),
        needs_judge=needs_judge,
        suites_dir=suites_dir,
    )


def suite_names(matrix: Matrix, name: str | None = None) -> list[str]:
    """A suite name per column: the base, with the prompt and the provider when there are many."""
    base = _slug(name) if name else ""
    if not base:
        described = _slug(matrix.description or "", BASE_LENGTH)
        base = described or _slug(matrix.base_dir.name) or "promptfoo"
    prompts = {c.prompt.index for c in matrix.columns}
    providers = {c.provider.index for c in matrix.columns}
    names: list[str] = []
    for column in matrix.columns:
        parts = [base]
        if len(prompts) > 1:
            parts.append(_slug(column.prompt.label) or f"prompt-{column.prompt.index}")
        if len(providers) > 1:
            parts.append(_slug(column.provider.key) or f"provider-{column.provider.index}")
        names.append(unique_name("-".join(parts), names))
    return names


def _meta(
    matrix: Matrix,
    column: Column,
    provider: MappedProvider,
    suites_dir: Path,
    env: Mapping[str, str],
    delay: float,
    timeout: float | None,
) -> dict[str, Any]:
    prompt = column.prompt
    meta: dict[str, Any] = {"compat": "promptfoo"}
    description = matrix.description or f"promptfoo config {matrix.path.name}"
    if len(matrix.columns) > 1:
        description = f"{description}: {prompt.label} by {provider.key}"
    meta["description"] = description
    if provider.agent is not None:
        meta["agent"] = provider.agent_name
    meta["prompt_template"] = prompt.raw
    if timeout is not None:
        meta["timeout_seconds"] = timeout / 1000
    shown_prompt: dict[str, Any] = {"label": prompt.label}
    if prompt.id is not None:
        shown_prompt["id"] = prompt.id
    if prompt.config is not None:
        shown_prompt["config"] = dict(prompt.config)
    if prompt.kind != "template":
        shown_prompt["kind"] = prompt.kind
        shown_prompt["function"] = prompt.function
    ref = column.provider
    shown_provider: dict[str, Any] = {"id": ref.id}
    if ref.label is not None:
        shown_provider["label"] = ref.label
    if isinstance(ref.config, Mapping):
        shown_provider["config"] = dict(ref.config)
    if ref.transform is not None:
        shown_provider["transform"] = ref.transform
    own_delay = delay if provider.delay is None else float(provider.delay)
    if own_delay:
        shown_provider["delay"] = own_delay
    own_env = ref.options.get("env") if ref.options is not None else None
    if isinstance(own_env, Mapping) and own_env:
        shown_provider["env"] = {k: v for k, v in own_env.items() if not _SECRET.search(str(k))}
    if provider.problem is not None:
        shown_provider["problem"] = provider.problem
    source: dict[str, Any] = {
        "config": _relative(matrix.path, suites_dir),
        "base_dir": _relative(matrix.base_dir, suites_dir),
        "prompt_idx": column.index,
        "prompt": shown_prompt,
        "provider": shown_provider,
    }
    if env:
        source["env"] = dict(env)
    if matrix.declared_default is not None:
        source["default_test"] = plain_data(matrix.declared_default)
        source["default_applied"] = plain_data(dict(matrix.default_test))
    if matrix.filters:
        source["nunjucks_filters"] = dict(matrix.filters)
    meta["promptfoo"] = source
    return meta


def _line(test: Any, line_id: str) -> dict[str, Any]:
    """A test as a suite line: its prepared form, with promptfoo's key names."""
    prepared = prepared_test(test)
    line: dict[str, Any] = {"id": line_id, "testIdx": test.index}
    if test.repeat_index:
        line["repeatIndex"] = test.repeat_index
    line.update(prepared)
    options = dict(prepared["options"])
    if test.prefix:
        options["prefix"] = test.prefix
    if test.suffix:
        options["suffix"] = test.suffix
    line["options"] = options
    if test.provider is not None:
        line["provider"] = test.provider
    if test.assert_scoring_function is not None:
        line["assertScoringFunction"] = test.assert_scoring_function
    for key in ("options", "metadata"):
        if not line[key]:
            del line[key]
    return line


def _line_ids(matrix: Matrix) -> dict[int, str]:
    """Each test's line id: its description's slug when no other test has it, else ``test-N``.

    The same test has the same id in every column, so suites of one config line up.
    """
    slugs = {t.index: _slug(t.description or "") for t in matrix.tests}
    counts: dict[str, int] = {}
    for slug in slugs.values():
        counts[slug] = counts.get(slug, 0) + 1
    ids = {}
    for index, slug in slugs.items():
        good = slug and counts[slug] == 1 and not re.fullmatch(r"test-\d+", slug)
        ids[index] = slug if good else f"test-{index}"
    return ids


def _env(matrix: Matrix) -> tuple[dict[str, str], list[str]]:
    kept, held = {}, []
    for key, value in config_env(matrix.extras).items():
        if _SECRET.search(key):
            held.append(key)
        else:
            kept[key] = value
    return kept, held


def _flatten(assertions: Sequence[Assertion]) -> list[Assertion]:
    out = []
    for a in assertions:
        out.append(a)
        if a.children:
            out.extend(_flatten(a.children))
    return out


def _judged(assertion: Assertion) -> bool:
    mapped = map_assertion(assertion)
    return mapped.grader is not None and mapped.grader.type in JUDGED


def _unsupported_rows(matrix: Matrix) -> list[str]:
    """One warning per reason a row cannot run, with how many rows it stops."""
    found: dict[str, int] = {}
    for row in matrix.rows():
        reason = unsupported_reason(
            test_provider=row.test.provider,
        )
        if reason is not None:
            found[reason] = found.get(reason, 0) + 1
    return [
        f"unsupported: {reason} ({n} row{'s' if n != 1 else ''}; they will be ERRORs)"
        for reason, n in found.items()
    ]


def _stored_outputs(matrix: Matrix) -> list[str]:
    """A warning for each test that stores its output for later rows (``storeOutputAs``).

    promptfoo runs such an eval one row at a time and hands each stored output to every later
    row, of every column, as a var; imported suites run each line on its own, so a line that
    reads a stored output renders without it.
    """
    return [
        f"{test.path}:{test.line}: options.storeOutputAs '{name}': imported suites run each "
        "row on its own, so the later rows that read it do not get it (their verdicts may "
        "differ from promptfoo's); `coalmine eval run --promptfoo` runs the config as "
        "promptfoo does, one row at a time"
        for test in matrix.tests
        if isinstance(name := test.options.get("storeOutputAs"), str) and name
    ]


def _unsupported_assertions(assertions: Sequence[Assertion]) -> list[str]:
    """One warning per assertion type coalmine cannot grade, with how many use it."""
    found: dict[str, list[int]] = {}
    for a in assertions:
        mapped = map_assertion(a)
        if mapped.runtime == "unsupported":
            found.setdefault(mapped.problem or a.type, []).append(1)
    return [
        f"assertion {problem} ({len(uses)} use{'s' if len(uses) != 1 else ''}; "
        "those rows will be ERRORs)"
        for problem, uses in found.items()
    ]


def _rename_taken(
    mapped: Sequence[MappedProvider], existing: Mapping[str, Any]
) -> tuple[MappedProvider, ...]:
    """Agents named like one coalmine.yaml already has with another entry get a new name."""
    taken = set(existing) | {m.agent_name for m in mapped}
    out = []
    for m in mapped:
        if m.agent is not None and m.agent_name in existing:
            if plain_data(existing[m.agent_name]) != plain_data(m.agent):
                new = unique_name(m.agent_name, taken)
                taken.add(new)
                m = replace(m, agent_name=new)
        out.append(m)
    return tuple(out)


def plain_data(value: Any) -> Any:
    """Mappings and sequences as the dicts and lists YAML writes."""
    if isinstance(value, Mapping):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_data(v) for v in value]
    return value


def _slug(text: str, length: int = SLUG_LENGTH) -> str:
    """``text`` as lowercase words joined by ``-``, cut at a word's end to ``length``."""
    slug = _SLUG.sub("-", text.lower()).strip("-")
    if len(slug) <= length:
        return slug
    cut = slug[: length + 1].rsplit("-", 1)[0] if "-" in slug[:length] else slug[:length]
    return cut.rstrip("-")


def _relative(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


class _Dumper(yaml.SafeDumper):
    """Block style, multi-line strings as ``|`` blocks (prompts stay readable)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and value == value.rstrip(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    """YAML in block style, multi-line strings as ``|`` blocks."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


# --- coalmine.yaml -------------------------------------------------------------------------------

_TOP_KEY = re.compile(r"^[^\s#][^:]*:")


def add_agents(text: str | None, agents: Mapping[str, Mapping[str, Any]]) -> str | None:
    """coalmine.yaml's text with ``agents`` added under ``agents:`` (None when nothing changes).

    The file's other lines (comments, order, quoting) are kept: the new entries are inserted at
    the end of the ``agents:`` block, indented as its entries are, or an ``agents:`` block is
    appended. An agent already there under the same name is left alone.

    Raises:
        ConfigError: the file is not a YAML mapping, or the result would not read back as it
            should (then the agents are to be added by hand).
    """
    source = text or ""
    try:
        data = safe_load(source)
    except yaml.YAMLError as exc:
        raise ConfigError(f"coalmine.yaml is not valid YAML: {exc}") from None
    if data is None:  # empty, or comments only
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("coalmine.yaml must be a mapping to add agents to it")
    have = data.get("agents") or {}
    if not isinstance(have, dict):
        raise ConfigError("coalmine.yaml's 'agents' must be a mapping to add agents to it")
    new = {k: dict(v) for k, v in agents.items() if k not in have}
    if not new:
        return None
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start = next((i for i, ln in enumerate(lines) if re.match(r"agents\s*:", ln)), None)
    if start is None or "agents" not in data or not have:
        if start is not None:  # "agents:" with nothing (or {}) under it: replace it
            end = _block_end(lines, start)
            lines[start:end] = []
        block = dump_yaml({"agents": new})
        result = "".join(lines) + ("\n" if lines and lines[-1].strip() else "") + block
    else:
        end = _block_end(lines, start)
        indent = _child_indent(lines, start, end)
        entries = dump_yaml(new)
        shown = "".join(indent + ln if ln.strip() else ln for ln in entries.splitlines(True))
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
            end -= 1  # blank lines and the next key's comments stay before the next key
        lines[end:end] = [shown]
        result = "".join(lines)
    try:
        check = safe_load(result)
    except yaml.YAMLError:
        check = None  # e.g. a flow-style "agents: {…}" that block entries cannot extend
    if not isinstance(check, dict) or any(
        plain_data(check.get("agents", {}).get(k)) != plain_data(v) for k, v in new.items()
    ):
        raise ConfigError("could not add the agents to coalmine.yaml: add them by hand")
    return result


def _block_end(lines: Sequence[str], start: int) -> int:
    for i in range(start + 1, len(lines)):
        if _TOP_KEY.match(lines[i]):
            return i
    return len(lines)


def _child_indent(lines: Sequence[str], start: int, end: int) -> str:
    for line in lines[start + 1 : end]:
        if line.strip() and not line.lstrip().startswith("#"):
            return line[: len(line) - len(line.lstrip())]
    return "  "
