"""The public API is the package root; nothing inside the package imports the root."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import coalmine

SRC = Path(coalmine.__file__).parent


def test_all_is_sorted_and_importable() -> None:
    assert coalmine.__all__ == sorted(coalmine.__all__)
    for name in coalmine.__all__:
        assert getattr(coalmine, name) is not None


def test_no_module_imports_the_package_root() -> None:
    root_import = re.compile(r"^\s*(from coalmine import|import coalmine\s*$)", re.MULTILINE)
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path.name != "__init__.py" or path.parent != SRC
        if root_import.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_importing_coalmine_loads_no_plugins() -> None:
    code = (
        "import sys, coalmine\n"
        "loaded = [m for m in ('coalmine.providers.command', 'coalmine.providers.openai',"
        " 'coalmine.graders.keyword', 'aiohttp') if m in sys.modules]\n"
        "print(','.join(loaded))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""  # built-ins load on the first registry lookup, not at import


def test_every_public_name_resolves_lazily_and_unknown_names_raise() -> None:
    code = (
        "import coalmine\n"
        "for name in coalmine.__all__:\n"
        "    value = getattr(coalmine, name)\n"
        "    assert getattr(value, '__name__', name) == name, name\n"
        "    assert name in vars(coalmine), name  # resolved once, then kept\n"
        "assert set(coalmine.__all__) <= set(dir(coalmine))\n"
        "try:\n"
        "    coalmine.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert str(exc) == \"module 'coalmine' has no attribute 'no_such_name'\", exc\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )  # in a fresh interpreter: this one may have resolved the names already
    subprocess.run([sys.executable, "-c", code], check=True)
    assert sorted(coalmine._EXPORTS) == coalmine.__all__  # the lazy table is the public API
    for name in coalmine.__all__:
        assert getattr(coalmine, name) is not None
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        coalmine.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from coalmine import no_such_name")  # noqa: S102
