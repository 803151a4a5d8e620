"""promptfoo 0.121.20's own handlers, for the types where a native grader's meaning differs.

coalmine's native graders may keep their own meaning (their config models are strict: an
integer edit distance, a threshold within 0..1, arrays found by ``contains-json`` …), but a
``compat: promptfoo`` suite and a ``--promptfoo`` run must give promptfoo's verdict, so these
types are graded here, as promptfoo's ``src/assertions/*.ts`` grade them:

- the threshold family (``levenshtein``, ``rouge-n``, ``bleu``, ``gleu``, ``latency``,
  ``cost``): any number is a threshold, as promptfoo compares it (a CSV ``levenshtein:x``'s
  default 0.75 fails a distance of 1; a threshold above 1 fails every score). ``levenshtein``
  counts UTF-16 units and defaults to 5 (``??``: 0 stays 0); ``rouge-n`` is the F1 of
  lower-cased unigrams whatever ``n`` (promptfoo's ``rougeNScore``); ``latency`` and ``cost``
  throw without a threshold, ``cost`` without a cost.
- ``is-json`` and ``contains-json``: :mod:`coalmine.promptfoo.json_compat`.
- ``finish-reason``: the provider's ``finishReason`` equals the value, both lower-cased (the
  OpenAI and Anthropic agents normalise theirs as promptfoo's providers do; a Python provider's
  is taken as it returned it); with none (``echo``, a fixed output) it fails, and its ``not-``
  form passes.
- ``is-valid-openai-tools-call``: the output (or its ``tool_calls``) is a non-empty list of
  ``{function: {name, arguments}}`` whose arguments, parsed as JSON, fit the parameters of the
  provider config's ``tools`` function of that name. promptfoo's handler ignores ``not-``, so
  the ``not-`` form gives the same verdict (kept).
- ``contains-html``: the native grader's heuristics, which are promptfoo's.
- ``equals`` and the ``contains`` family (``contains``, ``icontains``, ``contains-any``,
  ``contains-all``, ``icontains-any``, ``icontains-all``): JavaScript's comparison. A number is
  its JavaScript text, ``icontains*`` lower-case both sides (``toLowerCase``, not casefold:
  ``STRASSE`` does not contain ``straße``), an empty list is a value (any-of-nothing fails,
  all-of-nothing passes), an empty list item is contained in every output; ``equals`` with an
  object, a list or ``null`` deep-compares with the output's ``JSON.parse``, and without a
  value compares the output with ``"undefined"``.
- ``regex``: ``new RegExp(value).test(output)``, JavaScript's syntax and meaning (UTF-16 code
  units, ASCII digits, V8's errors: :mod:`coalmine.promptfoo.jsregex`). A pattern V8 refuses
  fails the assertion (``Invalid regex pattern: …``, whatever ``not-``); one V8 accepts and
  coalmine cannot match (``(?<=a+)``) is an ERROR that says so.
- ``is-xml``, ``contains-xml``, ``is-html``, ``is-sql``, ``contains-sql``, the tool-call,
  log-probability, trace and trajectory types, ``guardrails``, ``ruby`` and ``meteor``:
  promptfoo's own code, in Node.js: :mod:`coalmine.promptfoo.own_code`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalmine._util.jsonpath import json_equal
from coalmine.graders.markup import html_found
from coalmine.graders.overlap import bleu_score, gleu_score, rouge_n
from coalmine.graders.text import levenshtein_distance, split_values
from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.assertions import HANDLED
from coalmine.promptfoo.json_compat import contains_json, is_json, schema_validator
from coalmine.promptfoo.jsregex import JsRegExp, JsSyntaxError, JsUnsupported
from coalmine.promptfoo.matrix.filerefs import load_file_ref
from coalmine.promptfoo.matrix.sources import ReadError, split_file_url
from coalmine.promptfoo.node import NodeRuntime
from coalmine.promptfoo.nunjucks import (
    TemplateError,
    js_json_parse,
    js_string,
    js_truthy,
    render_vars_in_object,
    to_js,
)
from coalmine.promptfoo.nunjucks._js import js_join
from coalmine.promptfoo.nunjucks._json import js_json_stringify
from coalmine.promptfoo.own_code import OWN_CODE_TYPES, OwnCodeCheck, own_code_check
from coalmine.promptfoo.verdicts import PASSED, HandlerError, Verdict, verdict

__all__ = ["HANDLERS", "HandlerCall", "handle"]


@dataclass(frozen=True, kw_only=True)
class HandlerCall:
    """What promptfoo's handlers read of one assertion and its row."""

    assertion: Assertion
    value: Any
    """The rendered value."""
    output: Any
    """The output after the transforms (an object stays one)."""
    text: str
    """The output as ``outputString`` (a string as is, else its JSON)."""
    provider: Mapping[str, Any]
    """``{"id", "label", "config"}`` of the row's provider."""
    provider_response: Mapping[str, Any]
    prompt: str
    """The rendered prompt."""
    variables: Mapping[str, Any]
    latency_ms: int
    cost: float | None
    base_dir: Path
    node: NodeRuntime
    env: Mapping[str, str]

    @property
    def inverse(self) -> bool:
        """Whether the type is ``not-<type>``."""
        return self.assertion.negated

    @property
    def threshold(self) -> float | None:
        """The assertion's threshold."""
        return self.assertion.threshold


Handler = Callable[[HandlerCall], Awaitable[Verdict]]


def _string_value(call: HandlerCall, what: str) -> str:
    if not isinstance(call.value, str):
        raise HandlerError(
            f'Error: Invariant failed: "{what}" assertion type must have a string value'
        )
    return call.value


def _references(call: HandlerCall, what: str) -> list[str]:
    value = call.value
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise HandlerError(
        f'Error: Invariant failed: "{what}" assertion must have a string or array of strings value'
    )


def _scored(call: HandlerCall, score: float, default: float, name: str) -> Verdict:
    """The verdict ``score >= threshold !== inverse``, scoring ``1 - score`` for ``not-``."""
    threshold = default if call.threshold is None else call.threshold
    passed = (score >= threshold) != call.inverse
    failure = f"{name} score {score:.4f} is {'greater' if call.inverse else 'less'} than threshold"
    reason = PASSED if passed else f"{failure} {threshold:g}"
    return Verdict(passed, 1 - score if call.inverse else score, reason)


def _utf16(text: str) -> str:
    """``text`` as one character per UTF-16 unit (what JavaScript's string length counts)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return "".join(chr(int.from_bytes(data[i : i + 2], "little")) for i in range(0, len(data), 2))


async def _levenshtein(call: HandlerCall) -> Verdict:
    value = _string_value(call, "levenshtein")
    distance = levenshtein_distance(_utf16(call.text), _utf16(value))
    threshold = 5 if call.threshold is None else call.threshold
    passed = (distance <= threshold) != call.inverse
    return verdict(passed, f"Levenshtein distance {distance} is not within threshold {threshold:g}")


async def _rouge(call: HandlerCall) -> Verdict:
    if not isinstance(call.value, str):
        raise HandlerError('Error: Invariant failed: "rouge" assertion type must be a string value')
    score = rouge_n(call.text.lower(), call.value.lower(), n=1, measure="f1")
    return _scored(call, score, 0.75, "ROUGE-N")


async def _bleu(call: HandlerCall) -> Verdict:
    return _scored(call, bleu_score(call.text, _references(call, "bleu")), 0.5, "BLEU")


async def _gleu(call: HandlerCall) -> Verdict:
    references = _references(call, "gleu")
    if not call.text or not references:
        raise HandlerError("Error: Invalid inputs")
    return _scored(call, gleu_score(call.text, references), 0.5, "GLEU")


async def _budget(call: HandlerCall) -> Verdict:
    base = call.assertion.base_type
    name = "Latency" if base == "latency" else "Cost"
    if call.threshold is None:
        unit = " in milliseconds" if base == "latency" else ""
        raise HandlerError(f"Error: {name} assertion must have a threshold{unit}")
    measured = call.latency_ms if base == "latency" else call.cost
    if measured is None:
        raise HandlerError(
            "Error: Cost assertion does not support providers that do not return cost"
        )
    passed = (measured <= call.threshold) != call.inverse
    return verdict(passed, f"{name} {measured:g} is not within threshold {call.threshold:g}")


async def _is_json(call: HandlerCall) -> Verdict:
    return is_json(call.text, call.value, inverse=call.inverse)


async def _contains_json(call: HandlerCall) -> Verdict:
    return contains_json(call.text, call.value, inverse=call.inverse)


async def _regex(call: HandlerCall) -> Verdict:
    pattern = call.value
    if not (isinstance(pattern, str) and pattern):
        raise HandlerError(
            'Error: Invariant failed: "regex" assertion type must have a string value'
        )
    try:
        found = JsRegExp(pattern).test(call.text)
    except JsSyntaxError as exc:
        return Verdict(False, 0.0, f"Invalid regex pattern: {exc}")
    except JsUnsupported as exc:
        raise HandlerError(
            f"unsupported: coalmine cannot match the JavaScript regex {pattern!r} ({exc})"
        ) from None
    not_ = "not " if call.inverse else ""
    return verdict(found != call.inverse, f'Expected output to {not_}match regex "{pattern}"')


async def _contains_html(call: HandlerCall) -> Verdict:
    passed = html_found(call.text) != call.inverse
    expected = f"Expected output to {'not ' if call.inverse else ''}contain HTML content"
    return verdict(passed, expected)


async def _equals(call: HandlerCall) -> Verdict:
    value = call.value
    undefined = value is None and "value" not in call.assertion.model_fields_set
    if not undefined and (value is None or isinstance(value, dict | list)):
        try:  # util.isDeepStrictEqual with JSON.parse(output): a throw fails it
            passed = json_equal(value, js_json_parse(call.text)) != call.inverse
        except (ValueError, TypeError):
            passed = call.inverse
        shown = js_json_stringify(to_js(value)) or ""
    else:
        shown = "undefined" if undefined else js_string(value)
        passed = (shown == call.text) != call.inverse
    expected = f'Expected output "{call.text}" to {"not " if call.inverse else ""}equal'
    return verdict(passed, f'{expected} "{shown}"')


def _lower(text: str, base: str) -> str:
    """``toLowerCase`` for the ``icontains`` types (Python's ``lower``, never ``casefold``)."""
    return text.lower() if base.startswith("icontains") else text


async def _contains(call: HandlerCall) -> Verdict:
    base, value = call.assertion.base_type, call.value
    if not (
        (isinstance(value, str) and value)
        or (isinstance(value, int | float) and not isinstance(value, bool) and value == value)
    ):
        raise HandlerError(
            f'Error: Invariant failed: "{base}" assertion type must have a string or number value'
        )
    found = _lower(js_string(value), base) in _lower(call.text, base)
    not_ = "not " if call.inverse else ""
    return verdict(found != call.inverse, f'Expected output to {not_}contain "{js_string(value)}"')


async def _contains_list(call: HandlerCall) -> Verdict:
    base, value = call.assertion.base_type, call.value
    if not js_truthy(value):
        raise HandlerError(f'Error: Invariant failed: "{base}" assertion type must have a value')
    if isinstance(value, str):
        try:
            value = split_values(value)
        except ValueError as exc:
            raise HandlerError(f"Error: Invariant failed: {exc}") from None
    if not isinstance(value, list):
        raise HandlerError(
            f'Error: Invariant failed: "{base}" assertion type must have an array value'
        )
    text = _lower(call.text, base)
    missing = [v for v in value if _lower(js_string(v), base) not in text]
    not_ = "not " if call.inverse else ""
    if base.endswith("-any"):
        passed = len(missing) < len(value)
        failure = f'Expected output to {not_}contain one of "{js_join(value, ", ")}"'
    else:
        passed = not missing
        failure = (
            f"Expected output to {not_}contain all of [{js_join(value, ', ')}]. "
            f"Missing: [{js_join(missing, ', ')}]"
        )
    return verdict(passed != call.inverse, failure)


async def _finish_reason(call: HandlerCall) -> Verdict:
    value = _string_value(call, "finish-reason")
    found = call.provider_response.get("finishReason")
    if not js_truthy(found):
        return verdict(call.inverse, "Provider did not supply stop/finish reason")
    if not isinstance(found, str):
        raise HandlerError("TypeError: providerResponse.finishReason.toLowerCase is not a function")
    passed = (value.lower() == found.lower()) != call.inverse
    expected = f'Expected finish reason {"not " if call.inverse else ""}"{value}"'
    return verdict(passed, f'{expected} but got "{found}"')


async def _tools_call(call: HandlerCall) -> Verdict:
    """The tools call check of promptfoo's handler, which never reads ``inverse``."""
    text = call.text
    if "MCP Tool Result" in text or "MCP Tool Error" in text:
        return verdict("MCP Tool Error" not in text, "MCP tool call failed")
    calls = call.output
    if isinstance(calls, dict) and "tool_calls" in calls:
        calls = calls["tool_calls"]
    if not _valid_looking(calls):
        shown = js_json_stringify(calls)
        return verdict(False, f"OpenAI did not return a valid-looking tools response: {shown}")
    provider_config = call.provider.get("config")
    if not isinstance(provider_config, Mapping):
        raise HandlerError("TypeError: Cannot read properties of undefined (reading 'tools')")
    tools = provider_config.get("tools")
    if js_truthy(tools):
        tools = _load_tools(tools, call)
    if not js_truthy(tools):
        return verdict(False, "No tools configured in provider, but output contains tool calls")
    if not isinstance(tools, list):
        return verdict(False, "tools.filter is not a function")
    functions = [
        t["function"] for t in tools if isinstance(t, dict) and t.get("type") == "function"
        and "function" in t
    ]  # fmt: skip
    for item in calls:
        problem = _function_call_problem(item["function"], functions)
        if problem is not None:
            return verdict(False, problem)
    return verdict(True, "")


def _valid_looking(calls: Any) -> bool:
    if not isinstance(calls, list) or not calls:
        return False
    for item in calls:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict):
            return False
        if not isinstance(function.get("name"), str):
            return False
        if not isinstance(function.get("arguments"), str):
            return False
    return True


def _load_tools(tools: Any, call: HandlerCall) -> Any:
    """The tools as promptfoo loads them: vars rendered, a ``file://`` read."""
    try:
        rendered = render_vars_in_object(tools, call.variables, env=call.env)
    except TemplateError as exc:
        raise HandlerError(str(exc)) from None
    if isinstance(rendered, str) and rendered.startswith("file://"):
        path, function = split_file_url(rendered)
        if function is not None or path.endswith((".py", ".js", ".mjs", ".cjs", ".ts")):
            raise HandlerError(f"unsupported: tools from code ({rendered}) in a tools-call check")
        try:
            return load_file_ref(rendered, base_dir=call.base_dir)
        except ReadError as exc:
            raise HandlerError(exc.message) from None
    return rendered


def _function_call_problem(function: Mapping[str, Any], functions: list[Any]) -> str | None:
    """Why the call does not fit its function (``validateFunctionCall``), or None."""
    try:
        arguments = json.loads(function["arguments"], parse_constant=_no_constant)
    except ValueError as exc:
        return f"SyntaxError: {exc}"
    name = function["name"]
    schema = next(
        (f.get("parameters") for f in functions if isinstance(f, dict) and f.get("name") == name),
        None,
    )
    if not js_truthy(schema):
        return f'Called "{name}", but there is no function with that name'
    try:
        validator = schema_validator(schema, "tools call")
    except HandlerError as exc:
        return exc.message
    errors = [e.message for e in validator.iter_errors(arguments)]
    return f'Call to "{name}" does not match schema: {errors}' if errors else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def _own_code(call: HandlerCall) -> Verdict:
    check = OwnCodeCheck(
        base_type=call.assertion.base_type,
        inverse=call.inverse,
        value=call.value,
        threshold=call.threshold,
        config=call.assertion.config or None,
        output=call.output,
        response=call.provider_response,
        provider=call.provider,
        variables=call.variables,
        latency_ms=call.latency_ms,
        prompt=call.prompt,
    )
    return await own_code_check(check, base_dir=call.base_dir, node=call.node)


HANDLERS: dict[str, Handler] = {
    "levenshtein": _levenshtein,
    "rouge-n": _rouge,
    "bleu": _bleu,
    "gleu": _gleu,
    "latency": _budget,
    "cost": _budget,
    "is-json": _is_json,
    "contains-json": _contains_json,
    "contains-html": _contains_html,
    "regex": _regex,
    "equals": _equals,
    "contains": _contains,
    "icontains": _contains,
    "contains-any": _contains_list,
    "contains-all": _contains_list,
    "icontains-any": _contains_list,
    "icontains-all": _contains_list,
    "finish-reason": _finish_reason,
    "is-valid-openai-tools-call": _tools_call,
    **{name: _own_code for name in OWN_CODE_TYPES},
}
assert frozenset(HANDLERS) == HANDLED  # the mapping sends exactly these here


async def handle(call: HandlerCall) -> Verdict:
    """The verdict of promptfoo's handler on one assertion of a handled type.

    Raises:
        HandlerError: where promptfoo's handler throws (the row is an ERROR).
    """
    return await HANDLERS[call.assertion.base_type](call)
