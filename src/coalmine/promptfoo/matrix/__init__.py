"""A promptfoo config as the test matrix promptfoo 0.121.20 evaluates: tests × providers × prompts.

:func:`load_matrix` reads the config, its prompt, provider and test files, applies
``defaultTest`` and ``scenarios``, expands list vars and repeats, and numbers each test as
promptfoo's ``testIdx``. :meth:`Matrix.rows` yields the (test, prompt, provider) rows in
promptfoo's evaluation order, without the pairs a test's ``prompts:``/``providers:`` filter or a
provider's ``prompts:`` excludes. Nothing is rendered: templates and var values stay as written.

promptfoo's ``promptIdx`` numbers the result *columns*, one per (provider, prompt) pair a
provider runs, provider by provider (:attr:`Matrix.columns`, :attr:`Row.prompt_idx`).

Errors (a malformed file, a bad CSV row, a filter naming no prompt …) are all collected, each at
its file and line, and raised as one ``ConfigError``; warnings (what is ignored or differs from
promptfoo) come back in :attr:`Matrix.warnings` as ``file:line: message``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from coalmine._util.locations import root_for
from coalmine.promptfoo.matrix.code import ConfigCode
from coalmine.promptfoo.matrix.config import CONFIG_FILE, load_config, read_filters
from coalmine.promptfoo.matrix.expand import MatrixTest, build_tests
from coalmine.promptfoo.matrix.prompt_refs import PromptRef, read_prompts
from coalmine.promptfoo.matrix.provider_refs import ProviderRef, read_providers
from coalmine.promptfoo.matrix.rules import prompt_allowed, provider_allowed
from coalmine.promptfoo.matrix.sources import Problems, reading_inside

__all__ = ["Column", "Matrix", "MatrixTest", "PromptRef", "ProviderRef", "Row", "load_matrix"]


@dataclass(frozen=True)
class Column:
    """A (provider, prompt) pair a provider runs: promptfoo's ``promptIdx`` is its ``index``."""

    index: int
    provider: ProviderRef
    prompt: PromptRef


@dataclass(frozen=True)
class Row:
    """One evaluation: a test, on a prompt, by a provider."""

    test: MatrixTest
    prompt: PromptRef
    provider: ProviderRef
    prompt_idx: int
    """promptfoo's ``promptIdx`` (the column)."""

    @property
    def test_idx(self) -> int:
        """The test's ``testIdx``."""
        return self.test.index

    @property
    def template(self) -> str:
        """The template rendered for this row: the test's prefix, the prompt, its suffix."""
        return f"{self.test.prefix}{self.prompt.raw}{self.test.suffix}"


@dataclass(frozen=True, kw_only=True)
class Matrix:
    """Everything promptfoo would evaluate for a config, before any rendering."""

    path: Path
    base_dir: Path
    """The config's folder: relative ``file://`` paths (vars, providers) start here."""
    description: str | None
    prompts: tuple[PromptRef, ...]
    providers: tuple[ProviderRef, ...]
    columns: tuple[Column, ...]
    tests: tuple[MatrixTest, ...]
    default_test: Mapping[str, Any]
    """The ``defaultTest`` applied (raw)."""
    declared_default: Any = None
    """The config's ``defaultTest`` as written (a mapping or a ``file://`` path; ``None``)."""
    extras: Mapping[str, Any]
    """The config's other keys, for the caller: ``evaluateOptions``, ``env``, ``outputPath``,
    ``tags``, ``metadata``, ``derivedMetrics`` …"""
    filters: Mapping[str, str] = field(default_factory=dict)
    """``nunjucksFilters``: each filter's JavaScript file, relative to :attr:`base_dir`."""
    warnings: tuple[str, ...] = ()

    def rows(self) -> Iterator[Row]:
        """The rows in promptfoo's evaluation order: test, then provider, then prompt."""
        for test in self.tests:
            for provider in self.providers:
                if not provider_allowed(provider, test.provider_filter, base_dir=self.base_dir):
                    continue
                for column in self.columns:
                    if column.provider is provider and prompt_allowed(
                        column.prompt, test.prompt_filter
                    ):
                        yield Row(test, column.prompt, provider, column.index)


def load_matrix(
    path: Path | str = CONFIG_FILE,
    *,
    environ: Mapping[str, str] | None = None,
    root: Path | None = None,
    code: ConfigCode | None = None,
) -> Matrix:
    """Read a promptfoo config and everything it points at into a :class:`Matrix`.

    Args:
        path: The config file.
        environ: What ``{{ env.NAME }}`` in the config reads (nothing unless given).
        root: The project: the files the config names must stay inside it when the config
            is (else inside the config's own folder, as by default).
        code: Runs the config's test generators (without it, they are errors).

    Raises:
        ConfigError: every problem found, each with its file and line.
    """
    with reading_inside(root_for(Path(path), root=root or Path(path).parent)):
        return _load_matrix(Path(path), environ, code)


def _load_matrix(path: Path, environ: Mapping[str, str] | None, code: ConfigCode | None) -> Matrix:
    problems = Problems()
    config = load_config(path, problems=problems, environ=environ)
    if config is None:
        problems.raise_if_any()
        raise AssertionError("unreachable: load_config reported no problem")
    config = replace(config, code=code)
    prompts = read_prompts(config, problems)
    filters = read_filters(config, problems)
    providers = read_providers(config, problems)
    tests, default = build_tests(config, problems, prompts=prompts, providers=providers)
    problems.raise_if_any()
    columns = [
        (provider, prompt)
        for provider in providers
        for prompt in prompts
        if prompt_allowed(prompt, provider.prompts)
    ]
    data = config.data
    kept = {k: v for k, v in data.items() if k not in _APPLIED_HERE}
    return Matrix(
        path=config.path,
        base_dir=config.base_dir,
        description=data.get("description") if isinstance(data.get("description"), str) else None,
        prompts=prompts,
        providers=providers,
        columns=tuple(Column(i, pv, pr) for i, (pv, pr) in enumerate(columns)),
        tests=tuple(tests),
        default_test=default,
        declared_default=data.get("defaultTest"),
        extras=kept,
        filters=filters,
        warnings=tuple(str(w) for w in problems.warnings),
    )


_APPLIED_HERE = {
    "description", "prompts", "providers", "tests", "scenarios", "defaultTest", "nunjucksFilters",
}  # fmt: skip
