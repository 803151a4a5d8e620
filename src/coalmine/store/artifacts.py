"""Large texts (agent outputs, prompts, raw judge replies) stored once, named by content hash.

``.coalmine/artifacts/sha256/ab/abcdef…``: the database keeps only the ``sha256:…`` name. A
file is written to a temporary name and renamed, so a reader never sees half an artifact, and
the same text stored twice takes one file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from coalmine._util.hashing import PREFIX, hash_text
from coalmine.errors import StoreError


class Artifacts:
    """The artifact folder of a store."""

    def __init__(self, root: Path):
        self.root = root

    def path_of(self, name: str) -> Path:
        """Return the file of artifact ``name`` (``sha256:<hex>``)."""
        if not name.startswith(PREFIX):
            raise StoreError(f"unknown artifact scheme: {name[:20]!r}")
        digest = name.removeprefix(PREFIX)
        return self.root / "sha256" / digest[:2] / digest

    def put(self, text: str) -> str:
        """Store ``text`` (UTF-8) and return its name."""
        name = hash_text(text)
        path = self.path_of(name)
        if path.exists() and self.get(name) is not None:
            return name  # already stored, intact (a damaged copy is written again below)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            os.replace(tmp, path)
        except OSError as exc:
            raise StoreError(f"cannot write artifact {path}: {exc.strerror}") from None
        return name

    def get(self, name: str) -> str | None:
        """Return the text of artifact ``name``, or ``None`` if it is missing or damaged."""
        try:
            with self.path_of(name).open(encoding="utf-8", newline="") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError, StoreError):
            return None
        return text if hash_text(text) == name else None
