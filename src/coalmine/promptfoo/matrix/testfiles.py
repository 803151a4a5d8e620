"""The ``tests:`` of a promptfoo config (and of each scenario), loaded as promptfoo 0.121.20 does.

``tests`` is a list of inline tests and ``file://`` paths or globs, or one path. The path of a
file decides how promptfoo reads it, and two routes differ in ways that show in results:

- A ``.yaml``/``.yml``, or any path inside the ``tests:`` list (``loadTestsFromGlob``): YAML,
  strict JSON (``.json``) or JSON lines (``.jsonl``); ``file://`` values inside are loaded
  (:func:`~coalmine.promptfoo.matrix.filerefs.load_file_refs`) and ``$ref`` resolved. No default
  description.
- ``tests: file://tests.json`` (or ``.jsonl``, ``.csv``) as the whole value
  (``readStandaloneTestsFile``): JSON read leniently, nothing loaded inside, and each test
  without a description gets ``Row #<n>``. CSV rows always get ``Row #<n>``.

A test's ``vars`` may name vars files (a path or a list, globs allowed) read relative to the
file that holds the test. promptfoo does not strip ``file://`` there, so ``vars: file://x.yaml``
reads nothing (a warning says so).

A ``.py`` or JavaScript/TypeScript path (``file://gen.py:make``, ``{path: …, config: …}``) is a
test generator: its function (``generate_tests`` by default in Python, the module's export in
JavaScript) is called with the entry's ``config`` (its ``file://`` values loaded) when there is
one, by the :class:`~coalmine.promptfoo.matrix.code.ConfigCode` the caller gives, and answers
the tests. Spreadsheet and remote test sources need a reader or the network: each is reported
as not supported.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coalmine.promptfoo.matrix.code import NO_CONFIG
from coalmine.promptfoo.matrix.config import RawConfig
from coalmine.promptfoo.matrix.csvtests import csv_row_to_test, read_csv_rows
from coalmine.promptfoo.matrix.filerefs import dereference, load_file_refs
from coalmine.promptfoo.matrix.sources import (
    Doc,
    Problems,
    ReadError,
    glob_files,
    is_code_file,
    load_json,
    load_yaml_text,
    read_text,
    require_inside,
)

__all__ = ["DeclaredTest", "read_test", "read_tests"]

_TEST_KEYS = ("assert", "vars", "options", "metadata", "provider", "providerOutput")
_REMOTE = ("huggingface://", "az://", "https://docs.google.com/spreadsheets/")


@dataclass(frozen=True)
class DeclaredTest:
    """One test as written (a CSV row already converted), with where it came from."""

    data: dict[str, Any]
    path: Path
    line: int | None
    doc: Doc | None = None
    """The parsed file that holds it, for the line of each of its keys (none for a CSV row)."""
    loc: tuple[str | int, ...] = ()

    def line_at(self, *sub: str | int) -> int | None:
        """The line of a key of the test (``"assert", 0``), or the test's line."""
        return self.doc.line_of((*self.loc, *sub)) if self.doc is not None else self.line


class _Tests:
    def __init__(self, config: RawConfig, problems: Problems):
        self.config = config
        self.base = config.base_dir
        self.problems = problems

    def error(self, message: str, path: Path, line: int | None) -> None:
        self.problems.error(message, path=path, line=line)

    def read(self, tests: Any, loc: tuple[str | int, ...]) -> list[DeclaredTest]:
        """Load ``tests`` as promptfoo's ``readTests`` does."""
        path, line = self.config.path, self.config.line_of(*loc)
        if tests is None:
            return []
        if isinstance(tests, str):
            if tests.endswith(("yaml", "yml")) and not tests.startswith(_REMOTE):
                return self.from_glob(tests, line)
            return self.finish(self.standalone(tests, line), self.base)
        if isinstance(tests, dict) and isinstance(tests.get("path"), str):
            config = tests.get("config", NO_CONFIG)
            return self.finish(self.standalone(tests["path"], line, config), self.base)
        if not isinstance(tests, list):
            self.problems.warn(
                "Unsupported 'tests' format: expected a path, a list of paths or a list of tests",
                path=path,
                line=line,
            )
            return []
        out: list[DeclaredTest] = []
        for i, item in enumerate(tests):
            item_line = self.config.line_of(*loc, i)
            if isinstance(item, str):
                bare = item.removeprefix("file://")
                if (
                    is_code_file(bare.split(":")[0])
                    or bare.endswith((".xlsx", ".xls"))
                    or (":" in bare)
                ):
                    out.extend(self.standalone(item, item_line))
                else:
                    out.extend(self.from_glob(item, item_line))
            elif isinstance(item, dict) and "path" in item:
                config = item.get("config", NO_CONFIG)
                out.extend(self.standalone(str(item["path"]), item_line, config))
            elif isinstance(item, dict):
                test = read_test(
                    item,
                    vars_dir=self.base,
                    config_dir=self.base,
                    path=path,
                    line=item_line,
                    problems=self.problems,
                )
                if test is not None:
                    test = replace(test, doc=self.config.doc, loc=(*loc, i))
                out.extend([test] if test else [])
            else:
                self.error(f"a test must be a mapping or a path, not {item!r}", path, item_line)
        return out

    def file_error(self, exc: ReadError, file: Path, line: int | None) -> None:
        """Report an unreadable file: at its own line if known, else where the config names it."""
        if exc.line is not None:
            self.error(exc.message, file, exc.line)
        else:
            self.error(f"{file}: {exc.message}", self.config.path, line)

    def finish(self, tests: list[DeclaredTest], base: Path) -> list[DeclaredTest]:
        """The second ``readTest`` promptfoo gives tests read from a path given as ``tests:``."""
        out = []
        for test in tests:
            done = read_test(
                test.data,
                vars_dir=base,
                config_dir=self.base,
                path=test.path,
                line=test.line,
                problems=self.problems,
            )
            out.extend([replace(done, doc=test.doc, loc=test.loc)] if done else [])
        return out

    def standalone(self, ref: str, line: int | None, config: Any = NO_CONFIG) -> list[DeclaredTest]:
        """Read a tests file (CSV, JSON, JSONL, YAML) or run a generator, as promptfoo does.

        That is ``readStandaloneTestsFile``; ``config`` is the entry's, for a generator.
        """
        path = self.config.path
        if ref.startswith(_REMOTE) or "sharepoint.com/" in ref:
            self.error(f"tests from {ref} are fetched over the network: not supported", path, line)
            return []
        bare = ref.removeprefix("file://")
        if bare.count(":") - (1 if len(bare) > 1 and bare[1] == ":" else 0) > 1:
            self.error(f"Too many colons. Invalid test file script path: {ref}", path, line)
            return []
        colon = bare.rfind(":")
        file_part = bare[:colon] if colon > 1 else bare
        extension = os.path.splitext(file_part.split("#")[0])[1].lower()
        if extension in (".xlsx", ".xls"):
            self.error(f"tests from {ref} need a spreadsheet reader: not supported", path, line)
            return []
        file = self.base / file_part
        if is_code_file(file_part):
            function = bare[colon + 1 :] if colon > 1 else None
            return self.generated(ref, file, function, config, line)
        try:
            text = read_text(file)
            if extension == ".csv":
                return self.csv(text, file)
            if extension == ".json":
                return _numbered(_items(load_yaml_text(text, path=file)))
            if extension == ".jsonl":
                return _numbered(self.jsonl(text, file))
            if extension in (".yaml", ".yml"):
                doc = load_yaml_text(text, path=file)
                rows = load_file_refs(doc.data, base_dir=self.base)
                return self.csv_records(rows, file, doc)
        except ReadError as exc:
            self.file_error(exc, file, line)
            return []
        self.problems.warn(
            f"tests file {ref}: unknown type, promptfoo reads no tests from it",
            path=path,
            line=line,
        )
        return []

    def generated(
        self, ref: str, file: Path, function: str | None, config: Any, line: int | None
    ) -> list[DeclaredTest]:
        """The tests a Python or JavaScript generator answers (``readPythonTestCases`` …)."""
        where = self.config.path
        if self.config.code is None:
            self.error(f"tests from {ref} are made by code, which is not run here", where, line)
            return []
        try:
            require_inside(file)
            if config is not NO_CONFIG:
                config = load_file_refs(config, base_dir=self.base)
            made = self.config.code.generate_tests(
                file, function=function, config=config, base_dir=self.base
            )
        except ReadError as exc:
            self.error(f"tests from {ref}: {exc.message}", where, line)
            return []
        tests = []
        for test in made:
            if not isinstance(test, dict):
                shown = json.dumps(test, default=str)[:60]
                self.error(f"tests from {ref}: a test must be a mapping, not {shown}", where, line)
                return []
            tests.append(DeclaredTest(test, file, None))
        return tests

    def csv(self, text: str, file: Path) -> list[DeclaredTest]:
        rows = read_csv_rows(text, path=file, problems=self.problems)
        out = []
        for n, row in enumerate(rows, start=1):
            test = csv_row_to_test(row.cells, path=file, line=row.line, problems=self.problems)
            if test is not None:
                test["description"] = test.get("description") or f"Row #{n}"
                out.append(DeclaredTest(test, file, row.line))
        return out

    def csv_records(self, rows: Any, file: Path, doc: Doc) -> list[DeclaredTest]:
        """A YAML file read by the CSV route (``tests: {path: x.yaml}``): rows of cells."""
        out = []
        for n, row in enumerate(rows if isinstance(rows, list) else [], start=1):
            line = doc.line_of((n - 1,))
            test = csv_row_to_test(
                row if isinstance(row, dict) else {}, path=file, line=line, problems=self.problems
            )
            if test is not None:
                test["description"] = test.get("description") or f"Row #{n}"
                out.append(DeclaredTest(test, file, line))
        return out

    def jsonl(self, text: str, file: Path) -> list[DeclaredTest]:
        out = []
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                out.append(DeclaredTest(load_json(line, path=file).data, file, number))
            except ReadError as exc:
                raise ReadError(
                    f"Failed to parse JSONL test file on line {number}: {exc.message}", line=number
                ) from None
        return out

    def from_glob(self, pattern: str, line: int | None) -> list[DeclaredTest]:
        """Read the files ``pattern`` matches as ``loadTestsFromGlob`` does."""
        bare = pattern.removeprefix("file://")
        files = glob_files(bare, root=self.base)
        if not files:
            self.problems.warn(
                f"No test files found for path: {bare}", path=self.config.path, line=line
            )
            return []
        out: list[DeclaredTest] = []
        for name in files:
            file = self.base / name
            if name.endswith(".csv"):
                out.extend(self.finish(self.standalone(name, line), file.parent))
                continue
            try:
                text = read_text(file)
                if name.endswith((".yaml", ".yml")):
                    tests = _items(load_yaml_text(text, path=file))
                elif name.endswith(".jsonl"):
                    tests = self.jsonl(text, file)
                elif name.endswith(".json"):
                    tests = _items(load_json(text, path=file))
                else:
                    self.error(
                        f"Unsupported file type for test file: {file}", self.config.path, line
                    )
                    continue
                datas = dereference(load_file_refs([t.data for t in tests], base_dir=self.base))
            except ReadError as exc:
                self.file_error(exc, file, line)
                continue
            loaded = [replace(t, data=d) for d, t in zip(datas, tests, strict=True)]
            out.extend(self.finish(loaded, file.parent))
        return out


def _items(doc: Doc) -> list[DeclaredTest]:
    """A file's tests: its list, or its one mapping (an empty file has none)."""
    if doc.data is None:
        return []
    if isinstance(doc.data, list):
        return [
            DeclaredTest(item, doc.path, doc.line_of((i,)), doc, (i,))
            for i, item in enumerate(doc.data)
        ]
    return [DeclaredTest(doc.data, doc.path, 1, doc)]


def _numbered(tests: list[DeclaredTest]) -> list[DeclaredTest]:
    out = []
    for n, test in enumerate(tests, start=1):
        data = test.data if isinstance(test.data, dict) else {}
        numbered = {**data, "description": data.get("description") or f"Row #{n}"}
        out.append(replace(test, data=numbered))
    return out


def read_tests(
    config: RawConfig, tests: Any, *, loc: tuple[str | int, ...], problems: Problems
) -> list[DeclaredTest]:
    """Load ``tests`` (a config's, at ``loc``, or a scenario's) into tests, in promptfoo's order."""
    return _Tests(config, problems).read(tests, loc)


def read_test(
    test: Any,
    *,
    vars_dir: Path,
    config_dir: Path,
    path: Path,
    line: int | None,
    problems: Problems,
    default: bool = False,
) -> DeclaredTest | None:
    """Read one test as promptfoo's ``readTest``: vars files merged in; a test must set something.

    Args:
        test: The test as written.
        vars_dir: Where its vars files are (the folder of the file that holds the test).
        config_dir: The config's folder (``file://`` values inside vars files start there).
        path: The file that holds the test.
        line: Its line there.
        problems: Collects what is wrong.
        default: ``defaultTest`` need not set anything.

    Returns:
        The test, or ``None`` when it is invalid (the reason is in ``problems``).
    """
    if not isinstance(test, dict):
        problems.error(
            f"a test must be a mapping, not {json.dumps(test)[:60]}", path=path, line=line
        )
        return None
    data = dict(test)
    data.pop("vars", None)
    given = test.get("vars")
    if isinstance(given, str | list):
        data["vars"] = _read_vars_files(
            given, vars_dir=vars_dir, config_dir=config_dir, path=path, line=line, problems=problems
        )
    elif given is not None:
        data["vars"] = given
    if default:
        return DeclaredTest(data, path, line)
    has_threshold = isinstance(data.get("threshold"), int | float) and not isinstance(
        data.get("threshold"), bool
    )
    if not any(_truthy(data.get(key)) for key in _TEST_KEYS) and not has_threshold:
        problems.error(
            "Test case must contain one of the following properties: assert, vars, options, "
            "metadata, provider, providerOutput, threshold",
            path=path,
            line=line,
        )
        return None
    return DeclaredTest(data, path, line)


def _truthy(value: Any) -> bool:
    if isinstance(value, bool | int | float):
        return bool(value)
    return value is not None and value != ""


def _read_vars_files(
    patterns: str | list[Any],
    *,
    vars_dir: Path,
    config_dir: Path,
    path: Path,
    line: int | None,
    problems: Problems,
) -> dict[str, Any]:
    """Merge vars files as ``readTestFiles`` does: each YAML mapping in turn, later files win."""
    merged: dict[str, Any] = {}
    for pattern in [patterns] if isinstance(patterns, str) else patterns:
        text = str(pattern)
        files = [] if text.startswith("file://") else glob_files(text, root=vars_dir)
        if not files:
            hint = (
                " (promptfoo does not strip file:// here: write the bare path)"
                if text.startswith("file://")
                else ""
            )
            problems.warn(
                f"vars file {text} matched no file: no vars read from it{hint}",
                path=path,
                line=line,
            )
        for name in files:
            file = vars_dir / name
            try:
                data = load_yaml_text(read_text(file), path=file).data
                content = load_file_refs(data, base_dir=config_dir)
            except ReadError as exc:
                problems.error(f"{file}: {exc.message}", path=file, line=exc.line)
                continue
            if isinstance(content, dict):
                merged.update(content)
            elif isinstance(content, list):
                merged.update({str(i): v for i, v in enumerate(content)})
    return merged
