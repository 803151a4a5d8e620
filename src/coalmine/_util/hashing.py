"""Hashes that name their algorithm, so the scheme can change later (``sha256:…``)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

PREFIX = "sha256:"


def hash_text(text: str) -> str:
    """Return ``sha256:<hex>`` of the UTF-8 bytes of ``text``."""
    return hash_bytes(text.encode("utf-8"))


def hash_bytes(data: bytes) -> str:
    """Return ``sha256:<hex>`` of ``data``."""
    return PREFIX + hashlib.sha256(data).hexdigest()


def canonical_json(value: Any) -> str:
    """Serialise ``value`` as canonical JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
