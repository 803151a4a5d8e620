"""Past runs: open the store of a project, and find a run by reference or result file."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from coalmine.config import Config, load_config
from coalmine.errors import UsageError
from coalmine.providers.base import provider_settings
from coalmine.results import CanaryRun
from coalmine.store.runs import RunInfo, Store


def open_store(root: Path, *, path: Path | None = None) -> Store:
    """Open the run store of the project at ``root`` (``path`` overrides the config)."""
    return Store.open(path if path is not None else project_config(root).store_path)


def project_config(root: Path) -> Config:
    """Load the project's config (for its store path)."""
    return load_config(root, providers=provider_settings())


def load_run(store: Store, ref: str) -> CanaryRun:
    """A run by store reference (id, id prefix, label, ``latest``) or by result-file path."""
    path = Path(ref)
    if path.suffix == ".json" and path.is_file():
        return read_result_file(path)
    return store.load_run(ref)


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


def baseline_run(store: Store, ref: str, *, current: str | None) -> CanaryRun:
    """The baseline of a comparison: ``latest`` is the newest finished run before ``current``."""
    if ref != "latest":
        return load_run(store, ref)
    for info in store.list_runs(kind="canary", limit=50):
        if info.id != current and info.status == "finished":
            return store.load_run(info.id)
    raise UsageError("there is no earlier finished run to compare with")


def resumable_run(store: Store, ref: str, *, kind: str = "canary") -> RunInfo:
    """The run to resume: ``latest`` is the newest unfinished run of ``kind``.

    Raises:
        UsageError: there is none, or ``ref`` names a finished run.
    """
    if ref == "latest":
        info = store.find_unfinished(kind)
        if info is None:
            raise UsageError(f"there is no unfinished {kind} run to resume")
        return info
    info = store.get_run(ref, kind=kind)
    if info.status == "finished":
        raise UsageError(f"run {info.id} already finished; there is nothing to resume")
    return info
