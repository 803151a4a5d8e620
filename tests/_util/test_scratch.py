"""Scratch folders: private, named for their process, and swept when a killed process left them."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from coalmine._util import scratch as scratch_module
from coalmine._util.scratch import ORPHAN_AGE, make_scratch, scratch, sweep_orphans

OLD = time.time() - ORPHAN_AGE - 60


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def _folder(root: Path, name: str, *, touched: float | None = None) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "trajectory.jsonl").write_text("")
    if touched is not None:
        for path in (folder / "trajectory.jsonl", folder):
            os.utime(path, (touched, touched))
    return folder


def test_a_dead_process_s_folder_untouched_for_the_orphan_age_is_swept(tmp_path: Path) -> None:
    dead = _dead_pid()
    orphan = _folder(tmp_path, f"coalmine-trajectory-{dead}-abc", touched=OLD)
    assert sweep_orphans("trajectory", tmp_path) == [orphan]
    assert not orphan.exists()


def test_what_may_still_be_in_use_or_is_not_ours_to_judge_is_kept(tmp_path: Path) -> None:
    dead = _dead_pid()
    live = subprocess.Popen(["sleep", "30"])
    try:
        kept = [
            _folder(tmp_path, f"coalmine-trajectory-{dead}-recent"),  # touched just now
            _folder(tmp_path, f"coalmine-trajectory-{os.getpid()}-mine", touched=OLD),
            _folder(tmp_path, f"coalmine-trajectory-{live.pid}-live", touched=OLD),
            _folder(tmp_path, f"coalmine-review-{dead}-other-kind", touched=OLD),
            _folder(tmp_path, f"coalmine-trajectory-x{dead}-not-a-pid", touched=OLD),
        ]
        recent_file = _folder(tmp_path, f"coalmine-trajectory-{dead}-written", touched=OLD)
        (recent_file / "trajectory.jsonl").write_text("{}\n")  # the agent still writes to it
        kept.append(recent_file)
        plain = tmp_path / f"coalmine-trajectory-{dead}-a-file"
        plain.write_text("")
        os.utime(plain, (OLD, OLD))
        assert sweep_orphans("trajectory", tmp_path) == []
        assert all(folder.is_dir() for folder in kept) and plain.is_file()
    finally:
        live.kill()
        live.wait()


def test_a_scratch_folder_is_private_named_for_its_process_and_removed_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(scratch_module, "_swept", set())
    orphan = _folder(tmp_path, f"coalmine-python-{_dead_pid()}-old", touched=OLD)
    with scratch("python") as folder:
        assert folder.parent == tmp_path
        assert folder.name.startswith(f"coalmine-python-{os.getpid()}-")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        (folder / "out.json").write_text("{}")
        assert not orphan.exists()  # the first folder of a kind swept that kind's orphans
    assert not folder.exists()
    again = _folder(tmp_path, f"coalmine-python-{_dead_pid()}-later", touched=OLD)
    make_scratch("python").rmdir()
    assert again.exists()  # once a process: not a directory listing a call


def test_a_folder_made_to_be_kept_is_never_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    kept = make_scratch("review", keep=True)  # `review stage --keep`: the user inspects it later
    assert kept.name.startswith("coalmine-review-kept-")
    os.utime(kept, (OLD, OLD))
    assert sweep_orphans("review", tmp_path) == []
    assert kept.is_dir()


@pytest.mark.slow
def test_a_killed_run_s_trajectory_folder_is_swept_by_a_later_run(tmp_path: Path) -> None:
    project, scratch_root = tmp_path / "project", tmp_path / "tmp"
    (project / "harness" / "evals").mkdir(parents=True)
    scratch_root.mkdir()
    agent = project / "agent.py"
    agent.write_text(
        textwrap.dedent(
            """
            import os, sys, time
            sys.stdin.read()
            if os.environ.get("SLOW"):
                time.sleep(60)
            print("hi")
            """
        )
    )
    (project / "coalmine.yaml").write_text(
        textwrap.dedent(
            f"""
            agents:
              a: {{provider: command, argv: [{sys.executable!r}, agent.py], env: {{SLOW: "${{SLOW:-}}"}}}}
            judge: none
            """
        )
    )
    (project / "harness" / "evals" / "s.jsonl").write_text(
        '{"id": "x", "prompt": "hi", "expected": "hi", "graders": [{"type": "icontains"}]}\n'
    )
    command = [sys.executable, "-m", "coalmine", "eval", "run", "--display", "none"]
    env = {**os.environ, "TMPDIR": str(scratch_root), "SLOW": "1"}
    run = subprocess.Popen(command, cwd=project, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while not list(scratch_root.glob("coalmine-trajectory-*")):
        assert run.poll() is None and time.monotonic() < deadline, "no call started"
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)  # coalmine and its agent: nothing may clean up
    run.wait()
    (left,) = scratch_root.glob("coalmine-trajectory-*")
    assert left.name.startswith(f"coalmine-trajectory-{run.pid}-")
    for path in (*left.iterdir(), left):
        os.utime(path, (OLD, OLD))
    done = subprocess.run(
        command, cwd=project, env={**env, "SLOW": ""}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(scratch_root.glob("coalmine-trajectory-*")) == []
