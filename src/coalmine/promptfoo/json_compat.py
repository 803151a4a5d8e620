"""``is-json`` and ``contains-json`` exactly as promptfoo 0.121.20 grades them.

coalmine's native graders find arrays and parse strictly; promptfoo does neither, and a
``compat: promptfoo`` suite or a ``--promptfoo`` run must give promptfoo's verdict:

- ``contains-json`` looks only at ``{``: from each one it counts braces (not minding strings)
  until they balance or the text ends (then adds the missing ``}``), turns ``//`` comments
  into ``#`` and reads the span as YAML (so ``{name: Bob}`` is found, a top-level array is
  not); a span that reads as an object is taken and the search goes on after it, otherwise on
  from the next character (so an object nested in one that failed is still found). With a
  schema, the first object that fits passes; the verdict is that of the last object tried.
- ``is-json`` is ``JSON.parse`` of the whole output; a schema is checked only when it parsed.
- A schema is JSON Schema draft-07, as ajv's default instance reads it: another ``$schema``,
  an unknown keyword or an unknown ``format`` is an error (the row is an ERROR, as ajv's
  strict mode throws when it compiles); ``format`` is checked (``date``, ``email``,
  ``hostname``, ``ipv4``, ``uuid`` by ajv-formats' own patterns; the others as jsonschema
  checks them, where it can). A string value is read as YAML; another value that is not an
  object throws, as in promptfoo.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft7Validator, FormatChecker
from jsonschema.exceptions import SchemaError, best_match

from coalmine._util.jsonpath import parse_json
from coalmine.promptfoo.matrix.sources import ReadError, load_yaml_value
from coalmine.promptfoo.nunjucks import js_truthy
from coalmine.promptfoo.verdicts import HandlerError, Verdict, verdict

__all__ = [
    "contains_json",
    "convert_slash_comments",
    "extract_json_objects",
    "is_json",
    "schema_validator",
]

MAX_JSON_LENGTH = 100_000
_DRAFT7 = {"http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-07/schema#"}
_KEYWORDS = frozenset(
    {"$schema", "$id", "$ref", "$comment", "$defs", "definitions", "title", "description",
     "default", "examples", "readOnly", "writeOnly", "type", "enum", "const", "multipleOf",
     "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength",
     "pattern", "items", "additionalItems", "maxItems", "minItems", "uniqueItems", "contains",
     "maxProperties", "minProperties", "required", "properties", "patternProperties",
     "additionalProperties", "dependencies", "propertyNames", "if", "then", "else", "allOf",
     "anyOf", "oneOf", "not", "format", "contentMediaType", "contentEncoding", "formatMaximum",
     "formatMinimum", "formatExclusiveMaximum", "formatExclusiveMinimum"}
)  # fmt: skip
"""What ajv (draft-07, with ajv-formats) knows; another keyword fails its strict mode."""
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependencies")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "items")
_SCHEMA_ONE = ("items", "additionalItems", "contains", "additionalProperties",
               "propertyNames", "if", "then", "else", "not")  # fmt: skip
_AJV_FORMATS = frozenset(
    {"date", "time", "date-time", "iso-time", "iso-date-time", "duration", "uri",
     "uri-reference", "uri-template", "url", "email", "hostname", "ipv4", "ipv6", "regex", "uuid",
     "json-pointer", "json-pointer-uri-fragment", "relative-json-pointer", "byte", "int32",
     "int64", "float", "double", "password", "binary"}
)  # fmt: skip
_EMAIL = re.compile(
    r"^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$",
    re.IGNORECASE,
)
_HOSTNAME = re.compile(
    r"^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    r"(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$",
    re.IGNORECASE,
)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"^(?:{_OCTET}\.){{3}}{_OCTET}$")
_UUID = re.compile(r"^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$", re.IGNORECASE)
_DATE = re.compile(r"^(\d\d\d\d)-(\d\d)-(\d\d)$")
_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _date(text: str) -> bool:
    found = _DATE.match(text)
    if found is None:
        return False
    year, month, day = (int(g) for g in found.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 and leap else _DAYS[month])


def _format_checker() -> FormatChecker:
    checker = FormatChecker()
    patterns = {"email": _EMAIL, "hostname": _HOSTNAME, "ipv4": _IPV4, "uuid": _UUID}
    for name, pattern in patterns.items():
        checker.checks(name)(lambda v, p=pattern: not isinstance(v, str) or bool(p.match(v)))
    checker.checks("date")(lambda value: not isinstance(value, str) or _date(value))
    return checker


_CHECKER = _format_checker()


# ---------------------------------------------------------------- finding objects


def _escaped(line: str, at: int) -> bool:
    count = 0
    while at - count - 1 >= 0 and line[at - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def _convert_line(line: str) -> str:
    state, i = "normal", 0
    out: list[str] = []
    while i < len(line):
        char = line[i]
        nxt = line[i + 1] if i + 1 < len(line) else ""
        prev = line[i - 1] if i > 0 else ""
        if state == "normal":
            if char == "'" and not (prev.isascii() and prev.isalpha()):
                state = "single"
            elif char == '"':
                state = "double"
            elif char == "/" and nxt == "/":
                start = 0
                for j in range(i - 1, -1, -1):
                    if line[j].isspace():
                        start = j + 1
                        break
                if "://" not in line[start : i + 2]:
                    slashes = 2
                    while i + slashes < len(line) and line[i + slashes] == "/":
                        slashes += 1
                    return "".join(out) + "#" * (slashes // 2) + line[i + slashes :]
        elif state == "single":
            if char == "'" and not _escaped(line, i) and not (nxt.isascii() and nxt.isalpha()):
                state = "normal"
        elif char == '"' and not _escaped(line, i):
            state = "normal"
        out.append(char)
        i += 1
    return "".join(out)


def convert_slash_comments(text: str) -> str:
    """Turn ``//`` comments into ``#`` ones, as promptfoo's ``convertSlashCommentsToHash``.

    ``//`` outside quotes (and not in a URL) starts a comment; ``////`` becomes ``##``.
    """
    return "\n".join(_convert_line(line) for line in text.split("\n"))


def _object(span: str) -> Any:
    try:
        found = load_yaml_value(convert_slash_comments(span))
    except (ReadError, RecursionError):
        return None
    return found if isinstance(found, dict | list) else None


def extract_json_objects(text: str) -> list[Any]:
    """The objects promptfoo's ``extractJsonObjects`` finds in ``text``, in order."""
    found: list[Any] = []
    i = 0
    while i < len(text):
        if text[i] == "{":
            opened, closed, j = 1, 0, i + 1
            limit = min(i + MAX_JSON_LENGTH, len(text))
            while j < limit and opened > closed:
                if text[j] == "{":
                    opened += 1
                elif text[j] == "}":
                    closed += 1
                j += 1
                if opened == closed or j == len(text) or j == i + MAX_JSON_LENGTH:
                    value = _object(text[i:j] + "}" * max(0, opened - closed))
                    if value is not None:
                        found.append(value)
                        i = j - 1
                        break
                    if opened == closed:
                        break
        i += 1
    return found


# ---------------------------------------------------------------- schemas


def _subschemas(schema: dict[str, Any]) -> Iterator[Any]:
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            yield from schema[key].values()
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            yield from schema[key]
    for key in _SCHEMA_ONE:
        if key in schema and not isinstance(schema[key], list):
            yield schema[key]


def _check_strict(schema: Any, at: str = "#") -> None:
    if not isinstance(schema, dict):
        return
    for key in schema:
        if key not in _KEYWORDS:
            raise HandlerError(f'Error: strict mode: unknown keyword: "{key}"')
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt not in _AJV_FORMATS:
        raise HandlerError(f'Error: unknown format "{fmt}" ignored in schema at path "{at}"')
    for sub in _subschemas(schema):
        _check_strict(sub, at)


@functools.lru_cache(maxsize=256)
def _compiled(schema_text: str) -> Draft7Validator:
    schema = json.loads(schema_text)
    if not isinstance(schema, dict | bool):
        raise HandlerError("Error: schema must be object or boolean")
    if isinstance(schema, dict):
        declared = schema.get("$schema")
        if declared is not None and declared not in _DRAFT7:
            raise HandlerError(f'Error: no schema with key or ref "{declared}"')
        _check_strict(schema)
    try:
        Draft7Validator.check_schema(schema)
    except SchemaError as exc:
        raise HandlerError(f"Error: schema is invalid: {exc.message}") from None
    return Draft7Validator(schema, format_checker=_CHECKER)


def schema_validator(value: Any, kind: str) -> Draft7Validator:
    """The compiled schema of an assertion's value (promptfoo throws where this raises)."""
    if isinstance(value, str):
        try:
            value = load_yaml_value(value)
        except ReadError as exc:
            raise HandlerError(f"YAMLException: {exc.message}") from None
    elif not isinstance(value, dict | list):
        raise HandlerError(f"Error: {kind} assertion must have a string or object value")
    try:
        return _compiled(json.dumps(value, sort_keys=True))
    except (TypeError, ValueError):
        raise HandlerError("Error: schema must be object or boolean") from None


def _problem(validator: Draft7Validator, value: Any) -> str | None:
    error = best_match(validator.iter_errors(value))
    return None if error is None else f"{error.json_path} {error.message}"


def is_json(text: str, value: Any, *, inverse: bool) -> Verdict:
    """``is-json`` / ``not-is-json`` of promptfoo's ``handleIsJson``."""
    try:
        parsed, ok = parse_json(text), True
    except ValueError:
        parsed, ok = None, False
    if ok and js_truthy(value):
        problem = _problem(schema_validator(value, "is-json"), parsed)
        if (problem is None) == inverse:
            reason = (
                "Output is JSON that conforms to the provided schema"
                if inverse
                else f"JSON does not conform to the provided schema. Errors: {problem}"
            )
            return Verdict(False, 0.0, reason)
        return verdict(True, "")
    return verdict(ok != inverse, "Expected output to be valid JSON")


def contains_json(text: str, value: Any, *, inverse: bool) -> Verdict:
    """``contains-json`` / ``not-contains-json`` of promptfoo's ``handleContainsJson``."""
    objects = extract_json_objects(text)
    passed = not objects if inverse else bool(objects)
    reason = "Expected output to contain valid JSON"
    if objects and js_truthy(value):
        validator = schema_validator(value, "contains-json")
        for found in objects:
            problem = _problem(validator, found)
            passed = (problem is None) != inverse
            if problem is None:
                if inverse:
                    reason = "Output contains JSON conforming to the provided schema"
                break
            reason = f"JSON does not conform to the provided schema. Errors: {problem}"
    return verdict(passed, reason)
