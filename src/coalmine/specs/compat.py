"""Suites that keep another tool's meaning: ``compat: promptfoo`` (issue 9).

``coalmine import promptfoo`` writes one suite per promptfoo column (a prompt run by a
provider). Its ``<suite>.yaml`` says ``compat: promptfoo``, holds the prompt as its
``prompt_template`` and, under ``promptfoo:``, what promptfoo's evaluation reads of the prompt
and the provider (:class:`PromptfooSuite`). Each line is one promptfoo test as promptfoo holds
it once prepared (``defaultTest`` merged, one combination of its vars): :class:`PromptfooCase`,
with promptfoo's own key names (``assert``, ``providerOutput``, ``testIdx``) so a promptfoo user
reads it as what they wrote. The runner renders the prompt with Nunjucks and grades and scores
each line by promptfoo's rules (:mod:`coalmine.promptfoo.suite`).

The models here check the shape only; what an assertion means is promptfoo's (the runner
validates each one when it plans the run, so a broken one is a bad line at its file and line).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PromptfooCase", "PromptfooPrompt", "PromptfooProvider", "PromptfooSuite"]

Compat = Literal["promptfoo"]


class PromptfooPrompt(BaseModel):
    """The column's prompt, as promptfoo lists it (its text is the suite's ``prompt_template``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    id: str | None = None
    config: dict[str, Any] | None = None
    """The prompt's ``config`` (what a transform sees as ``context.prompt.config``)."""
    kind: Literal["template", "function", "exec"] = "template"
    """``function``: a Python or JavaScript prompt function makes the prompt; ``exec``: a
    command's output does (the suite's ``prompt_template`` is then the file's text)."""
    function: str | None = None
    """The prompt function (``file.py:name``, ``file.js`` …) or the command, relative to
    ``base_dir``."""


class PromptfooProvider(BaseModel):
    """The column's provider, as promptfoo names it; the suite's ``agent`` runs it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    label: str | None = None
    config: dict[str, Any] | None = None
    transform: Any = None
    """Code applied to each output: JavaScript (text or ``file://``, run in Node.js) or a
    ``file://`` Python file."""
    delay: float | None = Field(None, ge=0)
    """Milliseconds waited after each answer."""
    env: dict[str, Any] | None = None
    """The provider's own ``env`` (given to a script in its options; names that look like
    secrets are not copied)."""
    problem: str | None = None
    """Why no coalmine agent runs it (then the suite has no agent and its rows are ERRORs)."""


class PromptfooSuite(BaseModel):
    """``promptfoo:`` in a compat suite's YAML: where it came from, and its column."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    config: str
    """The promptfoo config it was imported from (relative to the suite's folder)."""
    base_dir: str
    """Where the tests' ``file://`` paths start: the promptfoo config's folder, relative to the
    suite's folder."""
    prompt_idx: int = Field(0, ge=0)
    """promptfoo's ``promptIdx`` of the column."""
    prompt: PromptfooPrompt
    provider: PromptfooProvider
    env: dict[str, str] = {}
    """What ``{{ env.NAME }}`` reads besides the environment (the config's ``env:``)."""
    default_test: Any = None
    """The config's ``defaultTest`` as written (a mapping, or its ``file://`` path), for export:
    the lines hold it merged, and an exported config gives it back as it came."""
    default_applied: dict[str, Any] | None = None
    """That ``defaultTest`` as promptfoo applied it to each line (export takes it out again)."""
    nunjucks_filters: dict[str, str] = {}
    """The config's ``nunjucksFilters``: each filter's JavaScript file, relative to
    ``base_dir``."""


class PromptfooCase(BaseModel):
    """One line of a compat suite: a promptfoo test, prepared."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")
    """Stable and unique within the suite (coalmine's; promptfoo numbers tests instead)."""
    test_idx: int = Field(0, ge=0, alias="testIdx")
    """promptfoo's ``testIdx``."""
    repeat_index: int = Field(0, ge=0, alias="repeatIndex")
    """promptfoo's ``repeatIndex`` (a test repeated by ``evaluateOptions.repeat``)."""
    description: str | None = None
    vars: dict[str, Any] = {}
    """As written: templates rendered and ``file://`` values read when the line runs."""
    assertions: list[dict[str, Any]] = Field([], alias="assert")
    threshold: float | None = None
    options: dict[str, Any] = {}
    """``transform``, ``prefix``, ``suffix``, ``runSerially`` …"""
    provider_output: Any = Field(None, alias="providerOutput")
    """A fixed output: the provider is not called."""
    metadata: dict[str, Any] = {}
    provider: Any = None
    """A provider of the test's own (not run by coalmine: the row is an ERROR saying so)."""
    assert_scoring_function: Any = Field(None, alias="assertScoringFunction")
    """promptfoo's custom scoring function (``file://x.js[:name]`` or ``file://x.py[:name]``):
    its answer replaces the row's result."""
    tags: list[str] = []
    """coalmine's tags, for ``eval run tag:NAME``."""

    @property
    def template_prefix(self) -> str:
        """``options.prefix``, put before the prompt."""
        return _text(self.options.get("prefix"))

    @property
    def template_suffix(self) -> str:
        """``options.suffix``, put after the prompt."""
        return _text(self.options.get("suffix"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
