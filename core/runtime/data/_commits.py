"""Commit points on the data runtime: a guest's memory as it was after its last cell that
ended, kept outside the guest so a session whose cell was stopped comes back to it exactly.

Between turns a data-runtime guest is its linear memory. A commit point (`Shadow`) keeps the
pages that differ from the start image in a memfd; every other page is the image's (or zeros
past it). The first commit copies the pages the guest has written since it was mapped (the
page map names them); from then on write tracking (`_written.Tracker`) names the pages each
cell wrote, and a commit copies only those: a cell that changes a few variables costs a scan
and a few hundred kilobytes of copying, however large the session.

Restoring maps the image into a new guest and the kept pages over it, copy-on-write from the
memfd (`MAP_PRIVATE`): a 100 MB session comes back in about a millisecond instead of the
tens a copy takes. The new guest then goes on committing into the same memfd. That is sound
because the memfd is written only at pages the guest itself wrote since (its private copies
by then), so the pages it still shares with the memfd never change under it.

The memfd costs memory: the pages the session ever wrote, once more (shared memory, counted
by the host, not by the guest's limit).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import weakref

from .._wasmtime import page_map as pagemap
from .._wasmtime.page_map import PAGE
from ..base import CommitPoint, MemoryPlan
from . import _libc as libc
from ._memory_image import MemoryImage
from ._written import Region, Tracker

__all__ = ["SUPPORTED", "Shadow", "ShadowPlan", "commit", "kept_flags", "restore"]

SUPPORTED = libc.SUPPORTED and hasattr(os, "memfd_create")

_SPAN = 4 << 30
"""The most a wasm32 memory can be: the memfd's size (sparse) and the map's (address space)."""
_MAPPED = 16 * PAGE
"""Kept runs at least this long are mapped from the memfd; shorter ones are copied (each
mapping is a kernel area, of which a process may have about 65,000)."""


class Shadow(CommitPoint):
    """The committed memory of one session's guest (see the module's docstring)."""

    def __init__(self, image: MemoryImage):
        self.image = image
        self.size = 0
        """The memory's length at the commit."""
        self.kept = bytearray()
        """One byte per page: 1 where the memfd holds the page, else it is the image's."""
        self.complete = False
        """False while a commit is under way (or failed): the point is not to be used."""
        self.fd = os.memfd_create("tooliscode-commit", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, _SPAN)
            self._map = mmap.mmap(self.fd, _SPAN)
        except BaseException:
            os.close(self.fd)
            raise
        self._view = memoryview(self._map)
        self._closer = weakref.finalize(self, _release, self._view, self._map, self.fd)
        self._closer.atexit = False  # at exit a guest's thread may still be committing into it

    def plan(self) -> MemoryPlan:
        return ShadowPlan(self)

    @property
    def ready(self) -> bool:
        return self.complete

    @property
    def size_bytes(self) -> int:
        return os.fstat(self.fd).st_blocks * 512 if self._closer.alive else 0

    def take(self, address: int, regions: list[Region]) -> None:
        """Copy `regions` of the memory at `address` into the memfd."""
        if not self._closer.alive:
            raise ValueError("the commit point is closed")
        kept, shadow = self.kept, self._view
        if not regions:
            return
        # Slices of memoryviews copy with half the overhead of a ctypes call per region.
        memory = memoryview((ctypes.c_char * regions[-1][1]).from_address(address)).cast("B")
        try:
            for start, end in regions:
                shadow[start:end] = memory[start:end]
                first, last = start >> 12, end >> 12
                if kept.find(0, first, last) >= 0:  # most runs are kept already: hot pages
                    kept[first:last] = b"\x01" * (last - first)
        finally:
            memory.release()

    def close(self) -> None:
        self.complete = False
        self._closer()


def _release(view: memoryview, shared: mmap.mmap, fd: int) -> None:
    view.release()
    try:
        shared.close()
    except BufferError:  # a view into it is still held: the map goes with the last one
        pass
    os.close(fd)


class ShadowPlan(MemoryPlan):
    """A commit point, as `Instance.load_memory` takes it."""

    def __init__(self, shadow: Shadow):
        self.shadow = shadow

    @property
    def size(self) -> int:  # type: ignore[override]
        return self.shadow.size


def _pages(flags: bytes) -> list[Region]:
    return [(first * PAGE, end * PAGE) for first, end in pagemap.runs(flags)]


def commit(point: Shadow | None, tracker: Tracker | None, image: MemoryImage, address: int,
           size: int) -> tuple[Shadow, Tracker] | None:
    """Commit the memory at `address` (between turns) into `point`, or into a new one when
    there is none or nothing tracks its writes; returns the point and its tracker, or None
    where this kernel cannot track writes."""
    if point is None or tracker is None:
        return _first(image, address, size)
    point.complete = False
    grown = size > tracker.size
    old = tracker.size
    if grown and not tracker.grown(size):
        return None
    regions = tracker.written()
    if regions is None:
        return None
    if grown:  # pages written past the old end before they were tracked: take them whole
        flags = pagemap.written(address + old, size - old)
        if flags is None:
            return None
        regions += [(old + a, old + b) for a, b in _pages(flags)]
    if len(point.kept) < size // PAGE:
        point.kept.extend(bytes(size // PAGE - len(point.kept)))
    point.take(address, regions)
    point.size, point.complete = size, True
    return point, tracker


def _first(image: MemoryImage, address: int, size: int) -> tuple[Shadow, Tracker] | None:
    flags = pagemap.written(address, size)
    if flags is None:
        return None
    tracker = Tracker.start(address, size)
    if tracker is None:
        return None
    point = Shadow(image)
    point.kept = bytearray(size // PAGE)
    point.take(address, _pages(flags))
    point.size, point.complete = size, True
    return point, tracker


def restore(point: Shadow, address: int, size: int) -> Tracker | None:
    """Make the memory at `address` (a new guest's, mapped from the point's image, grown to
    `point.size`) the committed memory; returns the tracker of its writes from now on."""
    image = point.image
    if image.size < size:
        _mapped(address + image.size, size - image.size, -1, 0)
    kept = bytes(point.kept[:size // PAGE])
    memory = memoryview((ctypes.c_char * size).from_address(address)).cast("B")
    shadow = point._view
    try:
        for first, end in pagemap.runs(kept):
            start, length = first * PAGE, (end - first) * PAGE
            if length >= _MAPPED:
                _mapped(address + start, length, point.fd, start)
            else:
                memory[start:start + length] = shadow[start:start + length]
    finally:
        memory.release()
    return Tracker.start(address, size)


def kept_flags(point: Shadow, size: int) -> bytes:
    """One byte per page of a guest restored from `point`: 1 where it maps the memfd (pages
    the page map takes for the image's, since they are file pages)."""
    kept = bytes(point.kept[:size // PAGE])
    return kept + bytes(size // PAGE - len(kept))


def _mapped(address: int, length: int, fd: int, offset: int) -> None:
    flags = libc.MAP_PRIVATE | libc.MAP_FIXED | (libc.MAP_ANONYMOUS if fd < 0 else 0)
    if libc.mmap(address, length, libc.PROT_READ_WRITE, flags, fd, offset) != address:
        raise OSError(ctypes.get_errno(), "could not map the committed memory")
