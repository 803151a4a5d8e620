"""Content-addressed artifacts: exact round trips, one file per text, damage reads as missing."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from coalmine.errors import StoreError
from coalmine.store.artifacts import Artifacts

# Unicode outside the BMP, a combining accent, CRLF and lone CR, a NUL and a trailing blank.
AWKWARD = "naïve café ☕ 𝄞 e\u0301\r\nline two\rline three\x00after NUL\n "


@pytest.fixture
def artifacts(tmp_path: Path) -> Artifacts:
    return Artifacts(tmp_path / "artifacts")


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_round_trip_keeps_every_character(artifacts: Artifacts) -> None:
    name = artifacts.put(AWKWARD)
    assert artifacts.get(name) == AWKWARD
    assert artifacts.path_of(name).read_bytes() == AWKWARD.encode("utf-8")  # no newline changes


def test_the_name_is_the_prefixed_sha256_of_the_utf8_bytes(artifacts: Artifacts) -> None:
    name = artifacts.put(AWKWARD)
    assert name == "sha256:" + hashlib.sha256(AWKWARD.encode("utf-8")).hexdigest()


def test_the_path_is_sha256_then_two_hex_then_the_digest(artifacts: Artifacts) -> None:
    # sha256("hello") = 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
    digest = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    name = artifacts.put("hello")
    assert name == f"sha256:{digest}"
    path = artifacts.path_of(name)
    assert path == artifacts.root / "sha256" / "2c" / digest
    assert re.fullmatch(
        r"sha256/[0-9a-f]{2}/[0-9a-f]{64}", path.relative_to(artifacts.root).as_posix()
    )
    assert path.is_file()


def test_the_same_text_twice_is_one_file(artifacts: Artifacts) -> None:
    first = artifacts.put("same answer")
    second = artifacts.put("same answer")
    assert first == second
    assert files(artifacts.root) == [artifacts.path_of(first)]
    artifacts.put("another answer")
    assert len(files(artifacts.root)) == 2


def test_the_empty_text_is_an_artifact_too(artifacts: Artifacts) -> None:
    name = artifacts.put("")
    assert artifacts.get(name) == ""


def test_a_damaged_artifact_reads_as_none(artifacts: Artifacts) -> None:
    name = artifacts.put("the agent's answer")
    artifacts.path_of(name).write_bytes(b"the agent's answeR")
    assert artifacts.get(name) is None


def test_an_artifact_that_is_not_utf8_reads_as_none(artifacts: Artifacts) -> None:
    name = artifacts.put("plain")
    artifacts.path_of(name).write_bytes(b"\xff\xfe")
    assert artifacts.get(name) is None


def test_a_missing_artifact_reads_as_none(artifacts: Artifacts) -> None:
    assert artifacts.get("sha256:" + "0" * 64) is None
    name = artifacts.put("soon gone")
    artifacts.path_of(name).unlink()
    assert artifacts.get(name) is None


def test_a_damaged_artifact_is_rewritten_by_the_next_put(artifacts: Artifacts) -> None:
    name = artifacts.put("answer")
    artifacts.path_of(name).write_text("garbage")
    assert artifacts.put("answer") == name
    assert artifacts.get(name) == "answer"


def test_a_name_without_the_prefix_is_refused(artifacts: Artifacts) -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    with pytest.raises(StoreError, match="unknown artifact scheme"):
        artifacts.path_of(digest)
    with pytest.raises(StoreError, match="unknown artifact scheme"):
        artifacts.path_of("b2:" + digest)
    assert artifacts.get(digest) is None  # reading never raises


def test_writes_leave_no_temporary_files(artifacts: Artifacts) -> None:
    names = {artifacts.put(f"answer {i}") for i in range(20)}
    names.add(artifacts.put("answer 3"))
    stored = files(artifacts.root)
    assert stored == sorted(artifacts.path_of(n) for n in names)
    assert not [p for p in stored if p.name.startswith(".tmp-")]
