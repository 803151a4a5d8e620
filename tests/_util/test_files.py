"""Files written whole or not at all; new names taken without overwriting, even by racing writers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coalmine._util.files import write_file, write_new_file
from coalmine.errors import StoreError


def test_write_file_replaces_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "report.md"
    write_file(path, "first\n")
    assert write_file(path, "second\n") == path
    assert path.read_text() == "second\n"
    assert [p.name for p in path.parent.iterdir()] == ["report.md"]


def test_an_unwritable_place_is_a_store_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a folder")
    with pytest.raises(StoreError, match="taken"):
        write_file(tmp_path / "taken" / "report.md", "x")
    with pytest.raises(StoreError, match="taken"):
        write_new_file(tmp_path / "taken", lambda n: f"r-{n}.md", lambda _: "x")


def test_racing_writers_each_take_their_own_name(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from coalmine._util.files import write_new_file
        for i in range(20):
            write_new_file(Path({str(tmp_path)!r}), lambda n: f"note-{{n}}.md",
                           lambda path: f"{{sys.argv[1]}} {{i}} {{path.name}}\\n")
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w)]) for w in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 4
    files = sorted(tmp_path.iterdir(), key=lambda p: int(p.stem.split("-")[1]))
    assert [p.name for p in files] == [f"note-{n}.md" for n in range(1, 81)]
    written = [p.read_text().split() for p in files]
    assert all(name == p.name for (_, _, name), p in zip(written, files, strict=True))
    assert sorted((w, int(i)) for w, i, _ in written) == sorted(
        (str(w), i) for w in range(4) for i in range(20)
    )  # nothing overwritten: each write is in its own file
