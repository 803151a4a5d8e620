"""Compact ids and fingerprint sets: exact answers in a few bytes an entry."""

from __future__ import annotations

from array import array

import pytest

from coalmine._util.compact import LINE_SHIFT, CompactStrings, Fingerprints, SeenIds


def test_compact_strings_is_a_list_of_strings() -> None:
    ids = CompactStrings(["a", "ünï", ""])
    ids.append("case-42")
    assert len(ids) == 4
    assert ids[0] == "a" and ids[1] == "ünï" and ids[2] == "" and ids[-1] == "case-42"
    assert list(ids) == ["a", "ünï", "", "case-42"]
    assert ids[1:3] == ["ünï", ""]
    assert ids == ["a", "ünï", "", "case-42"] and ids != ["a"]
    assert ids == CompactStrings(["a", "ünï", "", "case-42"])
    with pytest.raises(IndexError):
        ids[4]


def test_fingerprints_hold_many_and_answer_exactly() -> None:
    table = Fingerprints()
    for i in range(5000):  # grows from 1024 slots several times
        table.add(("suite", f"c{i}", 0))
    assert len(table) == 5000
    assert all(table.find(Fingerprints.of(("suite", f"c{i}", 0)))[0] for i in range(5000))
    assert not table.find(Fingerprints.of(("suite", "c5000", 0)))[0]
    table.add(("suite", "c1", 0))  # already there: not counted twice
    assert len(table) == 5000


def test_a_fingerprint_shared_by_two_values_is_told_apart_by_the_confirmation() -> None:
    table = Fingerprints()
    table.places = array("q", bytes(8 * 1024))
    mark = 12345
    found, slot = table.find(mark)
    assert not found
    table.put(mark, slot, place=1)
    # a second value with the same fingerprint: the confirmation says "not this one"
    found, slot = table.find(mark, lambda s: table.places[s] == 2)
    assert not found and slot == (mark & 1023) + 1  # the next slot along
    table.put(mark, slot, place=2)
    found, slot = table.find(mark, lambda s: table.places[s] == 2)
    assert found and table.places[slot] == 2
    found, slot = table.find(mark, lambda s: table.places[s] == 1)
    assert found and table.places[slot] == 1


def test_places_move_with_their_fingerprints_when_the_table_grows() -> None:
    table = Fingerprints()
    table.places = array("q", bytes(8 * 1024))
    for i in range(1, 3000):
        found, slot = table.find(i * 7919)
        table.put(i * 7919, slot, place=i)
    for i in range(1, 3000):
        found, slot = table.find(i * 7919)
        assert found and table.places[slot] == i


def test_seen_ids_give_the_first_line_and_confirm_by_reading_again() -> None:
    lines = {0: "a", 10: "b", 20: "a", 30: "c"}
    asked: list[int] = []

    def resolve(offset: int) -> str:
        asked.append(offset)
        return lines[offset]

    seen = SeenIds(resolve)
    assert seen.first("a", 1, 0) is None
    assert seen.first("b", 2, 10) is None
    assert seen.first("a", 3, 20) == 1  # the line it was first met on
    assert asked == [0]  # confirmed by reading line 1's id again
    assert seen.first("c", 4, 30) is None
    assert seen.first("b", 9, 40) == 2


def test_a_place_packs_a_line_and_an_offset() -> None:
    seen = SeenIds(lambda offset: "x" if offset == (1 << LINE_SHIFT) - 1 else "?")
    assert seen.first("x", 100_000_000, (1 << LINE_SHIFT) - 1) is None
    assert seen.first("x", 100_000_001, 5) == 100_000_000
    with pytest.raises(ValueError, match="past what a scan indexes"):
        seen.first("y", 1, 1 << LINE_SHIFT)
