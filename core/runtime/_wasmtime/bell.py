"""A bell one thread rings and another waits for, spinning for a moment without the GIL.

Handing a cell to the guest's thread and its result back costs two thread wake-ups. Each is
a futex wake of a sleeping thread, and the woken thread must then take the GIL back: 20-50
us each on this kind of machine, more than the rest of a small cell. A thread that expects
an answer within a fraction of a millisecond can instead spin for it, but only without the
GIL (a Python loop would hold the GIL the other thread needs), and the thread that answers
must let go of the GIL before it rings, or the spinner finds the GIL taken and sleeps on it
after all.

Python has no GIL-free spin of its own, so the spin is a wasm function: ctypes lets go of the
GIL for any call into wasm. The counters live in one shared wasm memory, which every store to
spin in imports. A store must not be entered by two threads at once, so a waiting thread
takes one from a spare pool and puts it back after: a new guest's thread makes none. `Bell.wait` lets go
of the GIL, rings another bell, then spins on its own counter for at most the time it was
given. Measured on 2 cores: a ping-pong between two threads, 41-50 us a round trip through
`queue.SimpleQueue`, 6-8 us through two bells.

A bell only shortens a wait; it carries nothing. A waiter still takes what it waited for from
its queue or future and blocks on that when the spin ends without a ring. So a lost ring
(two threads ringing at once) costs at most the spin, never a wake-up.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
import weakref
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

from .capi import Export

__all__ = ["Bell", "bell", "spare_spinner"]

_PAGES = 1
"""The shared memory's size: 16,384 bells, more than a process keeps guests."""
_SPIN = """
(module
  (import "bells" "memory" (memory 1 1 shared))
  ;; Ring the counter at `ring` (unless it is -1), then spin at most `spins` times while the
  ;; counter at `wait` still reads `seen`; return what it reads.
  (func (export "ring_and_wait") (param $ring i32) (param $wait i32) (param $seen i32)
                                 (param $spins i32) (result i32)
    (if (i32.ge_s (local.get $ring) (i32.const 0))
      (then (drop (i32.atomic.rmw.add (local.get $ring) (i32.const 1)))))
    (block $rung
      (loop $spin
        (br_if $rung (i32.ne (i32.atomic.load (local.get $wait)) (local.get $seen)))
        (local.set $spins (i32.sub (local.get $spins) (i32.const 1)))
        (br_if $spin (i32.gt_s (local.get $spins) (i32.const 0)))))
    (i32.atomic.load (local.get $wait))))
"""


class _SharedMemory(wasmtime.SharedMemory):
    """wasmtime-py 49 wraps a shared memory's pointer once too often when it is imported."""

    def _as_extern(self) -> Any:
        return ffi.wasmtime_extern_t(ffi.WASMTIME_EXTERN_SHAREDMEMORY,
                                     ffi.wasmtime_extern_union(sharedmemory=self.ptr()))


class _Bells:
    """The shared memory, its free counters, and the spare stores to spin in."""

    def __init__(self) -> None:
        config = wasmtime.Config()
        config.wasm_threads = True
        config.shared_memory = True
        self._engine = wasmtime.Engine(config)
        self._module = wasmtime.Module(self._engine, _SPIN)
        self._memory = _SharedMemory(self._engine, wasmtime.MemoryType(
            wasmtime.Limits(_PAGES, _PAGES), shared=True))
        self._base = ctypes.addressof(self._memory.data_ptr().contents)
        self._free = list(range(_PAGES * 65536 // 4 - 1, -1, -1))
        self._lock = threading.Lock()
        self._spare: list[tuple[wasmtime.Store, Export]] = []
        """Stores to spin in that no thread uses now (taken and put back under the GIL)."""
        self._short = False
        """A thread found no store spare since the last `stock`: two threads wait at once."""
        self.spins_per_s = self._calibrate()

    def take(self) -> int | None:
        with self._lock:
            return self._free.pop() * 4 if self._free else None

    def give_back(self, offset: int) -> None:
        ctypes.c_int32.from_address(self._base + offset).value = 0
        with self._lock:
            self._free.append(offset // 4)

    def word(self, offset: int) -> ctypes.c_int32:
        return ctypes.c_int32.from_address(self._base + offset)

    def stock(self) -> None:
        """Make a store to spin in, unless one is spare and no thread went without since the
        last call: about 0.1 ms, so done where nothing waits for it. There are soon as many
        as threads that wait at once (a caller and its guest's thread)."""
        if not self._spare or self._short:
            self._short = False
            store = wasmtime.Store(self._engine)
            instance = wasmtime.Instance(store, self._module, [self._memory])
            self._spare.append((store, Export(store, instance.exports(store)["ring_and_wait"], 4)))

    def ring_and_wait(self, ring: int, wait: int, seen: int, spins: int) -> int | None:
        """What the counter at `wait` reads after the spin; None, having done nothing,
        when no store to spin in is spare."""
        try:
            store, spin = spinner = self._spare.pop()
        except IndexError:
            self._short = True
            return None
        try:
            return int(spin(store, ring, wait, seen, spins))
        finally:
            self._spare.append(spinner)

    def _calibrate(self) -> float:
        """Spins a second on this machine: the spin counts loops, having no clock. The
        fastest of three tries, so that a thread preempted meanwhile does not shorten every
        spin of the process."""
        offset = self.take()
        assert offset is not None
        try:
            spins, took = 1 << 18, float("inf")
            self.stock()
            self.ring_and_wait(-1, offset, 0, 1000)
            for _ in range(3):
                start = time.perf_counter()
                self.ring_and_wait(-1, offset, 0, spins)
                took = min(took, time.perf_counter() - start)
            return spins / max(took, 1e-6)
        finally:
            self.give_back(offset)


_bells: _Bells | None = None
_made = threading.Lock()
_unusable = False


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _shared() -> _Bells | None:
    """The process's bells; None where spinning cannot help: on one core the spinner only
    keeps the thread it waits for from running."""
    global _bells, _unusable
    if _bells is None and not _unusable and _cores() < 2:
        _unusable = True
    if _bells is None and not _unusable:
        with _made:
            if _bells is None and not _unusable:
                try:
                    _bells = _Bells()
                except (wasmtime.WasmtimeError, OSError, AttributeError, TypeError):
                    _unusable = True  # no shared memory here: waits block at once
    return _bells


class Bell:
    """A counter to ring (`ring`) and to wait on (`wait`). Made by `bell()`; one that could
    get no counter never rings and waits for nothing, so its waiters block at once."""

    __slots__ = ("_bells", "_offset", "_word", "__weakref__")

    def __init__(self, bells: _Bells | None, offset: int | None):
        self._bells, self._offset = bells, offset
        self._word = None if bells is None or offset is None else bells.word(offset)
        if bells is not None and offset is not None:
            weakref.finalize(self, bells.give_back, offset)

    @property
    def count(self) -> int:
        """How often it has rung: read it before looking for what a ring would announce."""
        word = self._word
        return 0 if word is None else word.value

    def ring(self) -> None:
        """Ring it from a thread that holds the GIL and goes on with it (a lost ring between
        two threads ringing at once only makes a waiter block sooner)."""
        word = self._word
        if word is not None:
            word.value += 1

    def wait(self, seen: int, seconds: float, ring: Bell | None = None) -> bool:
        """Let go of the GIL, ring `ring`, and spin for at most `seconds` until this bell's
        count is no longer `seen`: True when it rang. Where no bell can spin, nor any store
        to spin in is spare (`spare_spinner`), `ring` is rung with the GIL held and the
        answer is False at once."""
        bells, offset = self._bells, self._offset
        if bells is None or offset is None or seconds <= 0:
            if ring is not None:
                ring.ring()
            return False
        other = ring._offset if ring is not None and ring._bells is bells else None
        if ring is not None and other is None:
            ring.ring()
        spins = max(1, min(int(seconds * bells.spins_per_s), 0x7FFFFFFF))
        found = bells.ring_and_wait(-1 if other is None else other, offset, seen, spins)
        if found is None:
            if other is not None:
                ring.ring()  # type: ignore[union-attr]
            return False
        return found != seen


def spare_spinner() -> None:
    """Make sure a thread that waits next finds a store to spin in. Making one costs about
    0.1 ms, so a thread calls this where nothing waits for it, not on the way to a wait."""
    bells = _shared()
    if bells is not None:
        bells.stock()


def bell() -> Bell:
    """A new bell, one that waits for nothing where shared wasm memory is not to be had."""
    bells = _shared()
    return Bell(bells, None if bells is None else bells.take())
