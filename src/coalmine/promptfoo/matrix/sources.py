"""Read the files a promptfoo config names, with the semantics of promptfoo's JavaScript.

promptfoo 0.121.20 parses YAML with js-yaml 5 and a YAML 1.2 core schema (``yes``/``on`` stay
strings, ``017`` is seventeen, ``1.0`` is the number 1), and JSON with ``JSON.parse``. The readers
here give the same values and keep the line of every key and list item, so each problem names
its file and line. Problems are collected, not raised one at a time (:class:`Problems`).

Every file a config names is read through :func:`read_text` or :func:`read_bytes`, which refuse
one outside the folder :func:`reading_inside` set for the read (the project that holds the
config): a ``file://../../etc/passwd`` is never read, sent to an agent or stored.
"""

from __future__ import annotations

import datetime as dt
import glob as globlib
import json
import math
import posixpath
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cmp_to_key
from pathlib import Path
from typing import Any

import yaml

from coalmine._source import GuardedComposer, mapping_pairs
from coalmine._util.locations import OutsideProject, inside_root
from coalmine.errors import ConfigError

__all__ = [
    "Doc",
    "Problem",
    "Problems",
    "ReadError",
    "expand_braces",
    "glob_files",
    "has_magic",
    "is_code_file",
    "js_keys",
    "js_slice",
    "js_stringify",
    "load_json",
    "load_yaml_text",
    "read_bytes",
    "read_text",
    "reading_inside",
    "require_inside",
    "split_file_url",
]

Loc = tuple[str | int, ...]


class ReadError(Exception):
    """A file could not be read or parsed (``line``, or the data location ``loc``, when known)."""

    def __init__(self, message: str, *, line: int | None = None, loc: Loc | None = None):
        self.message = message
        self.line = line
        self.loc = loc
        super().__init__(message)


@dataclass(frozen=True)
class Problem:
    """One error or warning, at a file and line."""

    path: Path
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.message}"


@dataclass
class Problems:
    """Errors and warnings collected while a config is read; one ``ConfigError`` lists them all."""

    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def error(self, message: str, *, path: Path, line: int | None = None) -> None:
        """Record an error (the matrix cannot be built as promptfoo would)."""
        self.errors.append(Problem(path, line, message))

    def warn(self, message: str, *, path: Path, line: int | None = None) -> None:
        """Record a warning (something is ignored or differs from promptfoo), once."""
        problem = Problem(path, line, message)
        if problem not in self.warnings:
            self.warnings.append(problem)

    def raise_if_any(self) -> None:
        """Raise one ``ConfigError`` naming every error (the first gives ``path`` and ``line``)."""
        if not self.errors:
            return
        first = self.errors[0]
        if len(self.errors) == 1:
            raise ConfigError(first.message, path=first.path, line=first.line)
        listed = "\n".join(f"  {p}" for p in self.errors)
        error = ConfigError(
            f"{len(self.errors)} problems in the promptfoo config:\n{listed}",
            path=None,
        )
        error.path, error.line = first.path, first.line
        raise error


@dataclass(frozen=True)
class Doc:
    """Parsed data plus the line of every key and list item (1-based)."""

    path: Path
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest parent that has one."""
        key = tuple(loc)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return 1 if self.data is not None else None


# --- YAML 1.2 core schema, as js-yaml's CORE_SCHEMA (+ merge keys and timestamps) ---------


class _CoreLoader(GuardedComposer, yaml.SafeLoader):
    """PyYAML loader whose implicit types are YAML 1.2 core, as js-yaml resolves them.

    The pure-Python loader: the libyaml one, subclassed like this, built untagged nodes while
    coverage traced this module. Configs are small.
    """

    yaml_implicit_resolvers: dict[str | None, list[tuple[str, re.Pattern[str]]]] = {}


_RESOLVERS = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", "<"),
    (
        "tag:yaml.org,2002:timestamp",
        r"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
        r"(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
        r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)$",
        "0123456789",
    ),
]
for _tag, _pattern, _first in _RESOLVERS:
    _CoreLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def _js_number(value: float) -> int | float:
    """A JavaScript number as Python keeps it: integral values within 2**53 become ``int``."""
    if math.isfinite(value) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return value


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)  # "017" is seventeen in YAML 1.2


def _construct_float(loader: Any, node: yaml.ScalarNode) -> int | float:
    text = str(loader.construct_scalar(node)).lower()
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if text == ".nan":
        return math.nan
    return _js_number(float(text))


_CoreLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_CoreLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def load_yaml_text(text: str, *, path: Path, dates: bool = False) -> Doc:
    """Parse one YAML document as promptfoo's ``loadYaml`` does; empty text gives ``None``.

    A timestamp (``2024-05-01``) is a JavaScript ``Date`` to js-yaml, which promptfoo's walk of
    a config or tests file (``maybeLoadConfigFromExternalFile``) copies into an empty object:
    ``{}`` is what its vars, values and metadata hold. ``dates=True`` keeps the date, as a var
    file or a prompt file read whole has it (``JSON.stringify`` writes its ISO time).
    """
    loader = _CoreLoader(text)
    try:
        if not loader.check_node():
            return Doc(path, None)
        node = loader.get_node()
        if node is None or loader.check_node():
            raise ReadError("expected a single document in the stream, but found more")
        lines: dict[Loc, int] = {}
        data = _construct(loader, node, (), lines, dates)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise ReadError(f"invalid YAML: {problem}", line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise ReadError(f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return Doc(path, data, lines)


def _construct(loader: Any, node: yaml.Node, loc: Loc, lines: dict[Loc, int], dates: bool) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        own: set[Any] = set()
        for key_node, value_node, merged in mapping_pairs(node):
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):  # JavaScript object keys are strings
                key = js_stringify(key) if not isinstance(key, str | int) else str(key)
            if not merged and key in own:
                raise ReadError(
                    f"duplicated mapping key {key!r}", line=key_node.start_mark.line + 1
                )
            if not merged:
                own.add(key)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            out[key] = _construct(loader, value_node, (*loc, key), lines, dates)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            lines[(*loc, i)] = item.start_mark.line + 1
            items.append(_construct(loader, item, (*loc, i), lines, dates))
        return items
    if not dates and node.tag == "tag:yaml.org,2002:timestamp":
        return {}
    return loader.construct_object(node, deep=True)


def load_yaml_value(text: str) -> Any:
    """Parse one YAML document as js-yaml's ``load(text, {json: true})``.

    A repeated key's last value wins; keys become strings. ``ReadError`` when it is not YAML.
    """
    loader = _CoreLoader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else _string_keys(loader.construct_document(node))
    except yaml.YAMLError as exc:
        raise ReadError(f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()


def _string_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str) else str(k) if isinstance(k, int) else js_stringify(k)):
            _string_keys(v) for k, v in value.items()
        }  # fmt: skip
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value


def load_json(text: str, *, path: Path) -> Doc:
    """Parse JSON as ``JSON.parse`` does; lines come from reading it as YAML when possible."""
    try:
        data = json.loads(text, parse_float=lambda s: _js_number(float(s)), parse_constant=_no_nan)
    except json.JSONDecodeError as exc:
        raise ReadError(f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    except ValueError as exc:
        raise ReadError(f"invalid JSON: {exc}") from None
    try:
        lines = load_yaml_text(text, path=path).lines
    except ReadError:
        lines = {}
    return Doc(path, data, lines)


def _no_nan(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_ROOTS: ContextVar[tuple[Path, ...]] = ContextVar("promptfoo_roots", default=())


@contextmanager
def reading_inside(*roots: Path) -> Iterator[None]:
    """Within the block, files a config names must resolve inside one of ``roots``."""
    token = _ROOTS.set(roots)
    try:
        yield
    finally:
        _ROOTS.reset(token)


def require_inside(path: Path) -> Path:
    """``path`` resolved; a ``ReadError`` when it leaves every folder of ``reading_inside``."""
    roots = _ROOTS.get()
    refusal: OutsideProject | None = None
    for root in roots:
        try:
            return inside_root(path, base=Path.cwd(), root=root, what="file")
        except OutsideProject as exc:
            refusal = refusal or exc
    if refusal is not None:
        raise ReadError(str(refusal)) from None
    return path


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path`` (a ``ReadError`` says why it cannot be read)."""
    try:
        return require_inside(path).read_bytes()
    except OSError as exc:
        raise ReadError(f"cannot read {path}: {exc.strerror}") from None


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path`` (a ``ReadError`` says why it cannot be read)."""
    try:
        return require_inside(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReadError("file does not exist") from None
    except UnicodeDecodeError as exc:
        raise ReadError(f"not valid UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise ReadError(f"cannot read: {exc.strerror}") from None


# --- file names ---------------------------------------------------------------------------------

_JS = re.compile(r"\.(?:js|cjs|mjs|ts|cts|mts)$", re.IGNORECASE)


def is_code_file(path: str) -> bool:
    """Whether ``path`` is a JavaScript/TypeScript or Python file (promptfoo runs those)."""
    return bool(_JS.search(path)) or path.endswith(".py")


def split_file_url(url: str) -> tuple[str, str | None]:
    """``file://path[:function]`` → (path, function); only code files take a function name."""
    rest = url.removeprefix("file://")
    colon = rest.rfind(":")
    if colon > 1 and is_code_file(rest[:colon]):
        return rest[:colon], rest[colon + 1 :]
    return rest, None


# --- globs, as node-glob ------------------------------------------------------------------------


def expand_braces(pattern: str) -> list[str]:
    """Expand ``{a,b}`` alternatives (nested too), as minimatch does before matching."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                parts = _split_top(pattern[start + 1 : i])
                if len(parts) < 2:
                    continue
                head, tail = pattern[:start], pattern[i + 1 :]
                return [x for part in parts for x in expand_braces(head + part + tail)]
    return [pattern]


def _split_top(inner: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        current += ch
    return [*parts, current]


_MAGIC = re.compile(r"[*?]|\[[^\]]+\]|[@!+]\(")


def has_magic(pattern: str) -> bool:
    """Whether node-glob treats ``pattern`` as a pattern rather than a plain path."""
    expanded = expand_braces(pattern)
    return len(expanded) > 1 or any(_MAGIC.search(p) for p in expanded)


def glob_files(pattern: str, *, root: Path) -> list[str]:
    """Paths matching ``pattern`` (relative to ``root`` unless absolute), normalised.

    In node-glob's order, so that tests read from ``file://tests/*.yaml`` come in promptfoo's
    order: the alternatives of a ``{a,b}`` as written; within one, each folder's entries in
    reverse byte order (Node.js lists a folder sorted, and node-glob's walk emits it from the
    end), a folder's own matches before those found by descending into its subfolders.
    """
    found: dict[str, None] = {}
    for part in expand_braces(pattern):
        matches = [
            posixpath.normpath(match.replace("\\", "/"))
            for match in globlib.glob(part, root_dir=root, recursive=True)
        ]
        for match in sorted(matches, key=cmp_to_key(_node_glob_order)):
            found.setdefault(match)
    return list(found)


def _node_glob_order(a: str, b: str) -> int:
    left, right = a.split("/"), b.split("/")
    for i, (x, y) in enumerate(zip(left, right, strict=False)):
        if x == y:
            continue
        a_descends, b_descends = i < len(left) - 1, i < len(right) - 1
        if a_descends != b_descends:  # a folder's own match comes before its subfolders'
            return 1 if a_descends else -1
        return -1 if x > y else 1
    return len(left) - len(right)


# --- JavaScript value helpers ------------------------------------------------------------------

_ARRAY_INDEX = re.compile(r"^(?:0|[1-9][0-9]*)$")


def js_keys(mapping: dict[str, Any]) -> list[str]:
    """Keys in JavaScript's property order: array-index keys ascending, then insertion order."""
    index = [k for k in mapping if _ARRAY_INDEX.match(k) and int(k) < 2**32 - 1]
    return sorted(index, key=int) + [k for k in mapping if k not in index]


def js_slice(text: str, end: int) -> str:
    """``text.slice(0, end)`` counted in UTF-16 code units, as JavaScript counts."""
    units = text.encode("utf-16-le")[: 2 * end]
    return units.decode("utf-16-le", errors="ignore")


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)``: compact, JavaScript's key order and number format."""
    return "".join(_stringify(value))


def _stringify(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        by_name = {str(k): v for k, v in value.items()}
        yield "{"
        for i, key in enumerate(js_keys(by_name)):
            yield ("," if i else "") + json.dumps(key, ensure_ascii=False) + ":"
            yield from _stringify(by_name[key])
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for i, item in enumerate(value):
            yield "," if i else ""
            yield from _stringify(item)
        yield "]"
    elif isinstance(value, bool) or value is None:
        yield json.dumps(value)
    elif isinstance(value, int | float):
        yield _js_number_text(value)
    elif isinstance(value, dt.datetime | dt.date):
        yield json.dumps(_js_date(value))
    else:
        yield json.dumps(str(value), ensure_ascii=False)


def _js_number_text(value: float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "null"
    if isinstance(value, int):
        return str(value)
    if value == 0:
        return "0"  # JSON.stringify(-0) is "0"
    mantissa, _, exponent = repr(value).partition("e")
    power = int(exponent or 0)
    if -7 < power < 21:
        text = format(Decimal(repr(value)), "f")
        return text.removesuffix(".0") if "." in text else text
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


def _js_date(value: dt.date) -> str:
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    elif value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    utc = value.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
