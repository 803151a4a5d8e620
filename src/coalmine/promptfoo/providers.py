"""Which coalmine agent runs each promptfoo provider (promptfoo 0.121.20).

The result is data: the entry of ``agents:`` in coalmine.yaml for each provider, or the reason
it has none. What maps:

- ``echo`` → the ``echo`` provider (the answer is the prompt).
- ``openai:<model>``, ``openai:chat:<model>``, ``openai:responses:<model>`` → ``openai``;
  ``anthropic:messages:<model>``, ``anthropic:<model>`` → ``anthropic``; ``ollama:…`` → ``openai``
  on Ollama's OpenAI-compatible endpoint (see ``_llm_providers`` for the settings).
- ``exec:<command>`` → ``command`` with ``convention: promptfoo``: the command is split as
  promptfoo splits it (on whitespace; ``"…"`` and ``'…'`` group words, with no escapes), and it
  runs in the promptfoo config's folder, as promptfoo runs it.
- ``file://x.py``, ``file://x.py:fn``, ``python:x.py[:fn]`` → ``python`` with
  ``convention: promptfoo`` (``call_api`` unless a function is named).
- ``file://x.js`` (``.cjs``, ``.mjs``, ``.ts``, ``.cts``, ``.mts``) → ``javascript`` with
  ``convention: promptfoo``, its ``label`` set on the instance as promptfoo sets it;
  ``file://x.js:name`` is a problem, as promptfoo 0.121.20 does not load it.

Everything else (``http:``, ``webhook:``, Go and Ruby files, ``bedrock:``,
``vertex:``, …) gets a ``problem``: it is listed, never dropped. A provider's ``transform`` and
``delay`` are carried for the runner, which applies them. Paths are written relative to the
folder of the coalmine.yaml that will hold the agents (``out_dir``); the promptfoo config's
folder goes in ``options.config.basePath``, as promptfoo passes it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalmine.promptfoo._llm_providers import Found, literal, map_anthropic, map_ollama, map_openai
from coalmine.promptfoo.matrix.prompt_refs import split_command
from coalmine.promptfoo.matrix.provider_refs import ProviderRef

__all__ = [
    "MappedProvider",
    "exec_word",
    "map_provider",
    "map_providers",
    "split_command",
    "unique_name",
]

_SCRIPT_PART = re.compile(r"""[^\s"']+|"([^"]*)"|'([^']*)'""")
_JS_FILES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")
"""What promptfoo loads as a JavaScript provider (its ``JAVASCRIPT_EXTENSIONS``)."""
_JS_LOOKALIKES = (*_JS_FILES, ".jsx", ".tsx")
_FUNCTION = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$")
NAME_LENGTH = 60
HAND_WRITTEN = (
    "write the agent in coalmine.yaml by hand (an OpenAI-compatible server works as an "
    "'openai' agent with its base_url)"
)


@dataclass(frozen=True, kw_only=True)
class MappedProvider:
    """One promptfoo provider and the coalmine agent that runs it."""

    ref_id: str
    """The provider's promptfoo id, as written."""
    label: str | None
    agent_name: str
    """The agent's name in coalmine.yaml: the label, else a readable form of the id; unique."""
    agent: Mapping[str, Any] | None
    """The agent's entry (``{provider: …, <settings>}``); ``None`` when there is a problem."""
    problem: str | None
    """Why no coalmine provider runs it."""
    notes: tuple[str, ...] = ()
    """What could not be carried over (a setting coalmine lacks, a different endpoint …)."""
    transform: Any = None
    """promptfoo's ``transform`` of the output (JavaScript or ``file://``), for the runner."""
    delay: float | None = None
    """Milliseconds promptfoo waits after each call that was not cached, for the runner."""

    @property
    def key(self) -> str:
        """How promptfoo names the provider in its results: the label, else the id."""
        return self.label or self.ref_id


def map_providers(
    refs: Sequence[ProviderRef], *, base_dir: Path, out_dir: Path | None = None
) -> tuple[MappedProvider, ...]:
    """Map every provider, in order, giving each agent a name of its own.

    Args:
        refs: the config's providers.
        base_dir: the promptfoo config's folder (promptfoo's ``basePath``).
        out_dir: the folder of the coalmine.yaml that will hold the agents (default:
            ``base_dir``).
    """
    mapped: list[MappedProvider] = []
    for ref in refs:
        taken = {m.agent_name for m in mapped}
        mapped.append(map_provider(ref, base_dir=base_dir, out_dir=out_dir, taken=taken))
    return tuple(mapped)


def map_provider(
    ref: ProviderRef,
    *,
    base_dir: Path,
    out_dir: Path | None = None,
    taken: Collection[str] = (),
) -> MappedProvider:
    """Map one provider; its agent name avoids the names in ``taken``."""
    implementation = ref.implementation or ref.id
    written: Any = ref.config  # as written: not always an object
    config = written if isinstance(written, Mapping) else {}
    found = _dispatch(implementation, ref, config, base_dir, out_dir or base_dir)
    if written is not None and not isinstance(written, Mapping):
        found.notes.append(f"config is not an object ({written!r}): ignored")
    found.notes.extend(_option_notes(ref, found))
    if found.problem is not None:
        found.agent = None
    return MappedProvider(
        ref_id=ref.id,
        label=ref.label,
        agent_name=unique_name(ref.label or readable_name(ref.id), taken),
        agent=found.agent,
        problem=found.problem,
        notes=tuple(found.notes),
        transform=ref.transform,
        delay=ref.delay,
    )


def _dispatch(
    implementation: str,
    ref: ProviderRef,
    config: Mapping[str, Any],
    base_dir: Path,
    out_dir: Path,
) -> Found:
    """Choose as promptfoo's provider table does (first match wins)."""
    if implementation.startswith("exec:"):
        return _exec(implementation[5:], ref, config, base_dir, out_dir)
    if implementation.startswith("golang:") or _file_of(implementation, ".go"):
        return Found(problem="promptfoo's Go provider is not supported: " + _WRAP)
    if implementation.startswith("python:") or _file_of(implementation, ".py"):
        return _python(implementation, ref, config, base_dir, out_dir)
    if implementation.startswith("ruby:") or _file_of(implementation, ".rb"):
        return Found(problem="promptfoo's Ruby provider is not supported: " + _WRAP)
    if implementation == "echo":
        return Found(agent={"provider": "echo"})
    if implementation.startswith("anthropic:"):
        return map_anthropic(implementation, config)
    if implementation.startswith("ollama:"):
        return map_ollama(implementation, config)
    if implementation.startswith("openai:"):
        return map_openai(implementation, config)
    if implementation.startswith(("http:", "https:", "webhook:")) or implementation in (
        "http",
        "https",
    ):
        return Found(
            problem="promptfoo's HTTP providers template the request with the test's vars and "
            "read the answer with JavaScript: write an 'http' agent (body with {{prompt}}, "
            "response_path) in coalmine.yaml by hand"
        )
    if implementation.removeprefix("file://").split(":")[0].lower().endswith(_JS_LOOKALIKES):
        return _javascript(implementation, ref, config, base_dir, out_dir)
    prefix = implementation.split(":")[0]
    return Found(problem=f"promptfoo's {prefix!r} provider is not supported: {HAND_WRITTEN}")


_WRAP = "run it from a script as an exec: provider, or " + HAND_WRITTEN


def _file_of(implementation: str, suffix: str) -> bool:
    return implementation.startswith("file://") and (
        implementation.endswith(suffix) or f"{suffix}:" in implementation
    )


def exec_word(word: str) -> str:
    """``word`` written so :func:`split_command` reads it back as one word.

    promptfoo has no escapes: a word with whitespace or a quote is wrapped in the quote it
    does not contain (a word with both kinds cannot be written; it is returned as is).
    """
    if word and not re.search(r"[\s\"']", word):
        return word
    if '"' not in word:
        return f'"{word}"'
    if "'" not in word:
        return f"'{word}'"
    return word


def _exec(
    command: str, ref: ProviderRef, config: Mapping[str, Any], base_dir: Path, out_dir: Path
) -> Found:
    argv = split_command(command)
    if not argv:
        return Found(problem="exec: needs a command, e.g. exec:python3 agent.py")
    program = argv[0]
    if ("/" in program or os.sep in program) and not os.path.isabs(program):
        program = _relative(base_dir / program, out_dir)
        program = program if program.startswith(("../", "./")) else f"./{program}"
    agent: dict[str, Any] = {"provider": "command", "argv": literal([program, *argv[1:]])}
    cwd = _relative(base_dir, out_dir)
    if cwd != ".":
        agent["cwd"] = literal(cwd)
    agent["convention"] = "promptfoo"
    agent["options"] = _options(ref, config, base_dir, out_dir)
    return Found(agent=agent)


def _python(
    implementation: str,
    ref: ProviderRef,
    config: Mapping[str, Any],
    base_dir: Path,
    out_dir: Path,
) -> Found:
    if implementation.startswith("file://"):
        script = implementation[7:]
    else:
        script = implementation.split(":", 1)[1]
    path, function = _split_function(script)
    if not path:
        return Found(problem="python: needs a file, e.g. file://provider.py")
    if function is not None and not _FUNCTION.match(function):
        return Found(problem=f"{function!r} is not a Python function name (or Class.method)")
    agent: dict[str, Any] = {"provider": "python", "convention": "promptfoo"}
    agent["file"] = literal(path if os.path.isabs(path) else _relative(base_dir / path, out_dir))
    if function is not None and function != "call_api":
        agent["function"] = function
    agent["options"] = _options(ref, config, base_dir, out_dir)
    found = Found(agent=agent)
    for key, why in (
        ("pythonExecutable", "the function runs in coalmine's own Python"),
        ("workers", "coalmine calls the function in its own process"),
        ("timeout", "coalmine's timeout applies"),
    ):
        if key in config:
            found.notes.append(f"config.{key} is passed in options but not applied: {why}")
    return found


def _javascript(
    implementation: str,
    ref: ProviderRef,
    config: Mapping[str, Any],
    base_dir: Path,
    out_dir: Path,
) -> Found:
    """A ``file://x.js`` provider: promptfoo constructs the file's default export."""
    path = implementation.removeprefix("file://")
    if not path.lower().endswith(_JS_FILES):  # promptfoo's test of the whole id
        whole = path.rsplit(":", 1)[0] if ":" in path else path
        fix = f": name the file alone, file://{whole}" if whole != path else ""
        return Found(problem=f"promptfoo 0.121.20 does not load {implementation!r}{fix}")
    agent: dict[str, Any] = {"provider": "javascript", "convention": "promptfoo"}
    agent["file"] = literal(path if os.path.isabs(path) else _relative(base_dir / path, out_dir))
    options = _options(ref, config, base_dir, out_dir)
    agent["options"] = {"id": literal(ref.id), **options}  # promptfoo always passes its id
    if ref.label:
        agent["label"] = literal(ref.label)
    return Found(agent=agent)


def _split_function(script: str) -> tuple[str, str | None]:
    """``x.py:fn`` → (``x.py``, ``fn``), as promptfoo reads a function after the last colon."""
    index = script.rfind(":")
    if index > 1 and script[:index].endswith((".py", ".go", ".rb", *_JS_FILES)):
        return script[:index], script[index + 1 :]
    return script, None


def _options(
    ref: ProviderRef, config: Mapping[str, Any], base_dir: Path, out_dir: Path
) -> dict[str, Any]:
    """The options promptfoo passes a script: ``{id?, config: {…, basePath}, env}``.

    The id is there when the provider is written as an object; ``env`` is the provider's own.
    """
    options: dict[str, Any] = {}
    if ref.options is not None:
        options["id"] = literal(ref.id)
    options["config"] = {**literal(dict(config)), "basePath": literal(_relative(base_dir, out_dir))}
    env = ref.options.get("env") if ref.options is not None else None
    options["env"] = literal(dict(env)) if isinstance(env, Mapping) else {}
    return options


def _option_notes(ref: ProviderRef, found: Found) -> list[str]:
    """Notes on the provider's other options (``env``, ``inputs``)."""
    if ref.options is None or found.problem is not None:
        return []
    notes = []
    script = found.agent is not None and found.agent.get("convention") == "promptfoo"
    if isinstance(ref.options.get("env"), Mapping):
        notes.append(
            "env is passed in options, not set in the program's environment (as promptfoo)"
            if script
            else "env is not applied: set these variables in the environment"
        )
    if ref.options.get("inputs") is not None:
        notes.append("inputs (multi-variable targets) are not supported: ignored")
    return notes


def _relative(path: Path, start: Path) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(start))


def readable_name(provider_id: str) -> str:
    """A short agent name for an id: ``file://`` dropped, paths cut to their file names."""
    text = provider_id.removeprefix("file://")
    prefix = ""
    for scheme in ("exec:", "python:"):
        if text.startswith(scheme):
            prefix, text = scheme, text[len(scheme) :]
    words = [os.path.basename(w.rstrip("/")) or w if "/" in w else w for w in text.split()]
    name = prefix + " ".join(words)
    return name if len(name) <= NAME_LENGTH else name[: NAME_LENGTH - 1] + "…"


def unique_name(name: str, taken: Collection[str]) -> str:
    """``name``, or ``name-2``, ``-3`` … when ``taken`` has it."""
    if name not in taken:
        return name
    number = 2
    while f"{name}-{number}" in taken:
        number += 1
    return f"{name}-{number}"
