"""Declared tests → the tests promptfoo 0.121.20 evaluates, numbered as its ``testIdx``.

The declared tests (config, tests files, CSV rows) are followed by the scenario tests; a
``filterRange`` slices that list; each test gets ``defaultTest`` applied, then one evaluated
test per repetition and combination of its list vars (the rules are in
:mod:`coalmine.promptfoo.matrix.rules`). Load-time checks run here too, as promptfoo runs them:
every assertion has a ``type``, and every ``prompts:``/``providers:`` filter entry names
something that exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coalmine.promptfoo.assertion import Assertion
from coalmine.promptfoo.matrix.config import RawConfig
from coalmine.promptfoo.matrix.filerefs import load_file_ref
from coalmine.promptfoo.matrix.prompt_refs import PromptRef
from coalmine.promptfoo.matrix.provider_refs import ProviderRef, provider_matches
from coalmine.promptfoo.matrix.rules import (
    default_test,
    merge_scenario_test,
    parse_filter_range,
    prepare_test,
    prompt_matches,
    repeat_count,
    var_combinations,
)
from coalmine.promptfoo.matrix.sources import Problems, ReadError, is_code_file, split_file_url
from coalmine.promptfoo.matrix.testfiles import DeclaredTest, read_tests

__all__ = ["MatrixTest", "build_tests"]

_TEST_KEYS = {"description", "vars", "provider", "providers", "prompts", "providerOutput"}
_TEST_KEYS |= {"assert", "assertScoringFunction", "options", "threshold", "metadata"}
_TRANSFORM_VARS = (
    "options.transformVars: promptfoo runs it once on the test's vars before it expands list "
    "vars (it sees each list whole); coalmine runs it on each expanded test's vars"
)


@dataclass(frozen=True, kw_only=True)
class MatrixTest:
    """One evaluated test: a declared test for one repetition and one combination of its vars."""

    index: int
    """The test's ``testIdx``."""
    description: str | None
    vars: Mapping[str, Any]
    """Raw values (a ``file://`` value is one matched file, not its content)."""
    assertions: tuple[Assertion, ...]
    """``defaultTest``'s first, then the scenario entry's, then the test's."""
    threshold: float | None
    options: Mapping[str, Any]
    metric: str | None
    """A CSV row's ``__metric`` (promptfoo sets it on each assertion; a test has none)."""
    provider_output: Any
    """A fixed output: the provider is not called."""
    metadata: Mapping[str, Any]
    prompt_filter: tuple[str, ...] | None
    provider_filter: tuple[str, ...] | None
    provider: Any = None
    """A provider that replaces the row's provider for this test, as written."""
    assert_scoring_function: Any = None
    prefix: str = ""
    suffix: str = ""
    repeat_index: int = 0
    declared_index: int
    """Position among the declared tests (plain tests first, then scenario tests)."""
    path: Path
    """The file that declares the test (the config, a tests file, a CSV)."""
    line: int | None


def build_tests(
    config: RawConfig,
    problems: Problems,
    *,
    prompts: tuple[PromptRef, ...],
    providers: tuple[ProviderRef, ...],
) -> tuple[list[MatrixTest], dict[str, Any]]:
    """The evaluated tests and the ``defaultTest`` applied to them (problems in ``problems``)."""
    builder = _Builder(config, problems, prompts, providers)
    return builder.tests(), builder.default


class _Builder:
    def __init__(
        self,
        config: RawConfig,
        problems: Problems,
        prompts: tuple[PromptRef, ...],
        providers: tuple[ProviderRef, ...],
    ):
        self.config = config
        self.problems = problems
        self.prompts = prompts
        self.providers = providers
        self._checked: dict[int, tuple[Any, Assertion | None]] = {}
        """Assertions already checked, by identity (the item is kept so its id stays unique)."""
        self._scoring_checked: set[tuple[str, Path, int | None]] = set()
        self.default = self._default_test()

    def error(self, message: str, path: Path, line: int | None) -> None:
        self.problems.error(message, path=path, line=line)

    def _default_test(self) -> dict[str, Any]:
        config, raw = self.config, self.config.data.get("defaultTest")
        line = config.line_of("defaultTest")
        metadata = config.data.get("metadata")
        if isinstance(raw, str):
            if not raw.startswith("file://"):
                self.error("defaultTest string must start with file://", config.path, line)
                return default_test(None, metadata=metadata, from_file=False)
            try:
                raw = load_file_ref(raw, base_dir=config.base_dir)
            except ReadError as exc:
                self.error(f"defaultTest: {exc.message}", config.path, line)
                return default_test(None, metadata=metadata, from_file=False)
            if not isinstance(raw, dict):
                self.error("defaultTest file must hold a mapping", config.path, line)
                raw = {}
            from_file = True
        elif raw is not None and not isinstance(raw, dict):
            self.error("defaultTest must be a mapping or a file:// path", config.path, line)
            raw, from_file = None, False
        else:
            from_file = False
        if isinstance(raw, dict) and not isinstance(raw.get("vars", {}), dict):
            self.problems.warn(
                "defaultTest.vars is not a mapping: promptfoo spreads it into vars named 0, 1, … "
                "(write the vars inline)",
                path=config.path,
                line=config.line_of("defaultTest", "vars"),
            )
        result = default_test(raw, metadata=metadata, from_file=from_file)
        self._check_filters(result, config.path, line, "defaultTest")
        self._assertions(
            result.get("assert"),
            what="defaultTest",
            path=config.path,
            line_of=lambda i: config.line_of("defaultTest", "assert", *([i] if i >= 0 else [])),
        )
        return result

    def tests(self) -> list[MatrixTest]:
        config = self.config
        declared = read_tests(
            config, config.data.get("tests"), loc=("tests",), problems=self.problems
        )
        for test in declared:
            self._check_test(test)
        scenarios = self._scenarios()
        options = {
            **_mapping(config.data.get("evaluateOptions")),
            **_mapping(config.data.get("commandLineOptions")),
        }
        filter_range = options.get("filterRange")
        chosen: list[tuple[dict[str, Any], Path, int | None]] = [
            (t.data, t.path, t.line) for t in declared
        ]
        if not chosen and scenarios is None:
            chosen = [({}, config.path, None)]
        span = self._filter_range(filter_range)
        if span and not scenarios:
            chosen = chosen[span[0] : span[1]]
        chosen += self._scenario_tests(scenarios or [])
        if span and scenarios:
            chosen = chosen[span[0] : span[1]]
        global_repeat = repeat_count(options.get("repeat"))
        out: list[MatrixTest] = []
        for declared_index, (data, path, line) in enumerate(chosen):
            out.extend(self._expand(data, path, line, declared_index, global_repeat, len(out)))
        return out

    def _filter_range(self, value: Any) -> tuple[int, int | None] | None:
        if value is None:
            return None
        try:
            return parse_filter_range(str(value))
        except ValueError as exc:
            self.error(
                str(exc), self.config.path, self.config.line_of("evaluateOptions", "filterRange")
            )
            return None

    def _scenarios(self) -> list[tuple[dict[str, Any], int | None]] | None:
        config, raw = self.config, self.config.data.get("scenarios")
        if raw is None:
            return None
        try:
            loaded = load_file_ref(raw, base_dir=config.base_dir)
        except ReadError as exc:
            self.error(f"scenarios: {exc.message}", config.path, config.line_of("scenarios"))
            return []
        items = loaded if isinstance(loaded, list) else [loaded]
        flat: list[tuple[Any, tuple[str | int, ...]]] = []
        for i, item in enumerate(items):
            if isinstance(item, list):
                flat.extend((sub, ("scenarios", i)) for sub in item)
            else:
                flat.append((item, ("scenarios", i)))
        out = []
        for item, loc in flat:
            line = config.line_of(*loc)
            if not isinstance(item, dict) or not isinstance(item.get("config"), list):
                self.error("a scenario must be a mapping with a 'config' list", config.path, line)
                continue
            try:
                raw_tests = load_file_ref(item.get("tests"), base_dir=config.base_dir)
            except ReadError as exc:
                self.error(f"scenario tests: {exc.message}", config.path, line)
                continue
            # without tests a scenario runs nothing: promptfoo's filtering turns "none" into []
            tests: list[tuple[dict[str, Any], Path, int | None]] = []
            if isinstance(raw_tests, list):
                read = read_tests(config, raw_tests, loc=(*loc, "tests"), problems=self.problems)
                tests = [(t.data, t.path, t.line) for t in read]
            elif raw_tests is not None:
                self.error(
                    "a scenario's 'tests' must be a list or a file:// path", config.path, line
                )
                continue
            for j, entry in enumerate(item["config"]):
                self._check_filters(
                    entry if isinstance(entry, dict) else {},
                    config.path,
                    line,
                    f"scenario config[{j}]",
                )
            for data, path, test_line in tests or []:
                self._check_filters(data, path, test_line, "scenario test", prompts=False)
            out.append(({**item, "tests": tests}, line))
        return out

    def _scenario_tests(
        self, scenarios: list[tuple[dict[str, Any], int | None]]
    ) -> list[tuple[dict[str, Any], Path, int | None]]:
        out = []
        index = 0
        for scenario, _ in scenarios:
            tests = scenario["tests"]
            for entry in scenario["config"]:
                entry = entry if isinstance(entry, dict) else {}
                for data, path, test_line in tests:
                    merged = merge_scenario_test(self.default, entry, data, index)
                    out.append((merged, path, test_line))
                index += 1
        return out

    def _check_test(self, test: DeclaredTest) -> None:
        for key in test.data:
            if key in _TEST_KEYS or (key == "metric" and test.path.suffix == ".csv"):
                continue
            message = f"key {key!r} of a test is not supported: ignored"
            if key == "metric":
                message = (
                    "a test's 'metric' is not read by promptfoo (set it on each assertion): ignored"
                )
            self.problems.warn(message, path=test.path, line=test.line)
        self._check_filters(test.data, test.path, test.line, "test")
        self._assertions(
            test.data.get("assert"),
            what="test",
            path=test.path,
            line_of=lambda i: test.line_at("assert", *([i] if i >= 0 else [])),
        )

    def _check_filters(
        self, test: dict[str, Any], path: Path, line: int | None, what: str, *, prompts: bool = True
    ) -> None:
        """Check, as promptfoo does on load, that each filter entry names a prompt or provider."""
        refs = test.get("prompts")
        if prompts and refs is not None:
            for ref in refs if isinstance(refs, list) else []:
                if not any(prompt_matches(str(ref), p) for p in self.prompts):
                    known = sorted({n for p in self.prompts for n in (p.label, p.id) if n})
                    self.error(
                        f"{what} references prompt {ref!r} which does not exist. "
                        f"Available prompts: {known}",
                        path,
                        line,
                    )
        refs = test.get("providers")
        if refs is None:
            return
        if not isinstance(refs, list):
            self.error(f"{what}.providers must be a list", path, line)
            return
        for ref in refs:
            if not any(
                provider_matches(str(ref), p, base_dir=self.config.base_dir) for p in self.providers
            ):
                known = [p.key if p.key == p.id else f"{p.label} ({p.id})" for p in self.providers]
                self.error(
                    f"{what} references provider {ref!r} which does not exist. "
                    f"Available providers: {known}",
                    path,
                    line,
                )

    def _check_scoring_function(self, value: Any, path: Path, line: int | None) -> None:
        """Refuse, as promptfoo does before it evaluates, a scoring function it cannot load."""
        if not isinstance(value, str) or (value, path, line) in self._scoring_checked:
            return
        self._scoring_checked.add((value, path, line))
        problem = None
        if not value.startswith("file://"):
            problem = "URL must start with file://"
        else:
            file, _ = split_file_url(value)
            if not is_code_file(file):
                problem = (
                    "File must be a JavaScript (.js, .cjs, .mjs, .ts, .cts, .mts) or Python "
                    "(.py) file"
                )
            elif not file.endswith(".py") and not (self.config.base_dir / file).is_file():
                problem = f"no such file: {self.config.base_dir / file}"
        if problem is not None:
            self.error(f"assertScoringFunction {value!r}: {problem}", path, line)

    def _assertions(
        self, raw: Any, *, what: str, path: Path, line_of: Callable[[int], int | None]
    ) -> tuple[Assertion, ...] | None:
        """The assertions of a test, each checked as promptfoo checks them (once: they repeat).

        ``None`` when one is invalid (the error names the assertion's line, the first time).
        """
        if raw is None:
            return ()
        if not isinstance(raw, list):
            self.error(f"{what}.assert must be a list", path, line_of(-1))
            return None
        out = []
        for i, item in enumerate(raw):
            if id(item) not in self._checked:
                self._checked[id(item)] = (
                    item,
                    self._assertion(item, f"{what}.assert[{i}]", path, line_of(i)),
                )
            assertion = self._checked[id(item)][1]
            if assertion is None:
                return None
            out.append(assertion)
        return tuple(out)

    def _assertion(self, item: Any, where: str, path: Path, line: int | None) -> Assertion | None:
        if not isinstance(item, dict) or "type" not in item:
            self.error(
                f"invalid assertion at {where}: missing required 'type' property", path, line
            )
            return None
        try:
            return Assertion.model_validate(item)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            field = ".".join(str(p) for p in first["loc"])
            self.error(f"invalid assertion at {where}: {field}: {first['msg']}", path, line)
            return None

    def _expand(
        self,
        data: dict[str, Any],
        path: Path,
        line: int | None,
        declared_index: int,
        global_repeat: int,
        next_index: int,
    ) -> list[MatrixTest]:
        test = prepare_test(data, self.default)
        assertions = self._assertions(
            test["assert"], what="test", path=path, line_of=lambda _: line
        )
        if assertions is None:
            return []
        options = test["options"]
        if options.get("disableVarExpansion"):
            combos = [test["vars"]]
        else:
            try:
                combos = var_combinations(test["vars"], base_dir=self.config.base_dir)
            except ReadError as exc:
                self.error(exc.message, path, line)
                return []
        if options.get("transformVars") and combos != [test["vars"]]:
            self.problems.warn(_TRANSFORM_VARS, path=path, line=line)
        self._check_scoring_function(test["assertScoringFunction"], path, line)
        repeats = repeat_count(options.get("repeat"), global_repeat)
        description = test.get("description")
        common = {
            "description": description if isinstance(description, str) else None,
            "assertions": assertions,
            "threshold": test["threshold"],
            "options": options,
            "metric": test.get("metric"),
            "provider_output": test.get("providerOutput"),
            "metadata": test["metadata"],
            "prompt_filter": _names(test["prompts"]),
            "provider_filter": _names(test["providers"]),
            "provider": test["provider"],
            "assert_scoring_function": test["assertScoringFunction"],
            "prefix": str(test["_prefix"]),
            "suffix": str(test["_suffix"]),
            "declared_index": declared_index,
            "path": path,
            "line": line,
        }
        out: list[MatrixTest] = []
        for repeat in range(repeats):
            for combo in combos:
                out.append(
                    MatrixTest(
                        index=next_index + len(out), vars=combo, repeat_index=repeat, **common
                    )
                )
        return out


def _names(value: Any) -> tuple[str, ...] | None:
    """A filter as promptfoo applies it: a list (an empty one allows nothing), else no filter."""
    return tuple(str(v) for v in value) if isinstance(value, list) else None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
