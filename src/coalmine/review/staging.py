"""Stage each eval's fixture as a real git diff (seed 003, step 1 and 2).

For an eval, a fresh repository gets an empty base commit, then the ``test-files/`` tree is
copied in verbatim (bytes, modes, symlinks) and staged, so ``git diff --cached`` shows every
fixture file as added. The diff and the file list come from git itself, never from a listing
of the fixture: scope discovery is tested by git, not by instruction.

A fixture must be self-contained (:mod:`coalmine.review.fixtures` checks it when the eval
loads, and again here before anything is copied).
Git runs with a scrubbed environment: no ``GIT_*`` variable of the caller (a hook's
``GIT_DIR`` would redirect it), no global or system config, no global ignore or attributes
file, a fixed identity and fixed dates (so the base commit is the same on every machine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from coalmine._util.scratch import make_scratch
from coalmine.review.fixtures import StagingError, check_fixture
from coalmine.review.layout import ReviewEval

__all__ = ["StagedEval", "StagingError", "stage_all", "stage_eval"]

BASE_MESSAGE = "base"
_IDENTITY = "coalmine"
_EMAIL = "coalmine@localhost"
_DATE = "2000-01-01T00:00:00+00:00"
_GIT_CONFIG = (
    "init.defaultBranch=main",
    f"user.name={_IDENTITY}",
    f"user.email={_EMAIL}",
    "commit.gpgSign=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.fileMode=true",
    "core.symlinks=true",
    "core.quotePath=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.hooksPath=/dev/null",
)
_TIMEOUT = 120.0


@dataclass(frozen=True)
class StagedEval:
    """An eval's repository with its fixture staged, and what git says about it."""

    name: str
    worktree: Path
    """The repository's root (``<stage dir>/<name>``)."""
    diff: str
    """``git diff --cached``: every fixture file, as added."""
    file_list: list[str]
    """``git diff --cached --name-only``, as paths relative to the worktree."""
    base_commit: str
    """The empty commit the diff is against."""


def stage_eval(ev: ReviewEval, into: Path) -> StagedEval:
    """Create ``into/<name>/``, a repository with ``ev``'s fixture staged on an empty base.

    Raises:
        StagingError: the fixture escapes its tree or is empty, the folder exists, or git failed.
    """
    check_fixture(ev.name, ev.test_files)
    worktree = into / ev.name
    try:
        worktree.mkdir(parents=True)
    except FileExistsError:
        raise StagingError(f"{worktree} already exists", eval_name=ev.name) from None
    except OSError as exc:
        raise StagingError(f"cannot create {worktree}: {exc.strerror}", eval_name=ev.name) from None
    try:
        _git(ev.name, worktree, "init", "--quiet", "--template=")
        _git(
            ev.name,
            worktree,
            "commit",
            "--quiet",
            "--allow-empty",
            "--no-verify",
            "-m",
            BASE_MESSAGE,
        )
        base = _git(ev.name, worktree, "rev-parse", "HEAD").decode().strip()
        try:
            shutil.copytree(ev.test_files, worktree, symlinks=True, dirs_exist_ok=True)
        except (OSError, shutil.Error) as exc:
            raise StagingError(f"cannot copy the fixture: {exc}", eval_name=ev.name) from None
        _git(ev.name, worktree, "add", "--all", "--force")
        diff = _git(ev.name, worktree, "diff", "--cached", "--no-color", "--no-ext-diff")
        names = _git(ev.name, worktree, "diff", "--cached", "--name-only", "-z")
    except BaseException:
        shutil.rmtree(worktree, ignore_errors=True)
        raise
    file_list = [os.fsdecode(n) for n in names.split(b"\0") if n]
    return StagedEval(ev.name, worktree, diff.decode("utf-8", errors="replace"), file_list, base)


@contextmanager
def stage_all(
    evals: Iterable[ReviewEval], *, keep: bool
) -> Iterator[tuple[Path, dict[str, StagedEval]]]:
    """Stage every eval under a new temporary folder, removed at exit unless ``keep``.

    Yields:
        The stage folder and each eval's staged repository, by eval name.

    Raises:
        StagingError: an eval could not be staged (the folder is removed unless ``keep``).
    """
    stage_dir = make_scratch("review", keep=keep)
    try:
        staged: dict[str, StagedEval] = {}
        for ev in evals:
            staged[ev.name] = stage_eval(ev, stage_dir)
        yield stage_dir, staged
    finally:
        if not keep:
            shutil.rmtree(stage_dir, ignore_errors=True)


def _git(name: str, worktree: Path, *args: str) -> bytes:
    """Run git in ``worktree`` with the scrubbed environment; return its stdout.

    Raises:
        StagingError: git is missing, timed out or failed (with its stderr).
    """
    command = ["git", "-C", str(worktree)]
    for setting in _GIT_CONFIG:
        command += ["-c", setting]
    command += args
    try:
        done = subprocess.run(
            command, check=False, capture_output=True, env=_git_env(), timeout=_TIMEOUT
        )
    except FileNotFoundError:
        raise StagingError("git is not installed (or not on PATH)", eval_name=name) from None
    except subprocess.TimeoutExpired:
        message = f"git {args[0]} timed out after {_TIMEOUT:g}s"
        raise StagingError(message, eval_name=name) from None
    except OSError as exc:
        raise StagingError(f"cannot run git: {exc.strerror}", eval_name=name) from None
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace").strip()
        message = f"git {' '.join(args)} failed (exit {done.returncode}): {stderr}"
        raise StagingError(message, eval_name=name)
    return done.stdout


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME=_IDENTITY,
        GIT_AUTHOR_EMAIL=_EMAIL,
        GIT_COMMITTER_NAME=_IDENTITY,
        GIT_COMMITTER_EMAIL=_EMAIL,
        GIT_AUTHOR_DATE=_DATE,
        GIT_COMMITTER_DATE=_DATE,
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env
