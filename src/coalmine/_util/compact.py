"""Compact structures for a scan of a million lines: ids as bytes, ids met as fingerprints.

A suite of 1,000,000 cases would take ~60 MB as Python strings and ~100 MB more in a dict of
the ids met; these keep ~17 bytes an id and ~24 bytes an id met.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import overload

LINE_SHIFT = 36
"""A met id's place is packed in one int: its line number above (up to 2^27, 134 million), its
byte offset below (up to 2^36, 64 GiB)."""


class CompactStrings(Sequence[str]):
    """A list of strings held as one UTF-8 buffer and where each ends."""

    def __init__(self, items: Iterable[str] = ()):
        self._blob = bytearray()
        self._ends = array("q")
        for item in items:
            self.append(item)

    def append(self, item: str) -> None:
        """Add ``item`` at the end."""
        self._blob += item.encode()
        self._ends.append(len(self._blob))

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, position: int) -> str: ...
    @overload
    def __getitem__(self, position: slice) -> list[str]: ...
    def __getitem__(self, position: int | slice) -> str | list[str]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError(position)
        start = self._ends[position - 1] if position else 0
        return self._blob[start : self._ends[position]].decode()

    def __iter__(self) -> Iterator[str]:
        start = 0
        for end in self._ends:
            yield self._blob[start:end].decode()
            start = end

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CompactStrings):
            return self._ends == other._ends and self._blob == other._blob
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"CompactStrings({list(self)!r})"


class Fingerprints:
    """A set of 64-bit fingerprints in open addressing: 8 to 16 bytes an entry, no object kept.

    Two different things may share a fingerprint: a caller that must be exact confirms a
    match (``confirm(slot)``), and :meth:`find` goes on past a match it does not confirm.
    """

    def __init__(self) -> None:
        self._prints = array("q", bytes(8 * 1024))
        self._count = 0
        self.places: array[int] | None = None
        """A value per slot, moved with it when the table grows (set it before the first add)."""

    def __len__(self) -> int:
        return self._count

    @staticmethod
    def of(value: object) -> int:
        """The fingerprint of ``value`` (this process's hash; never 0, the empty slot)."""
        return hash(value) or 1

    def find(self, mark: int, confirm: Callable[[int], bool] | None = None) -> tuple[bool, int]:
        """(found, slot): the confirmed slot holding ``mark``, or the empty slot it would take."""
        mask = len(self._prints) - 1
        slot = mark & mask
        while (found := self._prints[slot]) != 0:
            if found == mark and (confirm is None or confirm(slot)):
                return True, slot
            slot = (slot + 1) & mask
        return False, slot

    def put(self, mark: int, slot: int, place: int = 0) -> None:
        """Fill the empty ``slot`` :meth:`find` gave with ``mark`` (and its place)."""
        self._prints[slot] = mark
        if self.places is not None:
            self.places[slot] = place
        self._count += 1
        if self._count * 3 > len(self._prints) * 2:
            self._grow()

    def add(self, value: object) -> None:
        """Add the fingerprint of ``value``."""
        mark = self.of(value)
        found, slot = self.find(mark)
        if not found:
            self.put(mark, slot)

    def _grow(self) -> None:
        prints, places = self._prints, self.places
        size = len(prints) * 2
        self._prints = array("q", bytes(8 * size))
        if places is not None:
            self.places = array("q", bytes(8 * size))
        mask = size - 1
        for old, mark in enumerate(prints):
            if mark:
                slot = mark & mask
                while self._prints[slot] != 0:
                    slot = (slot + 1) & mask
                self._prints[slot] = mark
                if places is not None and self.places is not None:
                    self.places[slot] = places[old]


class SeenIds:
    """The ids a scan met and where (its line and byte offset), with no string kept.

    A fingerprint that matches is confirmed by ``resolve(offset)``, which reads the id of the
    line at that byte offset again, so two different ids are never taken for one.
    """

    def __init__(self, resolve: Callable[[int], str | None]):
        self._resolve = resolve
        self._table = Fingerprints()
        self._table.places = array("q", bytes(8 * 1024))

    def first(self, case_id: str, line: int, offset: int) -> int | None:
        """The line ``case_id`` was met on before; None (and it is noted as met here) if never."""
        places = self._table.places
        assert places is not None

        def same(slot: int) -> bool:
            return self._resolve(places[slot] & ((1 << LINE_SHIFT) - 1)) == case_id

        mark = Fingerprints.of(case_id)
        found, slot = self._table.find(mark, same)
        if found:
            return places[slot] >> LINE_SHIFT
        if offset >> LINE_SHIFT or line >> (63 - LINE_SHIFT):
            raise ValueError(f"line {line} at byte {offset}: past what a scan indexes")
        self._table.put(mark, slot, (line << LINE_SHIFT) | offset)
        return None
