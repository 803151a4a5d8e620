"""Staging: each fixture becomes a real git repository whose staged diff is the fixture tree."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from coalmine.review import staging
from coalmine.review.layout import Assertion, ReviewEval
from coalmine.review.staging import StagedEval, StagingError, stage_all, stage_eval

BINARY = bytes(range(256)) * 4


def make_eval(root: Path, name: str = "sql-injection") -> ReviewEval:
    folder = root / "evals" / "review" / name
    (folder / "test-files").mkdir(parents=True)
    (folder / "eval.json").write_text("{}", encoding="utf-8")
    return ReviewEval(
        name=name,
        path=folder / "eval.json",
        test_files=folder / "test-files",
        prompt="Please review my change.",
        assertions=[Assertion(id="1", text="Finds the injection.")],
    )


def write(ev: ReviewEval, relative: str, content: str | bytes, mode: int | None = None) -> Path:
    path = ev.test_files / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    if mode is not None:
        path.chmod(mode)
    return path


def populate(ev: ReviewEval) -> None:
    write(
        ev,
        "app/views.py",
        "import sqlite3\n\ndef login(user):\n    q = f\"SELECT * FROM u WHERE n='{user}'\"\n",
    )
    write(ev, "app/__init__.py", "")
    write(ev, "deploy/k8s.yaml", "apiVersion: apps/v1\nkind: Deployment\n")
    write(ev, "README.md", "# Demo\n\nCafé ünïcode.\n")
    write(ev, "docs/notes on café.md", "Spaces and accents in the name.\n")
    write(ev, "scripts/run.sh", "#!/bin/sh\necho run\n", mode=0o755)
    write(ev, "data/blob.bin", BINARY)
    write(ev, ".gitignore", "*.bin\n.env\n")  # ignored names are still part of the fixture
    write(ev, ".env", "SECRET=hunter2\n")


def git(worktree: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    done = subprocess.run(
        ["git", "-C", str(worktree), *args], capture_output=True, check=True, env=env
    )
    return done.stdout.decode("utf-8")


def fixture_files(ev: ReviewEval) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(ev.test_files):
        for name in dirs + files:
            path = Path(folder) / name
            if path.is_file() or path.is_symlink():
                found.append(path.relative_to(ev.test_files).as_posix())
    return sorted(found)


def test_staging_makes_a_repo_whose_cached_diff_is_the_fixture(tmp_path: Path) -> None:
    ev = make_eval(tmp_path)
    populate(ev)
    staged = stage_eval(ev, tmp_path / "stage")
    assert isinstance(staged, StagedEval)
    assert staged.name == ev.name and staged.worktree == tmp_path / "stage" / ev.name
    names = sorted(git(staged.worktree, "diff", "--cached", "--name-only", "-z").split("\0")[:-1])
    assert names == fixture_files(ev) == sorted(staged.file_list)
    assert staged.diff == git(staged.worktree, "-c", "core.quotePath=false", "diff", "--cached")
    for relative in fixture_files(ev):
        path = ev.test_files / relative
        if relative == "data/blob.bin":
            continue
        assert f"diff --git a/{relative} b/{relative}\nnew file mode" in staged.diff
        for line in path.read_text(encoding="utf-8").splitlines():
            assert f"\n+{line}\n" in staged.diff
    assert "Binary files /dev/null and b/data/blob.bin differ" in staged.diff


def test_the_base_commit_is_empty_and_on_main(tmp_path: Path) -> None:
    ev = make_eval(tmp_path)
    populate(ev)
    staged = stage_eval(ev, tmp_path / "stage")
    assert git(staged.worktree, "ls-tree", "-r", "HEAD") == ""
    assert git(staged.worktree, "rev-parse", "HEAD").strip() == staged.base_commit
    assert git(staged.worktree, "log", "--format=%s").strip() == "base"
    assert git(staged.worktree, "symbolic-ref", "--short", "HEAD").strip() == "main"
    again = stage_eval(ev, tmp_path / "again")  # fixed identity and dates: same base everywhere
    assert again.base_commit == staged.base_commit


def test_bytes_and_modes_are_kept(tmp_path: Path) -> None:
    ev = make_eval(tmp_path)
    populate(ev)
    staged = stage_eval(ev, tmp_path / "stage")
    summary = git(staged.worktree, "diff", "--cached", "--summary")
    assert " create mode 100755 scripts/run.sh" in summary
    assert " create mode 100644 app/views.py" in summary
    blob = subprocess.run(
        ["git", "-C", str(staged.worktree), "cat-file", "blob", ":data/blob.bin"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    assert blob == BINARY
    assert (staged.worktree / "data" / "blob.bin").read_bytes() == BINARY
    assert os.access(staged.worktree / "scripts" / "run.sh", os.X_OK)


def test_a_symlink_inside_the_tree_is_staged_as_a_symlink(tmp_path: Path) -> None:
    ev = make_eval(tmp_path)
    write(ev, "conf/base.yaml", "replicas: 1\n")
    (ev.test_files / "conf" / "current.yaml").symlink_to("base.yaml")
    (ev.test_files / "latest").symlink_to("conf")
    (ev.test_files / "conf" / "up.yaml").symlink_to("../conf/base.yaml")
    staged = stage_eval(ev, tmp_path / "stage")
    summary = git(staged.worktree, "diff", "--cached", "--summary")
    assert " create mode 120000 conf/current.yaml" in summary
    assert " create mode 120000 latest" in summary
    assert " create mode 120000 conf/up.yaml" in summary
    assert os.readlink(staged.worktree / "conf" / "current.yaml") == "base.yaml"
    assert sorted(staged.file_list) == fixture_files(ev)


@pytest.mark.parametrize(
    ("relative", "target", "why"),
    [
        ("escape", "../x", "a symlink pointing out of the tree (to ../x)"),
        ("deep/escape", "../../eval.json", "a symlink pointing out of the tree"),
        ("absolute", "/etc/passwd", "an absolute symlink (to /etc/passwd)"),
        ("dangling", "missing.txt", "a dangling symlink (to missing.txt)"),
        ("round-trip", "../test-files/app.py", "a symlink pointing out of the tree"),
    ],
)
def test_links_that_leave_the_tree_are_refused(
    tmp_path: Path, relative: str, target: str, why: str
) -> None:
    ev = make_eval(tmp_path, "leaky-fixture")
    write(ev, "app.py", "print(1)\n")
    link = ev.test_files / relative
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    with pytest.raises(StagingError) as caught:
        stage_eval(ev, tmp_path / "stage")
    message = str(caught.value)
    assert message.startswith("eval 'leaky-fixture': ")
    assert f"test-files/{relative}: {why}" in message
    assert caught.value.eval_name == "leaky-fixture" and caught.value.path == link
    assert not (tmp_path / "stage").exists()  # refused before anything was made


def test_a_git_entry_and_an_empty_tree_are_refused(tmp_path: Path) -> None:
    ev = make_eval(tmp_path)
    with pytest.raises(StagingError, match="nothing to review"):
        stage_eval(ev, tmp_path / "stage")
    (ev.test_files / "empty-dir").mkdir()
    with pytest.raises(StagingError, match="nothing to review"):
        stage_eval(ev, tmp_path / "stage")
    write(ev, "vendor/.git/HEAD", "ref: refs/heads/main\n")
    with pytest.raises(StagingError, match=r"test-files/vendor/\.git: a \.git entry"):
        stage_eval(ev, tmp_path / "stage")


def test_an_existing_worktree_is_refused(tmp_path: Path) -> None:
    ev = make_eval(tmp_path)
    write(ev, "a.txt", "a\n")
    stage_eval(ev, tmp_path / "stage")
    with pytest.raises(StagingError, match="already exists"):
        stage_eval(ev, tmp_path / "stage")


def test_the_callers_git_setup_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = trunk\n[user]\n\tuseConfigOnly = true\n"
        "[core]\n\thooksPath = /nonexistent\n[diff]\n\tnoprefix = true\n",
        encoding="utf-8",
    )
    (home / ".config" / "git" / "ignore").write_text("*.py\n", encoding="utf-8")
    (home / ".config" / "git" / "attributes").write_text("*.py -diff\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "not-a-repo"))  # as inside a git hook
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "index"))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    ev = make_eval(tmp_path)
    write(ev, "app.py", "x = 1\n")
    staged = stage_eval(ev, tmp_path / "stage")
    assert staged.file_list == ["app.py"]
    assert "+++ b/app.py\n" in staged.diff and "\n+x = 1\n" in staged.diff
    assert git(staged.worktree, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert not (tmp_path / "index").exists()


def test_stage_all_removes_the_stage_dir_unless_kept(tmp_path: Path) -> None:
    evals = [make_eval(tmp_path, "one"), make_eval(tmp_path, "two")]
    for ev in evals:
        write(ev, "f.txt", f"{ev.name}\n")
    with stage_all(evals, keep=False) as (stage_dir, staged):
        assert stage_dir.name.startswith("coalmine-review-")
        assert list(staged) == ["one", "two"]
        assert all(s.worktree.parent == stage_dir and s.worktree.is_dir() for s in staged.values())
    assert not stage_dir.exists()

    with pytest.raises(RuntimeError), stage_all(evals, keep=False) as (stage_dir, _):
        raise RuntimeError("the run failed")
    assert not stage_dir.exists()

    with stage_all(evals, keep=True) as (stage_dir, staged):
        pass
    try:
        assert stage_dir.name.startswith("coalmine-review-kept-")  # no later run sweeps it
        assert (stage_dir / "two" / "f.txt").read_text(encoding="utf-8") == "two\n"
        assert git(stage_dir / "one", "diff", "--cached", "--name-only") == "f.txt\n"
    finally:
        shutil.rmtree(stage_dir)


def test_stage_all_cleans_up_when_an_eval_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Path] = []
    real = staging.make_scratch

    def spy(kind: str, *, keep: bool = False) -> Path:
        made.append(real(kind, keep=keep))
        return made[-1]

    monkeypatch.setattr(staging, "make_scratch", spy)
    good, bad = make_eval(tmp_path, "good"), make_eval(tmp_path, "bad")
    write(good, "f.txt", "x\n")
    (bad.test_files / "out").symlink_to("/etc")
    with pytest.raises(StagingError, match="eval 'bad'"), stage_all([good, bad], keep=False):
        pass
    assert made and not made[0].exists()
