"""Monotonic ULIDs: 48 bits of milliseconds + 80 random bits, Crockford base32, sortable."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def new_ulid(*, now_ms: int | None = None) -> str:
    """Return a new ULID; IDs made in the same millisecond still sort in creation order."""
    global _last_ms, _last_rand
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            rand = (_last_rand + 1) & ((1 << 80) - 1)
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last_ms, _last_rand = ms, rand
    value = (ms << 80) | rand
    return "".join(_ALPHABET[(value >> shift) & 31] for shift in range(125, -1, -5))
