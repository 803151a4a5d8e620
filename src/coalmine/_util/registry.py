"""A generic, typed registry for plugins, filled by decorators and loaded lazily.

Built-in components live in modules listed as ``builtins``; outside packages declare modules in
the ``coalmine`` entry-point group. Nothing is imported until the first lookup (no work at import
time). A registry that knows which built-in module registers a name (``locate``) imports that
module alone for a lookup of that name (an eval run of three text graders and one HTTP agent
imports neither the judges nor the other providers: 0.2 s of start-up); any other lookup, and a
listing, imports every built-in; entry points load on the first miss. A plugin that fails to
load gives a warning naming it and never breaks the registry.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from coalmine.errors import PluginError

T = TypeVar("T")

ENTRY_POINT_GROUP = "coalmine"

_entry_points_enabled = True
_entry_points_loaded = False


def set_entry_points_enabled(enabled: bool) -> None:
    """Turn the loading of third-party entry points on or off (tests turn it off)."""
    global _entry_points_enabled
    _entry_points_enabled = enabled


def load_entry_points() -> None:
    """Import every module of the ``coalmine`` entry-point group, once."""
    global _entry_points_loaded
    if _entry_points_loaded or not _entry_points_enabled:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break coalmine
            warnings.warn(
                f"coalmine plugin {ep.name!r} ({ep.value}) failed to load: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )


class Registry(Generic[T]):
    """Named components of one kind (``provider``, ``grader`` …)."""

    def __init__(
        self,
        kind: str,
        *,
        builtins: tuple[str, ...] = (),
        check: Callable[[str, T], None] | None = None,
        locate: Mapping[str, str] | None = None,
    ):
        self.kind = kind
        self._builtins = builtins
        self._locate = dict(locate or {})
        """Built-in name → the module (one of ``builtins``) that registers it."""
        self._builtins_loaded = False
        self._check = check
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        """Add ``item`` under ``name``; a duplicate or malformed item raises ``PluginError``."""
        if name != name.lower() or not name or " " in name:
            raise PluginError(f"{self.kind} name {name!r} must be lowercase, without spaces")
        if name in self._items:
            raise PluginError(f"{self.kind} {name!r} is registered twice")
        if self._check is not None:
            self._check(name, item)
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        """Return the item called ``name`` or raise ``PluginError`` listing the known names."""
        found = self.find(name)
        if found is None:
            known = ", ".join(self.names()) or "none"
            raise PluginError(f"unknown {self.kind} {name!r}; known: {known}")
        return found

    def find(self, name: str) -> T | None:
        """Return the item called ``name``, or ``None``."""
        if name in self._items:
            return self._items[name]
        module = self._locate.get(name)
        if module is not None and not self._builtins_loaded:
            importlib.import_module(module)
        if name not in self._items:
            self._ensure_builtins()
        if name not in self._items:
            load_entry_points()
        return self._items.get(name)

    def names(self) -> list[str]:
        """Return every registered name, sorted."""
        self._ensure_builtins()
        load_entry_points()
        return sorted(self._items)

    def __iter__(self) -> Iterator[tuple[str, T]]:
        for name in self.names():
            yield name, self._items[name]

    def _ensure_builtins(self) -> None:
        if self._builtins_loaded:
            return
        self._builtins_loaded = True
        for module in self._builtins:
            importlib.import_module(module)


V = TypeVar("V")


class Projection(Mapping[str, V]):
    """One attribute of each item of a registry, looked up by name as the registry finds it.

    ``provider_settings()`` and ``grader_configs()`` are these: validating a config reads the
    settings of the providers it names, and a lookup imports only what it needs. Iterating
    lists every item (an error message's list of the valid names).
    """

    def __init__(self, registry: Registry[Any], attribute: str, made_by: Callable[[], Any]):
        self._registry = registry
        self._attribute = attribute
        self._made_by = made_by

    def __getitem__(self, name: str) -> V:
        item = self._registry.find(name)
        if item is None:
            raise KeyError(name)
        value: V = getattr(item, self._attribute)
        return value

    def get(self, name: str, default: V | None = None) -> V | None:  # type: ignore[override]
        """``self[name]``, or ``default``.

        One call where ``Mapping.get`` made three: a scan looks up every grader of every line.
        """
        item = self._registry.find(name)
        return default if item is None else getattr(item, self._attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry.names())

    def __len__(self) -> int:
        return len(self._registry.names())

    def __reduce__(self) -> tuple[Callable[[], Any], tuple[()]]:
        return (self._made_by, ())  # made again where it is unpickled, from that registry
