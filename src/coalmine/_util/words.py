"""Words for counts: ``1 canary``, ``3 canaries``."""


def counted(n: int, one: str, many: str) -> str:
    """``n`` with its noun in the right number."""
    return f"{n} {one if n == 1 else many}"
