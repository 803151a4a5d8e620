"""Markup graders: ``contains-html``, ``is-html``, ``is-xml`` and ``contains-xml`` (and ``not-``).

``contains-html`` is promptfoo's heuristic exactly: at least two signs of HTML among an opening
and a closing tag (two when both), a self-closing tag, an entity, a doctype (two), a comment,
an attribute, and a common element's name (two).

The other three parse with the standard library, so they mean what they say rather than what
promptfoo's JavaScript parsers accept (a ``compat: promptfoo`` suite runs those parsers):

- ``is-html``: the trimmed output is HTML markup: not XML (``<?xml``), it has at least one
  known HTML element (or a custom element, whose name has a ``-``), and no text stands outside
  the elements ("Hello <b>x</b>" is text with markup in it, not HTML).
- ``is-xml``: the whole output is one well-formed XML document (expat; entities are never
  fetched). ``value`` lists element paths that must be there, dotted from the root element
  (``order.items.item``), as a list or one comma-separated string.
- ``contains-xml``: some element in the output (``<a>…</a>`` or ``<a/>``) is well-formed XML
  with those paths.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from coalmine.graders.base import GradeContext, grader
from coalmine.results import Grade

__all__ = ["html_found"]

_CONFIG = ConfigDict(extra="forbid", frozen=True)
_MAX_INPUT = 10 * 1024 * 1024
_SIGNS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?/>"), 1),
    (re.compile(r"&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);"), 1),
    (re.compile(r"<!DOCTYPE\s+html", re.IGNORECASE), 2),
    (re.compile(r"<!--[^-]*(?:-[^-]+)*-->"), 1),
    (re.compile(r"\s[a-zA-Z-]+=\s*[\"'][^\"']*[\"']"), 1),
    (
        re.compile(
            r"<(html|head|body|div|span|p|a|img|h[1-6]|ul|ol|li|table|tr|td|th|form|input|button"
            r"|script|style|link|meta|br|hr)\b",
            re.IGNORECASE | re.ASCII,
        ),
        2,
    ),
)
_OPENING = re.compile(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>")
_CLOSING = re.compile(r"</[a-zA-Z][a-zA-Z0-9-]*\s*>")
HTML_ELEMENTS = frozenset(
    "html head title base link meta style body article section nav aside h1 h2 h3 h4 h5 h6 "
    "header footer address p hr pre blockquote ol ul li dl dt dd figure figcaption main div a em "
    "strong small s cite q dfn abbr ruby rt rp data time code var samp kbd sub sup i b u mark bdi "
    "bdo span br wbr img iframe embed object param picture source video audio track map area svg "
    "math script noscript canvas ins del table caption colgroup col tbody thead tfoot tr td th "
    "form label input button select datalist optgroup option textarea output progress meter "
    "fieldset legend details summary dialog menu slot template".split()
)
"""The element names promptfoo's ``is-html`` recognises."""
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())


def html_found(text: str) -> bool:
    """Whether ``text`` contains HTML, by promptfoo's ``containsHtml`` heuristic."""
    if len(text) > _MAX_INPUT:
        return False
    opening, closing = bool(_OPENING.search(text)), bool(_CLOSING.search(text))
    signs = 2 if opening and closing else int(opening or closing)
    signs += sum(weight for pattern, weight in _SIGNS if pattern.search(text))
    return signs >= 2


def _split(value: object) -> object:
    return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value


Path = Annotated[str, Field(pattern=r"^[^.\s]+(\.[^.\s]+)*$")]
Paths = Annotated[list[Path], BeforeValidator(_split)]


class HtmlConfig(BaseModel):
    """Config of ``contains-html`` and ``is-html`` (none)."""

    model_config = _CONFIG


class XmlConfig(BaseModel):
    """Config of ``is-xml`` and ``contains-xml``."""

    model_config = _CONFIG

    value: Paths = []
    """Element paths that must be there, dotted from the root (``order.items.item``)."""


class MarkupGrade(Grade):
    """Result of the markup graders."""

    problem: str | None = None
    """Why it failed; for a ``not-`` form, what made the original pass."""
    found: str | None = None

    def explain(self) -> str:
        """Say why the output is not the markup asked for."""
        return "" if self.passed else self.problem or self.found or ""


def _grade(problem: str | None, found: str) -> MarkupGrade:
    ok = problem is None
    shown = None if problem else found
    return MarkupGrade(score=float(ok), passed=ok, problem=problem, found=shown)


@grader("contains-html", config=HtmlConfig, threshold=1.0, negatable=True)
async def contains_html(config: HtmlConfig, output: str, ctx: GradeContext) -> Grade:
    """Pass when the output contains HTML (promptfoo's heuristic)."""
    ok = html_found(output)
    return _grade(None if ok else "no HTML found", "the output contains HTML")


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.known = False
        self.depth = 0
        self.stray: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.known = self.known or tag in HTML_ELEMENTS or "-" in tag
        if tag not in _VOID:
            self.depth += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.known = self.known or tag in HTML_ELEMENTS or "-" in tag

    def handle_endtag(self, tag: str) -> None:
        if tag not in _VOID:
            self.depth = max(0, self.depth - 1)

    def handle_data(self, data: str) -> None:
        if self.depth == 0 and data.strip() and self.stray is None:
            self.stray = data.strip()[:40]


def html_problem(text: str) -> str | None:
    """Why ``text`` is not HTML markup (see the module docstring), or ``None``."""
    trimmed = text.strip()
    if not trimmed:
        return "the output is empty"
    if re.match(r"<\?xml", trimmed, re.IGNORECASE):
        return "the output is XML, not HTML"
    parser = _Html()
    parser.feed(trimmed)
    parser.close()
    if parser.stray is not None:
        return f"text outside the HTML elements: {parser.stray!r}"
    return None if parser.known else "no HTML element found"


@grader("is-html", config=HtmlConfig, threshold=1.0, negatable=True)
async def is_html(config: HtmlConfig, output: str, ctx: GradeContext) -> Grade:
    """Pass when the whole output is HTML markup (known elements, no stray text)."""
    return _grade(html_problem(output), "the output is HTML")


def _missing(root: ET.Element, paths: list[str]) -> list[str]:
    missing = []
    for path in paths:
        first, *rest = path.split(".")
        if first != root.tag or (rest and root.find("/".join(rest)) is None):
            missing.append(path)
    return missing


def xml_problem(text: str, paths: list[str]) -> str | None:
    """Why ``text`` is not well-formed XML with ``paths``, or ``None``."""
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        return f"not well-formed XML: {exc}"
    missing = _missing(root, paths)
    return f"missing elements: {', '.join(missing)}" if missing else None


@grader("is-xml", config=XmlConfig, threshold=1.0, negatable=True)
async def is_xml(config: XmlConfig, output: str, ctx: GradeContext) -> Grade:
    """Pass when the whole output is well-formed XML with the required elements."""
    return _grade(xml_problem(output, config.value), "the output is XML")


_START = re.compile(r"<([A-Za-z_][\w.:-]*)")
_MAX_CANDIDATES = 200


def _candidates(text: str) -> list[str]:
    """Spans that may be one element: from ``<name`` to a ``/>`` or a ``</name>``, longest first."""
    found: list[str] = []
    for start in _START.finditer(text):
        name = start.group(1)
        ends = [m.end() for m in re.finditer(rf"</{re.escape(name)}\s*>", text[start.start() :])]
        self_closing = re.match(r"<[^<>]*/>", text[start.start() :])
        if self_closing:
            ends.append(self_closing.end())
        at = start.start()
        found.extend(text[at : at + end] for end in sorted(ends, reverse=True))
        if len(found) >= _MAX_CANDIDATES:
            break
    return found


@grader("contains-xml", config=XmlConfig, threshold=1.0, negatable=True)
async def contains_xml(config: XmlConfig, output: str, ctx: GradeContext) -> Grade:
    """Pass when an element in the output is well-formed XML with the required elements."""
    problems = [xml_problem(span, config.value) for span in _candidates(output)]
    if not problems:
        return _grade("no XML element found", "")
    if None in problems:
        return _grade(None, "the output contains XML")
    return _grade(f"no XML element fits: first, {problems[0]}", "")
