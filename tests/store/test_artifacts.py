"""Stored texts: exact round trips, one copy per text, damage reads as missing.

Texts under INLINE_LIMIT bytes live in the database's blobs table, larger ones in files.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from coalmine.errors import StoreError
from coalmine.store.artifacts import INLINE_LIMIT, Artifacts
from coalmine.store.runs import Store

# Unicode outside the BMP, a combining accent, CRLF and lone CR, a NUL and a trailing blank.
AWKWARD = "naïve café ☕ 𝄞 e\u0301\r\nline two\rline three\x00after NUL\n "


def big(text: str) -> str:
    """``text`` padded past INLINE_LIMIT, so it is kept as a file."""
    return text + "\n" + "." * INLINE_LIMIT


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "coalmine.db")
    yield opened
    opened.close()


@pytest.fixture
def artifacts(store: Store) -> Artifacts:
    return store.artifacts


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.mark.parametrize("text", [AWKWARD, big(AWKWARD)], ids=["inline", "file"])
def test_round_trip_keeps_every_character(artifacts: Artifacts, text: str) -> None:
    name = artifacts.put(text)
    assert artifacts.get(name) == text


def test_a_large_text_is_a_file_of_its_exact_bytes(artifacts: Artifacts) -> None:
    name = artifacts.put(big(AWKWARD))
    assert artifacts.path_of(name).read_bytes() == big(AWKWARD).encode("utf-8")  # no newline change


def test_a_small_text_stays_in_the_database(artifacts: Artifacts, store: Store) -> None:
    name = artifacts.put("short prompt")
    assert files(artifacts.root) == []
    row = store.conn.execute("SELECT text FROM blobs WHERE name = ?", (name,)).fetchone()
    assert row[0] == "short prompt"


def test_the_name_is_the_prefixed_sha256_of_the_utf8_bytes(artifacts: Artifacts) -> None:
    name = artifacts.put(AWKWARD)
    assert name == "sha256:" + hashlib.sha256(AWKWARD.encode("utf-8")).hexdigest()


def test_the_path_is_sha256_then_two_hex_then_the_digest(artifacts: Artifacts) -> None:
    text = big("hello")
    digest = hashlib.sha256(text.encode()).hexdigest()
    name = artifacts.put(text)
    assert name == f"sha256:{digest}"
    path = artifacts.path_of(name)
    assert path == artifacts.root / "sha256" / digest[:2] / digest
    assert re.fullmatch(
        r"sha256/[0-9a-f]{2}/[0-9a-f]{64}", path.relative_to(artifacts.root).as_posix()
    )
    assert path.is_file()


def test_the_same_text_twice_is_one_copy(artifacts: Artifacts, store: Store) -> None:
    first = artifacts.put(big("same answer"))
    assert artifacts.put(big("same answer")) == first
    assert files(artifacts.root) == [artifacts.path_of(first)]
    artifacts.put(big("another answer"))
    assert len(files(artifacts.root)) == 2
    artifacts.put("small")
    artifacts.put("small")
    assert store.conn.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 1


def test_the_empty_text_is_stored_too(artifacts: Artifacts) -> None:
    name = artifacts.put("")
    assert artifacts.get(name) == ""


def test_a_damaged_file_reads_as_none(artifacts: Artifacts) -> None:
    name = artifacts.put(big("the agent's answer"))
    artifacts.path_of(name).write_bytes(b"the agent's answeR")
    assert artifacts.get(name) is None


def test_a_damaged_blob_reads_as_none(artifacts: Artifacts, store: Store) -> None:
    name = artifacts.put("the agent's answer")
    store.conn.execute("UPDATE blobs SET text = 'the agent''s answeR' WHERE name = ?", (name,))
    assert artifacts.get(name) is None


def test_a_file_that_is_not_utf8_reads_as_none(artifacts: Artifacts) -> None:
    name = artifacts.put(big("plain"))
    artifacts.path_of(name).write_bytes(b"\xff\xfe")
    assert artifacts.get(name) is None


def test_a_missing_text_reads_as_none(artifacts: Artifacts) -> None:
    assert artifacts.get("sha256:" + "0" * 64) is None
    name = artifacts.put(big("soon gone"))
    artifacts.path_of(name).unlink()
    assert artifacts.get(name) is None


@pytest.mark.parametrize("text", ["answer", big("answer")], ids=["inline", "file"])
def test_put_with_verify_rewrites_a_damaged_copy(
    artifacts: Artifacts, store: Store, text: str
) -> None:
    name = artifacts.put(text)
    store.conn.execute("UPDATE blobs SET text = 'garbage'")
    if artifacts.path_of(name).exists():
        artifacts.path_of(name).write_text("garbage")
    assert artifacts.get(name) is None
    assert artifacts.put(text, verify=True) == name
    assert artifacts.get(name) == text


def test_a_lone_surrogate_is_stored_replaced_not_raised(artifacts: Artifacts) -> None:
    name = artifacts.put("bad \ud800 half")
    assert artifacts.get(name) == "bad ? half"


def test_a_name_without_the_prefix_is_refused(artifacts: Artifacts) -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    with pytest.raises(StoreError, match="unknown artifact scheme"):
        artifacts.path_of(digest)
    with pytest.raises(StoreError, match="unknown artifact scheme"):
        artifacts.path_of("b2:" + digest)
    assert artifacts.get(digest) is None  # reading never raises


def test_writes_leave_no_temporary_files(artifacts: Artifacts) -> None:
    names = {artifacts.put(big(f"answer {i}")) for i in range(20)}
    names.add(artifacts.put(big("answer 3")))
    stored = files(artifacts.root)
    assert stored == sorted(artifacts.path_of(n) for n in names)
    assert not [p for p in stored if p.name.startswith(".tmp-")]
