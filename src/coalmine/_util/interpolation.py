"""``${VAR}`` and ``${VAR:-default}`` in every string of a document, remembering the environment.

:func:`expand` returns the expanded document and, beside it, what came from where: each value
taken from the environment (a secret may be among them: see :mod:`coalmine._util.secrets`) and
each variable that is unset and has no default, with its place in the document. The caller
decides when an unset variable is an error: only when the thing that holds it is used.
``$${`` writes a literal ``${``; ``:-`` gives the default when the variable is unset or empty,
as in the shell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Loc = tuple[Any, ...]

_VAR = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class FromEnv:
    """A value the environment gave: where it went, and from which variable."""

    loc: Loc
    var: str
    value: str


@dataclass(frozen=True)
class UnsetVar:
    """A ``${VAR}`` without a default whose variable is not set (it expanded to ``""``)."""

    loc: Loc
    var: str


@dataclass(frozen=True)
class Expanded:
    """The expanded document, what the environment gave it, and what it lacks."""

    data: Any
    from_env: tuple[FromEnv, ...] = ()
    unset: tuple[UnsetVar, ...] = ()

    def under(self, loc: Loc) -> Expanded:
        """What concerns the part at ``loc``, with places relative to it."""
        n = len(loc)
        return Expanded(
            None,
            tuple(FromEnv(f.loc[n:], f.var, f.value) for f in self.from_env if f.loc[:n] == loc),
            tuple(UnsetVar(u.loc[n:], u.var) for u in self.unset if u.loc[:n] == loc),
        )


def expand(value: Any, environ: Mapping[str, str]) -> Expanded:
    """Expand every string of ``value`` (dicts and lists are walked; keys are left alone)."""
    from_env: list[FromEnv] = []
    unset: list[UnsetVar] = []

    def walk(item: Any, loc: Loc) -> Any:
        if isinstance(item, dict):
            return {k: walk(v, (*loc, k)) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v, (*loc, i)) for i, v in enumerate(item)]
        if not isinstance(item, str) or "${" not in item:
            return item

        def substitute(match: re.Match[str]) -> str:
            if match.group(0) == "$${":
                return "${"
            var, default = match.group(1), match.group(2)
            found = environ.get(var)
            if default is not None and not found:
                return default
            if found is None:
                unset.append(UnsetVar(loc, var))
                return ""
            from_env.append(FromEnv(loc, var, found))
            return found

        return _VAR.sub(substitute, item)

    data = walk(value, ())
    return Expanded(data, tuple(from_env), tuple(unset))
