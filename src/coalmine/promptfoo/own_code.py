"""The assertion types promptfoo grades with code of its own that no Python library reproduces.

coalmine asks promptfoo's own ``runAssertion`` (its public API, ``node_checks.cjs``) in Node.js,
from the promptfoo package found in the config's folder (its ``node_modules``), then promptfoo's
install (the ``promptfoo`` on ``PATH``, or the one ``COALMINE_PROMPTFOO`` names), then
``NODE_PATH``; a team that moves from promptfoo has it. Without it, or without Node.js, the row
is an ERROR that says what to install. These are the deterministic types (no model is called):

- markup and SQL, from the grammars of the npm packages promptfoo uses: ``is-xml`` and
  ``contains-xml`` (saxes, fast-xml-parser), ``is-html`` (parse5), ``is-sql`` and
  ``contains-sql`` (node-sql-parser). The native graders of those names are Python's
  (:mod:`coalmine.graders.markup`);
- tool calls read out of the output as promptfoo's providers shape them: ``tool-call-f1``,
  ``is-valid-openai-function-call`` and ``is-valid-function-call`` (against the provider's
  ``config``); ``skill-used``;
- what promptfoo's own providers answer beside the output: ``guardrails``, ``perplexity`` and
  ``perplexity-score`` (log-probabilities), and the ``trace-*`` and ``trajectory:*`` types
  (its tracing); without them promptfoo's verdict is its failure or its error, and so is ours;
- ``ruby`` (run by promptfoo in ``ruby``) and ``meteor`` (promptfoo's ``natural`` package).

The request carries the output (an object stays one), the provider's response, the row's vars,
the provider's id and ``config``, the latency and the rendered prompt; nothing of promptfoo is
copied here.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalmine.promptfoo.node import JsError, JsUnsupported, NodeRuntime, NodeUnavailable
from coalmine.promptfoo.verdicts import HandlerError, Verdict

__all__ = ["OWN_CODE_TYPES", "own_code_check", "promptfoo_install"]

OWN_CODE_TYPES = frozenset(
    {"is-xml", "contains-xml", "is-html", "is-sql", "contains-sql", "tool-call-f1",
     "is-valid-openai-function-call", "is-valid-function-call", "skill-used", "guardrails",
     "perplexity", "perplexity-score", "trace-error-spans", "trace-span-count",
     "trace-span-duration", "trajectory:tool-args-match", "trajectory:step-count",
     "trajectory:tool-sequence", "trajectory:tool-used", "ruby", "meteor"}
)  # fmt: skip


@functools.cache
def promptfoo_install(executable: str | None = None) -> Path | None:
    """The folder of the promptfoo package the ``promptfoo`` executable runs, if any."""
    found = executable or os.environ.get("COALMINE_PROMPTFOO") or shutil.which("promptfoo")
    if not found:
        return None
    for folder in Path(found).resolve().parents:
        manifest = folder / "package.json"
        if manifest.is_file():
            try:
                name = json.loads(manifest.read_text(encoding="utf-8")).get("name")
            except (OSError, ValueError, AttributeError):
                continue
            if name == "promptfoo":
                return folder
    return None


async def own_code_check(check: OwnCodeCheck, *, base_dir: Path, node: NodeRuntime) -> Verdict:
    """The verdict of promptfoo's own ``runAssertion`` for one of :data:`OWN_CODE_TYPES`.

    Raises:
        HandlerError: promptfoo's handler threw, or Node.js or a package is missing.
    """
    install = promptfoo_install()
    base_type = check.base_type
    request = {
        "assertion": check.assertion(),
        "output": check.output,
        "response": dict(check.response),
        "provider": dict(check.provider),
        "vars": dict(check.variables),
        "latencyMs": check.latency_ms,
        "prompt": check.prompt,
    }
    try:
        answer = await node.check(
            request, base_dir=base_dir, package_dirs=() if install is None else (install,)
        )
    except NodeUnavailable as exc:
        raise HandlerError(f"unsupported: {base_type} needs Node.js: {exc.hint}") from None
    except JsUnsupported as exc:
        raise HandlerError(f"unsupported: {base_type} {exc.message}") from None
    except JsError as exc:
        raise HandlerError(str(exc)) from None
    return Verdict(bool(answer["pass"]), float(answer["score"]), str(answer["reason"]))


@dataclass(frozen=True, kw_only=True)
class OwnCodeCheck:
    """What promptfoo's ``runAssertion`` is given of one assertion and its row."""

    base_type: str
    inverse: bool
    value: Any
    """The rendered value."""
    threshold: float | None
    config: Mapping[str, Any] | None
    """The assertion's own ``config``."""
    output: Any
    """The output after the transforms (an object stays one)."""
    response: Mapping[str, Any]
    """The provider's response (``finishReason``, ``guardrails``, ``metadata`` …)."""
    provider: Mapping[str, Any]
    """``{"id", "label", "config"}`` of the row's provider."""
    variables: Mapping[str, Any]
    latency_ms: int
    prompt: str

    def assertion(self) -> dict[str, Any]:
        """The assertion as promptfoo reads it."""
        shown: dict[str, Any] = {"type": ("not-" if self.inverse else "") + self.base_type}
        if self.value is not None:
            shown["value"] = self.value
        if self.threshold is not None:
            shown["threshold"] = self.threshold
        if self.config is not None:
            shown["config"] = dict(self.config)
        return shown
