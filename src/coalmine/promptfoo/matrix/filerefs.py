"""``file://`` references, ``$ref`` pointers and ``{{ env.X }}`` in a promptfoo config.

promptfoo resolves each of these at a different moment; the functions here do what it does:

- :func:`load_file_refs` is promptfoo's ``maybeLoadConfigFromExternalFile``: it replaces every
  ``file://`` string of a test file, a vars file or a provider file with the file's content
  (JSON and YAML parsed, CSV as records, anything else as text, untrimmed), except under
  ``vars`` and for the Python/JavaScript ``value`` of a ``python``/``javascript`` assertion.
  Paths are relative to the **config's** folder, even inside a test file in another folder.
- :func:`dereference` resolves ``$ref: "#/pointer"`` (``assertionTemplates`` and the like).
- :func:`render_env` substitutes ``{{ env.NAME }}`` as promptfoo does when it reads a config.
- :func:`load_var_file` is what promptfoo does with a ``file://`` var value when it renders a
  prompt: text trimmed, YAML re-serialised as compact JSON, JSON kept as text, images as data URIs.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from coalmine.promptfoo.matrix.csvtests import read_csv_rows
from coalmine.promptfoo.matrix.sources import (
    Problems,
    ReadError,
    glob_files,
    has_magic,
    is_code_file,
    js_stringify,
    load_json,
    load_yaml_text,
    read_bytes,
    read_text,
    split_file_url,
)

__all__ = [
    "dereference",
    "load_file_ref",
    "load_file_refs",
    "load_var_file",
    "render_env",
]

RefContext = Literal["vars", "assertion"] | None


def load_file_ref(value: Any, *, base_dir: Path, context: RefContext = None) -> Any:
    """The content ``value`` points at, or ``value`` (promptfoo's ``maybeLoadFromExternalFile``).

    Raises:
        ReadError: the file is missing or cannot be parsed.
    """
    if isinstance(value, list):
        return [load_file_ref(item, base_dir=base_dir, context=context) for item in value]
    if not isinstance(value, str) or not value.startswith("file://"):
        return value
    path, function = split_file_url(value)
    if context == "vars" or (context == "assertion" and is_code_file(path)):
        return value
    if function is not None:
        return value
    if has_magic(path):
        matches = glob_files(path, root=base_dir)
        if not matches:
            raise ReadError(f"No files found matching pattern: {base_dir / path}")
        contents: list[Any] = []
        for match in matches:
            loaded = _read_file(base_dir / match)
            if match.endswith((".json", ".yaml", ".yml", ".csv")):
                if loaded is None:
                    continue
                contents.extend(loaded if isinstance(loaded, list) else [loaded])
            else:
                contents.append(loaded)
        return contents
    return _read_file(base_dir / path)


def _read_file(path: Path) -> Any:
    try:
        text = read_text(path)
    except ReadError as exc:
        message = f"File does not exist: {path}" if "exist" in exc.message else exc.message
        raise ReadError(message) from None
    name = str(path)
    try:
        if name.endswith(".json"):
            return load_json(text, path=path).data
        if name.endswith((".yaml", ".yml")):
            return load_yaml_text(text, path=path).data
    except ReadError as exc:
        raise ReadError(f"{path}: {exc.message}", line=exc.line) from None
    if name.endswith(".csv"):
        problems = Problems()
        records = [row.cells for row in read_csv_rows(text, path=path, problems=problems)]
        if problems.errors:
            first = problems.errors[0]
            raise ReadError(f"{path}: {first.message}", line=first.line)
        if records and len(records[0]) == 1:
            return [next(iter(record.values())) for record in records]
        return records
    return text


def load_file_refs(value: Any, *, base_dir: Path, context: RefContext = None) -> Any:
    """Apply :func:`load_file_ref` deeply (promptfoo's ``maybeLoadConfigFromExternalFile``)."""
    if isinstance(value, list):
        return [load_file_refs(item, base_dir=base_dir, context=context) for item in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            child = context
            if key == "value" and value.get("type") in ("python", "javascript"):
                child = "assertion"
            elif key == "vars":
                child = "vars"
            out[key] = load_file_refs(item, base_dir=base_dir, context=child)
        return out
    return load_file_ref(value, base_dir=base_dir, context=context)


# --- $ref ---------------------------------------------------------------------------------------


def dereference(data: Any, *, skip: frozenset[tuple[str | int, ...]] = frozenset()) -> Any:
    """Replace each ``{"$ref": "#/a/b"}`` by a copy of what it points at (siblings merged in).

    ``skip`` holds locations left untouched (promptfoo keeps the JSON schemas of a provider's
    functions and tools as written). Only references inside the same document are supported;
    promptfoo's resolver would also fetch files and URLs.

    Raises:
        ReadError: a reference is external, dangling or circular.
    """
    return _deref(data, data, (), skip, ())


def _deref(
    node: Any,
    root: Any,
    loc: tuple[str | int, ...],
    skip: frozenset[tuple[str | int, ...]],
    seen: tuple[str, ...],
) -> Any:
    if loc in skip:
        return node
    if isinstance(node, list):
        return [_deref(item, root, (*loc, i), skip, seen) for i, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        if not ref.startswith("#"):
            message = f"$ref {ref!r} points outside this file, which is not supported"
            raise ReadError(message, loc=loc)
        if ref in seen:
            raise ReadError(f"$ref {ref!r} is circular", loc=loc)
        target = copy.deepcopy(_pointer(root, ref, loc))
        resolved = _deref(target, root, loc, skip, (*seen, ref))
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if siblings and isinstance(resolved, dict):
            merged = {**resolved, **_deref(siblings, root, loc, skip, seen)}
            return merged
        return resolved
    return {k: _deref(v, root, (*loc, k), skip, seen) for k, v in node.items()}


def _pointer(root: Any, ref: str, loc: tuple[str | int, ...]) -> Any:
    node = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ReadError(f"$ref {ref!r} points at nothing", loc=loc)
    return node


# --- {{ env.NAME }} ---------------------------------------------------------------------------

_TEMPLATE = re.compile(r"\{\{(?:[^}]|\}(?!\}))*\}\}")
_ENV_NAME = re.compile(r"env\.(\w+)|env\[['\"]([^'\"]+)['\"]\]")
_SIMPLE = re.compile(
    r"^\{\{-?\s*env(?:\.(\w+)|\[['\"]([^'\"]+)['\"]\])\s*"
    r"(?:\|\s*(?:default|d)\(\s*(?:'([^']*)'|\"([^\"]*)\")\s*\)\s*)?-?\}\}$"
)


def render_env(value: Any, env: Mapping[str, str], *, unrendered: list[str]) -> Any:
    """Substitute ``{{ env.NAME }}`` (and ``| default("x")``) in every string of ``value``.

    As promptfoo, a template whose variable is not set stays as written. A template with other
    filters cannot be rendered without Nunjucks: it stays, and is appended to ``unrendered``.
    """
    if isinstance(value, str):
        return _TEMPLATE.sub(lambda m: _render_one(m.group(0), env, unrendered), value)
    if isinstance(value, list):
        return [render_env(item, env, unrendered=unrendered) for item in value]
    if isinstance(value, dict):
        return {
            k: v if k == "_conversation" else render_env(v, env, unrendered=unrendered)
            for k, v in value.items()
        }
    return value


def _render_one(template: str, env: Mapping[str, str], unrendered: list[str]) -> str:
    if not re.search(r"\benv\.|env\[", template):
        return template
    simple = _SIMPLE.match(template)
    if simple is None:
        unrendered.append(template)
        return template
    name = simple.group(1) or simple.group(2)
    default = simple.group(3) if simple.group(3) is not None else simple.group(4)
    if name in env:
        return env[name]
    return default if default is not None else template


# --- file:// var values, at render time --------------------------------------------------------

_IMAGES = {"jpg", "jpeg", "png", "gif", "bmp", "webp", "svg"}
_VIDEO = {"mp4", "webm", "ogg", "mov", "avi", "wmv", "mkv", "m4v"}
_AUDIO = {"wav", "mp3", "ogg", "aac", "m4a", "flac", "wma", "aiff", "opus"}
_MIME = {"jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif"}
_MIME |= {"bmp": "image/bmp", "webp": "image/webp", "svg": "image/svg+xml"}
_MAGIC = [("/9j/", "image/jpeg"), ("iVBORw0KGgo", "image/png"), ("R0lGODlh", "image/gif")]
_MAGIC += [("R0lGODdh", "image/gif"), ("UklGR", "image/webp"), ("Qk0", "image/bmp")]
_MAGIC += [("Qk1", "image/bmp")]


def load_var_file(value: str, *, base_dir: Path) -> str:
    """The text a ``file://`` var value becomes when promptfoo renders a prompt.

    Raises:
        ReadError: the file is missing, or promptfoo would run it (``.js``, ``.py``) or extract
            it (``.pdf``), which this pure reader does not do.
    """
    path = base_dir / value.removeprefix("file://")
    extension = str(path).rsplit(".", 1)[-1]
    if is_code_file(str(path)):
        raise ReadError(f"var file {value} is code promptfoo runs; not supported")
    if extension == "pdf":
        raise ReadError(f"var file {value} is a PDF promptfoo extracts text from; not supported")
    lower = extension.lower()
    if lower in _IMAGES | _VIDEO | _AUDIO:
        encoded = base64.b64encode(read_bytes(path)).decode("ascii")
        if lower not in _IMAGES:
            return encoded
        mime = next((m for prefix, m in _MAGIC if encoded.startswith(prefix)), None)
        return f"data:{mime or _MIME.get(lower, 'image/jpeg')};base64,{encoded}"
    text = read_text(path)
    if extension in ("yaml", "yml"):
        return js_stringify(load_yaml_text(text, path=path, dates=True).data)
    return text.strip()
