"""A suite's ``prompt_template``: jinja2, with jinja's runtime left out where it adds nothing.

Most templates only put variables into text (``Say {{ word }}``). Rendering one through
jinja2 builds a context, a frame and a generator for every case: 10 µs, a sixth of the time a
scan spends on a line, paid again when a worker parses the line it runs. A template that jinja
parses into text and plain variable names alone is rendered here by joining the text with
``str`` of each value, which is what jinja's generated code does for such a template with
``autoescape`` off. Anything else (a filter, a tag, an attribute, a name the case does not
give, which is an error or a jinja global) goes through jinja itself, so the result, and
every error, is jinja's. A test checks the two against each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jinja2
from jinja2 import nodes


class PromptTemplate:
    """A compiled prompt template (strict: a variable the case lacks is an error).

    Raises:
        jinja2.TemplateSyntaxError: the source is not a valid template (from the constructor).
    """

    def __init__(self, source: str):
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)  # noqa: S701 - prompts are text, not HTML
        self.source = source
        self.jinja = env.from_string(source)
        self._parts = _substitutions(env.parse(source))

    @property
    def substitutes_only(self) -> bool:
        """Whether it is text and variables alone (rendered without jinja's runtime)."""
        return self._parts is not None

    def render(self, values: Mapping[str, Any]) -> str:
        """The prompt for a case's ``vars``.

        Raises:
            jinja2.TemplateError: as jinja raises it (a variable the case lacks, a filter that
                fails on the value).
        """
        parts = self._parts
        if parts is not None:
            out: list[str] = []
            try:
                for text, name in parts:
                    out.append(text)
                    if name is not None:
                        out.append(str(values[name]))
            except KeyError:
                pass  # a name the case lacks: jinja says how (an error, or one of its globals)
            else:
                return "".join(out)
        return self.jinja.render(**values)


def _substitutions(tree: nodes.Template) -> list[tuple[str, str | None]] | None:
    """``(text, name)`` pairs (``name`` None for the last text), or None for any other template."""
    if not tree.body:
        return []
    if len(tree.body) != 1 or not isinstance(tree.body[0], nodes.Output):
        return None
    parts: list[tuple[str, str | None]] = []
    text = ""
    for node in tree.body[0].nodes:
        if isinstance(node, nodes.TemplateData):
            text += node.data
        elif isinstance(node, nodes.Name) and node.ctx == "load":
            parts.append((text, node.name))
            text = ""
        else:
            return None
    parts.append((text, None))
    return parts
