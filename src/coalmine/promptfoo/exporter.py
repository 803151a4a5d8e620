"""A coalmine suite as a promptfoo config that promptfoo runs with the same results.

:func:`export_suite` takes a loaded suite and the agent that runs it and gives the config's
data, with what could not be carried over:

- **An imported suite** (``compat: promptfoo``) goes back as it came: its prompt (its text, or
  the prompt function or ``exec:`` command that makes it), its provider, the config's
  ``nunjucksFilters``, and each line as a test (``vars``, ``assert``, ``threshold``,
  ``options``, ``providerOutput`` …). Relative paths (``file://`` ones, the filters, the files
  an ``exec:`` command names) are rewritten for the new config's folder; a prompt text that
  promptfoo would read as a path (``Summarize a/b``) goes to a file beside it. A line whose test
  has a ``max-score`` is refused (a ``UsageError``): its verdict compares the config's columns.
- **A coalmine suite**: each case becomes a test whose var ``prompt`` holds the case's rendered
  prompt (the config's prompt is ``{{prompt}}``). A prompt promptfoo would change as a var (one
  with ``{{``/``{%``/``{#``, or a trailing newline) goes in the test's ``options.prefix``
  instead, wrapped in ``{% raw %}``, and the var is empty: the prefix is rendered as the prompt
  is, so it comes out as written. Each grader promptfoo has under the same name (``equals``,
  ``contains``, ``regex``, ``levenshtein``, ``is-json``, ``llm-rubric`` …, their ``not-``
  forms) becomes an assertion with its ``value`` (the case's ``expected`` when the grader takes
  it from there), ``threshold`` and ``weight``; a case's ``threshold`` (or the suite's) becomes
  the test's. A ``regex`` is rewritten in JavaScript's syntax with Python's meaning
  (:mod:`coalmine.promptfoo.jsregex`). Graders promptfoo has no equivalent of (``keyword``,
  ``structural``, ``forbidden-tools``, the retrieval metrics, ``python`` …) and grader settings
  it lacks are listed as not exportable, never dropped silently; so is ``blocking: false``
  (every promptfoo assertion counts).
- **The agent** becomes a provider: ``echo``; ``openai`` → ``openai:chat:<model>`` and
  ``anthropic`` → ``anthropic:messages:<model>`` with the settings promptfoo has;
  ``command`` and ``python`` agents written with ``convention: promptfoo`` → ``exec:`` and
  ``file://…py``. Any other agent is not exportable: the config is written without a
  provider, to be filled in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coalmine._util.secrets import redact_data
from coalmine.config import AgentConfig
from coalmine.errors import UsageError
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.assertions import DIRECT, JUDGED, WITH_THRESHOLD
from coalmine.promptfoo.jsregex import javascript_pattern
from coalmine.promptfoo.matrix.prompt_refs import maybe_file_path
from coalmine.promptfoo.matrix.rules import prepare_test
from coalmine.promptfoo.matrix.sources import split_file_url
from coalmine.promptfoo.providers import exec_word, split_command
from coalmine.specs.models import GraderSpec
from coalmine.specs.suite import Suite, SuiteCase

__all__ = ["Exported", "export_suite"]

PROMPT_VAR = "prompt"
TAKES_EXPECTED = frozenset(
    {"equals", "contains", "icontains", "starts-with", "levenshtein", "contains-any",
     "contains-all", "icontains-any", "icontains-all"}
)  # fmt: skip
"""Graders whose ``value`` defaults to the case's ``expected``."""
_TEMPLATE_MARKS = ("{{", "{%", "{#")
_RAW_TAG = re.compile(r"\{%\s*(?:raw|endraw)\s*%\}")
_DEFAULT_OPENAI_URLS = (
    "https://api.openai.com/v1",
    "${OPENAI_BASE_URL:-https://api.openai.com/v1}",
)
_DEFAULT_ANTHROPIC_URLS = (
    "https://api.anthropic.com",
    "${ANTHROPIC_BASE_URL:-https://api.anthropic.com}",
)


@dataclass
class Exported:
    """The config's data, and what could not be carried over (each said once, with a count)."""

    config: dict[str, Any]
    not_exportable: list[str] = field(default_factory=list)
    """What promptfoo has no equivalent of (the config runs without it)."""
    approximations: list[str] = field(default_factory=list)
    """What is carried over but may read differently (a regex's Unicode classes)."""
    files: dict[str, str] = field(default_factory=dict)
    """Files to write beside the config, by name: their text, exactly."""

    def note(self, message: str) -> None:
        """Record ``message`` (repeats are counted, not listed again)."""
        self.not_exportable.append(message)

    @property
    def notes(self) -> list[str]:
        """Each message once, with how many times it came up."""
        counts: dict[str, int] = {}
        for message in self.not_exportable:
            counts[message] = counts.get(message, 0) + 1
        return [m if n == 1 else f"{m} ({n} times)" for m, n in counts.items()]


def export_suite(suite: Suite, agent: AgentConfig | None, *, out_dir: Path) -> Exported:
    """The promptfoo config that runs ``suite`` by ``agent``, to be written in ``out_dir``."""
    if suite.meta.compat == "promptfoo":
        return _export_compat(suite, out_dir)
    exported = Exported({})
    config = exported.config
    config["description"] = suite.meta.description or f"coalmine suite {suite.name}"
    config["prompts"] = ["{{" + PROMPT_VAR + "}}"]
    provider = _provider(agent, exported, out_dir)
    if agent is not None and agent.secrets and provider is not None:
        kept = provider
        provider = redact_data(provider, list(agent.secrets))
        if provider != kept:  # a secret of the config is never written into another file
            exported.note(f"agent {agent.name}: its secrets are written as ***: fill them in")
    config["providers"] = [provider] if provider is not None else []
    config["tests"] = [_test(case, suite, exported) for case in suite.cases]
    if suite.meta.repeats > 1:
        config["evaluateOptions"] = {"repeat": suite.meta.repeats}
    if suite.meta.timeout_seconds is not None:
        options = config.setdefault("evaluateOptions", {})
        options["timeoutMs"] = round(suite.meta.timeout_seconds * 1000)
    if suite.meta.min_score is not None:
        exported.note("min_score (a suite-level pass mark): promptfoo has none")
    if suite.meta.blocking is False:
        exported.note("blocking: false on the suite: every promptfoo row counts")
    return exported


def _test(case: SuiteCase, suite: Suite, exported: Exported) -> dict[str, Any]:
    test: dict[str, Any] = {"description": case.case.id}
    if case.conversation:
        exported.note(
            f"case {case.case.id}: its turns go as one message, the conversation's transcript"
            " (a chat agent of coalmine gets them as messages)"
        )
    if _changed_as_var(case.prompt):
        # promptfoo trims a var's trailing newline and renders (or, when it names an unknown
        # variable, keeps) its template marks; the prefix is rendered as the prompt is, so a
        # {% raw %} block there comes out exactly as written
        test["vars"] = {PROMPT_VAR: ""}
        test["options"] = {"prefix": _literal(case.prompt)}
    else:
        test["vars"] = {PROMPT_VAR: case.prompt}
    assertions = []
    for spec in case.graders:
        found = _assertion(spec, case, exported)
        if found is not None:
            assertions.append(found)
    if case.threshold is not None:
        test["threshold"] = case.threshold
    test["assert"] = assertions
    if case.case.metadata or case.case.tags:
        metadata = dict(case.case.metadata)
        if case.case.tags:
            metadata["tags"] = list(case.case.tags)
        test["metadata"] = metadata
    return test


def _assertion(spec: GraderSpec, case: SuiteCase, exported: Exported) -> dict[str, Any] | None:
    kind = spec.type
    base = kind.removeprefix("not-")
    if not (base in DIRECT or (kind in JUDGED)):
        exported.note(f"grader {kind}: promptfoo has no assertion that grades the same")
        return None
    allowed = {"value"} | ({"threshold"} if base in WITH_THRESHOLD else set())
    extra = sorted(set(spec.config) - allowed)
    if extra:
        exported.note(f"grader {kind}: {', '.join(extra)} has no promptfoo equivalent")
        return None
    assertion: dict[str, Any] = {"type": kind}
    value = spec.config.get("value")
    if value is None and base in TAKES_EXPECTED and case.case.expected is not None:
        value = case.case.expected
    if base == "regex" and isinstance(value, str):
        value, differ = javascript_pattern(value)
        for note in differ:
            exported.approximations.append(f"grader {kind} {spec.config.get('value')!r}: {note}")
    if value is not None:
        assertion["value"] = _literal(value)
    if "threshold" in spec.config:
        assertion["threshold"] = spec.config["threshold"]
    if spec.weight != 1.0:
        assertion["weight"] = spec.weight
    if spec.name:
        assertion["metric"] = spec.name
    if spec.blocking is False:
        exported.note(f"grader {kind}: blocking: false (every promptfoo assertion counts)")
    return assertion


def _changed_as_var(text: str) -> bool:
    return any(m in text for m in _TEMPLATE_MARKS) or text.endswith("\n")


def _literal(value: Any) -> Any:
    """A value promptfoo renders (a var, an assertion value) that comes out as written."""
    if isinstance(value, str) and (
        any(m in value for m in _TEMPLATE_MARKS) or value.endswith("\n")
    ):
        if _RAW_TAG.search(value):  # Nunjucks counts nested raw blocks: a string literal then
            return '{{ "' + value.replace("\\", "\\\\").replace('"', '\\"') + '" }}'
        return "{% raw %}" + value + "{% endraw %}"
    if isinstance(value, list):
        return [_literal(v) for v in value]
    return value


# --- agents --------------------------------------------------------------------------------------


def _provider(agent: AgentConfig | None, exported: Exported, out_dir: Path) -> Any:
    if agent is None:
        exported.note("the suite has no agent: add a provider to the config")
        return None
    settings = agent.settings.model_dump(exclude_defaults=True)
    name = agent.provider
    if name == "echo":
        return "echo"
    if name in ("openai", "anthropic"):
        return _model_provider(agent, settings, exported)
    convention = getattr(agent.settings, "convention", None)
    if name == "command" and convention == "promptfoo":
        argv = list(getattr(agent.settings, "argv", []))
        command = " ".join(exec_word(w) for w in argv)
        cwd = Path(getattr(agent.settings, "cwd", None) or ".")
        if (agent.base_dir / cwd).resolve() != out_dir.resolve():
            exported.note(
                f"agent {agent.name}: promptfoo runs exec: commands in the config's folder, "
                f"not in {(agent.base_dir / cwd)}"
            )
        return _script_provider(agent, "exec: " + command)
    if name in ("python", "javascript") and getattr(agent.settings, "file", None):
        path = _rebase(str(agent.settings.file), agent.base_dir, out_dir)  # type: ignore[attr-defined]
        function = getattr(agent.settings, "function", None)
        return _script_provider(agent, f"file://{path}" + (f":{function}" if function else ""))
    exported.note(
        f"agent {agent.name} ({name}): promptfoo has no provider that calls it as coalmine "
        "does: add one to the config"
    )
    return None


def _script_provider(agent: AgentConfig, provider_id: str) -> dict[str, Any]:
    """A promptfoo-convention agent as its provider: the ``options`` back as config and env.

    promptfoo gives the script its own ``basePath`` (the exported config's folder), so the
    agent's is not written.
    """
    entry: dict[str, Any] = {"id": provider_id, "label": agent.name}
    options = getattr(agent.settings, "options", {})
    config = options.get("config")
    if isinstance(config, dict) and config.keys() - {"basePath"}:
        entry["config"] = {k: v for k, v in config.items() if k != "basePath"}
    if options.get("env"):
        entry["env"] = dict(options["env"])
    return entry


def _model_provider(
    agent: AgentConfig, settings: Mapping[str, Any], exported: Exported
) -> dict[str, Any] | None:
    model = settings.get("model")
    if not model:
        exported.note(f"agent {agent.name}: no model named: add a provider to the config")
        return None
    openai = agent.provider == "openai"
    entry: dict[str, Any] = {
        "id": f"openai:chat:{model}" if openai else f"anthropic:messages:{model}",
        "label": agent.name,
    }
    config: dict[str, Any] = {}
    keys = {"temperature": "temperature", "max_tokens": "max_tokens", "top_p": "top_p"}
    keys |= {"seed": "seed", "response_format": "response_format", "tools": "tools"}
    keys |= {"tool_choice": "tool_choice", "stop_sequences": "stop"}
    for ours, theirs in keys.items():
        if ours in settings:
            config[theirs] = settings[ours]
    if not openai and "max_tokens" not in config:
        config["max_tokens"] = agent.settings.max_tokens  # type: ignore[attr-defined]
    url = settings.get("base_url")
    defaults = _DEFAULT_OPENAI_URLS if openai else _DEFAULT_ANTHROPIC_URLS
    if url and url not in defaults:
        config["apiBaseUrl"] = url
    key_env = settings.get("api_key_env")
    if key_env:
        config["apiKeyEnvar"] = key_env
    if settings.get("system_prompt") or settings.get("system_prompt_file"):
        exported.note(f"agent {agent.name}: its system prompt (promptfoo sends none)")
    known = {"model", "base_url", "api_key_env", "system_prompt", "system_prompt_file", *keys}
    for key in sorted(set(settings) - known):
        exported.note(f"agent {agent.name}: setting {key} has no promptfoo equivalent")
    if config:
        entry["config"] = config
    return entry


# --- imported suites ---------------------------------------------------------------------------


def _export_compat(suite: Suite, out_dir: Path) -> Exported:
    source = suite.meta.promptfoo
    assert source is not None
    base = (suite.path.parent / source.base_dir).resolve()
    exported = Exported({})
    config = exported.config
    description = suite.meta.description
    if description:
        config["description"] = description
    if source.nunjucks_filters:
        config["nunjucksFilters"] = {
            name: _rebase(path, base, out_dir) for name, path in source.nunjucks_filters.items()
        }
    config["prompts"] = [_compat_prompt(suite, base, out_dir, exported)]
    provider = source.provider
    entry: dict[str, Any] = {"id": _rebase_provider(provider.id, base, out_dir)}
    for key in ("label", "config", "transform", "delay", "env"):
        value = getattr(provider, key)
        if value is not None:
            entry[key] = _rebase_all(value, base, out_dir)
    config["providers"] = [entry]
    if source.env:
        config["env"] = dict(source.env)
    tests = []
    for case in suite.cases:
        line = case.promptfoo
        assert line is not None
        data = line.model_dump(
            by_alias=True, exclude_defaults=True, exclude={"id", "test_idx", "repeat_index"}
        )
        data.pop("tags", None)
        _refuse_max_score(suite, case)
        if line.options.get("storeOutputAs"):  # promptfoo's registers span the whole eval
            exported.note(
                "options.storeOutputAs: the config holds this suite's column only: a stored "
                "output reaches the later rows of this column, not the other columns' rows"
            )
        tests.append(data)
    own = _without_default(tests, source.default_applied) if source.default_test else None
    if own is not None:  # the defaultTest goes back as it came, and out of each test
        config["defaultTest"] = _default_test(source.default_test, source.default_applied,
                                              base, out_dir)  # fmt: skip
        tests = own
    config["tests"] = [_rebase_all(test, base, out_dir) for test in tests]
    if suite.meta.timeout_seconds is not None:
        config["evaluateOptions"] = {"timeoutMs": round(suite.meta.timeout_seconds * 1000)}
    return exported


def _refuse_max_score(suite: Suite, case: SuiteCase) -> None:
    """Refuse a line whose test has a ``max-score``: its verdict is not one column's to give.

    max-score compares a test's rows across the config's columns; the exported config holds
    this suite's column alone, on which promptfoo stops the eval (its invariant wants two
    outputs). Writing it anyway would hand over a config that cannot run, and dropping the
    assertion would change the rows' verdicts: neither is the suite.
    """
    line = case.promptfoo
    assert line is not None
    if any(isinstance(a, Mapping) and a.get("type") == "max-score" for a in line.assertions):
        raise UsageError(
            f"{suite.path}:{case.line}: suite {suite.name}, line {line.id}: its 'max-score' "
            "assertion compares the test's rows across the columns of the config it was "
            "imported from, and an exported suite is one column (promptfoo stops the eval: "
            "max-score assertion must have at least two outputs to compare between): remove "
            "it from the suite's lines to export them, or run the original config"
        )


_MERGED = ("vars", "assert", "threshold", "options", "metadata", "provider",
           "assertScoringFunction")  # fmt: skip
"""The keys of a test promptfoo merges with its ``defaultTest`` (:func:`prepare_test`)."""


def _default_test(written: Any, applied: Any, base: Path, out_dir: Path) -> Any:
    """The ``defaultTest`` as it came; inline when it came from a file that names files.

    promptfoo reads the ``file://`` paths inside a ``defaultTest`` file from the config's
    folder: a config written elsewhere keeps them only when they are written out, rebased.
    """
    if isinstance(written, str) and _rebase_all(applied, base, out_dir) != applied:
        return _rebase_all(applied, base, out_dir)
    return _rebase_all(written, base, out_dir)


def _without_default(
    tests: Sequence[Mapping[str, Any]], applied: Mapping[str, Any] | None
) -> list[dict[str, Any]] | None:
    """Each test with what ``applied`` (the ``defaultTest``) gave it taken out again.

    ``None`` when some test would not come back the same once promptfoo merged the
    ``defaultTest`` in again: the tests are then exported whole, without a ``defaultTest``.
    """
    if applied is None:
        return None
    default = dict(applied)
    try:
        default_asserts = [
            Assertion.model_validate(a).model_dump(by_alias=True, exclude_unset=True)
            for a in default.get("assert") or []
        ]
    except ValueError:
        return None
    out = []
    for test in tests:
        own = _subtract(test, default, default_asserts)
        merged = prepare_test(own, default)
        if any(merged.get(k) != _merged_value(test, k) for k in _MERGED):
            return None
        out.append(own)
    return out


def _subtract(
    test: Mapping[str, Any], default: Mapping[str, Any], default_asserts: list[dict[str, Any]]
) -> dict[str, Any]:
    own = dict(test)
    for key in ("vars", "options", "metadata"):
        theirs = default.get(key) or {}
        kept = {k: v for k, v in (test.get(key) or {}).items() if k not in theirs or theirs[k] != v}
        own.pop(key, None)
        if kept:
            own[key] = kept
    asserts = list(test.get("assert") or [])
    merged_options = {**(default.get("options") or {}), **(test.get("options") or {})}
    if merged_options.get("disableDefaultAsserts") is not True:
        n = len(default_asserts)
        if asserts[:n] == default_asserts:
            asserts = asserts[n:]
    own.pop("assert", None)
    if asserts:
        own["assert"] = asserts
    for key in ("threshold", "provider", "assertScoringFunction"):
        if key in own and own[key] == default.get(key):
            del own[key]
    return own


def _merged_value(test: Mapping[str, Any], key: str) -> Any:
    """``test[key]`` as the merge gives it when the test has none (the line's defaults)."""
    value = test.get(key)
    if value is None and key in ("vars", "options", "metadata"):
        return {}
    if value is None and key == "assert":
        return []
    return value


def _compat_prompt(suite: Suite, base: Path, out_dir: Path, exported: Exported) -> dict[str, Any]:
    """The suite's prompt: its text, or the prompt function or command that makes it.

    A text promptfoo would read as a path or a command (:func:`_read_as_path`) goes to a file
    beside the config, ``<suite>.prompt.j2``, named by ``file://``: promptfoo reads such a file
    whole, and keeps the prompt's label and config (a ``.txt`` file would be trimmed, split
    on ``---`` lines and relabelled; a ``.md`` file loses the config).
    """
    assert suite.meta.promptfoo is not None
    prompt = suite.meta.promptfoo.prompt
    config = dict(prompt.config) if prompt.config is not None else None
    if prompt.kind == "exec" and prompt.function is not None:
        # promptfoo reads the command as a path (a `..` after a word would eat it): it stays
        # as it is, and runs in its own folder, the prompt's basePath
        shown: dict[str, Any] = {"raw": "exec:" + prompt.function, "label": prompt.label}
        if base.resolve() != out_dir.resolve():
            folder = str((config or {}).get("basePath") or ".")
            config = {**(config or {}), "basePath": _rebase(folder, base, out_dir)}
    elif prompt.kind == "function" and prompt.function is not None:
        path, function = split_file_url(prompt.function)
        ref = "file://" + _rebase(path, base, out_dir) + (f":{function}" if function else "")
        shown = {"raw": ref, "label": prompt.label}
    else:
        text = suite.meta.prompt_template or ""
        shown = {"raw": text, "label": prompt.label}
        if _read_as_path(text):
            name = f"{suite.name}.prompt.j2"
            exported.files[name] = text
            shown["raw"] = f"file://{name}"
        if prompt.id is not None:
            shown["id"] = prompt.id
    if config is not None:
        shown["config"] = config
    return shown


def _read_as_path(text: str) -> bool:
    r"""Whether promptfoo reads the prompt ``text`` as something else than the prompt's text.

    ``maybeFilePath`` (one line with a ``/``, ``\`` or ``*``, a ``.`` three or four characters
    from its end, a file extension …: ``Summarize a/b``, ``Rate it 1*5``, ``Read notes.txt``)
    makes it a path (a missing file: "There are no prompts"); ``exec:`` a command; and an empty
    ``raw`` takes the prompt's ``id``.
    """
    return not text or text.startswith("exec:") or maybe_file_path(text)


def _rebase(path: str, base: Path, out_dir: Path) -> str:
    if os.path.isabs(path):
        return path
    target = (base / path).resolve()
    return Path(os.path.relpath(target, out_dir.resolve())).as_posix()


def _rebase_url(value: str, base: Path, out_dir: Path) -> str:
    if value.startswith("file://"):
        rest = value[len("file://") :]
        return "file://" + _rebase(rest, base, out_dir)
    return value


def _rebase_provider(provider_id: str, base: Path, out_dir: Path) -> str:
    """The provider's id as seen from ``out_dir``.

    Its ``file://`` or ``python:`` path, or each file an ``exec:`` command names, is rewritten.
    """
    if base.resolve() == out_dir.resolve():
        return provider_id
    if provider_id.startswith("python:"):
        return "python:" + _rebase(provider_id[len("python:") :], base, out_dir)
    if not provider_id.startswith("exec:"):
        return _rebase_url(provider_id, base, out_dir)
    words = []
    for word in split_command(provider_id[len("exec:") :]):
        if not os.path.isabs(word) and (base / word).exists():
            word = _rebase(word, base, out_dir)
        words.append(exec_word(word))
    return "exec: " + " ".join(words)


def _rebase_all(value: Any, base: Path, out_dir: Path) -> Any:
    """Every relative ``file://`` path, as seen from ``out_dir`` (the rest as it is)."""
    if base.resolve() == out_dir.resolve():
        return value
    if isinstance(value, str):
        return _rebase_url(value, base, out_dir)
    if isinstance(value, Mapping):
        return {k: _rebase_all(v, base, out_dir) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [_rebase_all(v, base, out_dir) for v in value]
    return value
