"""The cyclic collector paused around a block, and resumed as it was."""

from __future__ import annotations

import gc
import weakref

from coalmine._util.collector import collector_frozen, collector_paused


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_the_collector_is_paused_in_the_block_and_collects_the_block_s_cycles_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del a, b
        assert alive() is not None  # a cycle: reference counting alone cannot free it
    assert gc.isenabled()
    gc.collect()
    assert alive() is None


def test_a_nested_pause_resumes_only_at_the_outermost_end_and_a_disabled_one_stays_so() -> None:
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_resumes_when_the_block_raises() -> None:
    try:
        with collector_paused():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()


def test_what_exists_before_a_frozen_block_is_out_of_reach_in_it_and_given_back_after() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    before = gc.get_threshold()
    with collector_frozen():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] >= 7000 and gc.get_threshold()[1:] == before[1:]
        del a, b
        gc.collect()
        assert alive() is not None  # frozen: not even a full collection frees the cycle
        c, d = _Node(), _Node()
        c.other, d.other = d, c
        made = weakref.ref(c)
        del c, d
        gc.collect()
        assert made() is None  # what the block makes is collected as ever
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
    gc.collect()
    assert alive() is None
