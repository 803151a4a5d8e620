"""What promptfoo's evaluation reads of a matrix row, for the runner and the importer alike.

``eval run --promptfoo`` evaluates rows straight from the config's matrix; ``import promptfoo``
writes the same things into suite files. Both take them from here, so an
imported suite means what the config means:

- :func:`prepared_test`: a test as promptfoo holds it once prepared (what its result file
  writes as ``testCase`` and what ``context.test`` of JavaScript is);
- :func:`config_env`: the config's ``env:``, laid over the process environment;
- :func:`default_delay_ms` and :func:`timeout_ms`: ``evaluateOptions`` that apply to every row;
- :func:`prompt_code`: what of a row's prompt runs code (a prompt function, the filters);
- :func:`unsupported_reason`: why coalmine cannot run a row (it is then an ERROR saying so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coalmine.promptfoo.matrix.expand import MatrixTest
from coalmine.promptfoo.matrix.prompt_refs import PromptKind, PromptRef

__all__ = [
    "PromptCode",
    "config_env",
    "default_delay_ms",
    "prepared_test",
    "prompt_code",
    "as_test_case",
    "timeout_ms",
    "unsupported_reason",
]


def prepared_test(test: MatrixTest) -> dict[str, Any]:
    """The test as promptfoo holds it once prepared (defaultTest merged, one var combination)."""
    return as_test_case(
        description=test.description,
        variables=test.vars,
        provider_output=test.provider_output,
        threshold=test.threshold,
        assertions=[a.model_dump(by_alias=True, exclude_unset=True) for a in test.assertions],
        options=test.options,
        metadata=test.metadata,
    )


def as_test_case(
    *,
    description: str | None,
    variables: Mapping[str, Any],
    provider_output: Any,
    threshold: float | None,
    assertions: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any],
    metadata: Mapping[str, Any],
) -> dict[str, Any]:
    """A test in promptfoo's keys and order (``testCase`` of its result file)."""
    case: dict[str, Any] = {}
    if description is not None:
        case["description"] = description
    case["vars"] = dict(variables)
    if provider_output is not None:
        case["providerOutput"] = provider_output
    if threshold is not None:
        case["threshold"] = threshold
    case["assert"] = [dict(a) for a in assertions]
    case["options"] = dict(options)
    case["metadata"] = dict(metadata)
    return case


def config_env(extras: Mapping[str, Any]) -> dict[str, str]:
    """The config's ``env:`` as strings (promptfoo lays it over the process environment)."""
    own = extras.get("env")
    if not isinstance(own, Mapping):
        return {}
    out = {}
    for key, value in own.items():
        if value is not None:
            out[str(key)] = (
                ("true" if value else "false") if isinstance(value, bool) else str(value)
            )
    return out


def _number(extras: Mapping[str, Any], key: str) -> float | None:
    options = extras.get("evaluateOptions")
    value = options.get(key) if isinstance(options, Mapping) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def default_delay_ms(extras: Mapping[str, Any], environ: Mapping[str, str]) -> float:
    """Milliseconds waited after each answer of a provider that sets no ``delay``.

    ``evaluateOptions.delay``, else the environment's ``PROMPTFOO_DELAY_MS``, else 0.
    """
    delay = _number(extras, "delay")
    if delay is not None:
        return delay
    try:
        return float(environ.get("PROMPTFOO_DELAY_MS") or 0)
    except ValueError:
        return 0.0


def timeout_ms(extras: Mapping[str, Any]) -> float | None:
    """``evaluateOptions.timeoutMs`` when it is a positive number."""
    ms = _number(extras, "timeoutMs")
    return ms if ms is not None and ms > 0 else None


@dataclass(frozen=True, kw_only=True)
class PromptCode:
    """What of a row's prompt runs code: its kind, and the config's Nunjucks filters."""

    kind: PromptKind = "template"
    ref: str | None = None
    """A prompt function's ``file[:name]`` or an executable prompt's command, relative to the
    config's folder (``None`` for a template)."""
    config: Mapping[str, Any] | None = None
    """The prompt's ``config`` (what a prompt function sees as ``config``)."""
    filters: Mapping[str, str] = field(default_factory=dict)
    """``nunjucksFilters``: each filter's JavaScript file, relative to the config's folder."""


def prompt_code(prompt: PromptRef, filters: Mapping[str, str]) -> PromptCode:
    """The code of a matrix prompt (run by :mod:`coalmine.promptfoo.prompt_code`)."""
    return PromptCode(
        kind=prompt.kind, ref=prompt.function, config=prompt.config, filters=dict(filters)
    )


def unsupported_reason(*, test_provider: Any) -> str | None:
    """Why coalmine cannot run a row promptfoo would, or ``None``."""
    if test_provider is not None:
        return "a test with its own 'provider' (coalmine runs the config's providers)"
    return None
