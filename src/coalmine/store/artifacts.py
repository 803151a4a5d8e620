"""Texts (agent outputs, prompts, raw judge replies) stored once, named by content hash.

Every text is named ``sha256:<hex>``; rows of the store keep only that name. Large texts live
in ``.coalmine/artifacts/sha256/ab/abcdef…`` (written to a temporary name and renamed, so a
reader never sees half a file); small ones (under ``INLINE_LIMIT`` bytes, most prompts) live in
the database's ``blobs`` table, because a file per short prompt would cost a disk block each.
Reading checks the hash, so a damaged text reads as missing, never as something else.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

from coalmine._util.hashing import PREFIX, hash_bytes
from coalmine.errors import StoreError

INLINE_LIMIT = 4096


class Artifacts:
    """The texts of a store: the ``blobs`` table for small ones, a folder for large ones."""

    def __init__(self, root: Path, conn: sqlite3.Connection):
        self.root = root
        self.conn = conn

    def path_of(self, name: str) -> Path:
        """Return the file a large text ``name`` (``sha256:<hex>``) is kept in."""
        if not name.startswith(PREFIX):
            raise StoreError(f"unknown artifact scheme: {name[:20]!r}")
        digest = name[len(PREFIX) :]
        return Path(os.path.join(self.root, "sha256", digest[:2], digest))

    def put(self, text: str, *, verify: bool = False) -> str:
        """Store ``text`` and return its name (call it inside the caller's write transaction).

        A text already stored is not written again; with ``verify`` a stored copy is read back
        first and rewritten when damaged (the cache does this after a damaged read).
        """
        data = text.encode("utf-8", errors="replace")  # lone surrogates cannot be stored
        name = hash_bytes(data)
        if len(data) < INLINE_LIMIT:
            verb = "REPLACE" if verify else "IGNORE"
            self.conn.execute(
                f"INSERT OR {verb} INTO blobs (name, text) VALUES (?, ?)", (name, data.decode())
            )
            return name
        path = self.path_of(name)
        if path.exists() and (not verify or self.get(name) is not None):
            return name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            raise StoreError(f"cannot write artifact {path}: {exc.strerror}") from None
        return name

    def get(self, name: str, *, inline: str | None = None) -> str | None:
        """Return the text called ``name``, or ``None`` if it is missing or damaged.

        ``inline`` is the blobs row's text when the caller already joined it.
        """
        try:
            if inline is None:
                row = self.conn.execute("SELECT text FROM blobs WHERE name = ?", (name,)).fetchone()
                inline = None if row is None else str(row[0])
            data: bytes
            if inline is not None:
                data = inline.encode("utf-8")
            else:
                data = self.path_of(name).read_bytes()
        except (OSError, StoreError, sqlite3.Error, UnicodeEncodeError):
            return None
        if hash_bytes(data) != name:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:  # pragma: no cover - the hash matched a text we encoded
            return None
