"""What a review eval's fixture must be: a self-contained tree, checked before it is staged.

A symlink that is absolute, dangling or points out of the tree, a ``..`` name, a ``.git`` entry
or a special file (a FIFO, a device) is refused with the eval and the path. The check runs when
the eval loads, so a refused fixture is a problem of that eval (exit 2) and the other evals
run, and again just before staging.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NoReturn

from coalmine.errors import CoalmineError

__all__ = ["StagingError", "check_fixture"]


class StagingError(CoalmineError):
    """An eval's fixture could not be staged: it escapes its tree, is empty, or git failed."""

    exit_code = 2

    def __init__(self, message: str, *, eval_name: str, path: Path | None = None):
        self.eval_name = eval_name
        self.path = path
        """The offending fixture path, when one is at fault."""
        self.reason = message
        super().__init__(f"eval {eval_name!r}: {message}")


def check_fixture(name: str, root: Path) -> list[Path]:
    """Check that the fixture at ``root`` (eval ``name``'s) is self-contained; return its files.

    Raises:
        StagingError: a path escapes the tree (``..``, an absolute, dangling or outward
            symlink), is a ``.git`` entry or a special file, or the tree has no file.
    """
    if root.is_symlink() or not root.is_dir():
        raise StagingError(f"{root} is not a folder", eval_name=name, path=root)
    real_root = Path(os.path.realpath(root))
    found: list[Path] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        for entry in sorted(dirs) + sorted(files):
            path = here / entry
            relative = path.relative_to(root)
            if entry in (".", ".."):
                _refuse(name, root, relative, "the name '..' escapes the tree")
            if entry.lower() == ".git":
                _refuse(name, root, relative, "a .git entry would clash with the staged repository")
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                _check_link(name, root, real_root, path)
                found.append(path)
            elif stat.S_ISREG(mode):
                found.append(path)
            elif not stat.S_ISDIR(mode):
                _refuse(name, root, relative, "not a file, a folder or a symlink")
    if not found:
        raise StagingError(f"nothing to review: {root} holds no file", eval_name=name, path=root)
    return found


def _check_link(name: str, root: Path, real_root: Path, path: Path) -> None:
    relative = path.relative_to(root)
    target = os.readlink(path)
    if os.path.isabs(target):
        _refuse(name, root, relative, f"an absolute symlink (to {target})")
    # Lexically first: the copy lives in another folder, so a link that leaves the tree and
    # comes back through its name (../test-files/x) would break there.
    lexical = os.path.normpath(os.path.join(os.path.dirname(relative), target))
    if lexical == ".." or lexical.startswith(".." + os.sep):
        _refuse(name, root, relative, f"a symlink pointing out of the tree (to {target})")
    resolved = Path(os.path.realpath(path))
    if resolved != real_root and real_root not in resolved.parents:
        _refuse(name, root, relative, f"a symlink pointing out of the tree (to {target})")
    if not resolved.exists():
        _refuse(name, root, relative, f"a dangling symlink (to {target})")


def _refuse(name: str, root: Path, relative: Path, why: str) -> NoReturn:
    raise StagingError(
        f"{root.name}/{relative.as_posix()}: {why}; a fixture must be self-contained",
        eval_name=name,
        path=root / relative,
    )
