"""Linear memory as a delta against the start image a guest was mapped from.

Between two turns a reactor interpreter is its linear memory (its only mutable global, the
stack pointer, is back at its start value). The image is mapped copy-on-write, so a page the
guest never wrote is still the file's page: the kernel's page map (/proc/self/pagemap) tells
which 4 KiB pages were written in one read of a few kilobytes, and only those are looked at.
Where the page map cannot be read, every page counts as written.

Of a written page over data in the image only the span from the first to the last byte that
changed is kept (comparing halves with the image finds it): an idle session's pages differ from the
image in a few pointers and counts, so its snapshot is small and a restore copies spans
without computing anything. Pages over the image's free (zero) pages and past its end are new
data, kept whole. Pages past the end never touched are zeros, left out.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

from .._wasmtime.page_map import PAGE, runs, written
from . import _libc as libc

__all__ = ["AS_IS", "PAGE", "SPAN", "Delta", "apply", "take", "zero", "zero_pages"]

_RUN = struct.Struct("<QQI")
SPARSE = 0.5
"""A page's span is kept when it covers at most this share of the page; past that the page is
kept whole, as new data (data that moved in, not counts that changed: compressing it costs
more time than sending it)."""
SPAN, AS_IS = 0, 1
"""What a run is: the changed span of one page over the image, or whole pages."""
_POPULATED = 16 * PAGE
"""Whole runs at least this long are faulted in by one call before they are copied, rather
than one page fault per 4 KiB page (see benchmarks/RESULTS.md, snapshot restore)."""


@dataclass
class Delta:
    """What differs between a guest's memory and its start image."""

    size: int
    """The memory's length in bytes."""
    runs: bytes
    """(first byte, length, SPAN or AS_IS), little-endian u64, u64, u32, in order."""
    spans: bytes | memoryview | list[memoryview]
    """The SPAN runs' bytes (in pieces, as `take` makes them)."""
    new: bytes | memoryview | list[memoryview]
    """The AS_IS runs' bytes (from `take`: views into the memory, valid until the guest runs
    again)."""


def _view(address: int, size: int) -> memoryview:
    return memoryview((ctypes.c_char * size).from_address(address)).cast("B")


def _compared(memory: memoryview, base: memoryview) -> bytes:
    """Without a page map: the pages that differ from the image, and all pages past it."""
    pages, inside = len(memory) // PAGE, len(base) // PAGE
    return bytes(memory[at:at + PAGE].tobytes() != base[at:at + PAGE].tobytes()
                 for at in range(0, inside * PAGE, PAGE)) + b"\x01" * (pages - inside)


def _runs(memory: memoryview, address: int, base: memoryview, empty: bytes,
          also: bytes | None = None) -> list[tuple[int, int, int]]:
    """Runs of written pages as (first, count, over free memory): `empty` flags the image's
    zero pages, and every page past its end counts as free. `also` flags more pages."""
    pages = len(memory) // PAGE
    written_pages = written(address, len(memory)) or _compared(memory, base)
    if also:  # flags are 0 or 1 per byte: OR them as two integers, in C
        either = int.from_bytes(written_pages, "little") | int.from_bytes(also[:pages], "little")
        written_pages = either.to_bytes(pages, "little")
    free = empty[:pages] + b"\x01" * (pages - len(empty))
    out = []
    for at, end in runs(written_pages):
        while at < end:  # cut where the run goes from the image's data to free memory
            kind = free[at]
            cut = free.find(1 - kind, at, end)
            cut = end if cut < 0 else cut
            out.append((at, cut - at, kind))
            at = cut
    return out


def zero_pages(base: memoryview) -> bytes:
    """One byte per page of `base`: 1 where the page is all zeros (free memory in the image:
    what the guest writes there is new data, kept as it is)."""
    empty = bytes(PAGE)
    return bytes(base[at:at + PAGE].tobytes() == empty for at in range(0, len(base), PAGE))


def _spans(memory: memoryview, base: memoryview, start: int, end: int
           ) -> list[tuple[int, int]]:
    """(address, length) from the first to the last byte that differs, for each page of
    [start, end) that differs from the image: a page written back as it was (a count up and
    down again) has none."""
    out = []
    for at in range(start, end, PAGE):
        # As bytes: comparing the memoryviews themselves goes byte by byte (ten times slower).
        page, image = memory[at:at + PAGE].tobytes(), base[at:at + PAGE].tobytes()
        if page != image:
            first, last = _edges(page, image)
            out.append((at + first, last + 1 - first))
    return out


def _edges(page: bytes, image: bytes) -> tuple[int, int]:
    """The first and the last byte where two unequal pages differ: halving with slice
    compares, a third less time than an XOR of the pages as two integers."""
    first = _halve(page, image, 0, True)
    return first, _halve(page, image, first, False)


def _halve(a: bytes, b: bytes, low: int, first: bool) -> int:
    """Where `a` and `b` first (or, not `first`, last) differ in [low, len(a)): they do."""
    high = len(a)  # what is looked for lies in [low, high)
    while high - low > 1:
        mid = (low + high) >> 1
        if (a[low:mid] == b[low:mid]) if first else (a[mid:high] != b[mid:high]):
            low = mid
        else:
            high = mid
    return low


def _whole(kept: list[tuple[int, int, int]], new: list[memoryview], memory: memoryview,
           start: int, end: int) -> None:
    """Keep [start, end) whole, as part of the whole run before it if they touch."""
    if kept and kept[-1][2] == AS_IS and kept[-1][0] + kept[-1][1] == start:
        start = kept.pop()[0]
        new.pop()
    kept.append((start, end - start, AS_IS))
    new.append(memory[start:end])


def take(address: int, size: int, base: memoryview, empty: bytes, span_limit: int,
         also: bytes | None = None) -> Delta:
    """The delta of the memory at `address` (between turns) against the image `base`, whose
    zero pages `empty` flags. Written pages over data in the image are compared with it until
    `span_limit` bytes; past that, comparing costs more time than the bytes it saves."""
    memory = _view(address, size)  # not released: the pieces are views into it
    kept: list[tuple[int, int, int]] = []
    spans: list[memoryview] = []
    new: list[memoryview] = []
    budget = span_limit
    for first, count, raw in _runs(memory, address, base, empty, also):
        start, end = first * PAGE, (first + count) * PAGE
        if raw or budget <= 0:
            _whole(kept, new, memory, start, end)
            continue
        budget -= end - start
        for at, n in _spans(memory, base, start, end):
            if n <= SPARSE * PAGE:
                kept.append((at, n, SPAN))
                spans.append(memory[at:at + n])
            else:
                page = at - at % PAGE
                _whole(kept, new, memory, page, page + PAGE)
    return Delta(size, b"".join(_RUN.pack(*r) for r in kept), spans, new)


def apply(delta: Delta, address: int, size: int) -> None:
    """Write `delta` into the memory at `address`, which holds the image and zeros past it
    and is `size` bytes long. ValueError when the delta does not fit."""
    if len(delta.runs) % _RUN.size or delta.size > size or delta.size % PAGE:
        raise ValueError("the memory delta is damaged")
    memory = _view(address, size)
    sources = (memoryview(_whole_bytes(delta.spans)).cast("B"),
               memoryview(_whole_bytes(delta.new)).cast("B"))
    try:
        at = [0, 0]
        for start, length, kind in _RUN.iter_unpack(delta.runs):
            end = start + length
            if end > delta.size or kind not in (SPAN, AS_IS):
                raise ValueError("the memory delta is damaged")
            chunk = sources[kind][at[kind]:at[kind] + length]
            if len(chunk) != length:
                raise ValueError("the memory delta is cut short")
            at[kind] += length
            if length >= _POPULATED and libc.madvise is not None:
                libc.madvise(address + start, length, libc.MADV_POPULATE_WRITE)  # may fail: fine
            memory[start:end] = chunk
        if at != [len(sources[0]), len(sources[1])]:
            raise ValueError("the memory delta is damaged")
    finally:
        memory.release()


def _whole_bytes(data: bytes | memoryview | list[memoryview]) -> bytes | memoryview:
    return b"".join(data) if isinstance(data, list) else data


def size_of(data: bytes | memoryview | list[memoryview]) -> int:
    """Bytes in `data`, whole or in pieces."""
    return sum(len(p) for p in data) if isinstance(data, list) else len(data)


def zero(address: int, size: int) -> None:
    """Make [address, address + size) fresh zero pages (page-aligned; linear memory only)."""
    if size <= 0:
        return
    if libc.mmap(address, size, libc.PROT_READ_WRITE,
                 libc.MAP_PRIVATE | libc.MAP_FIXED | libc.MAP_ANONYMOUS, -1,
             0) != address:
        raise OSError(ctypes.get_errno(), "could not clear the memory")
