"""``pytest --coalmine``: canaries and eval-suite cases as pytest items.

Registered as the ``coalmine`` plugin (entry point ``pytest11``) and idle unless asked:
``pytest --coalmine``, or ``coalmine = true`` in the ini file. Then every canary spec under
``bench/canaries/`` and every eval suite ``harness/evals/*.jsonl`` that pytest visits is
collected: an item per canary (``bench/canaries/qa/qa-001-x.yaml::qa-001-x``) and per case
(``harness/evals/smoke.jsonl::capital-fr``), with the markers ``coalmine`` and ``canary`` or
``eval``, the canary's phase and the case's tags, so ``-k`` and ``-m`` select them. An invalid
spec or a bad line is an item too, failing with its file, line and reason.

The selected items run as one coalmine run of each kind, stored like any other (``runs list``,
``compare``, ``--resume``), whichever process (pytest-xdist spreads the items) asks first:
see :mod:`coalmine.pytest_plugin.session`. A failing item reports why in coalmine's words (each
grader's score and what cost points, what was expected, the output); a failure that does not
block (an advisory grader, an advisory suite) is an expected failure (``x``), not a red one.

This module is imported by every pytest run where coalmine is installed: it imports nothing
of coalmine's until ``--coalmine`` asks.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from coalmine.pytest_plugin.session import SharedRun, Wanted

_RUN: pytest.StashKey[SharedRun] = pytest.StashKey()
_PLANS = pytest.StashKey[dict[str, Any]]()
_MARKERS = pytest.StashKey[set[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--coalmine`` and its options (and the ini switch ``coalmine``)."""
    group = parser.getgroup("coalmine", "coalmine: canaries and eval suites as tests")
    group.addoption("--coalmine", action="store_true", default=None,
                    help="Collect coalmine's canaries and eval cases as test items.")  # fmt: skip
    group.addoption("--coalmine-root", default=None, metavar="PATH",
                    help="The coalmine project (default: the rootdir).")  # fmt: skip
    group.addoption("--coalmine-no-judge", action="store_true", default=False,
                    help="Skip judge graders for the run (weights renormalise).")  # fmt: skip
    parser.addini("coalmine", "Collect coalmine's canaries and eval cases (like --coalmine).",
                  type="bool", default=False)  # fmt: skip


def _active(config: pytest.Config) -> bool:
    given = config.getoption("coalmine")
    return bool(given if given is not None else config.getini("coalmine"))


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers; give the session its shared run (one folder for every worker)."""
    if not _active(config):
        return
    for name, what in (
        ("coalmine", "a coalmine canary or eval case"),
        ("canary", "a coalmine canary"),
        ("eval", "a coalmine eval-suite case"),
    ):
        config.addinivalue_line("markers", f"{name}: {what}")  # fmt: skip
    from coalmine.pytest_plugin.session import SharedRun

    worker = getattr(config, "workerinput", None)  # pytest-xdist: the same id in every worker
    run_id = worker["testrunuid"] if worker else uuid.uuid4().hex
    root = Path(config.getoption("coalmine_root") or config.rootpath).resolve()
    folder = Path(tempfile.gettempdir()) / f"coalmine-pytest-{run_id}"
    no_judge = bool(config.getoption("coalmine_no_judge"))
    config.stash[_RUN] = SharedRun(folder, root, no_judge=no_judge)
    config.stash[_PLANS] = {}


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controller (or the only process) removes the session's folder."""
    run = config.stash.get(_RUN, None)
    if run is None or getattr(config, "workerinput", None) is not None:
        return
    import shutil

    shutil.rmtree(run.folder, ignore_errors=True)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A canary spec or an eval suite of the project, when ``--coalmine`` is on."""
    config = parent.config
    if not _active(config) or _RUN not in config.stash:
        return None
    root = config.stash[_RUN].root
    try:
        relative = file_path.resolve().relative_to(root)
    except ValueError:
        return None
    parts = relative.parts
    if parts[:2] == ("bench", "canaries") and file_path.suffix in (".yaml", ".yml"):
        return CanaryFile.from_parent(parent, path=file_path)
    if parts[:2] == ("harness", "evals") and len(parts) == 3 and file_path.suffix == ".jsonl":
        return SuiteFile.from_parent(parent, path=file_path)
    return None


def _plans(config: pytest.Config) -> dict[str, Any]:
    """The project's canary and eval plans, made once per process (every file reads them)."""
    plans = config.stash[_PLANS]
    if not plans:
        from coalmine.canary.plan import plan_canaries
        from coalmine.errors import CoalmineError
        from coalmine.evals.plan import plan_evals

        root = config.stash[_RUN].root
        for kind, make in (("canaries", plan_canaries), ("evals", plan_evals)):
            try:
                plans[kind] = make(root)
            except CoalmineError as exc:
                plans[kind] = exc
    return plans


class CanaryFile(pytest.File):
    """A canary spec: one item, its canary (or the reason it is invalid)."""

    def collect(self) -> Iterator[pytest.Item]:
        """The spec's canary."""
        plan = _plans(self.config)["canaries"]
        if isinstance(plan, Exception):
            yield BrokenItem.from_parent(self, name="project", why=str(plan))
            return
        here = self.path.resolve()
        for canary in plan.canaries:
            if canary.loaded.path.resolve() == here:
                item = CoalmineItem.from_parent(self, name=canary.loaded.id)
                item.wanted = _wanted(canary.loaded.id)
                item.add_marker("canary")
                _mark(item, canary.loaded.spec.phase, *canary.loaded.spec.tags)
                yield item
        for invalid in plan.invalid:
            if invalid.path.resolve() == here:
                name = invalid.spec_id or "spec"
                yield BrokenItem.from_parent(self, name=name, why=invalid.reason)


class SuiteFile(pytest.File):
    """An eval suite: an item per case, and one per bad line."""

    def collect(self) -> Iterator[pytest.Item]:
        """The suite's cases and bad lines."""
        plan = _plans(self.config)["evals"]
        if isinstance(plan, Exception):
            yield BrokenItem.from_parent(self, name="project", why=str(plan))
            return
        here = self.path.resolve()
        for broken in plan.broken:
            if broken.path.resolve() == here:
                yield BrokenItem.from_parent(self, name="suite", why=broken.message)
        for suite in plan.suites:
            index = suite.index
            if index.path.resolve() != here:
                continue
            with index.path.open("rb") as handle:
                for position in range(len(index)):
                    case = index.read(position, handle).case
                    item = CoalmineItem.from_parent(self, name=case.id)
                    item.wanted = _wanted(case.id, suite.name)
                    item.add_marker("eval")
                    _mark(item, *case.tags)
                    yield item
            for bad in index.bad:
                name = f"line-{bad.line}" if bad.case_id is None else f"{bad.case_id}@{bad.line}"
                yield BrokenItem.from_parent(self, name=name, why=str(bad))


def _wanted(case: str, suite: str | None = None) -> Wanted:
    from coalmine.pytest_plugin.session import Wanted

    return Wanted(case, suite)


def _mark(item: pytest.Item, *names: str) -> None:
    """Markers (and ``-k`` keywords) for a phase or tags; each registered as it is met."""
    item.add_marker("coalmine")
    for name in names:
        marker = name.replace("-", "_")
        if not marker.isidentifier():
            item.extra_keyword_matches.add(name)
            continue
        known = item.config.stash.setdefault(_MARKERS, set())
        if marker not in known:  # registered once, so --strict-markers accepts it
            known.add(marker)
            item.config.addinivalue_line("markers", f"{marker}: a coalmine tag or phase")
        item.add_marker(marker)


class CoalmineFailure(Exception):
    """A case that failed: its explanation is the report."""


class CoalmineItem(pytest.Item):
    """One canary or eval case; its result comes from the session's shared run."""

    wanted: Wanted

    def runtest(self) -> None:
        """Pass, fail with coalmine's explanation, or xfail for a failure that does not block."""
        shared = self.config.stash[_RUN]
        every = [i.wanted for i in self.session.items if isinstance(i, CoalmineItem)]
        found = shared.result(self.wanted, every)
        if found is None:
            raise CoalmineFailure(f"{self.wanted.key}: the run ended before this case ran")
        if "error" in found:
            raise CoalmineFailure(f"coalmine could not run the cases: {found['error']}")
        self.user_properties.append(("coalmine_run", found["run_id"]))
        if found["verdict"] == "PASS":
            return
        if found["advisory"]:
            pytest.xfail(f"advisory {found['verdict']}: it does not block")
        raise CoalmineFailure(f"{found['explain']}\n\n(coalmine run {found['run_id']})")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """Coalmine's explanation, not a traceback."""
        if isinstance(excinfo.value, CoalmineFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the case is, as pytest lists it."""
        return self.path, None, f"coalmine: {self.wanted.key}"


class BrokenItem(pytest.Item):
    """An invalid spec, a bad line, a suite or project that does not load: it fails, saying why."""

    def __init__(self, *, why: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.why = why
        self.add_marker("coalmine")

    def runtest(self) -> None:
        """Fail with the reason."""
        raise CoalmineFailure(self.why)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """The reason, not a traceback."""
        return str(excinfo.value)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where it is."""
        return self.path, None, f"coalmine: {self.name}"
