"""Connections to the run store: WAL, foreign keys and a busy timeout on every one.

Writers take the write lock up front (``BEGIN IMMEDIATE``), so two processes writing at once
queue on the busy timeout instead of failing half-way through a transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from coalmine.errors import StoreError

BUSY_TIMEOUT_MS = 30_000


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the database at ``path`` with the store's settings."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable across crashes
        conn.execute("PRAGMA foreign_keys = ON")
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot open the run store {path}: {exc}") from None
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Run the block in one write transaction: all of it is stored, or none of it."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot write to the run store: {exc}") from None
    try:
        yield conn
    except sqlite3.Error as exc:
        conn.execute("ROLLBACK")
        raise StoreError(f"the run store refused a write: {exc}") from None
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise StoreError(f"cannot write to the run store: {exc}") from None
