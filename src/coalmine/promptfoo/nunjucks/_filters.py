"""Nunjucks 3.2.4's built-in string and number filters, plus promptfoo's ``load`` filter.

:data:`FILTERS` is the whole set (the list filters come from
:mod:`coalmine.promptfoo.nunjucks._lists`). Each one does what its Nunjucks namesake does in
JavaScript (``nunjucks/src/filters.js``), oddities included: ``default`` replaces only
``undefined`` unless its second argument is true, ``indent(0)`` indents by 4, ``wordcount`` of
``""`` is ``null``, ``int`` is ``parseInt`` (``"3.7"`` gives 3). Filters that Jinja2 has and
Nunjucks lacks (``tojson``, ``map``, ``unique`` …) are deliberately absent, so a
template using them fails as it does under promptfoo. Each is called as JavaScript calls a
function: extra arguments are ignored (``trim("x")``), missing ones are ``undefined``
(``batch`` with none puts everything in one row), and ``name=value`` arguments arrive as one
trailing object, which ``sort`` and ``int`` (Nunjucks' ``makeMacro``) read by name.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from coalmine.promptfoo.nunjucks._args import javascript_arity
from coalmine.promptfoo.nunjucks._js import (
    JS_SPACE,
    UNDEFINED,
    SafeStr,
    as_text,
    copy_safeness,
    is_nullish,
    is_undefined,
    js_add,
    js_arith,
    js_relation,
    js_strict_equal,
    js_string,
    js_to_number,
    js_trim,
    js_truthy,
    js_type,
    js_utf16_length,
    normalize,
    normalize_number,
    repeat_count,
    strict_member,
)
from coalmine.promptfoo.nunjucks._json import js_json_parse, js_json_stringify
from coalmine.promptfoo.nunjucks._lists import LIST_FILTERS, first
from coalmine.promptfoo.nunjucks._regexp import RegExpValue, replace_with

__all__ = ["FILTERS"]

_SPACES = re.compile(f"[{JS_SPACE}]+")
_TAGS = re.compile(r"</?([a-z][a-z0-9]*)\b[^>]*>|<!--[\s\S]*?-->", re.IGNORECASE)
_ESCAPE = {"&": "&amp;", '"': "&quot;", "'": "&#39;", "<": "&lt;", ">": "&gt;", "\\": "&#92;"}
_PARSE_FLOAT = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def abs_(value: object) -> float:
    """``Math.abs``."""
    return normalize_number(abs(float(js_to_number(value))))


def capitalize(value: object) -> str:
    """First character upper case, the rest lower case."""
    value = normalize(value, "")
    lowered = as_text(value, "toLowerCase").lower()
    return copy_safeness(value, lowered[:1].upper() + lowered[1:])


def center(value: object, width: object = UNDEFINED) -> Any:
    """Pad both sides with spaces to ``width`` (80 when not given); any value, by its length."""
    value = normalize(value, "")
    width = width if js_truthy(width) else 80
    size = strict_member(value, "length")
    if js_relation(">=", size, width):
        return value
    spaces = js_arith("-", width, size)
    pre = " " * repeat_count(js_arith("-", js_arith("/", spaces, 2), js_arith("%", spaces, 2)))
    post = " " * repeat_count(js_arith("/", spaces, 2))
    return copy_safeness(value, js_string(js_add(js_add(pre, value), post)))


def default(value: object, default_value: object = UNDEFINED, boolean: object = False) -> Any:
    """``value``, or ``default_value`` when it is ``undefined`` (or falsy, when ``boolean``)."""
    if js_truthy(boolean):
        return value if js_truthy(value) else default_value
    return default_value if is_undefined(value) else value


def dump(value: object, spaces: object = UNDEFINED) -> Any:
    """``JSON.stringify(value, null, spaces)``: ``{"a":1}`` with no spaces unless indented."""
    text = js_json_stringify(value, spaces)
    return UNDEFINED if text is None else text


def _html_escape(text: str) -> SafeStr:
    return SafeStr(re.sub(r"[&\"'<>\\]", lambda m: _ESCAPE[m.group()], text))


def escape(value: object) -> SafeStr:
    r"""HTML-escape (``&`` ``"`` ``'`` ``<`` ``>`` and ``\``), unless already marked safe."""
    if isinstance(value, SafeStr):
        return value
    return _html_escape("" if is_nullish(value) else js_string(value))


def forceescape(value: object) -> SafeStr:
    """HTML-escape even a string marked safe."""
    return _html_escape("" if is_nullish(value) else js_string(value))


def safe(value: object) -> SafeStr:
    """Mark as safe (the string form of ``value``)."""
    if isinstance(value, SafeStr):
        return value
    return SafeStr("" if is_nullish(value) else js_string(value))


def indent(value: object, width: object = UNDEFINED, indentfirst: object = False) -> str:
    """Indent every line but the first (all of them with ``indentfirst``) by ``width`` spaces."""
    value = normalize(value, "")
    if value == "":
        return ""
    pad = " " * repeat_count(width if js_truthy(width) else 4)
    lines = as_text(value, "split").split("\n")
    return copy_safeness(
        value,
        "\n".join(
            line if i == 0 and not js_truthy(indentfirst) else pad + line
            for i, line in enumerate(lines)
        ),
    )


def lower(value: object) -> str:
    """``toLowerCase``."""
    return as_text(normalize(value, ""), "toLowerCase").lower()


def upper(value: object) -> str:
    """``toUpperCase``."""
    return as_text(normalize(value, ""), "toUpperCase").upper()


def nl2br(value: object) -> Any:
    """Line breaks become ``<br />`` followed by a newline."""
    if is_nullish(value):
        return ""
    return copy_safeness(value, re.sub(r"\r\n|\n", "<br />\n", as_text(value, "replace")))


def replace(value: object, old: object, new: object, max_count: object = UNDEFINED) -> Any:
    """Replace ``old`` by ``new`` (at most ``max_count`` times); ``""`` goes between characters."""
    if isinstance(old, RegExpValue):
        return replace_with(as_text(value, "replace"), old, new, every=False)
    count_limit = -1 if is_undefined(max_count) else max_count
    if js_type(old) == "number":
        old = js_string(old)
    elif not isinstance(old, str) or isinstance(old, SafeStr):
        return value
    text = js_string(value) if js_type(value) == "number" else value
    if not isinstance(text, str):
        return text
    if old == "":
        return copy_safeness(text, js_string(js_add(js_add(new, js_string(new).join(text)), new)))
    if js_strict_equal(count_limit, 0) or old not in text:
        return text
    out, pos, count = "", 0, 0
    found = text.find(old)
    while found > -1 and (js_strict_equal(count_limit, -1) or js_relation("<", count, count_limit)):
        out = js_string(js_add(out + text[pos:found], new))
        pos = found + len(old)
        count += 1
        found = text.find(old, pos)
    return copy_safeness(value, out + text[pos:])


def round_(value: object, precision: object = 0, method: object = UNDEFINED) -> float:
    """Round to ``precision`` decimals; ``method`` ``ceil`` or ``floor``, else half up."""
    try:
        factor = math.pow(10.0, float(js_to_number(precision if js_truthy(precision) else 0)))
    except OverflowError:
        factor = math.inf
    scaled = float(js_to_number(value)) * factor
    if not math.isfinite(scaled):
        return scaled
    if method == "ceil":
        rounded = float(math.ceil(scaled))
    elif method == "floor":
        rounded = float(math.floor(scaled))
    else:
        rounded = float(math.floor(scaled))
        rounded += 1 if scaled - rounded >= 0.5 else 0
    return normalize_number(rounded / factor)


def string(value: object) -> str:
    """``value.toString()`` (``null`` and ``undefined`` throw, as in JavaScript)."""
    if isinstance(value, SafeStr):
        return value
    if is_nullish(value):
        raise TypeError(f"Cannot read properties of {js_string(value)} (reading 'toString')")
    return js_string(value)


def striptags(value: object, preserve_linebreaks: object = False) -> str:
    """Remove HTML tags and comments, then squash whitespace."""
    value = normalize(value, "")
    text = js_trim(_TAGS.sub("", as_text(value, "replace")))
    if js_truthy(preserve_linebreaks):
        text = re.sub(r"^ +| +$", "", text, flags=re.MULTILINE)
        text = re.sub(r"\n\n\n+", "\n\n", re.sub(" +", " ", text).replace("\r\n", "\n"))
    else:
        text = _SPACES.sub(" ", text)
    return copy_safeness(value, text)


def title(value: object) -> str:
    """Capitalize every space-separated word."""
    value = normalize(value, "")
    words = as_text(value, "split").split(" ")
    return copy_safeness(value, " ".join(capitalize(word) for word in words))


def trim(value: object) -> str:
    r"""Strip whitespace (JavaScript's ``\s``) from both ends."""
    return copy_safeness(value, js_trim(as_text(value, "replace")))


def truncate(
    value: object, length: object = UNDEFINED, killwords: object = False, end: object = UNDEFINED
) -> Any:
    """Cut to ``length`` (255) characters, at a space unless ``killwords``, then add ``...``."""
    original, value = value, normalize(value, "")
    limit = length if js_truthy(length) else 255
    if isinstance(value, list) and js_relation("<=", len(value), limit):
        return value
    text = as_text(value, "substring")
    if js_relation("<=", js_utf16_length(text), limit):
        return text
    cut = repeat_count(limit)
    if js_truthy(killwords):
        text = text[:cut]
    else:
        idx = text.rfind(" ", 0, cut + 1)
        text = text[: cut if idx == -1 else idx]
    return copy_safeness(original, js_string(js_add(text, "..." if is_nullish(end) else end)))


def _uri_component(value: object) -> str:
    return quote(js_string(value), safe="-_.!~*'()")


def urlencode(value: object) -> str:
    """``encodeURIComponent`` of a string, or ``k=v&…`` of an object or a list of pairs."""
    if isinstance(value, str):
        return _uri_component(value)
    pairs = (
        value.items() if isinstance(value, Mapping) else value if isinstance(value, list) else []
    )
    out = []
    for pair in pairs:
        key, val = (
            (pair[0], pair[1]) if isinstance(pair, tuple) else (first(pair), strict_member(pair, 1))
        )
        out.append(f"{_uri_component(key)}={_uri_component(val)}")
    return "&".join(out)


_PUNCT = re.compile(r"^(?:\(|<|&lt;)?(.*?)(?:\.|,|\)|\n|&gt;)?\Z", re.DOTALL)


_EMAIL = re.compile(r"^[\w.!#$%&'*+\-/=?\^`{|}~]+@[a-z\d\-]+(\.[a-z\d\-]+)+\Z", re.I | re.A)


def urlize(value: object, length: object = UNDEFINED, nofollow: object = False) -> str:
    """Turn URLs and e-mail addresses into links."""
    limit = math.inf if js_type(length) == "number" and math.isnan(js_to_number(length)) else length
    rel = ' rel="nofollow"' if nofollow is True else ""
    out = []
    for word in re.split(f"([{JS_SPACE}]+)", as_text(value, "split")):
        if not word:
            continue
        match = _PUNCT.match(word)
        url = match.group(1) if match and "\n" not in match.group(1) else word
        short = url if is_undefined(limit) or limit == math.inf else url[: repeat_count(limit)]
        if re.match(r"https?://", url):
            word = f'<a href="{url}"{rel}>{short}</a>'
        elif url.startswith("www."):
            word = f'<a href="http://{url}"{rel}>{short}</a>'
        elif _EMAIL.match(url):
            word = f'<a href="mailto:{url}">{url}</a>'
        elif re.search(r"\.(?:org|net|com)(?::|/|$)", url):
            word = f'<a href="http://{url}"{rel}>{short}</a>'
        out.append(word)
    return "".join(out)


def wordcount(value: object) -> Any:
    r"""Number of ``\w+`` runs (ASCII), ``null`` for an empty string."""
    value = normalize(value, "")
    text = as_text(value, "match")
    words = re.findall(r"\w+", text, flags=re.ASCII) if text else []
    return len(words) if words else None


def float_(value: object, default_value: object = UNDEFINED) -> Any:
    """``parseFloat``, or ``default_value`` when that is ``NaN``."""
    match = _PARSE_FLOAT.match(re.sub(f"^[{JS_SPACE}]+", "", js_string(value)))
    if not match:
        return default_value
    return normalize_number(float(match.group().replace("Infinity", "inf")))


def int_(value: object, default_value: object = UNDEFINED, base: object = 10) -> Any:
    """``parseInt(value, base)``, or ``default_value`` when that is ``NaN``."""
    text = re.sub(f"^[{JS_SPACE}]+", "", js_string(value))
    sign = -1 if text.startswith("-") else 1
    text = text[1:] if text[:1] in "+-" else text
    radix = (
        10
        if is_undefined(base)
        else int(js_to_number(base))
        if math.isfinite(js_to_number(base))
        else 0
    )
    if radix == 0:
        radix = 16 if text[:2] in ("0x", "0X") else 10
    if radix == 16 and text[:2] in ("0x", "0X"):
        text = text[2:]
    if not 2 <= radix <= 36:
        return default_value
    digits = re.match(f"[{_DIGITS[:radix]}]*", text.lower())
    if not digits or not digits.group():
        return default_value
    return sign * int(digits.group(), radix)


def load(value: object) -> Any:
    """Promptfoo's own filter: ``JSON.parse``."""
    return js_json_parse(value)


def _is_keywords(value: object) -> bool:
    """Nunjucks' ``isKeywordArgs``: the object a call's ``name=value`` arguments become."""
    return isinstance(value, Mapping) and "__keywords" in value


def _keyword_macro(names: tuple[str, ...], function: Callable[..., Any]) -> Callable[..., Any]:
    """``makeMacro(names, [], function)``: ``name=value`` arguments fill the named places."""

    @functools.wraps(function)
    def call(*args: object) -> Any:
        last = args[-1] if args else None
        keywords = last if isinstance(last, Mapping) and _is_keywords(last) else None
        given = list(args[:-1] if keywords is not None else args)
        if len(given) >= len(names):
            return function(*given[: len(names)])
        missing = names[len(given) :]
        return function(*given, *((keywords or {}).get(n, UNDEFINED) for n in missing))

    return call


_BUILTINS: dict[str, Callable[..., Any]] = {
    **LIST_FILTERS,
    "abs": abs_,
    "capitalize": capitalize,
    "center": center,
    "d": default,
    "default": default,
    "dump": dump,
    "e": escape,
    "escape": escape,
    "float": float_,
    "forceescape": forceescape,
    "indent": indent,
    "int": int_,
    "load": load,
    "lower": lower,
    "nl2br": nl2br,
    "replace": replace,
    "round": round_,
    "safe": safe,
    "string": string,
    "striptags": striptags,
    "title": title,
    "trim": trim,
    "truncate": truncate,
    "upper": upper,
    "urlencode": urlencode,
    "urlize": urlize,
    "wordcount": wordcount,
}
_MACROS = {
    "int": ("value", "default", "base"),
    "sort": ("value", "reverse", "case_sensitive", "attribute"),
}

FILTERS: dict[str, Callable[..., Any]] = {
    name: _keyword_macro(_MACROS[name], function) if name in _MACROS else javascript_arity(function)
    for name, function in _BUILTINS.items()
}
"""The filters of promptfoo's Nunjucks environment: Nunjucks' own and promptfoo's ``load``."""
