"""promptfoo's markup and SQL assertions, graded by promptfoo itself in Node.js.

``is-xml`` and ``contains-xml`` (saxes, fast-xml-parser), ``is-html`` (parse5), ``is-sql`` and
``contains-sql`` (node-sql-parser): promptfoo's verdict comes from those packages' grammars,
which no Python library reproduces, so coalmine asks promptfoo's own ``runAssertion`` (its
public API, ``node_checks.cjs``), from the promptfoo package found in the config's folder (its
``node_modules``), then promptfoo's install (the ``promptfoo`` on ``PATH``, or the one
``COALMINE_PROMPTFOO`` names), then ``NODE_PATH``. Without it, or without Node.js, the row is
an ERROR that says what to install. The native graders of the same names are Python's
(:mod:`coalmine.graders.markup`).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path
from typing import Any

from coalmine.promptfoo.node import JsError, JsUnsupported, NodeRuntime, NodeUnavailable
from coalmine.promptfoo.verdicts import HandlerError, Verdict

__all__ = ["MARKUP_TYPES", "markup_check", "promptfoo_install"]

MARKUP_TYPES = frozenset({"is-xml", "contains-xml", "is-html", "is-sql", "contains-sql"})


@functools.cache
def promptfoo_install(executable: str | None = None) -> Path | None:
    """The folder of the promptfoo package the ``promptfoo`` executable runs, if any."""
    found = executable or os.environ.get("COALMINE_PROMPTFOO") or shutil.which("promptfoo")
    if not found:
        return None
    for folder in Path(found).resolve().parents:
        manifest = folder / "package.json"
        if manifest.is_file():
            try:
                name = json.loads(manifest.read_text(encoding="utf-8")).get("name")
            except (OSError, ValueError, AttributeError):
                continue
            if name == "promptfoo":
                return folder
    return None


async def markup_check(
    base_type: str, *, inverse: bool, value: Any, text: str, base_dir: Path, node: NodeRuntime
) -> Verdict:
    """The verdict of promptfoo's handler on ``text``, for one of :data:`MARKUP_TYPES`.

    Raises:
        HandlerError: promptfoo's handler threw, or Node.js or a package is missing.
    """
    install = promptfoo_install()
    check = {
        "baseType": base_type,
        "inverse": inverse,
        "renderedValue": value,
        "outputString": text,
    }
    try:
        answer = await node.check(
            check, base_dir=base_dir, package_dirs=() if install is None else (install,)
        )
    except NodeUnavailable as exc:
        raise HandlerError(f"unsupported: {base_type} needs Node.js: {exc.hint}") from None
    except JsUnsupported as exc:
        raise HandlerError(f"unsupported: {base_type} {exc.message}") from None
    except JsError as exc:
        raise HandlerError(str(exc)) from None
    return Verdict(bool(answer["pass"]), float(answer["score"]), str(answer["reason"]))
