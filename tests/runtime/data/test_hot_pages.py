"""The data runtime's hot pages (`_hot.Hot`): which written pages stay unprotected, copied on
every commit instead of faulting on every cell. Pure run arithmetic: no guest."""

from __future__ import annotations

from tooliscode.runtime.data import _hot
from tooliscode.runtime.data._hot import Hot


def _pages(runs: list[tuple[int, int]]) -> set[int]:
    return {p for first, end in runs for p in range(first, end)}


def test_a_page_written_in_two_commits_running_stays_unprotected():
    hot = Hot()
    assert hot.relearn()
    hot.protected_all([(10, 12), (40, 41)])
    assert not hot.relearn()
    # Written again: 10, 11 (twice running) become hot; 20 is new and is protected again.
    protect = hot.settle([(10, 12), (20, 21)], pages=100)
    assert protect == [(20, 21)]
    assert _pages([(i, i + 1) for i in range(100) if hot.flags[i]]) == {10, 11}
    # A hot page is reported on every scan (it is not protected): it is copied, never
    # protected again, and a run mixing hot and new pages protects only the new ones.
    assert hot.settle([(9, 13)], pages=100) == [(9, 10), (12, 13)]
    assert hot.count == 2


def test_every_relearn_commits_all_pages_are_protected_and_learnt_again():
    hot = Hot()
    flags = [hot.relearn() for _ in range(3 * _hot.RELEARN)]
    assert flags.count(True) == 3 and flags[0] and flags[_hot.RELEARN]
    hot.protected_all([(0, 4)])
    hot.settle([(0, 4)], pages=8)
    assert hot.count == 4
    hot.protected_all([(2, 3)])
    assert hot.count == 0 and not any(hot.flags)


def test_at_most_MOST_pages_are_hot():
    hot = Hot()
    many = [(0, 3 * _hot.MOST)]
    hot.relearn()
    hot.protected_all(many)
    hot.relearn()
    protect = hot.settle(many, pages=3 * _hot.MOST)
    assert hot.count == _hot.MOST
    assert _pages(protect) == set(range(_hot.MOST, 3 * _hot.MOST))


def test_run_arithmetic():
    assert _hot._both([(0, 5), (8, 10)], [(3, 9)]) == [(3, 5), (8, 9)]
    assert _hot._minus([(0, 10), (20, 30)], [(2, 4), (6, 7), (20, 30)]) == [
        (0, 2), (4, 6), (7, 10)]
    flags = bytearray(b"\x00\x01\x01\x00\x00\x01")
    assert _hot._cold(flags, 0, 6) == [(0, 1), (3, 5)]
