"""Read a promptfoo config file (``promptfooconfig.yaml``) the way promptfoo 0.121.20 reads it.

The file is YAML or JSON (both parsed as YAML 1.2, as promptfoo does). On the way in, as in
promptfoo's ``readConfig``: ``$ref`` pointers are resolved, ``{{ env.NAME }}`` templates are
substituted (the config's ``env`` over the environment given), ``targets`` becomes
``providers``, and a config without ``prompts`` gets the single prompt ``{{prompt}}``.

Top-level keys fall in three groups. Applied: ``description``, ``prompts``, ``providers``
(``targets``), ``tests``, ``scenarios``, ``defaultTest``, ``metadata``, ``env``,
``evaluateOptions`` / ``commandLineOptions`` (their ``repeat`` and ``filterRange``). Kept as data
for the caller, no warning: ``tags``, ``outputPath``, ``derivedMetrics``, ``sharing``,
``writeLatestResults``. ``nunjucksFilters`` are found as promptfoo's ``readFilters`` finds
them (:func:`read_filters`); the JavaScript they hold is run when a template uses them. Anything
else (``redteam``, ``extensions``,
``tracing``, a typo) becomes a warning ``file:line: key 'x' is not supported: ignored``, never a
silent drop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalmine.promptfoo.matrix.code import ConfigCode
from coalmine.promptfoo.matrix.filerefs import dereference, render_env
from coalmine.promptfoo.matrix.sources import (
    Doc,
    Problems,
    ReadError,
    glob_files,
    load_yaml_text,
    read_text,
    require_inside,
)

__all__ = ["CONFIG_FILE", "RawConfig", "js_falsy", "load_config", "read_filters"]

CONFIG_FILE = "promptfooconfig.yaml"
"""The file promptfoo reads when it is given none."""

_APPLIED = {
    "description",
    "prompts",
    "providers",
    "targets",
    "tests",
    "scenarios",
    "defaultTest",
    "metadata",
    "env",
    "evaluateOptions",
    "commandLineOptions",
    "nunjucksFilters",
}
_KEPT = {"tags", "outputPath", "derivedMetrics", "sharing", "writeLatestResults"}
_EVALUATE_OPTIONS = {
    "cache",
    "delay",
    "interactiveProviders",
    "maxConcurrency",
    "repeat",
    "showProgressBar",
    "timeoutMs",
    "maxEvalTimeMs",
    "silent",
    "filterRange",
}
"""``evaluateOptions`` keys that are applied (``repeat``, ``filterRange``) or do not change rows."""
_COMMAND_LINE_OPTIONS = {
    "description",
    "output",
    "maxConcurrency",
    "repeat",
    "delay",
    "verbose",
    "tableCellMaxLength",
    "write",
    "cache",
    "table",
    "share",
    "noShare",
    "progressBar",
    "watch",
    "filterRange",
    "envPath",
    "tags",
}
"""``commandLineOptions`` keys that are applied or do not change rows."""


@dataclass(frozen=True)
class RawConfig:
    """A promptfoo config as promptfoo holds it once read, before prompts and tests are loaded."""

    path: Path
    base_dir: Path
    """The config's folder: every relative ``file://`` path starts here."""
    data: dict[str, Any]
    doc: Doc
    """The file as parsed (for the line of each key)."""
    code: ConfigCode | None = None
    """Runs the config's test generators (none: they are errors)."""

    def line_of(self, *loc: str | int) -> int | None:
        """The line of a location in the config file (or of its nearest parent)."""
        return self.doc.line_of(loc)


def load_config(
    path: Path, *, problems: Problems, environ: Mapping[str, str] | None = None
) -> RawConfig | None:
    """Read ``path``; ``None`` when it cannot be read at all (the reason is in ``problems``).

    Args:
        path: The config file (``.yaml``, ``.yml`` or ``.json``).
        problems: Collects errors and warnings, each at its file and line.
        environ: The environment ``{{ env.NAME }}`` reads (none by default: this is pure).
    """
    if path.suffix not in (".yaml", ".yml", ".json"):
        message = f"unsupported config format {path.suffix!r}: only YAML and JSON configs are read"
        problems.error(message + " (a JavaScript config is code)", path=path)
        return None
    try:
        doc = load_yaml_text(read_text(path), path=path)
    except ReadError as exc:
        problems.error(exc.message, path=path, line=exc.line)
        return None
    data = {} if doc.data is None else doc.data
    if not isinstance(data, dict):
        problems.error("a promptfoo config must be a mapping of keys", path=path, line=1)
        return None
    config = RawConfig(path, path.parent, data, doc)
    referenced = _referenced_keys(data)
    try:
        data = dereference(data, skip=_schema_locations(data))
    except ReadError as exc:
        problems.error(exc.message, path=path, line=doc.line_of(exc.loc or ()))
    data = _render_env(data, dict(environ or {}), config, problems)
    _check_keys(data, config, problems, referenced=referenced)
    if "targets" in data:
        if "providers" in data:
            problems.warn(
                "both 'targets' and 'providers' are given: promptfoo uses 'targets'",
                path=path,
                line=config.line_of("providers"),
            )
        data["providers"] = data.pop("targets")
    if js_falsy(data.get("prompts")):
        if not _has_prompt_var(data.get("tests")):
            problems.warn(
                "no 'prompts': promptfoo uses the single prompt '{{prompt}}'", path=path, line=1
            )
        data["prompts"] = ["{{prompt}}"]
    return RawConfig(path, path.parent, data, doc)


def _schema_locations(data: dict[str, Any]) -> frozenset[tuple[str | int, ...]]:
    """Where promptfoo keeps ``$ref`` unresolved: the JSON schemas of providers' tools."""
    found: set[tuple[str | int, ...]] = set()
    providers = data.get("providers")
    if not isinstance(providers, list):
        return frozenset()
    for i, provider in enumerate(providers):
        loc: tuple[str | int, ...] = ("providers", i)
        if isinstance(provider, dict) and "config" not in provider and len(provider) == 1:
            key = next(iter(provider))
            provider, loc = provider[key], (*loc, key)
        config = provider.get("config") if isinstance(provider, dict) else None
        if not isinstance(config, dict):
            continue
        for j, _ in enumerate(config.get("functions") or []):
            found.add((*loc, "config", "functions", j, "parameters"))
        for j, _ in enumerate(config.get("tools") or []):
            found.add((*loc, "config", "tools", j, "function", "parameters"))
    return frozenset(found)


def _render_env(
    data: dict[str, Any], environ: dict[str, str], config: RawConfig, problems: Problems
) -> dict[str, Any]:
    """Render env templates in two passes, as promptfoo: the config's ``env``, then the rest."""
    unrendered: list[str] = []
    own = data.get("env")
    overrides: dict[str, str] = {}
    if isinstance(own, dict):
        rendered = render_env(own, environ, unrendered=unrendered)
        overrides = {str(k): _env_text(v) for k, v in rendered.items() if v is not None}
    result = render_env(data, {**environ, **overrides}, unrendered=unrendered)
    for template in dict.fromkeys(unrendered):
        problems.warn(
            f"{template} uses a Nunjucks filter only promptfoo can apply: left as written",
            path=config.path,
        )
    assert isinstance(result, dict)
    return result


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _referenced_keys(data: Any) -> set[str]:
    """Top-level keys some ``$ref`` points into (``assertionTemplates`` …): used, not unknown."""
    if isinstance(data, list):
        return set().union(*(_referenced_keys(item) for item in data))
    if not isinstance(data, dict):
        return set()
    found = set().union(*(_referenced_keys(v) for v in data.values()))
    ref = data.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        found.add(ref[2:].split("/")[0].replace("~1", "/").replace("~0", "~"))
    return found


def _check_keys(
    data: dict[str, Any], config: RawConfig, problems: Problems, *, referenced: set[str]
) -> None:
    for key in data:
        if key not in _APPLIED | _KEPT | referenced:
            problems.warn(
                f"key {key!r} is not supported: ignored", path=config.path, line=config.line_of(key)
            )
    for section, allowed in (
        ("evaluateOptions", _EVALUATE_OPTIONS),
        ("commandLineOptions", _COMMAND_LINE_OPTIONS),
    ):
        options = data.get(section)
        if not isinstance(options, dict):
            continue
        for key in options:
            if key not in allowed:
                problems.warn(
                    f"key '{section}.{key}' is not supported: ignored",
                    path=config.path,
                    line=config.line_of(section, key),
                )


def read_filters(config: RawConfig, problems: Problems) -> dict[str, str]:
    """``nunjucksFilters``: each filter's file, relative to the config's folder.

    As promptfoo's ``readFilters``, a path is a glob joined to the config's folder as written
    (so a ``file://`` path matches nothing) and, of several matches, the last is the filter. A
    filter whose path matches no file is not defined: a template that uses it fails to render,
    and a warning says so.
    """
    given = config.data.get("nunjucksFilters")
    if given is None:
        return {}
    if not isinstance(given, dict):
        problems.error(
            "nunjucksFilters must map filter names to JavaScript files",
            path=config.path,
            line=config.line_of("nunjucksFilters"),
        )
        return {}
    found: dict[str, str] = {}
    for name, pattern in given.items():
        line = config.line_of("nunjucksFilters", name)
        if not isinstance(pattern, str):
            problems.error(
                f"nunjucksFilters.{name} must be a path, not {pattern!r}",
                path=config.path,
                line=line,
            )
            continue
        # path.join(base, pattern): an absolute pattern is read inside the config's folder too
        matches = glob_files(pattern.lstrip("/"), root=config.base_dir)
        if not matches:
            hint = " (promptfoo reads it as a path: write it without file://)"
            problems.warn(
                f"nunjucksFilters.{name}: {pattern} matches no file, so promptfoo defines no "
                f"'{name}' filter and a template that uses it fails to render"
                + (hint if pattern.startswith("file://") else ""),
                path=config.path,
                line=line,
            )
            continue
        try:
            require_inside(config.base_dir / matches[-1])
        except ReadError as exc:
            problems.error(f"nunjucksFilters.{name}: {exc.message}", path=config.path, line=line)
            continue
        found[str(name)] = matches[-1]
    return found


def js_falsy(value: Any) -> bool:
    """Whether JavaScript treats ``value`` as false (``[]`` and ``{}`` are true there)."""
    if isinstance(value, bool | int | float):
        return not value
    return value is None or value == ""


def _has_prompt_var(tests: Any) -> bool:
    """Whether a test sets ``prompt`` (promptfoo's check before "Expected top-level prompts")."""
    if tests is None or isinstance(tests, str):
        return True
    if not isinstance(tests, list):
        return False
    return any(
        isinstance(t, dict) and isinstance(t.get("vars"), dict) and "prompt" in t["vars"]
        for t in tests
    )
