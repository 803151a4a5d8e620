"""Documents that remember where each value came from, and errors that say file:line.

YAML is composed node by node so every key and list item keeps its line; pydantic errors are
then mapped back to the line of the value they concern (or of its nearest parent). TOML has no
positions in ``tomllib``, so its lines are found by a scan of the text (good enough to point a
user at the right key). Config and spec loading both use this module.

Every YAML coalmine reads goes through :class:`GuardedComposer` (``load_yaml``, ``safe_load``,
and the promptfoo reader's own loader): a recursive alias, aliases that would expand past
:data:`MAX_ALIAS_NODES` nodes, or nesting past :data:`MAX_DEPTH` levels are refused at the
alias's line while the document is composed, before any value is built.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import BaseModel, ValidationError
from yaml.composer import Composer, ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.resolver import Resolver

from coalmine.errors import SpecError

Loc = tuple[str | int, ...]

_STR_TAG = "tag:yaml.org,2002:str"

MAX_ALIAS_NODES = 100_000
"""How many nodes the aliases of one document may add when expanded.

A real file reuses a few small anchors (``defaults: &d`` given twice adds a dozen nodes); an
alias bomb grows by a factor at each level, so nine nested anchors of nine items would add
387 million. 100,000 nodes build in well under a second and a few tens of megabytes, and the
count is made per node as it is composed (memoised), so refusing costs no more than reading."""
MAX_DEPTH = 100
"""How deeply collections may nest; specs nest a few levels, and deeper would exhaust the
recursion of the builders."""


class GuardedComposer(Composer):
    """A composer that refuses recursive aliases, alias bombs and runaway nesting.

    Mixed in before a loader's own composer. Each node's expanded size (aliases counted as
    what they stand for) is kept as it is composed, so an alias adds the size of its anchor's
    node; an alias to a node still being composed is recursive. Errors are ``ComposerError``
    at the alias's line, which every caller already reports as invalid YAML.
    """

    _sizes: dict[int, int]
    _added: int
    _depth: int

    def compose_document(self) -> Node | None:
        """Compose one document with fresh counts."""
        self._sizes, self._added, self._depth = {}, 0, 0
        return super().compose_document()

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        """Compose one node, counting what it expands to."""
        if self.check_event(AliasEvent):  # type: ignore[attr-defined]
            event = self.peek_event()  # type: ignore[attr-defined]
            target = self.anchors.get(event.anchor)
            if target is not None:  # an undefined alias is the composer's own error
                size = self._sizes.get(id(target))
                if size is None:
                    raise ComposerError(
                        None,
                        None,
                        f"the alias *{event.anchor} is inside the node it refers to "
                        "(a recursive alias)",
                        event.start_mark,
                    )
                self._added += size
                if self._added > MAX_ALIAS_NODES:
                    raise ComposerError(
                        None,
                        None,
                        f"the aliases up to *{event.anchor} expand to more than "
                        f"{MAX_ALIAS_NODES:,} nodes; write the values out or reuse less",
                        event.start_mark,
                    )
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[attr-defined]
            raise ComposerError(None, None, f"nested more than {MAX_DEPTH} levels deep", mark)
        self._depth += 1
        node = super().compose_node(parent, index)
        self._depth -= 1
        sizes = self._sizes
        if isinstance(node, SequenceNode):
            size = 1 + sum(sizes[id(item)] for item in node.value)
        elif isinstance(node, MappingNode):
            size = 1 + sum(sizes[id(k)] + sizes[id(v)] for k, v in node.value)
        else:
            size = 1
        sizes[id(node)] = size
        return node


try:  # libyaml's parser when PyYAML was built with it (faster), else the pure-Python one
    from yaml._yaml import CParser

    class _Loader(GuardedComposer, CParser, SafeConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

except ImportError:  # pragma: no cover - PyYAML without libyaml

    class _Loader(GuardedComposer, yaml.SafeLoader):  # type: ignore[no-redef]
        pass


def read_json(text: str) -> Any:
    """``json.loads`` of a file's text, refusing nesting past :data:`MAX_DEPTH` as YAML does.

    Raises:
        json.JSONDecodeError: not JSON, or nested too deeply (which would otherwise exhaust
            the recursion of the decoder or of what reads the value).
    """
    try:
        data = json.loads(text)
    except RecursionError:
        data, deep = None, True
    else:  # fewer openers than the limit cannot nest past it (the common case, at C speed)
        openers = text.count("[") + text.count("{")
        deep = openers > MAX_DEPTH and _deeper_than(data, MAX_DEPTH)
    if deep:
        raise json.JSONDecodeError(f"nested more than {MAX_DEPTH} levels deep", text, 0)
    return data


def _deeper_than(data: Any, limit: int) -> bool:
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > limit:
                return True
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items if isinstance(item, dict | list))
    return False


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with the guard: plain values, or a ``yaml.YAMLError``."""
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


class SourceError(SpecError):
    """A document could not be read or parsed.

    Callers turn it into their own error; one that reaches the CLI is a spec error (exit 2),
    and its text always names the file and the line.
    """

    def __init__(self, message: str, *, path: Path, line: int | None = None):
        super().__init__(message, path=path, line=line)
        self.message = message


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document, at a line."""

    line: int | None
    message: str


@dataclass(frozen=True)
class Document:
    """Parsed data plus the line of every key and list item (1-based)."""

    path: Path
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)
    first_line: int = 1

    def line_of(self, loc: Sequence[str | int]) -> int:
        """Return the line of ``loc``, or of its nearest parent that has one."""
        key = tuple(loc)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.first_line


def load_yaml(path: Path, *, text: str | None = None) -> Document:
    """Parse one YAML document, keeping the line of every key; duplicate keys are errors."""
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"not valid UTF-8 ({exc.reason})", path=path) from None
        except OSError as exc:
            raise SourceError(f"cannot read: {exc.strerror}", path=path) from None
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Document(path, None)
        lines: dict[Loc, int] = {}
        data = _construct(loader, node, (), lines, path)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SourceError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise SourceError(f"invalid YAML: {exc}", path=path) from None
    finally:
        loader.dispose()
    return Document(path, data, lines, node.start_mark.line + 1)


class Pair(NamedTuple):
    """One key and value of a mapping; ``merged`` when it came in through a ``<<`` merge key."""

    key: Node
    value: Node
    merged: bool


_MERGE_TAG = "tag:yaml.org,2002:merge"


def mapping_pairs(node: MappingNode) -> list[Pair]:
    """The pairs of ``node`` with its merge keys applied, merged ones first.

    A later pair wins over an earlier one, so the mapping's own keys override merged ones, and
    of several merged mappings the first listed wins, as YAML's merge key says. The node is
    left as it is (an aliased node may be built again).
    """
    merged: list[Pair] = []
    own: list[Pair] = []
    for key_node, value_node in node.value:
        if key_node.tag != _MERGE_TAG:
            own.append(Pair(key_node, value_node, False))
            continue
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        for source in reversed(sources):
            if not isinstance(source, MappingNode):
                raise ConstructorError(
                    None, None, "a merge key (<<) takes a mapping or a list of them",
                    source.start_mark,
                )  # fmt: skip
            merged += [Pair(p.key, p.value, True) for p in mapping_pairs(source)]
    return merged + own


def _construct(loader: Any, node: yaml.Node, loc: Loc, lines: dict[Loc, int], path: Path) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        own: set[Any] = set()
        for key_node, value_node, merged in mapping_pairs(node):
            key = _scalar(loader, key_node)
            if not isinstance(key, str | int):
                key = str(key)
            line = key_node.start_mark.line + 1
            if not merged and key in own:
                first = lines[(*loc, key)]
                raise SourceError(
                    f"duplicate key {key!r} (first given at line {first})", path=path, line=line
                )
            if not merged:
                own.add(key)
            lines[(*loc, key)] = line
            out[key] = _construct(loader, value_node, (*loc, key), lines, path)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            lines[(*loc, i)] = item.start_mark.line + 1
            items.append(_construct(loader, item, (*loc, i), lines, path))
        return items
    return _scalar(loader, node)


def _scalar(loader: Any, node: yaml.Node) -> Any:
    if node.tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
        return node.value  # the common case, without the constructor's dispatch
    return loader.construct_object(node, deep=True)


def load_toml_table(path: Path, table: tuple[str, ...]) -> Document | None:
    """Return the table at ``table`` (e.g. ``("tool", "coalmine")``) of a TOML file, if present."""
    try:
        text = path.read_text(encoding="utf-8")
        data: Any = tomllib.loads(text)
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror}", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = int(match.group(1)) if match else None
        raise SourceError(f"invalid TOML: {exc}", path=path, line=line) from None
    for part in table:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    header = re.compile(r"^\s*\[+\s*" + r"\s*\.\s*".join(map(re.escape, table)) + r"\b")
    text_lines = text.splitlines()
    start = next((i for i, ln in enumerate(text_lines) if header.match(ln)), 0)
    lines: dict[Loc, int] = {}
    _scan_toml_lines(data, (), text_lines, start, lines)
    return Document(path, data, lines, start + 1)


def _scan_toml_lines(
    data: Any, loc: Loc, text_lines: list[str], start: int, lines: dict[Loc, int]
) -> None:
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        # "key = …", or a table header whose dotted name has "key" as a whole part.
        pattern = re.compile(
            r"^\s*(\[+\s*(?:[^\]]*\.)?\s*)?[\"']?" + re.escape(str(key)) + r"[\"']?\s*(=|\]|\.)"
        )
        line = next(
            (i + 1 for i in range(start, len(text_lines)) if pattern.search(text_lines[i])), None
        )
        if line is not None:
            lines[(*loc, key)] = line
            _scan_toml_lines(value, (*loc, key), text_lines, line - 1, lines)


def _written_keys(model: type[BaseModel]) -> list[str]:
    """The keys a file writes for ``model``: each field's alias where it has one."""
    return sorted(info.alias or name for name, info in model.model_fields.items())


def validation_problems(
    exc: ValidationError, doc: Document, model: type[BaseModel], *, prefix: Loc = ()
) -> list[Problem]:
    """Turn a pydantic error into problems at lines, naming valid keys for unknown ones."""
    problems = []
    for err in exc.errors(include_url=False):
        loc: Loc = tuple(err["loc"])
        where = ".".join(str(p) for p in (*prefix, *loc)) or "(top level)"
        if err["type"] == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            valid = _written_keys(parent) if parent is not None else []
            message = f"unknown key {loc[-1]!r}"
            if prefix + loc[:-1]:
                message += f" in {_dotted(prefix + loc[:-1])}"
            message += did_you_mean(str(loc[-1]), valid)
            if valid:
                message += f"; valid keys: {', '.join(valid)}"
        elif err["type"] == "missing":
            message = f"missing required key {where!r}"
        else:
            message = f"{where}: {err['msg']}"
        problems.append(Problem(doc.line_of((*prefix, *loc)), message))
    return problems


def _dotted(loc: Loc) -> str:
    return ".".join(str(p) for p in loc)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """Follow ``loc`` through the fields of ``model`` to the model that holds the last key."""
    current: Any = model
    for part in loc:
        current = _unwrap(current, part)
        if current is None:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any, part: str | int) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        info = annotation.model_fields.get(str(part))
        return info.annotation if info is not None else None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple, Sequence) and isinstance(part, int):
        return args[0] if args else None
    if origin is dict and args:
        return args[1]
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            found = _unwrap(arg, part)
            if found is not None:
                return found
    if origin is typing.Annotated:
        return _unwrap(args[0], part)
    return None
