"""Short views of long texts: where two texts first differ, and a little of a text around it."""

from __future__ import annotations

EXCERPT_BEFORE = 20
EXCERPT_AFTER = 40


def first_difference(a: str, b: str) -> int | None:
    """The index of the first character where ``a`` and ``b`` differ; ``None`` if they are equal.

    When one is a prefix of the other, the difference is where the shorter one ends.
    """
    diff = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    if diff is None and len(a) != len(b):
        diff = min(len(a), len(b))
    return diff


def excerpt(text: str, at: int) -> str:
    """``text`` around character ``at``: a little before it, more after, ``…`` where cut."""
    start = max(0, at - EXCERPT_BEFORE)
    end = min(len(text), at + EXCERPT_AFTER)
    return ("…" if start > 0 else "") + text[start:end] + ("…" if end < len(text) else "")
