"""Text helpers for article URLs."""

import re
import unicodedata

_NOT_WORD = re.compile(r"[^a-z0-9]+")


def slugify(title: str, max_length: int = 60) -> str:
    """A URL slug for ``title``: ASCII, lower case, words joined by hyphens."""
    ascii_title = (
        unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    )
    slug = _NOT_WORD.sub("-", ascii_title.lower()).strip("-")
    return slug[:max_length].rstrip("-")
