"""Load ``module:attr`` from a project folder (python agents, python graders).

The module is imported with the project's folder first on ``sys.path``. Python caches modules
by name, so a second project's ``agents`` package would silently be the first one's: that clash
is an error, not a surprise.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


class TargetError(Exception):
    """The target cannot be loaded; the message says why."""


def load_target(target: str, base_dir: Path) -> Any:
    """Import ``module`` and return ``module.attr`` (``attr`` may be dotted).

    Raises:
        TargetError: the module cannot be imported, a clash of module names, a missing attribute.
    """
    module_name, _, attr_path = target.partition(":")
    folder = str(base_dir)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    top = sys.modules.get(module_name.split(".")[0])
    if top is not None and not _defined_under(top, base_dir):
        raise TargetError(
            f"cannot load {target!r}: a module named {top.__name__!r} is already "
            f"imported from {_origin(top)}, not from {folder}; give the package a "
            "name of its own"
        )
    _refuse_shadowed(target, module_name.split(".")[0], base_dir)
    try:
        obj: Any = importlib.import_module(module_name)
        for attr in attr_path.split("."):
            obj = getattr(obj, attr)
    except Exception as exc:  # noqa: BLE001 - any import failure is the target's error
        raise TargetError(
            f"cannot load {target!r} (from {folder}): {type(exc).__name__}: {exc}"
        ) from None
    return obj


def _refuse_shadowed(target: str, top: str, base_dir: Path) -> None:
    """A project folder without ``__init__.py`` loses to an installed package of its name.

    Python finds a regular package anywhere on ``sys.path`` before a namespace package (a
    folder without ``__init__.py``), even one earlier on the path: ``agents/`` beside
    coalmine.yaml is not imported when the OpenAI Agents SDK (whose module is ``agents``) is
    installed. That is said plainly instead of a "no module named agents.impl".
    """
    local = base_dir / top
    if top in sys.modules or not local.is_dir() or (local / "__init__.py").exists():
        return
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return
    origin = spec.origin if spec is not None else None
    if origin and not Path(origin).resolve().is_relative_to(base_dir.resolve()):
        raise TargetError(
            f"cannot load {target!r}: the folder {top}/ in {base_dir} has no __init__.py, so"
            f" the installed package {top!r} ({origin}) is imported instead; add"
            f" {top}/__init__.py or give the folder a name of its own"
        )


def _origin(module: ModuleType) -> str:
    paths = [getattr(module, "__file__", None), *list(getattr(module, "__path__", []))]
    return next((str(p) for p in paths if p), "an unknown place")


def _defined_under(module: ModuleType, folder: Path) -> bool:
    paths = [getattr(module, "__file__", None), *list(getattr(module, "__path__", []))]
    return any(p and Path(p).resolve().is_relative_to(folder.resolve()) for p in paths)
