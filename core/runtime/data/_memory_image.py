"""Memory images: a new guest that starts as a copy of one that already imported pandas.

Between two turns a reactor guest has no live wasm stack (its globals are back at their start
values), so its linear memory is its whole state. An image is that memory, written once to a
file in the private cache folder and never changed. A new instance maps it copy-on-write
(MAP_PRIVATE | MAP_FIXED) over its own linear memory, grown to the image's size first: that
takes well under a millisecond, and the pages stay shared in the page cache until a guest
writes to them.

This relies on wasmtime's default on-demand allocator: linear memory sits in place inside its
own reservation, is never moved while it grows within it, and is unmapped whole when the store
is dropped. Linux only; elsewhere guests simply start from the bare snapshot.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

import wasmtime

from .._wasmtime import memory_ops
from . import _image_seeds as imageseeds
from . import _libc as libc

__all__ = ["MemoryImage", "capture", "SUPPORTED"]

PAGE = 65536
SUPPORTED = libc.SUPPORTED


def _base(memory: wasmtime.Memory, store: wasmtime.Store) -> int:
    return ctypes.cast(memory.data_ptr(store), ctypes.c_void_p).value or 0


def capture(memory: wasmtime.Memory, store: wasmtime.Store) -> bytes:
    """A copy of the whole linear memory (take it between turns only)."""
    return ctypes.string_at(_base(memory, store), memory.data_len(store))


class MemoryImage:
    """One image file, held open read-only for as long as guests may be started from it."""

    def __init__(self, path: Path):
        self.path = path
        self.seeds = imageseeds.load(path)
        """Where the random generators' states lie (None: the guest must reseed itself)."""
        self._content: memoryview | None = None
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self.size = os.fstat(self._fd).st_size
        if self.size == 0 or self.size % PAGE:
            os.close(self._fd)
            raise ValueError(f"{path} is not a memory image")

    def map(self, memory: wasmtime.Memory, store: wasmtime.Store) -> None:
        """Make `memory` (of a fresh instance that has run nothing) a private copy of the image."""
        have = memory.data_len(store)
        if self.size > have:
            memory.grow(store, (self.size - have) // PAGE)
        base = _base(memory, store)
        if libc.mmap(base, self.size, libc.PROT_READ_WRITE, libc.MAP_PRIVATE | libc.MAP_FIXED,
                     self._fd, 0) != base:
            raise OSError(ctypes.get_errno(), "could not map the memory image")
        self.reseed(base)

    def reseed(self, base: int) -> None:
        """Give the guest whose memory is at `base` random generators of its own (a guest
        new from the image, or one renewed for another run): guests would otherwise share
        their random streams."""
        if self.seeds:
            fresh = os.urandom(sum(n for _, n in self.seeds))
            start = 0
            for at, n in self.seeds:
                memory_ops.copy(base + at, fresh[start:start + n], n)
                start += n

    @property
    def content(self) -> memoryview:
        """The image's bytes (mapped read-only once, on first use)."""
        if self._content is None:
            self._content = memoryview(mmap.mmap(self._fd, 0, prot=mmap.PROT_READ))
        return self._content

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
