"""MkDocs hook: refuse to build the site from reference pages the code no longer makes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

HERE = Path(__file__).parent


def on_pre_build(config: Any) -> None:
    """Compare ``docs/reference/*.md`` with ``docs/reference.py``'s pages; stop if stale."""
    spec = importlib.util.spec_from_file_location("coalmine_docs_reference", HERE / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stale = [
        relative
        for relative, text in module.pages().items()
        if not (HERE / relative).is_file() or (HERE / relative).read_text(encoding="utf-8") != text
    ]
    if stale:
        raise PluginError(
            f"stale reference pages: {', '.join(stale)}; run .venv/bin/python docs/reference.py"
        )
