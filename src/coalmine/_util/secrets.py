"""Secrets: which config values are secrets, and the scrubbing of everything written or printed.

One mechanism serves every run. The config records which of its values came from the
environment through ``${…}`` and where (:mod:`coalmine._util.interpolation`);
:func:`config_secrets` picks the secrets among an agent's values by where they sit: every
``${…}`` value of a header or of an ``env:`` entry; a header or ``env:`` entry whose name marks a
credential, even when written literally; in a URL, the password, every ``${…}`` value of its
userinfo or query, and a query parameter whose name marks a credential; and a ``${…}`` value
whose key, or the flag before it in a list, names a credential (``apiKey: ${K}``,
``argv: [agent, --api-key, ${K}]``). The keys providers read from the environment at call time
(``api_key_env``) join them at the start of a run. Each secret is then replaced by
:data:`MARKER` in every text coalmine writes or prints (:func:`redact`, :func:`redact_data`,
:func:`redact_model`); where a secret shapes an identity (the response cache's key, a cassette's
settings) its place holds a digest of it (:func:`conceal`): a changed key still changes the
identity, and the key is never written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from coalmine._util.hashing import hash_text

MARKER = "***"
"""What a secret becomes in every written or printed text."""
MIN_LENGTH = 4
"""Shorter values are never scrubbed: they would mask every "1" or "yes" of an answer."""
CUT = "…"
"""Where an excerpt was cut (a grade's reason quotes the texts it compared around a point)."""

Loc = tuple[str | int, ...]

# A header's name is read as the reporters do: a word anywhere in it.
_SENSITIVE_HEADER = re.compile(
    r"auth|cookie|token|secret|key|passw|signature|credential|session", re.IGNORECASE
)
# An environment variable's or a query parameter's name is read word by word, so that
# TOKENIZERS_PARALLELISM or MONKEY_MODE keep their harmless values.
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_SENSITIVE_WORD = re.compile(
    r".*(?:key|token|secret|password|passwd|cookie|credentials?|signature|auth|authorization)"
    r"|pass|pat|sig|session|bearer",
    re.IGNORECASE,
)


def sensitive_header(name: str) -> bool:
    """Whether a header of this name carries a credential (``Authorization``, ``X-Api-Key`` …)."""
    return bool(_SENSITIVE_HEADER.search(name))


def sensitive_name(name: str) -> bool:
    """Whether an environment variable or query parameter of this name holds a credential."""
    return any(_SENSITIVE_WORD.fullmatch(word) for word in _WORDS.findall(name))


def config_secrets(data: Any, substituted: Iterable[tuple[Loc, str]]) -> list[str]:
    """The secrets among the values of one config entry (an agent's settings).

    Args:
        data: the entry, its ``${…}`` already expanded.
        substituted: ``(where, value)`` of every value that came from the environment.
    """
    by_loc: dict[Loc, list[str]] = {}
    for loc, value in substituted:
        by_loc.setdefault(loc, []).append(value)
    found: list[str] = []
    for loc, text, before in _strings(data, (), None):
        values = by_loc.get(loc, [])
        parent = loc[-2] if len(loc) >= 2 else None
        key = loc[-1] if loc else ""
        if parent in ("headers", "env"):
            found += values
            if sensitive_header(str(key)) if parent == "headers" else sensitive_name(str(key)):
                found += [text, text.split()[-1]] if text.split() else []  # "Bearer KEY": KEY too
        elif values and _names_a_credential(key, before, text):
            found += values  # apiKey: ${K}, or argv [..., --api-key, ${K}] and --token=${K}
        if "://" in text:
            found += _url_secrets(text, values)
    return _unique(found)


def _names_a_credential(key: str | int, before: Any, text: str) -> bool:
    """Whether a value is named as a credential: by its key, or by the flag that precedes it."""
    if isinstance(key, str):
        return sensitive_name(key) and not key.lower().endswith("env")  # api_key_env: a name
    flag = before if isinstance(before, str) and before.startswith("-") else text.partition("=")[0]
    return flag.startswith("-") and sensitive_name(flag)


def _url_secrets(url: str, values: Sequence[str]) -> list[str]:
    """A URL's password, its ``${…}`` values in the userinfo or query, and credential params."""
    start = url.index("://") + 3
    ends = [i for i in (url.find(c, start) for c in "/?#") if i != -1]
    netloc = url[start : min(ends, default=len(url))]
    userinfo = netloc.rpartition("@")[0]
    query_at = url.find("?", start)
    query = url[query_at + 1 :].partition("#")[0] if query_at != -1 else ""
    found = [v for v in values if v in userinfo or v in query]
    password = userinfo.partition(":")[2]
    if password:
        found.append(password)
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if value and "{{" not in value and sensitive_name(name):
            found.append(value)
    return found


def _strings(value: Any, loc: Loc, before: Any) -> Iterable[tuple[Loc, str, Any]]:
    """Every string of ``value``: where it is, and the list item before it (a flag?)."""
    if isinstance(value, str):
        yield loc, value, before
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*loc, key), None)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _strings(item, (*loc, i), value[i - 1] if i else None)


def _unique(values: Iterable[str]) -> list[str]:
    return sorted({v for v in values if len(v) >= MIN_LENGTH}, key=lambda v: (-len(v), v))


# -- scrubbing ----------------------------------------------------------------------------


def redact(text: str, secrets: Sequence[str]) -> str:
    """Replace every secret in ``text`` with ``***`` (secrets shorter than 4 chars are kept).

    A secret that an excerpt cut in two is caught too: 4 characters or more of its start just
    before a ``…``, or of its end just after one, become ``***``. Only the text beside each
    ``…`` is looked at, so an output full of ellipses costs no more than one pass.
    """
    for secret in secrets:
        if len(secret) < MIN_LENGTH or (secret not in text and CUT not in text):
            continue
        text = text.replace(secret, MARKER)
        if CUT in text and (secret[:4] in text or secret[-4:] in text):  # else nothing to mask
            parts = text.split(CUT)
            for i in range(len(parts) - 1):
                parts[i] = _mask_start_at_end(parts[i], secret)
                parts[i + 1] = _mask_end_at_start(parts[i + 1], secret)
            text = CUT.join(parts)
    return text


def _mask_start_at_end(part: str, secret: str) -> str:
    """``part`` with the longest start of ``secret`` (4 characters or more) it ends in masked."""
    for k in range(min(len(secret) - 1, len(part)), 3, -1):
        if part.endswith(secret[:k]):
            return part[:-k] + MARKER
    return part


def _mask_end_at_start(part: str, secret: str) -> str:
    """``part`` with the longest end of ``secret`` (4 characters or more) it starts with masked."""
    for k in range(min(len(secret) - 1, len(part)), 3, -1):
        if part.startswith(secret[-k:]):
            return MARKER + part[k:]
    return part


T = TypeVar("T")


def redact_data(value: T, secrets: Sequence[str]) -> T:
    """``value`` (JSON-like: dicts, lists, strings) with every secret in its strings scrubbed.

    A string that holds JSON (a judge's raw reply) is scrubbed of the escaped form too.
    """
    if not secrets:
        return value
    every = _with_escapes(secrets)
    return _map_strings(value, lambda text: redact(text, every))  # type: ignore[no-any-return]


def redact_encoded(value: T, secrets: Sequence[str]) -> tuple[T, str]:
    """``value`` scrubbed as :func:`redact_data` scrubs it, and its JSON text (not ASCII-escaped).

    The text is made once and searched: only a value in which a secret (or the start or end of
    one beside a ``…``) is found is walked string by string, so a clean record, the usual one,
    costs one encoding, the one its store needed anyway.
    """
    text = json.dumps(value, ensure_ascii=False)
    every = [s for s in _with_escapes(secrets) if len(s) >= MIN_LENGTH]
    found = any(_as_in_json(s) in text for s in every) or (
        CUT in text
        and any(_as_in_json(s[:4]) in text or _as_in_json(s[-4:]) in text for s in every)
    )
    if not found:
        return value, text
    value = redact_data(value, secrets)
    return value, json.dumps(value, ensure_ascii=False)


M = TypeVar("M", bound=BaseModel)


def redact_model(model: M, secrets: Sequence[str]) -> M:
    """Scrub every secret from every string of a pydantic value (its JSON escapes included)."""
    if not secrets:
        return model
    text = model.model_dump_json()
    clean = redact(text, _with_escapes(secrets))
    return model if clean == text else type(model).model_validate_json(clean)


def _as_in_json(text: str) -> str:
    """``text`` as it reads inside a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _with_escapes(secrets: Sequence[str]) -> list[str]:
    """The secrets, and each as it reads inside a JSON string (where that differs)."""
    escaped = [_as_in_json(s) for s in secrets]
    return [*secrets, *(e for e, s in zip(escaped, secrets, strict=True) if e != s)]


def secret_digest(secret: str) -> str:
    """What stands for ``secret`` in an identity: the marker and a short hash of it."""
    return MARKER + hash_text(secret)[:23]


_DIGEST = re.compile(re.escape(MARKER) + r"sha256:[0-9a-f]{16}")


def forget_digests(value: T) -> T:
    """``value`` with each :func:`secret_digest` made the plain marker (the same for any key)."""
    return _map_strings(value, lambda text: _DIGEST.sub(MARKER, text))  # type: ignore[no-any-return]


def conceal(value: T, secrets: Sequence[str]) -> T:
    """``value`` with every secret in its strings replaced by :func:`secret_digest` of it.

    For identities that are hashed and kept (cache keys, cassette entries): a changed secret
    changes them, and the secret is never written.
    """
    if not secrets:
        return value
    ordered = sorted((s for s in secrets if len(s) >= MIN_LENGTH), key=len, reverse=True)

    def hide(text: str) -> str:
        for secret in ordered:
            if secret in text:
                text = text.replace(secret, secret_digest(secret))
        return text

    return _map_strings(value, hide)  # type: ignore[no-any-return]


def _map_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {_map_strings(k, fn): _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_map_strings(v, fn) for v in value)
    return value
