"""Files written whole or not at all, and new names claimed without overwriting another file.

Every result file and report is written to a temporary file in its own folder, flushed to disk,
then put in place in one step, so a process killed at any moment leaves the old file or the new
one, never a stub or half a file. :func:`write_file` replaces what is there (a run rewriting its
own file); :func:`write_new_file` takes the first free name of a series (``…-2``, ``…-3``): the
temporary file is hard-linked to the name, which fails if another file has it.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from coalmine.errors import StoreError

__all__ = ["shown_path", "write_file", "write_new_file"]


def write_file(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (folders are created), replacing it in one step.

    Raises:
        StoreError: the folder or the file cannot be written.
    """
    tmp = _write_temp(path, text)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def write_new_file(
    directory: Path, name_for: Callable[[int], str], render: Callable[[Path], str]
) -> Path:
    """Write ``render(path)`` under the first free name: ``name_for(1)``, ``name_for(2)``, and on.

    ``render`` is given the name it is written under (a result file holds its own name). Two
    processes writing at once never take the same name, and the name never holds a part file.

    Raises:
        StoreError: the folder or the file cannot be written.
    """
    n = 0
    while True:
        n += 1
        path = directory / name_for(n)
        if os.path.lexists(path):
            continue
        tmp = _write_temp(path, render(path))
        try:
            os.link(tmp, path)
        except FileExistsError:
            continue  # taken since the check: the next name
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
            if not _claim_without_links(tmp, path):
                continue
        finally:
            _discard(tmp)
        return path


def _claim_without_links(tmp: Path, path: Path) -> bool:
    """Claim ``path`` on a file system without hard links: create it empty, then replace it.

    Here a process killed between the two steps leaves an empty file; nowhere else.
    """
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except FileExistsError:
        return False
    except OSError as exc:
        raise StoreError(f"cannot create {path}: {exc.strerror or exc}") from None
    try:
        os.replace(tmp, path)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    return True


def _write_temp(path: Path, text: str) -> Path:
    """A new temporary file beside ``path`` holding ``text``, flushed to disk."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:  # the mode of any new file (the umask applies), not mkstemp's private 0600
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            continue
        except OSError as exc:
            raise StoreError(f"cannot write in {path.parent}: {exc.strerror or exc}") from None
        break
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        _discard(tmp)
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    return tmp


def _discard(tmp: Path) -> None:
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass


def shown_path(path: Path | None) -> Path | None:
    """A path as the user can use it: relative to the working directory when it lies below it."""
    if path is None:
        return None
    try:
        return path.resolve().relative_to(Path(os.getcwd()).resolve())
    except ValueError:
        return path
