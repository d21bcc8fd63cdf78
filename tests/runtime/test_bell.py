"""runtime/_wasmtime/bell.py: a counter rung by one thread and spun on, without the GIL, by
another; the engine's worker hands cells over with two of them."""

from __future__ import annotations

import gc
import queue
import threading
import time

import pytest
from tooliscode.runtime import Bell, bell
from tooliscode.runtime._wasmtime import bell as bells


@pytest.fixture(scope="module")
def shared() -> bells._Bells:
    """Bells of their own, made whatever the machine's cores (the process's own bells are
    not made on one core: see `test_on_one_core_nothing_spins`)."""
    return bells._Bells()


def new(shared: bells._Bells) -> Bell:
    return Bell(shared, shared.take())


def test_with_no_store_spare_a_wait_rings_at_once_and_one_is_made_later(shared) -> None:
    """Making a store to spin in costs about 0.1 ms: a wait that finds none spare rings at
    once and does not spin, instead of making one on the way; `spare_spinner`, called where
    nothing waits, then makes one, as many as threads that waited at once."""
    shared.stock()
    taken, shared._spare[:] = list(shared._spare), []
    try:
        a, b = new(shared), new(shared)
        start = time.perf_counter()
        assert not b.wait(b.count, 10.0, ring=a)
        assert time.perf_counter() - start < 1.0 and a.count == 1
        shared.stock()
        assert len(shared._spare) == 1
        shared.stock()  # one spare, and nobody went without since: none more
        assert len(shared._spare) == 1
    finally:
        shared._spare.extend(taken)


def test_ring_counts_and_a_wait_rings_the_other_bell_first(shared) -> None:
    shared.stock()
    a, b = new(shared), new(shared)
    a.ring()
    a.ring()
    assert a.count == 2
    assert not b.wait(b.count, 0.0005, ring=a)  # nobody rings b: it gives up
    assert a.count == 3
    assert b.wait(b.count - 1, 0.0005)  # the count it was told of is old: no spin at all


def test_a_spinning_thread_is_woken_by_a_ring_from_another(shared) -> None:
    """A ping-pong of 200 items: each side rings the other's bell as it starts to spin for
    its own, and the queues stay the truth. Nearly every wait must end rung, not given up:
    a spin that let the GIL go after ringing, or rang nothing, would time out each time."""
    to_guest, to_caller = new(shared), new(shared)
    items: queue.SimpleQueue[int] = queue.SimpleQueue()
    answers: queue.SimpleQueue[int] = queue.SimpleQueue()
    rounds, rung = 200, []

    def guest() -> None:
        seen = to_guest.count
        for _ in range(rounds):
            if items.empty():
                to_guest.wait(seen, 1.0)
            seen = to_guest.count
            item = items.get(timeout=5)
            answers.put(item * 2)
            to_caller.ring()

    shared.stock()
    shared._short = True  # the two threads wait at once: two stores
    shared.stock()
    thread = threading.Thread(target=guest)
    thread.start()
    for i in range(rounds):
        seen = to_caller.count
        items.put(i)
        rung.append(to_caller.wait(seen, 1.0, ring=to_guest))
        assert answers.get(timeout=5) == i * 2
    thread.join(5)
    assert not thread.is_alive()
    assert sum(rung) >= rounds * 0.9, f"only {sum(rung)} of {rounds} waits were rung"


def test_a_wait_that_is_not_rung_ends_after_its_time(shared) -> None:
    shared.stock()
    b = new(shared)
    start = time.perf_counter()
    assert not b.wait(b.count, 0.02)
    assert time.perf_counter() - start < 2.0  # calibrated to the machine, not exact


def test_a_bell_gives_its_counter_back_when_it_goes(shared) -> None:
    b = new(shared)
    offset = b._offset
    assert offset is not None and offset // 4 not in shared._free
    b.ring()
    del b
    gc.collect()
    assert offset // 4 in shared._free
    assert shared.word(offset).value == 0  # a counter given back starts again from nothing


def test_where_no_bell_can_spin_waits_end_at_once_and_rings_still_count(shared) -> None:
    unusable, real = Bell(None, None), new(shared)
    unusable.ring()
    assert unusable.count == 0
    before = real.count
    start = time.perf_counter()
    assert not unusable.wait(0, 10.0, ring=real)
    assert time.perf_counter() - start < 1.0
    assert real.count == before + 1


def test_on_one_core_nothing_spins(monkeypatch) -> None:
    """A spinner on the only core keeps the thread it waits for from running: there the
    process makes no bells, and every wait ends at once."""
    monkeypatch.setattr(bells, "_cores", lambda: 1)
    monkeypatch.setattr(bells, "_bells", None)
    monkeypatch.setattr(bells, "_unusable", False)
    b = bell()
    assert bells._shared() is None and b._offset is None
    start = time.perf_counter()
    assert not b.wait(b.count, 10.0)
    assert time.perf_counter() - start < 1.0
