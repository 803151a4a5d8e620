"""Monotonic ULIDs: 26 Crockford base32 characters that sort in creation order."""

from __future__ import annotations

import re

import pytest

from coalmine._util import ids
from coalmine._util.ids import new_ulid

CROCKFORD = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


@pytest.fixture
def fresh_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the last millisecond, so a fixed ``now_ms`` in the past is used as given."""
    monkeypatch.setattr(ids, "_last_ms", -1)
    monkeypatch.setattr(ids, "_last_rand", 0)


def test_ulid_is_26_crockford_chars() -> None:
    for _ in range(100):
        value = new_ulid()
        assert CROCKFORD.match(value), value
        assert not set(value) & set("ILOU")


def test_ulids_sort_in_creation_order() -> None:
    made = [new_ulid() for _ in range(1000)]
    # strictly increasing, so no two are equal, even within one millisecond
    assert all(a < b for a, b in zip(made, made[1:], strict=False))


@pytest.mark.usefixtures("fresh_clock")
@pytest.mark.parametrize(
    ("now_ms", "prefix"),
    [
        (0, "0000000000"),
        (1, "0000000001"),
        # 1057 = 1·32² + 1·32 + 1 → digits 1, 1, 1
        (1057, "0000000111"),
        # 31 → "Z", the last Crockford digit
        (31, "000000000Z"),
        # the example of the ULID spec: ulid(1469918176385) starts 01ARYZ6S41
        (1469918176385, "01ARYZ6S41"),
        # the largest 48-bit time: 2^48 - 1 = 0b11 then 45 ones → "7" then nine "Z"
        (2**48 - 1, "7ZZZZZZZZZ"),
    ],
)
def test_fixed_now_ms_encodes_the_time_prefix(now_ms: int, prefix: str) -> None:
    assert new_ulid(now_ms=now_ms)[:10] == prefix


@pytest.mark.usefixtures("fresh_clock")
def test_same_millisecond_increments_the_random_part() -> None:
    first = new_ulid(now_ms=1000)
    second = new_ulid(now_ms=1000)
    assert first[:10] == second[:10] == "00000000Z8"  # 1000 = 31·32 + 8
    assert int_of(second) == int_of(first) + 1


@pytest.mark.usefixtures("fresh_clock")
def test_clock_going_back_keeps_the_order() -> None:
    later = new_ulid(now_ms=5000)
    earlier_clock = new_ulid(now_ms=4000)
    assert earlier_clock > later
    assert earlier_clock[:10] == later[:10]


def int_of(ulid: str) -> int:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = 0
    for char in ulid:
        value = value * 32 + alphabet.index(char)
    return value
