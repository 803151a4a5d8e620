"""The ``prompts:`` of a promptfoo config, expanded into prompts as promptfoo 0.121.20 does.

Forms: an inline string; ``file://path`` (relative to the config's folder; a ``.txt`` file split
on lines that are ``---``, a ``.json``/``.yaml`` chat prompt kept as compact JSON text, ``.md``
and ``.j2`` whole, ``.jsonl`` one prompt a line, ``.csv`` one a row); a glob; an object
``{id, label, raw, config}``; and the map ``{"file://a.txt": "label"}``. Each prompt gets the
label promptfoo gives it (an inline prompt's label is its text; a text file's is
``<path>: <prompt>``, or ``<label>: <path>: <prompt>``), with ``<path>`` relative to the config's
folder, as promptfoo shows it when run there (``-c promptfooconfig.yaml``).

Python and JavaScript prompt functions and executables are kept as data (``kind`` says so; the
command after ``exec:`` read as a path, as promptfoo reads it): they run code, which this module
never does (:mod:`coalmine.promptfoo.prompt_code` runs them when a row is made).
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import posixpath
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from coalmine.promptfoo.matrix.config import RawConfig
from coalmine.promptfoo.matrix.filerefs import load_file_refs
from coalmine.promptfoo.matrix.sources import (
    Problems,
    ReadError,
    glob_files,
    has_magic,
    is_code_file,
    js_slice,
    js_stringify,
    load_json,
    load_yaml_text,
    read_text,
)

__all__ = ["PromptKind", "PromptRef", "maybe_file_path", "read_prompts", "split_command"]

PromptKind = Literal["template", "function", "exec"]

_FILE_EXTENSIONS = (".cjs", ".cts", ".j2", ".js", ".json", ".jsonl", ".md", ".mjs", ".mts")
_FILE_EXTENSIONS2 = (".py", ".ts", ".txt", ".yml", ".yaml")
_EXECUTABLES = {".sh", ".bash", ".exe", ".bat", ".cmd", ".ps1", ".rb", ".pl"}
_MANAGERS = ("portkey://", "langfuse://", "helicone://")
_CONTROL = re.compile(r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]")
_DELIMITER = "---"


@dataclass(frozen=True, kw_only=True)
class PromptRef:
    """One prompt of the config, as promptfoo lists it."""

    raw: str
    """The template, not rendered (for a prompt function, its file's text)."""
    label: str
    index: int
    """Its position among the config's prompts (promptfoo's ``promptIdx`` with one provider)."""
    path: Path
    """The config file that lists it."""
    line: int | None
    id: str | None = None
    """The ``id`` of a prompt object (a test's ``prompts:`` filter matches it, or ``label``)."""
    kind: PromptKind = "template"
    config: Mapping[str, Any] | None = None
    file: Path | None = None
    """The file it was read from, if any."""
    function: str | None = None
    """``file.py:name`` for a prompt function, the command of an executable prompt."""

    @property
    def output_id(self) -> str:
        """The ``id`` promptfoo's output gives the prompt: the SHA-256 of its label (or id, raw)."""
        key = self.label or self.id or self.raw
        return hashlib.sha256(key.encode("utf-8")).hexdigest()


def maybe_file_path(text: str) -> bool:
    """Whether promptfoo takes a prompt string for a file name rather than for the prompt."""
    if "\n" in text or any(m in text for m in _MANAGERS):
        return False
    tokens = text.split(":")
    last, before = tokens[-1], tokens[-2] if len(tokens) > 1 else ""
    return (
        text.startswith("file://")
        or any(
            last.endswith(ext) or before.endswith(ext)
            for ext in _FILE_EXTENSIONS + _FILE_EXTENSIONS2
        )
        or (len(text) >= 3 and text[-3] == ".")
        or (len(text) >= 4 and text[-4] == ".")
        or any(c in text for c in "*/\\")
    )


def read_prompts(config: RawConfig, problems: Problems) -> tuple[PromptRef, ...]:
    """Expand ``prompts:`` into prompts, in promptfoo's order; problems go to ``problems``."""
    reader = _Reader(config, problems)
    out: list[dict[str, Any]] = []
    for partial, line in reader.partials(config.data.get("prompts")):
        batch = reader.process(partial, line, depth=1)
        if batch is None:
            continue
        if not batch:
            problems.error(
                f"There are no prompts in {js_stringify(partial.get('raw'))}",
                path=config.path,
                line=line,
            )
        out.extend(batch)
    return tuple(PromptRef(index=i, path=config.path, **fields) for i, fields in enumerate(out))


class _Reader:
    def __init__(self, config: RawConfig, problems: Problems):
        self.config = config
        self.problems = problems
        self.base = config.base_dir

    def error(self, message: str, line: int | None) -> None:
        self.problems.error(message, path=self.config.path, line=line)

    def partials(self, prompts: Any) -> list[tuple[dict[str, Any], int | None]]:
        """The prompt entries, as ``normalizeInput`` (and ``combineConfigs``' checks) give them."""
        line_of = self.config.line_of
        if isinstance(prompts, str):
            return [({"raw": prompts}, line_of("prompts"))]
        if isinstance(prompts, dict) and prompts:
            out = []
            for raw, label in prompts.items():
                if not isinstance(label, str):
                    self.error(
                        f"the label of prompt {raw!r} must be a string", line_of("prompts", raw)
                    )
                    continue
                out.append(({"raw": raw, "label": label}, line_of("prompts", raw)))
            return out
        if not isinstance(prompts, list) or not prompts:
            self.error("You must provide at least 1 prompt", line_of("prompts"))
            return []
        out = []
        for i, item in enumerate(prompts):
            line = line_of("prompts", i)
            if isinstance(item, str):
                out.append(({"raw": item}, line))
            elif isinstance(item, dict) and self._valid_object(item, line):
                absolute = _absolute_id(item.get("id"), self.base)
                out.append(({"raw": item.get("raw") or absolute, **item, "id": absolute}, line))
        return out

    def _valid_object(self, item: dict[str, Any], line: int | None) -> bool:
        if not isinstance(item.get("raw"), str) and not isinstance(item.get("label"), str):
            self.error(
                "a prompt object needs a 'raw' or 'label' string (and 'id' for a file)", line
            )
            return False
        if item.get("id") or (
            isinstance(item.get("raw"), str) and isinstance(item.get("label"), str)
        ):
            unknown = sorted(set(item) - {"id", "raw", "label", "config", "display", "template"})
            for key in unknown:
                self.problems.warn(
                    f"key {key!r} of a prompt is not supported: ignored",
                    path=self.config.path,
                    line=line,
                )
            return True
        self.error(f"Invalid prompt object: {js_stringify(item)} (give 'raw' and 'label')", line)
        return False

    def process(
        self, prompt: dict[str, Any], line: int | None, *, depth: int
    ) -> list[dict[str, Any]] | None:
        """Expand one entry as ``processPrompt`` does; ``None`` after a recorded error."""
        raw = prompt.get("raw")
        if not isinstance(raw, str):
            self.error(f"prompt.raw must be a string, but got {js_stringify(raw)}", line)
            return None
        label = prompt.get("label")
        base: dict[str, Any] = {"line": line}
        if raw.startswith("exec:"):
            command, _, _ = self._parse_path(raw[5:])
            return [self._executable(command, label, prompt, base)]
        if not maybe_file_path(raw):
            if raw.startswith(_MANAGERS):
                self.problems.warn(
                    f"prompt {raw!r} comes from a prompt manager promptfoo calls: not supported",
                    path=self.config.path,
                    line=line,
                )
            return [_literal(raw, prompt, base)]
        rel, function, pattern = self._parse_path(raw)
        if pattern and depth > 0:
            found: list[dict[str, Any]] = []
            for match in glob_files(rel, root=self.base):
                sub = self.process(
                    {"raw": f"{match}:{function}" if function else match}, line, depth=0
                )
                found.extend(sub or [])
            if not found:
                return [_literal(raw, prompt, base)]
            return found
        extension = "" if pattern else posixpath.splitext(rel)[1]
        try:
            return self._file(rel, extension, function, prompt, base)
        except ReadError as exc:
            self.error(f"{self.base / rel}: {exc.message}", exc.line or line)
            return None

    def _parse_path(self, raw: str) -> tuple[str, str | None, bool]:
        """As ``parsePathOrGlob``: the path relative to the config's folder, function, glob?"""
        text = raw.removeprefix("file://")
        rel = _relative(text, self.base)
        function = None
        colon = rel.rfind(":")
        if colon > 1 and (is_code_file(rel[:colon]) or rel[:colon].endswith((".go", ".rb"))):
            rel, function = rel[:colon], rel[colon + 1 :]
        pattern = (self.base / rel).is_dir() or has_magic(text)
        return rel, function, pattern

    def _file(
        self,
        rel: str,
        extension: str,
        function: str | None,
        prompt: dict[str, Any],
        base: dict[str, Any],
    ) -> list[dict[str, Any]]:
        label, config = prompt.get("label"), prompt.get("config")
        path = self.base / rel
        base = {**base, "file": path}
        if extension == ".txt":
            return [
                {**base, "raw": r, "label": f"{label}: {rel}: {r}" if label else f"{rel}: {r}"}
                for r in split_prompt_text(read_text(path))
            ]
        if extension in (".md", ".j2"):
            text = read_text(path)
            shown = label or f"{rel}: {js_slice(text, 50)}..."
            return [
                {
                    **base,
                    "raw": text,
                    "label": shown,
                    "config": config if extension == ".j2" else None,
                }
            ]
        if extension in (".json", ".yaml", ".yml"):
            text = read_text(path)
            try:
                if extension == ".json":
                    parsed = load_json(text, path=path).data
                else:
                    parsed = load_yaml_text(text, path=path, dates=True).data
                text = js_stringify(load_file_refs(parsed, base_dir=self.base))
            except ReadError:
                pass  # promptfoo keeps the text as it is
            shown = label or f"{rel}: {text if extension == '.json' else js_slice(text, 80)}"
            return [{**base, "raw": text, "label": shown, "config": config}]
        if extension == ".jsonl":
            lines = [ln for ln in re.split(r"\r?\n", read_text(path)) if ln]
            many = len(lines) > 1
            return [
                {
                    **base,
                    "raw": ln,
                    "config": config,
                    "label": (f"{label}: {ln}" if label else f"{rel}: {ln}")
                    if many
                    else (label or rel),
                }
                for ln in lines
            ]
        if extension == ".csv":
            return [
                {**base, **row, "id": prompt.get("id"), "config": config}
                for row in csv_prompts(read_text(path), label)
            ]
        if extension == ".py" or is_code_file(rel):
            text = read_text(path)
            name = f"{rel}:{function}" if function else None
            if extension == ".py":
                shown = label if label is not None else (name or f"{rel}: {text}")
            else:
                shown = label or name or rel
            return [
                {
                    **base,
                    "raw": text,
                    "label": shown,
                    "kind": "function",
                    "function": name or rel,
                    "config": config,
                }
            ]
        if extension in _EXECUTABLES or _is_executable(path):
            return [self._executable(rel, label, prompt, base)]
        return []

    def _executable(
        self, command: str, label: Any, prompt: dict[str, Any], base: dict[str, Any]
    ) -> dict[str, Any]:
        """An executable prompt (``processExecutableFile``): its raw text is the script's."""
        parts = split_command(command)
        raw = command
        path = self.base / (parts[0] if parts else command)
        try:
            if path.is_file() and path.stat().st_size < 100 * 1024:
                text = path.read_text(encoding="utf-8")
                if not _CONTROL.search(text[:1000]):
                    raw = text
        except (OSError, UnicodeDecodeError):
            pass
        return {
            **base,
            "raw": raw,
            "label": command if label is None else label,
            "kind": "exec",
            "function": command,
            "config": prompt.get("config"),
        }


def _literal(raw: str, prompt: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """The prompt as its own text (promptfoo's ``processString``): its label defaults to it."""
    label = prompt.get("label")
    return {
        **base,
        "raw": raw,
        "label": raw if label is None else label,
        "id": prompt.get("id"),
        "config": prompt.get("config"),
    }


_SCRIPT_PART = re.compile(r"""[^\s"']+|"([^"]*)"|'([^']*)'""")


def split_command(command: str) -> list[str]:
    """Split an ``exec:`` command as promptfoo does (``parseScriptParts``).

    Words are runs of anything but whitespace and quotes; ``"…"`` or ``'…'`` is one word
    without its quotes, and an empty pair stays as the two quote characters (promptfoo keeps
    ``""`` as written). There are no escapes, and ``a"b"`` is two words.
    """
    return [m.group(1) or m.group(2) or m.group(0) for m in _SCRIPT_PART.finditer(command)]


def split_prompt_text(text: str) -> list[str]:
    """A text file's prompts: blocks between lines that are ``---``, trimmed, empty ones skipped."""
    prompts: list[str] = []
    block: list[str] = []
    for line in [*re.split(r"\r?\n", text), _DELIMITER]:
        if line.strip() == _DELIMITER:
            joined = "\n".join(block).strip()
            if joined:
                prompts.append(joined)
            block = []
        else:
            block.append(line)
    return prompts


def csv_prompts(text: str, label: str | None) -> list[dict[str, str]]:
    """A CSV file's prompts: one a line, or a ``prompt`` column with an optional ``label``."""
    if "," in text:
        records = [
            [cell.strip() for cell in record]
            for record in csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
            if record
        ]
        if records and all(len(r) == len(records[0]) for r in records):
            header = records[0]
            rows = [dict(zip(header, r, strict=True)) for r in records[1:]]
            rows = [row for row in rows if row.get("prompt")]
            return [
                {
                    "raw": row["prompt"],
                    "label": row.get("label") or label or f"Prompt {i + 1} - {row['prompt']}",
                }
                for i, row in enumerate(rows)
            ]
    lines = [line for line in re.split(r"\r?\n", text) if line.strip()]
    if lines and lines[0].strip().lower() == "prompt":
        lines = lines[1:]
    return [
        {"raw": line, "label": label or f"Prompt {i + 1} - {line}"} for i, line in enumerate(lines)
    ]


def _absolute_id(value: Any, base: Path) -> Any:
    """A ``file://`` id made absolute, as promptfoo's config merge makes it (other ids as given)."""
    if isinstance(value, str) and value.startswith("file://"):
        return "file://" + os.path.normpath(os.path.join(os.path.abspath(base), value[7:]))
    return value


def _relative(text: str, base: Path) -> str:
    """``path.relative(base, path.resolve(base, text))``, POSIX separators."""
    absolute = os.path.normpath(os.path.join(os.path.abspath(base), text))
    return os.path.relpath(absolute, os.path.abspath(base)).replace(os.sep, "/")


def _is_executable(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) and bool(mode & 0o111)
