"""Tool-call arguments as providers receive them, decoded one way for all of them."""

from __future__ import annotations

import json
from typing import Any


def decode_arguments(value: Any, where: str, warnings: list[str]) -> dict[str, Any]:
    """Arguments given as an object (llama.cpp) or as a JSON string (OpenAI, vLLM).

    Text that is not a JSON object is kept as ``{"_raw": text}`` with a warning; a value of
    another type raises ``TypeError`` (the caller reports the answer as unreadable).
    """
    if isinstance(value, dict):
        return value
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}  # a tool without parameters: some servers send "" or nothing
    if not isinstance(value, str):
        raise TypeError(f"arguments are {json_kind(value)}, not an object or a JSON string")
    try:
        decoded = json.loads(value)
    except ValueError:
        warnings.append(f"{where}: arguments are not valid JSON; kept as _raw")
        return {"_raw": value}
    if not isinstance(decoded, dict):
        warnings.append(f"{where}: arguments are JSON but not an object; kept as _raw")
        return {"_raw": value}
    return decoded


def json_kind(value: Any) -> str:
    """Name the kind of a JSON value as its reader would say it ("a list", "a number")."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    return names.get(type(value), "null" if value is None else "a number")
