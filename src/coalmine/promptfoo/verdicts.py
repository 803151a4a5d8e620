"""What a promptfoo assertion handler answers: a verdict, or an error that makes the row ERROR."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PASSED", "HandlerError", "Verdict", "verdict"]

PASSED = "Assertion passed"


class HandlerError(Exception):
    """promptfoo's handler throws here: the row is an ERROR with this message."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Verdict:
    """One assertion's result, as promptfoo's handler returns it."""

    passed: bool
    score: float
    reason: str


def verdict(passed: bool, failure: str) -> Verdict:
    """A 1/0 verdict whose reason is promptfoo's ``Assertion passed`` or ``failure``."""
    return Verdict(passed, 1.0 if passed else 0.0, PASSED if passed else failure)
