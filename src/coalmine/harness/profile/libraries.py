"""The library table (``libraries.yaml``): which imports, dependencies and files show which kinds.

The table is data so that adding a library is adding an entry (see the file's header for its
form). :func:`table` loads and checks it once; the :class:`Table` answers the detector's
questions in the most-specific-match-wins way the header describes:

- :meth:`Table.python` — kinds of one import statement (its module and imported names);
- :meth:`Table.pypi`, :meth:`Table.npm`, :meth:`Table.go` — kinds of a dependency or import;
- :attr:`Table.files` — kinds a file name shows by itself;
- :attr:`Table.terms` — per language, kind → regex of code words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field

from coalmine._source import safe_load

__all__ = ["Library", "Table", "table"]

Kinds = frozenset[str]
_NORMALISE = re.compile(r"[-_.]+")


class Library(BaseModel):
    """One entry of ``libraries.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kinds: tuple[str, ...] = Field(min_length=1)
    python: tuple[str, ...] = ()
    pypi: tuple[str, ...] = ()
    npm: tuple[str, ...] = ()
    go: tuple[str, ...] = ()
    files: tuple[str, ...] = ()


class _Terms(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    python: tuple[str, ...] = ()
    js: tuple[str, ...] = ()


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    libraries: tuple[Library, ...]
    terms: dict[str, _Terms] = {}


@dataclass
class _PythonRule:
    bare: Kinds = frozenset()
    named: dict[str, Kinds] = field(default_factory=dict)


@dataclass
class Table:
    """The compiled table."""

    libraries: tuple[Library, ...]
    python_rules: dict[str, _PythonRule] = field(default_factory=dict)
    python_tops: frozenset[str] = frozenset()
    """First parts of every Python module in the table: other imports are never looked up."""
    pypi_exact: dict[str, Kinds] = field(default_factory=dict)
    pypi_prefixes: list[tuple[str, Kinds]] = field(default_factory=list)
    npm_exact: dict[str, Kinds] = field(default_factory=dict)
    npm_prefixes: list[tuple[str, Kinds]] = field(default_factory=list)
    go_prefixes: list[tuple[str, Kinds]] = field(default_factory=list)
    files: dict[str, Kinds] = field(default_factory=dict)
    terms: dict[str, dict[str, str]] = field(default_factory=dict)
    """``"python"`` / ``"js"`` → kind → one regex of its words."""
    go_hosts: frozenset[str] = frozenset()
    """First segments of the Go prefixes: an import outside them is never looked up."""
    _cache: dict[tuple[str, str], Kinds] = field(default_factory=dict)

    def python(self, module: str, names: Iterable[str] = ()) -> Kinds:
        """The kinds of ``from module import names`` (or ``import module`` when no names).

        Each name is looked up on its own, from the longest module prefix down; at one prefix
        a rule for that name beats the module's bare rule. A name may be a submodule:
        ``from google import genai`` is ``google.genai``.
        """
        parts = module.split(".")
        if parts[0] not in self.python_tops:
            return frozenset()
        wanted = list(names) or [""]
        found: set[str] = set()
        for name in wanted:
            path = [*parts, name] if name else parts
            for end in range(len(path), 0, -1):
                rule = self.python_rules.get(".".join(path[:end]))
                if rule is None:
                    continue
                kinds = rule.named.get(name) if name and end == len(parts) else None
                if kinds is None:
                    kinds = rule.bare or None
                if kinds is not None:
                    found |= kinds
                    break
        return frozenset(found)

    def pypi(self, name: str) -> Kinds:
        """The kinds of a Python distribution name (PEP 503 normalised)."""
        name = _NORMALISE.sub("-", name).lower()
        exact = self.pypi_exact.get(name)
        if exact is not None:
            return exact
        return next((k for p, k in self.pypi_prefixes if name.startswith(p)), frozenset())

    def npm(self, specifier: str) -> Kinds:
        """The kinds of an npm import specifier or dependency name (``pkg/sub`` too)."""
        key = ("npm", specifier)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._npm(specifier)
        return found

    def _npm(self, specifier: str) -> Kinds:
        if specifier.startswith((".", "/", "node:", "#", "~", "@/")):
            return frozenset()
        parts = specifier.split("/")
        for end in range(len(parts), 0, -1):
            exact = self.npm_exact.get("/".join(parts[:end]))
            if exact is not None:
                return exact
        return next((k for p, k in self.npm_prefixes if specifier.startswith(p)), frozenset())

    def go(self, path: str) -> Kinds:
        """The kinds of a Go import path or module path."""
        if path.split("/", 1)[0] not in self.go_hosts:
            return frozenset()  # the standard library ("fmt") and hosts the table never names
        key = ("go", path)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._go(path)
        return found

    def _go(self, path: str) -> Kinds:
        for prefix, kinds in self.go_prefixes:
            if path == prefix.rstrip("/") or path.startswith(
                prefix if prefix.endswith("/") else prefix + "/"
            ):
                return kinds
        return frozenset()


def _union(into: dict[str, Kinds], key: str, kinds: Kinds) -> None:
    into[key] = into.get(key, frozenset()) | kinds


def compile_table(data: object) -> Table:
    """Check and compile the table's data (the parsed YAML).

    Raises:
        pydantic.ValidationError: an entry of the wrong shape.
        ValueError: a term that is not a valid regex.
    """
    parsed = _File.model_validate(data)
    out = Table(parsed.libraries)
    tops: set[str] = set()
    pypi_prefixes: dict[str, Kinds] = {}
    npm_prefixes: dict[str, Kinds] = {}
    go_prefixes: dict[str, Kinds] = {}
    for library in parsed.libraries:
        kinds = frozenset(library.kinds)
        for spec in library.python:
            module, _, names = spec.partition(":")
            tops.add(module.split(".")[0])
            rule = out.python_rules.setdefault(module, _PythonRule())
            if names:
                for name in names.split(","):
                    _union(rule.named, name.strip(), kinds)
            else:
                rule.bare |= kinds
        for name in library.pypi:
            if name.endswith("*"):
                _union(pypi_prefixes, _NORMALISE.sub("-", name[:-1]).lower(), kinds)
            else:
                _union(out.pypi_exact, _NORMALISE.sub("-", name).lower(), kinds)
        for name in library.npm:
            _union(npm_prefixes if name.endswith("/") else out.npm_exact, name, kinds)
        for path in library.go:
            _union(go_prefixes, path, kinds)
        for name in library.files:
            _union(out.files, name, kinds)
    out.python_tops = frozenset(tops)
    out.pypi_prefixes = sorted(pypi_prefixes.items(), key=lambda i: -len(i[0]))
    out.npm_prefixes = sorted(npm_prefixes.items(), key=lambda i: -len(i[0]))
    out.go_prefixes = sorted(go_prefixes.items(), key=lambda i: -len(i[0]))
    out.go_hosts = frozenset(p.split("/", 1)[0] for p in go_prefixes)
    for kind, terms in parsed.terms.items():
        for language in ("python", "js"):
            words = getattr(terms, language)
            if words:
                pattern = "|".join(words)
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"terms of {kind} ({language}): {exc}") from None
                out.terms.setdefault(language, {})[kind] = pattern
    return out


@cache
def table() -> Table:
    """The built-in table, loaded once."""
    text = resources.files(__package__).joinpath("libraries.yaml").read_text(encoding="utf-8")
    try:
        return compile_table(safe_load(text))
    except (yaml.YAMLError, ValueError) as exc:  # pragma: no cover - the shipped file is tested
        raise RuntimeError(f"coalmine's libraries.yaml is broken: {exc}") from exc
