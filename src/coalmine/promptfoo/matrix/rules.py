"""promptfoo's rules for turning declared tests into evaluated ones (its evaluator's, exactly).

- ``defaultTest``: its vars are defaults (merged in **before** list expansion, so a list there
  expands too); its assertions come first (unless a test sets ``options.disableDefaultAsserts``);
  ``options`` and ``metadata`` merge key by key (the test wins); ``threshold``, ``prompts``,
  ``providers``, ``provider`` apply when the test has none. Its ``providerOutput`` and other keys
  reach only scenario tests, which start from a copy of the whole ``defaultTest``.
- The top-level ``metadata`` is every test's default metadata only when there is **no**
  ``defaultTest`` mapping (promptfoo's config merge then always sets ``defaultTest.metadata``).
- ``scenarios``: each ``config`` entry × each of the scenario's ``tests`` (in that order, after
  the plain tests), merged as ``defaultTest`` < entry < test; assertions entry's then test's;
  ``metadata.conversationId`` is ``__scenario_<n>__`` (n counts entries over all scenarios).
- Var expansion: a var whose value is a list **whose first item is a string** gives one test per
  item (cartesian product, the first var outermost); a list of numbers or objects stays one
  value. A ``file://`` value is a glob (relative to the config's folder): one test per file.
- ``repeat`` (``evaluateOptions`` / ``commandLineOptions`` / ``options.repeat``) repeats the
  whole expansion; every repetition and combination takes the next ``testIdx``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coalmine.promptfoo.matrix.prompt_refs import PromptRef
from coalmine.promptfoo.matrix.provider_refs import ProviderRef, provider_matches
from coalmine.promptfoo.matrix.sources import ReadError, glob_files, js_keys

__all__ = [
    "default_test",
    "merge_scenario_test",
    "parse_filter_range",
    "prepare_test",
    "prompt_allowed",
    "prompt_matches",
    "provider_allowed",
    "repeat_count",
    "spread",
    "var_combinations",
]


def spread(value: Any) -> dict[str, Any]:
    """JavaScript's ``{...value}``: a mapping copied, a string or list by index, else empty."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, str | list):
        return {str(i): item for i, item in enumerate(value)}
    return {}


def _array(value: Any) -> list[Any]:
    """JavaScript's ``[...(value || [])]`` for the lists promptfoo concatenates."""
    if not value:
        return []
    return list(value) if isinstance(value, list | str) else []


def default_test(raw: dict[str, Any] | None, *, metadata: Any, from_file: bool) -> dict[str, Any]:
    """The ``defaultTest`` promptfoo's evaluator sees, from what the config gives.

    promptfoo's config merge normalises a ``defaultTest`` mapping, giving it (possibly empty)
    ``vars``, ``assert``, ``options`` and ``metadata``, so the top-level ``metadata`` is then
    never used; one read from a ``file://`` file is taken as it is.
    """
    base: dict[str, Any] = {"metadata": metadata, "options": {}}
    if raw is None:
        return base
    if from_file:
        return {**base, **raw}
    normalised = {
        **raw,
        "vars": spread(raw.get("vars")),
        "assert": _array(raw.get("assert")),
        "options": spread(raw.get("options")),
        "metadata": spread(raw.get("metadata")),
    }
    return {**base, **normalised}


def merge_scenario_test(
    default: dict[str, Any], entry: dict[str, Any], test: dict[str, Any], index: int
) -> dict[str, Any]:
    """One scenario test: ``defaultTest`` < config entry < test (promptfoo's order)."""
    metadata = {
        **spread(default.get("metadata")),
        **spread(entry.get("metadata")),
        **spread(test.get("metadata")),
    }
    metadata.setdefault("conversationId", f"__scenario_{index}__")
    return {
        **default,
        **entry,
        **test,
        "vars": {
            **spread(default.get("vars")),
            **spread(entry.get("vars")),
            **spread(test.get("vars")),
        },
        "options": {
            **spread(default.get("options")),
            **spread(entry.get("options")),
            **spread(test.get("options")),
        },
        "assert": [*_array(entry.get("assert")), *_array(test.get("assert"))],
        "metadata": metadata,
    }


def prepare_test(test: dict[str, Any], default: dict[str, Any]) -> dict[str, Any]:
    """A test with ``defaultTest`` applied as promptfoo's evaluator applies it.

    Adds ``_prefix`` and ``_suffix``: the text put around each prompt (the test's own, else the
    ``defaultTest``'s, even when the test's is an empty string).
    """
    options = {**spread(default.get("options")), **spread(test.get("options"))}
    defaults = [] if options.get("disableDefaultAsserts") is True else _array(default.get("assert"))
    own_options = spread(test.get("options"))
    default_options = spread(default.get("options"))
    return {
        **test,
        "vars": {**spread(default.get("vars")), **spread(test.get("vars"))},
        "assert": [*defaults, *_array(test.get("assert"))],
        "threshold": _first_set(test.get("threshold"), default.get("threshold")),
        "options": options,
        "metadata": {**spread(default.get("metadata")), **spread(test.get("metadata"))},
        "prompts": _first_set(test.get("prompts"), default.get("prompts")),
        "provider": test.get("provider") or default.get("provider"),
        "assertScoringFunction": test.get("assertScoringFunction")
        or default.get("assertScoringFunction"),
        "providers": _first_set(test.get("providers"), default.get("providers")),
        "_prefix": own_options.get("prefix") or default_options.get("prefix") or "",
        "_suffix": own_options.get("suffix") or default_options.get("suffix") or "",
    }


def _first_set(value: Any, fallback: Any) -> Any:
    """JavaScript's ``value ?? fallback``."""
    return fallback if value is None else value


def var_combinations(variables: dict[str, Any], *, base_dir: Path) -> list[dict[str, Any]]:
    """One mapping per combination, in the order of promptfoo's ``generateVarCombinations``.

    Raises:
        ReadError: a ``file://`` var matches no file.
    """
    combinations: list[dict[str, Any]] = [{}]
    for key in js_keys(variables):
        value = variables[key]
        if isinstance(value, str) and value.startswith("file://"):
            pattern = value[7:]
            values: list[Any] = [f"file://{m}" for m in glob_files(pattern, root=base_dir)]
            if not values:
                message = (
                    f"No files found for variable {key} at path {pattern} in directory {base_dir}"
                )
                raise ReadError(message)
        elif isinstance(value, list):
            values = value if value and isinstance(value[0], str) else [value]
        else:
            values = [value]
        combinations = [{**combo, key: item} for combo in combinations for item in values]
    return combinations


def prompt_matches(ref: str, prompt: PromptRef) -> bool:
    """As ``doesPromptRefMatch``: the label or id, a ``Group*`` prefix, or a ``Group:`` prefix."""
    label, pid = prompt.label, prompt.id
    if label == ref or (pid and pid == ref):
        return True
    if ref.endswith("*") and (label.startswith(ref[:-1]) or (pid or "").startswith(ref[:-1])):
        return True
    return label.startswith(f"{ref}:") or bool(pid and pid.startswith(f"{ref}:"))


def prompt_allowed(prompt: PromptRef, refs: tuple[str, ...] | None) -> bool:
    """Whether a filter lets ``prompt`` run (no filter: yes; an empty one: no)."""
    return refs is None or any(prompt_matches(ref, prompt) for ref in refs)


def provider_allowed(
    provider: ProviderRef, refs: tuple[str, ...] | None, *, base_dir: Path
) -> bool:
    """Whether a test's ``providers:`` filter lets ``provider`` run."""
    return refs is None or any(provider_matches(r, provider, base_dir=base_dir) for r in refs)


def repeat_count(value: Any, fallback: int = 1) -> int:
    """The repeat count as ``normalizeRepeatCount``: a positive safe integer, else ``fallback``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return fallback
    if float(value).is_integer() and 0 < value <= 2**53 - 1:
        return int(value)
    return fallback


def parse_filter_range(text: str) -> tuple[int, int | None]:
    """``"start:end"`` (zero-based, end excluded, either side may be empty) as a slice.

    Raises:
        ValueError: not in that form, or start after end.
    """
    trimmed = text.strip()
    start_text, sep, end_text = trimmed.partition(":")
    start_text, end_text = start_text.strip(), end_text.strip()
    valid = all(part == "" or part.isdigit() and part.isascii() for part in (start_text, end_text))
    if not sep or ":" in end_text or not (start_text or end_text) or not valid:
        raise ValueError(f"filterRange must be start:end with zero-based indices, got: {text}")
    start = int(start_text) if start_text else 0
    end = int(end_text) if end_text else None
    if end is not None and start > end:
        raise ValueError(f"filterRange start must be less than or equal to end, got: {text}")
    return start, end
