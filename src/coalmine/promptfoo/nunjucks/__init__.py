"""promptfoo's Nunjucks templates, rendered with Jinja2 the way promptfoo renders them.

promptfoo (0.121.20) renders prompts, var values, assertion values and metric names with
Nunjucks 3.2.4, configured by ``getNunjucksEngine`` (``src/util/templates.ts``): autoescape off,
``throwOnUndefined`` off (an unknown variable prints nothing), an ``env`` global holding the
process environment, and one custom filter, ``load`` (``JSON.parse``).

A template is read as Nunjucks reads it, by a port of its tokenizer and parser
(:mod:`coalmine.promptfoo.nunjucks._parser`): ``1e21`` is a variable name, ``===`` a strict
comparison, ``r/[0-9]+/g`` a regular expression, ``x[1:2]``, ``{% with %}`` and
``x is divisibleby 3`` errors, and each expression means what the JavaScript Nunjucks compiles
it to means (``'x' + 1 - 1`` is ``NaN``). The tree is Jinja2's, rewritten before it is compiled:
operators, comparisons, ``not``, ``if`` tests and loops call the JavaScript semantics of
:mod:`coalmine.promptfoo.nunjucks._js`, list and dict literals become JavaScript arrays and
objects, printed values are stringified as JavaScript does (``[object Object]``, ``a,b``,
``true``, ``1``), variables live in Nunjucks' frames (``{% set %}`` in a loop changes the
variable set before it; a macro does not see the loop it is in), the filters, tests and
globals are exactly Nunjucks' (see :mod:`coalmine.promptfoo.nunjucks._filters`), and values
have JavaScript's methods (``s.split(",")``, ``n.toFixed(2)``, ``items.push(x)``).

Known differences, all rare in prompts: ``{% include %}`` / ``{% extends %}`` / ``{% import %}``
/ ``{% from %}`` fail (Nunjucks reads those templates from the working directory); string
positions count code points where JavaScript counts UTF-16 units (only characters beyond U+FFFF
differ); methods that take a callback (``map``, ``filter`` …) are absent; ``localeCompare``
approximates ICU's collation; a printed function is not its JavaScript source; YAML dates are
not JavaScript ``Date`` objects; extra filters are Python callables.

Where promptfoo renders (each mirrored here): a prompt by :func:`render_prompt` (``renderPrompt``
in ``src/evaluatorHelpers.ts``), an assertion's ``value`` by :func:`render_assertion_value`
(``runAssertion``), a ``metric`` name by :func:`render_metric_name` (``renderMetricName``), and
provider configs and JSON prompts by :func:`render_vars_in_object` (``renderVarsInObject``).
``PROMPTFOO_DISABLE_TEMPLATING`` turns all of them off; the caller checks it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from coalmine.promptfoo.nunjucks._env import TemplateError, compile_template
from coalmine.promptfoo.nunjucks._frames import STATE, Frames
from coalmine.promptfoo.nunjucks._js import (
    UNDEFINED,
    js_key,
    js_key_order,
    js_string,
    js_truthy,
    to_js,
)
from coalmine.promptfoo.nunjucks._json import js_json_parse, js_json_stringify
from coalmine.promptfoo.nunjucks._runtime import GLOBALS

__all__ = [
    "UNDEFINED",
    "RenderedPrompt",
    "TemplateError",
    "js_json_parse",
    "js_json_stringify",
    "js_string",
    "js_truthy",
    "render",
    "render_assertion_value",
    "render_metric_name",
    "render_prompt",
    "render_vars_in_object",
    "template_variables",
    "to_js",
]


def render(
    template: str,
    variables: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    filters: Mapping[str, Callable[..., Any]] | None = None,
) -> str:
    """Render ``template`` as promptfoo's ``getNunjucksEngine().renderString`` does.

    Args:
        template: The Nunjucks source.
        variables: The test's vars (plain Python values, as loaded from YAML or JSON).
        env: What ``{{ env.NAME }}`` reads; promptfoo's is the process environment merged with
            the config's ``env:``. Defaults to ``os.environ``.
        filters: Extra filters (promptfoo's ``nunjucksFilters``), as Python callables.

    Raises:
        TemplateError: The template does not parse, uses an unknown filter or test, or fails
            while rendering (calling an undefined function, ``load`` of invalid JSON …).
    """
    compiled = compile_template(template, filters=filters)
    context = to_js({"env": dict(os.environ if env is None else env), **variables})
    try:
        return compiled.render({STATE: Frames(context, GLOBALS)})
    except Exception as exc:  # Nunjucks turns any error while rendering into a render error
        line = _template_line(exc)
        where = "" if line is None else f" (line {line})"
        raise TemplateError(
            f"Template render error{where}: {type(exc).__name__}: {exc}",
            template=template,
            line=line,
        ) from exc


def _template_line(exc: BaseException) -> int | None:
    """The template line an error was raised at (Jinja2 rewrites its traceback to say so)."""
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def render_metric_name(
    metric: str, variables: Mapping[str, Any], *, env: Mapping[str, str] | None = None
) -> str:
    """An assertion's ``metric``, rendered with the test's vars; unchanged if rendering fails."""
    try:
        return render(metric, variables, env=env)
    except TemplateError:
        return metric


def render_assertion_value(
    value: Any, variables: Mapping[str, Any], *, env: Mapping[str, str] | None = None
) -> Any:
    """An assertion's ``value`` as ``runAssertion`` renders it before the grader sees it.

    A string is rendered, unless it is a ``file://`` reference or a ``package:`` path (the
    caller loads those); in a list, each string that is not a ``file://`` reference is rendered;
    anything else (numbers, objects) is left as it is.
    """
    if isinstance(value, str):
        if value.startswith(("file://", "package:")):
            return value
        return render(value, variables, env=env)
    if isinstance(value, list):
        return [
            render(v, variables, env=env)
            if isinstance(v, str) and not v.startswith("file://")
            else v
            for v in value
        ]
    return value


def render_vars_in_object(
    value: Any, variables: Mapping[str, Any], *, env: Mapping[str, str] | None = None
) -> Any:
    """Render every string inside ``value``, walking lists and mappings (``renderVarsInObject``)."""
    if isinstance(value, str):
        return render(value, variables, env=env)
    if isinstance(value, list):
        return [render_vars_in_object(item, variables, env=env) for item in value]
    if isinstance(value, Mapping):
        items = {js_key(key): item for key, item in value.items()}
        return {
            key: render_vars_in_object(items[key], variables, env=env)
            for key in js_key_order(items)
        }
    return value


@dataclass(frozen=True)
class RenderedPrompt:
    """A rendered prompt and the vars as promptfoo keeps them afterwards."""

    text: str
    vars: dict[str, Any]
    """The vars after ``renderPrompt`` changed them in place: one trailing newline dropped from
    each string and ``{{name}}`` references between vars resolved. promptfoo passes these to the
    assertions (the Nunjucks-rendered var values it used for the prompt text are not kept; the
    ``vars`` of its result file are the test's, untouched)."""


_SIMPLE_REFERENCE = re.compile(r"\{\{\s*(\w+)\s*\}\}", re.ASCII)


def _js_replace_first(text: str, needle: str, replacement: str) -> str:
    """``text.replace(needle, replacement)`` with a string needle (``$&``, ``$$`` … expand)."""
    at = text.find(needle)
    if at == -1:
        return text
    parts = {"$": "$", "&": needle, "`": text[:at], "'": text[at + len(needle) :]}
    expanded = re.sub(r"\$([$&`'])", lambda m: parts[m.group(1)], replacement)
    return text[:at] + expanded + text[at + len(needle) :]


def _resolve_variables(variables: dict[str, Any], skip: Collection[str]) -> set[str]:
    """``resolveVariables``: replace ``{{name}}`` in var values by other vars, up to five passes.

    Only the first ``{{name}}`` of a value is looked at in each pass (an unknown one blocks the
    rest), and the replacement goes through ``String.prototype.replace``, so ``$&`` in a var
    value expands. Returns the vars that took a value from a skipped var.
    """
    from_skipped: set[str] = set()
    for _ in range(5):
        resolved = True
        for key, value in list(variables.items()):
            if key in skip or key in from_skipped or not isinstance(value, str):
                continue
            match = _SIMPLE_REFERENCE.search(value)
            if match and match.group(1) in variables:
                name = match.group(1)
                variables[key] = _js_replace_first(value, match.group(), js_string(variables[name]))
                if name in skip or name in from_skipped:
                    from_skipped.add(key)
                resolved = False
        if resolved:
            break
    return from_skipped


_PARTIAL_TAG = re.compile(r"(\{%[^%]*$|\{\{[^}]*$|\{#[^#]*$)", re.MULTILINE)


def _wrap_partial(template: str) -> str:
    """``autoWrapRawIfPartialNunjucks``: a text with an unclosed tag is rendered verbatim."""
    wrapped = re.search(r"\{%\s*raw\s*%\}", template) and re.search(r"\{%\s*endraw\s*%\}", template)
    if _PARTIAL_TAG.search(template) and not wrapped:
        return "{% raw %}" + template + "{% endraw %}"
    return template


def _references_undefined(template: str, variables: Mapping[str, Any]) -> bool:
    for name in template_variables(template):
        root = re.match(r"[A-Za-z_]\w*", name, re.ASCII)
        if root and root.group() != "env" and root.group() not in variables:
            return True
    return False


def render_prompt(
    raw: str,
    variables: Mapping[str, Any],
    *,
    skip_vars: Collection[str] = (),
    env: Mapping[str, str] | None = None,
    filters: Mapping[str, Callable[..., Any]] | None = None,
    json_autoescape: bool = True,
) -> RenderedPrompt:
    """Render a prompt as promptfoo's ``renderPrompt`` does, after its vars are loaded.

    The steps: drop one trailing newline from each string var; resolve ``{{name}}`` references
    between vars; if the prompt parses as JSON, render each string inside it with the vars and
    print it back with ``JSON.stringify(…, null, 2)`` (so a chat-message prompt comes out
    re-indented, and without the extra ``filters``); otherwise render each string var that
    references no unknown variable, then the prompt with those rendered vars. A var value or
    prompt with an unclosed ``{{``, ``{%`` or ``{#`` is taken verbatim.

    ``file://`` and ``package:`` var values must already be loaded; prompt functions and the
    ``portkey://``, ``langfuse://`` and ``helicone://`` prompts are not handled here.

    Args:
        raw: The prompt template.
        variables: The test's vars.
        skip_vars: Vars neither cleaned up, resolved nor rendered (promptfoo's red-team inject
            var).
        env: What ``{{ env.NAME }}`` reads (see :func:`render`).
        filters: Extra filters (``nunjucksFilters``).
        json_autoescape: ``False`` mirrors ``PROMPTFOO_DISABLE_JSON_AUTOESCAPE``: no JSON path.

    Raises:
        TemplateError: The prompt or a var value fails to render (promptfoo: an ERROR row).
    """
    cleaned = {
        key: value[:-1]
        if isinstance(value, str) and value.endswith("\n") and key not in skip_vars
        else value
        for key, value in variables.items()
    }
    from_skipped = _resolve_variables(cleaned, skip_vars)
    if not json_autoescape:
        return RenderedPrompt(
            render(_wrap_partial(raw), cleaned, env=env, filters=filters), cleaned
        )
    try:
        parsed = js_json_parse(raw)
        text = js_json_stringify(render_vars_in_object(parsed, cleaned, env=env), 2)
        return RenderedPrompt(text or "", cleaned)
    except (ValueError, TemplateError):
        pass
    rendered_vars = {
        key: value
        if not isinstance(value, str)
        or key in skip_vars
        or key in from_skipped
        or _references_undefined(value, cleaned)
        else render(_wrap_partial(value), cleaned, env=env, filters=filters)
        for key, value in cleaned.items()
    }
    return RenderedPrompt(
        render(_wrap_partial(raw), rendered_vars, env=env, filters=filters), cleaned
    )


_COMMENT = re.compile(r"\{#[\s\S]*?#\}")
_REFERENCE = re.compile(
    r"\{\{[\s]*([^{}\s|]+)[\s]*(?:\|[^}]+)?\}\}|\{%[\s]*(?:if|for)[\s]+([^{}\s]+)[\s]*.*?%\}"
)
_FOR_LOOP = re.compile(r"\{%[\s]*for[\s]+(\w+)[\s]+in[\s]+(\w+)[\s]*%\}")


def template_variables(template: str) -> list[str]:
    """The variables a template reads, as ``extractVariablesFromTemplate`` finds them.

    A regular expression, not a parse: ``{{ a.b }}`` yields ``a.b``, ``{% if x > 1 %}`` yields
    ``x``, a loop variable is replaced by the list it walks. promptfoo uses it to decide whether a
    var value references undefined variables (then it is not rendered) and to warn about vars a
    prompt never reads.
    """
    template = _COMMENT.sub("", template)
    found: dict[str, None] = {}
    for match in _REFERENCE.finditer(template):
        name = match.group(1) or match.group(2)
        if name:
            found[name] = None
    for match in _FOR_LOOP.finditer(template):
        found.pop(match.group(1), None)
        found[match.group(2)] = None
    return list(found)
