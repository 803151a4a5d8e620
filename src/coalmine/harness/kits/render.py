"""Rendering a kit's templates for one repository.

``.j2`` templates are Jinja2 (undefined names are errors, trailing newlines kept, no HTML
escaping); other templates are copied byte for byte. The context is what
:func:`coalmine.harness.init.render_context` builds from the profile: ``project``, ``agent``,
``signals`` (kind → evidence ``{"path", "line"}``) and ``facts``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jinja2

from coalmine.errors import PluginError
from coalmine.harness.kits.model import TEMPLATE_SUFFIX, Kit

__all__ = ["RenderedFile", "render_kit"]


@dataclass(frozen=True)
class RenderedFile:
    """One file a kit writes, as rendered for this repository."""

    kit: str
    path: str
    text: str

    @property
    def executable(self) -> bool:
        """Shell scripts (``gates/*.sh``) are written executable."""
        return self.path.endswith(".sh")


def render_kit(kit: Kit, context: Mapping[str, Any]) -> list[RenderedFile]:
    """Every file ``kit`` writes, rendered with ``context``, in the order of ``writes``.

    A template that renders to blank text is left out: the file is not wanted for this
    repository (the agent adapter of an entry that needs none). An owned file that drops out
    this way is the kit dropping it: ``kits update`` deletes it if unedited, else disowns it.

    Raises:
        PluginError: a template fails to render (an undefined name, a syntax error), naming
            the kit and the template.
    """
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(kit.templates),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    # JSON as written, not HTML-safe (Jinja's default turns ' into \u0027): the files are read
    # by people as well as by coalmine, and no template lands in a page.
    env.filters["tojson"] = lambda value: json.dumps(value, ensure_ascii=False)
    files = []
    for path in kit.files():
        template = kit.template(path)
        if template.name.endswith(TEMPLATE_SUFFIX):
            name = template.relative_to(kit.templates).as_posix()
            try:
                text = env.get_template(name).render(context)
            except jinja2.TemplateError as exc:
                raise PluginError(f"kit {kit.id!r}: template {name!r}: {exc}") from exc
        else:
            text = template.read_text(encoding="utf-8")
        if text.strip():  # a template that renders to nothing writes no file (here, not yet)
            files.append(RenderedFile(kit.id, path, text))
    return files
