"""Past runs: open the store of a project, find a run by reference or result file, tally it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import ValidationError

from coalmine.config import Config, load_config
from coalmine.errors import ConfigError, StoreError, UsageError
from coalmine.providers.base import provider_settings
from coalmine.results import (
    CanaryRun,
    CaseResult,
    Grade,
    RunTotals,
    ToolCall,
    Usage,
    Verdict,
    case_verdict,
)
from coalmine.store.evals import Attempt, iter_attempts, run_suites, suite_results, tally_attempts
from coalmine.store.imports import ImportedRun, import_run
from coalmine.store.runs import RunInfo, Store

Create = Literal["always", "in a project", "never"]
"""When :func:`open_store` may make a store that is not there: for any command that writes,
only in a coalmine project (or at a ``--store`` named on purpose), or never (a read)."""


def open_store(root: Path, *, path: Path | None = None, create: Create = "always") -> Store:
    """Open the run store of the project at ``root`` (``path`` overrides the config).

    Raises:
        StoreError: there is no store and ``create`` says none may be made here (the hint says
            which command makes one), or the store cannot be used (it names the file).
    """
    project = True
    if path is None:
        config = store_config(root)
        path, project = config.store_path, config.path is not None
    allowed = create == "always" or (create == "in a project" and project)
    if not path.exists() and not allowed:
        raise missing_store(path, root=None if project else root)
    return Store.open(path)


def project_store_path(root: Path) -> Path:
    """The project's run store, from the config's ``store:`` alone."""
    return store_config(root).store_path


def store_config(root: Path) -> Config:
    """The project's config read for its ``store:`` alone.

    A command that only reads the store needs nothing else of the config: an unset variable of
    an agent (or a setting it does not use) does not stop it.
    """
    return load_config(root, providers=provider_settings(), keys=("store",))


def find_store(root: Path, *, path: Path | None = None) -> Store | None:
    """The run store when there is one (``None`` otherwise); a read never makes one.

    Raises:
        StoreError: the store cannot be used (it names the file).
    """
    target = path if path is not None else project_store_path(root)
    return Store.open(target) if target.exists() else None


def missing_store(path: Path, *, root: Path | None = None) -> StoreError:
    """The error of a store that is not there (``root``: a folder that is no project)."""
    if root is not None:
        message = f"there is no run store at {path}, and {root} is not a coalmine project"
    else:
        message = f"there is no run store at {path} yet"
    error = StoreError(message)
    error.hint = (
        "`coalmine canary run` or `coalmine eval run` makes one in a project with a "
        "coalmine.yaml (or point --store at a store)"
    )
    return error


def project_config(root: Path) -> Config:
    """Load the project's config (for its store path)."""
    return load_config(root, providers=provider_settings())


def require_project_config(root: Path) -> Config:
    """Load the project's config, which a run needs (it names the agents).

    Raises:
        ConfigError: there is none; its hint is the command that writes one.
    """
    config = project_config(root)
    if config.path is None:
        error = ConfigError(
            f"no coalmine.yaml (or [tool.coalmine] in pyproject.toml) in {config.root}; "
            "create one that maps your agents to providers ('Connect your agents' in the docs)"
        )
        where = "" if config.root == Path.cwd().resolve() else f" --root {config.root}"
        error.hint = (
            f"`coalmine init{where}` proposes one for this repository (`--apply` writes it)"
        )
        raise error
    return config


def is_result_file(ref: str) -> bool:
    """Whether ``ref`` names a result file rather than a stored run."""
    path = Path(ref)
    return path.suffix == ".json" and path.is_file()


def load_run_at(
    root: Path, ref: str, *, path: Path | None = None, kind: str | None = None
) -> CanaryRun:
    """:func:`load_run` of the project's store, opened only when ``ref`` is no result file.

    Raises:
        StoreError: ``ref`` names a stored run and there is no store (it is never made here).
        UsageError: ``ref`` matches no run (of ``kind``), or several.
    """
    if is_result_file(ref):
        return _of_kind(read_result_file(Path(ref)), ref, kind)
    store = open_store(root, path=path, create="never")
    try:
        return load_run(store, ref, kind=kind)
    finally:
        store.close()


def load_run(store: Store, ref: str, *, kind: str | None = None) -> CanaryRun:
    """A run by store reference (id, id prefix, label, ``latest``) or by result-file path.

    With ``kind``, ``latest`` is the newest run of that kind, and a reference to a run of
    another kind matches nothing. An eval run comes back in the same shape, one result per
    suite and case (``suite/case``), so ``compare`` and ``report`` work on it: see
    :func:`eval_run_record`.

    Raises:
        UsageError: ``ref`` matches no run (of ``kind``), or several.
    """
    if is_result_file(ref):
        return _of_kind(read_result_file(Path(ref)), ref, kind)
    info = store.get_run(ref, kind=kind)
    if info.kind == "eval":
        return eval_run_record(store, info)
    return store.load_run(info.id)


def _of_kind(record: CanaryRun, ref: str, kind: str | None) -> CanaryRun:
    found = record.kind or "canary"
    if kind is not None and found != kind:
        raise UsageError(f"{ref} holds a {found} run, and --kind asks for: {kind}")
    return record


def eval_run_record(store: Store, info: RunInfo) -> CanaryRun:
    """An eval run as a run record: each case of each suite one result, ``suite/case``.

    A case's repeats reduce to one result: PASS when every repeat passed, ERROR when one errored
    (and none failed), else FAIL; its composite is the mean score of the repeats that have one,
    and each grader's score the mean over the repeats. What the agent was asked and answered,
    the expected value and each grade in full come from the first repeat that did not pass
    (else the first); with repeats, every one is kept under ``repeats``.
    """
    results = []
    for suite in run_suites(store, info.id):
        runs: list[Attempt] = []
        for attempt in [*iter_attempts(store, info.id, suite), None]:
            if runs and (attempt is None or attempt.case_id != runs[0].case_id):
                results.append(case_of_attempts(suite, runs))
                runs = []
            if attempt is not None:
                runs.append(attempt)
    started = datetime.fromisoformat(info.started_at)
    ended = datetime.fromisoformat(info.ended_at) if info.ended_at else started
    return CanaryRun(
        run_id=info.label or info.id,
        duration_seconds=round((ended - started).total_seconds(), 3),
        store_run_id=info.id,
        kind="eval",
        timestamp=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        summary=RunTotals.of(results, invalid=0),
        results=results,
        interrupted=info.status != "finished",
        judge=info.judge,
        coalmine_version=info.coalmine_version,
        suites=suite_results(store, info.id),
    )


_VERDICT_OF: dict[str, Verdict] = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}


def attempt_result(attempt: Attempt) -> CaseResult:
    """One stored attempt (a case's repeat) as a result: prompt, output, expected, grades."""
    rec = attempt.record
    verdict = _VERDICT_OF.get(attempt.status, "ERROR")
    usage = None
    if attempt.prompt_tokens is not None or attempt.cost is not None:
        usage = Usage(
            model=rec.get("model"),
            prompt_tokens=attempt.prompt_tokens or 0,
            completion_tokens=attempt.completion_tokens or 0,
            cost=attempt.cost,
        )
    why = rec.get("why") or rec.get("error")
    return CaseResult(
        id=f"{attempt.suite}/{attempt.case_id}",
        phase=attempt.suite,
        title=attempt.case_id,
        agent=str(rec.get("agent") or ""),
        verdict=verdict,
        composite_score=attempt.score,
        grader_scores={k: Grade.model_validate(g) for k, g in (rec.get("grades") or {}).items()},
        duration_seconds=attempt.latency or 0.0,
        error=rec.get("error") if attempt.status == "error" or attempt.error_kind else None,
        error_kind=attempt.error_kind,
        failures=[str(why)] if why and verdict != "PASS" else [],
        advisory=True if verdict != "PASS" and not attempt.blocks else None,
        prompt=rec.get("prompt"),
        output=rec.get("output"),
        output_truncated=rec.get("output_truncated"),
        warnings=list(rec.get("warnings") or []),
        cache=rec.get("cache"),
        attempts=rec.get("attempts"),
        call_failures=list(rec.get("call_failures") or []),
        usage={"agent": usage} if usage is not None else {},
        tool_calls=[ToolCall.model_validate(t) for t in rec.get("tool_calls") or []],
        expected=rec.get("expected"),
        expected_tool_calls=rec.get("expected_tool_calls"),
        judge_replies=rec.get("judge_replies"),
    )


def case_of_attempts(suite: str, runs: list[Attempt]) -> CaseResult:
    """A case's repeats as one result (see :func:`eval_run_record`)."""
    verdict = case_verdict(a.status for a in runs)
    scored = [a.score for a in runs if a.score is not None]
    shown = next((a for a in runs if a.status != "pass"), runs[0])
    result = attempt_result(shown)
    if len(runs) == 1:
        return result.model_copy(update={"phase": suite})
    graders: dict[str, list[float]] = {}
    for attempt in runs:
        for key, value in attempt.scores.items():
            if value is not None:
                graders.setdefault(key, []).append(value)
    grades = {}
    for key, values in graders.items():
        mean = sum(values) / len(values)
        grades[key] = result.grader_scores.get(key, Grade()).model_copy(update={"score": mean})
    failures = [
        f"repeat {a.rep + 1}: {a.record.get('why') or a.record.get('error')}"
        for a in runs
        if a.status != "pass"
    ]
    return result.model_copy(
        update={
            "verdict": verdict,
            "composite_score": sum(scored) / len(scored) if scored else None,
            "grader_scores": grades,
            "duration_seconds": sum(a.latency or 0.0 for a in runs),
            "failures": failures,
            "advisory": True if verdict != "PASS" and not any(a.blocks for a in runs) else None,
            "repeats": [attempt_result(a) for a in runs],
        }
    )


class FileImport(NamedTuple):
    """What became of one result file given to :func:`import_result_files`."""

    path: Path
    run: ImportedRun | None
    """The stored run the file is; ``None`` when it was refused."""
    error: str | None = None


def import_result_files(store: Store, paths: Iterable[Path], *, root: Path) -> list[FileImport]:
    """Import each canary result file once (see :mod:`coalmine.store.imports`).

    A file that cannot be read, or that holds a stored run with other content, is refused with
    the reason; the files after it are still imported.
    """
    out = []
    for path in paths:
        try:
            run = read_result_file(path)
            out.append(FileImport(path, import_run(store, run, root=str(root), source=str(path))))
        except UsageError as exc:
            out.append(FileImport(path, None, str(exc)))
    return out


def read_result_file(path: Path) -> CanaryRun:
    """Parse a ``canary-run-*.json`` file.

    Raises:
        UsageError: the file is not a canary result file.
    """
    try:
        return CanaryRun.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"{path} is not a readable canary result file: {first}") from None


def resumable_run(store: Store, ref: str, *, kind: str = "canary") -> RunInfo:
    """The run to resume: ``latest`` is the newest unfinished run of ``kind``.

    Raises:
        UsageError: there is none, or ``ref`` names a finished or an imported run.
    """
    if ref == "latest":
        info = store.find_unfinished(kind)
        if info is None:
            raise UsageError(f"there is no unfinished {kind} run to resume")
        return info
    info = store.get_run(ref, kind=kind)
    if info.status == "finished":
        raise UsageError(f"run {info.id} already finished; there is nothing to resume")
    if info.options.get("imported"):
        raise UsageError(f"run {info.id} was imported from a result file: it ran elsewhere")
    return info


class RunTally(NamedTuple):
    """What ``runs list`` shows of a run: passed of total, and a score."""

    passed: int | None
    """``None`` when nothing says (a run killed before it stored a case)."""
    total: int
    score: float | None


def tally_run(store: Store, info: RunInfo) -> RunTally:
    """A run's pass count and score, by its kind.

    A canary run's are its summary's (its mean composite); an eval run's are its suites' cases
    and the mean of their scores; a run of another kind that stores attempts (a review run)
    counts those, scored by their mean. An eval run without suite summaries yet (running, or
    killed) counts its attempts too.
    """
    if info.kind == "eval":
        suites = suite_results(store, info.id)
        if suites:
            score = sum(r.score for r in suites) / len(suites)
            return RunTally(sum(r.passed for r in suites), sum(r.cases for r in suites), score)
    s = info.summary
    if s is not None:
        return RunTally(s.passed, s.total, s.composite_score)
    attempts = tally_attempts(store, info.id)
    if attempts.total:
        return RunTally(attempts.passed, attempts.total, attempts.mean_score)
    return RunTally(None, info.cases, None)
