"""promptfoo's ``sanitizeObject`` (``src/util/sanitizer.ts``), as it redacts its result files.

promptfoo 0.121.20 writes a row's test case, its prompt and the whole config through it:

- a key whose name, lowercased without ``-``, ``_``, spaces and ``=``, is a secret's
  (``apiKey``, ``token``, ``sessionId``, ``password`` …) gets ``[REDACTED]``, whatever its value;
- a string that looks like a key (``sk-…``, ``AKIA…``, ``Bearer …``, 64+ base64 characters)
  gets ``[REDACTED]``; in a list, only when it is not valid JSON (``"1234…"`` parses as a number
  and stays), since a list item goes straight to the string rule below;
- a string holding a JSON object or array is parsed, redacted and re-serialised compactly:
  ``'{"x": 1.0}'`` becomes ``'{"x":1}'``, a chat prompt loses its indentation;
- form-encoded text (``user=bob&password=x``) has its secret values masked
  (``password=%5BREDACTED%5D``);
- a ``url`` value is normalised as ``new URL(…).toString()`` does (``https://a.io`` becomes
  ``https://a.io/``), its credentials become ``***:***`` and its secret query values
  ``[REDACTED]``. Only ``scheme://`` URLs of the special schemes are normalised here; path-only
  and opaque URLs are left as written. Azure ``az://`` SAS tokens are not handled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit, urlunsplit

from coalmine.promptfoo.nunjucks._js import js_key, to_js
from coalmine.promptfoo.nunjucks._json import js_json_parse, js_json_stringify

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

_SECRET_FIELDS = frozenset(
    "password passwd pwd secret secrets secretkey credentials apikey apisecret token "
    "accesstoken refreshtoken idtoken bearertoken authtoken clientsecret webhooksecret "
    "anthropicapikey awsbearertokenbedrock authorization auth bearer apikeyenvar xapikey "
    "xauthtoken xaccesstoken xauth xsecret xcsrftoken xsessiondata csrftoken sessionid session "
    "cookie setcookie certificatepassword keystorepassword pfxpassword privatekey certkey "
    "encryptionkey signingkey signature sig passphrase certificatecontent keystorecontent pfx "
    "pfxcontent keycontent certcontent".split()
)
# Each is matched at the start only, as promptfoo's ``^…`` patterns are (``sk-proj-``, ``sk-ant-``
# are covered by ``sk-``); JavaScript's ``.`` stops at \r, \u2028 and \u2029 too.
_SECRET_VALUES = tuple(
    re.compile(pattern)
    for pattern in (
        r"sk-[a-zA-Z0-9_-]{20,}",
        r"key-[a-zA-Z0-9]{20,}",
        r"(?i:Bearer)\s+[^\n\r\u2028\u2029]{20,}",
        r"(?i:Basic)\s+[^\n\r\u2028\u2029]{20,}",
        r"AKIA[A-Z0-9]{16}",
        r"AIza[a-zA-Z0-9_-]{35}",
        r"[a-zA-Z0-9+/=_-]{64,}\Z",
    )
)
_SECRET_PARAM = re.compile(
    r"api[_-]?key|token|password|secret|signature|sig|access[_-]?token|refresh[_-]?token"
    r"|id[_-]?token|client[_-]?secret|authorization",
    re.IGNORECASE,
)
_FORM_SEGMENT = re.compile(r"[A-Za-z0-9._~+%\[\]-]+=[^&;]*")
_FORM_PAIR = re.compile(r"(^|[&;])([^=&;]+)=([^&;]*)")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PLACEHOLDER = re.compile(r"\{\{[^{}]*\}\}")
_USERINFO_PASSWORD = re.compile(r"[^/?#]*://[^/?#@]*:[^/?#@]*@")
_SPECIAL_SCHEMES = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
_URI_COMPONENT_SAFE = "-_.!~*'()"


def redact(value: Any) -> Any:
    """``sanitizeObject`` over a JSON-shaped value; mappings come back as plain dicts."""
    if isinstance(value, str):
        return _redact_string(value)
    if isinstance(value, Mapping):
        redacted: dict[str, Any] = {}
        for key, item in value.items():
            name = js_key(key)
            if name == "url" and isinstance(item, str):
                redacted[name] = _redact_url(item)
            elif _is_secret_field(name) or (isinstance(item, str) and _looks_secret(item)):
                redacted[name] = REDACTED
            else:
                redacted[name] = redact(item)
        return redacted
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)  # an IntEnum becomes its number
    return value


def _is_secret_field(name: str) -> bool:
    return re.sub(r"[-_\s=]", "", name.lower()) in _SECRET_FIELDS


def _looks_secret(text: str) -> bool:
    return any(pattern.match(text) for pattern in _SECRET_VALUES)


def _json_container(text: str) -> Any:
    """The object or array ``JSON.parse(text)`` gives, else ``None``."""
    try:
        parsed = js_json_parse(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, Mapping | list) else None


def _redact_string(text: str) -> str:
    try:
        parsed = js_json_parse(text)
    except ValueError:
        if _is_form_data(text):
            masked = _redact_form(text)
            if masked != text:
                return masked
        return REDACTED if _looks_secret(text) else text
    if isinstance(parsed, Mapping | list):
        return js_json_stringify(to_js(redact(parsed))) or text
    return text


def _is_form_data(text: str) -> bool:
    if "=" not in text or re.search(r"[\r\n\t]", text):
        return False
    segments = [s for s in re.split(r"[&;]", text) if s]
    return bool(segments) and all(_FORM_SEGMENT.fullmatch(s) for s in segments)


def _decode_form(text: str) -> str | None:
    """``decodeURIComponent`` after ``+`` → space; ``None`` where JavaScript throws."""
    if _BAD_PERCENT.search(text):
        return None
    try:
        return unquote(text.replace("+", " "), errors="strict")
    except UnicodeDecodeError:
        return None


def _redact_form(text: str) -> str:
    masked = quote(REDACTED, safe="")

    def mask(match: re.Match[str]) -> str:
        separator, raw_key, raw_value = match.groups()
        if not raw_value or ("{{" in raw_value and not _PLACEHOLDER.sub("", raw_value).strip()):
            return match.group()
        key_parts = [p for p in re.split(r"[.\[\]]+", _decode_form(raw_key) or "") if p]
        if any(_is_secret_field(p) for p in key_parts):
            return f"{separator}{raw_key}={masked}"
        value = _decode_form(raw_value)
        nested = _json_container((value or "").strip()) if value else None
        if nested is not None:
            after = js_json_stringify(to_js(redact(nested)))
            if after is not None and after != js_json_stringify(nested):
                return f"{separator}{raw_key}={quote(after, safe=_URI_COMPONENT_SAFE)}"
        if _looks_secret(raw_value) or (value is not None and _looks_secret(value)):
            return f"{separator}{raw_key}={masked}"
        return match.group()

    return _FORM_PAIR.sub(mask, text)


def _redact_url(url: str) -> str:
    """``sanitizeUrl``: normalised, credentials and secret query values masked."""
    if "{{" in url and "}}" in url:
        if _USERINFO_PASSWORD.match(url):
            return REDACTED
        base, hash_mark, fragment = url.partition("#")
        head, query_mark, query = base.partition("?")
        query = _redact_form(query) if query else query
        fragment = _redact_form(fragment) if fragment else fragment
        return f"{head}{query_mark}{query}{hash_mark}{fragment}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    if "://" not in url or scheme not in _SPECIAL_SCHEMES or not host:
        return url
    netloc = host if port in (None, _SPECIAL_SCHEMES[scheme]) else f"{host}:{port}"
    if parts.username or parts.password:
        netloc = f"***:***@{netloc}"
    query = parts.query
    pairs = [p.partition("=") for p in query.split("&") if p]
    entries = [(_decode_form(k) or k, _decode_form(v) or v, v) for k, _, v in pairs]
    hidden = [
        bool(_SECRET_PARAM.search(k)) or _looks_secret(v) or _looks_secret(raw)
        for k, v, raw in entries
    ]
    if any(hidden):
        query = "&".join(
            f"{_form_encode(k)}={_form_encode(REDACTED if secret else v)}"
            for (k, v, _), secret in zip(entries, hidden, strict=True)
        )
    fragment = _redact_form(parts.fragment) if parts.fragment else ""
    return urlunsplit((scheme, netloc, parts.path or "/", query, fragment))


def _form_encode(text: str) -> str:
    """``URLSearchParams``' serialiser: only ``*-._`` and alphanumerics stay, space is ``+``."""
    return quote_plus(text, safe="*").replace("~", "%7E")
