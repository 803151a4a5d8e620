"""Where settings point: files that must stay inside the project, and http(s) URLs.

:func:`inside_root` is the one check every reader of a file named by config or a spec uses:
the path is resolved (symlinks followed) and must land inside the project root, so neither
``../../etc/passwd``, an absolute path elsewhere nor a symlink out of the tree is read, sent to
an agent or stored. :data:`ProjectFile` and :data:`HttpURL` are the setting types that check
this when a config is validated (``model_validate(..., context=project_context(...))``), so a
bad path or URL is an error at its line before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, ValidationInfo

__all__ = [
    "HttpURL",
    "OutsideProject",
    "ProjectFile",
    "check_http_url",
    "inside_root",
    "project_context",
    "root_for",
]


class OutsideProject(ValueError):
    """A path named by a file resolves outside the project root (``path``: what it names)."""

    def __init__(self, message: str, *, path: Path):
        self.path = path
        super().__init__(message)


def inside_root(name: str | Path, *, base: Path, root: Path, what: str = "path") -> Path:
    """``name`` (relative to ``base``) resolved, symlinks followed; it must stay in ``root``.

    Raises:
        OutsideProject: it resolves outside ``root`` (an absolute path elsewhere, ``..``, or a
            symlink that leads out).
    """
    given = Path(name)
    resolved = (base / given).resolve()
    top = root.resolve()
    if resolved != top and not resolved.is_relative_to(top):
        raise OutsideProject(
            f"{what} {str(name)!r} resolves to {resolved}, outside the project ({top}); "
            "coalmine reads only files inside the project",
            path=resolved,
        )
    return resolved


def root_for(file: Path, *, root: Path) -> Path:
    """The folder the references of a config ``file`` must stay in.

    That is the git repository that holds the file when there is one (a team's promptfoo
    config in ``evals/`` names ``file://../shared/checks.py`` from the same repository, and
    the repository is what the team trusts); else the project ``root`` when the file is inside
    it; else the file's own folder (a config named on the command line from elsewhere).
    """
    resolved = file.resolve()
    top = root.resolve()
    holders = [top] if resolved.is_relative_to(top) else []
    repository = _repository_of(resolved.parent)
    if repository is not None:
        holders.append(repository)
    # each holds the file, so one holds the other: the shortest path is the widest
    return min(holders, key=lambda p: len(p.parts)) if holders else resolved.parent


def _repository_of(folder: Path) -> Path | None:
    """The top of the git work tree that holds ``folder`` (a ``.git`` folder or file), if any."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_context(*, base_dir: Path, root: Path) -> dict[str, Path]:
    """The validation context that makes :data:`ProjectFile` check against a project."""
    return {"base_dir": base_dir, "root": root}


def _project_file(value: str, info: ValidationInfo) -> str:
    context: Any = info.context or {}
    base, root = context.get("base_dir"), context.get("root")
    if base is None or root is None:  # validated outside a project (a library caller)
        return value
    path = inside_root(value, base=base, root=root, what=info.field_name or "path")
    if not path.is_file():
        raise ValueError(f"no file at {path}" + (" (a folder)" if path.is_dir() else ""))
    return value


ProjectFile = Annotated[str, AfterValidator(_project_file)]
"""A file setting, relative to the config file's folder: it must exist inside the project."""


def check_http_url(value: str) -> str:
    """``value`` when it is an http(s) URL with a host; ``ValueError`` saying why otherwise."""
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or parts.port > 0
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ValueError(
            f"{value!r} is not an http:// or https:// URL with a host "
            "(e.g. http://127.0.0.1:8000/v1)"
        )
    return value


HttpURL = Annotated[str, AfterValidator(check_http_url)]
"""An endpoint setting: an http(s) URL with a host, checked when the config loads."""
