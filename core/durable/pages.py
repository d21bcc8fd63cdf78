"""Linear memory as a delta against the start image a guest was mapped from.

Between two turns a reactor interpreter is its linear memory (its only mutable global, the
stack pointer, is back at its start value). The image is mapped copy-on-write, so a page the
guest never wrote is still the file's page: the kernel's page map (/proc/self/pagemap) tells
which 4 KiB pages were written in one read of a few kilobytes, and only those are looked at.
Where the page map cannot be read, every page counts as written.

Written pages over data in the image are kept XORed with it: a page where a few pointers and
counts moved becomes nearly all zeros, which compresses to almost nothing and fast. Pages over
the image's free (zero) pages and past its end are new data, kept as they are: compressing
them costs more time than sending them. Pages past the end never touched are zeros, left out.
"""

from __future__ import annotations

import ctypes
import re
import struct
import sys
from dataclasses import dataclass

__all__ = ["AS_IS", "PAGE", "XOR", "Delta", "apply", "take", "zero", "zero_pages"]

PAGE = 4096
_RUN = struct.Struct("<III")
SPARSE = 0.75
"""A run is kept XORed when at least this share of its XOR is zeros."""
_STRIDE = 61
XOR, AS_IS = 0, 1
"""How a run's pages are kept: XORed with the image, or as they are."""
_PAGEMAP = "/proc/self/pagemap"
_WRITTEN = bytes(1 if (b & 0x20) == 0 and (b & 0xC0) else 0 for b in range(256))
"""Top byte of a page-map entry -> 1 when the page is private to us (present and not a file
page, or swapped out): written since the image was mapped, or new."""
_KINDS = re.compile(b"\x01+|\x02+")
_MAP_PRIVATE, _MAP_FIXED, _MAP_ANONYMOUS, _PROT_READ_WRITE = 0x02, 0x10, 0x20, 0x3

if sys.platform.startswith("linux"):
    _libc = ctypes.CDLL(None, use_errno=True)
    _mmap = _libc.mmap
    _mmap.restype = ctypes.c_void_p
    _mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]


@dataclass
class Delta:
    """What differs between a guest's memory and its start image."""

    size: int
    """The memory's length in bytes."""
    runs: bytes
    """(first page, page count, XOR or AS_IS), u32 little-endian, in order."""
    xor: bytes | list[bytes]
    """The XOR runs (in pieces, as `take` makes them)."""
    new: bytes | memoryview | list[memoryview]
    """The runs kept as they are (from `take`: views into the memory, valid until the guest
    runs again)."""


def _view(address: int, size: int) -> memoryview:
    return memoryview((ctypes.c_char * size).from_address(address)).cast("B")


def _written(address: int, size: int) -> bytes | None:
    """One byte per 4 KiB page of [address, address + size): 1 when the page was written."""
    try:
        with open(_PAGEMAP, "rb", buffering=0) as f:
            f.seek(address // PAGE * 8)
            entries = f.read(size // PAGE * 8)
    except OSError:
        return None
    if len(entries) != size // PAGE * 8:
        return None
    return entries[7::8].translate(_WRITTEN)


def _compared(memory: memoryview, base: memoryview) -> bytes:
    """Without a page map: the pages that differ from the image, and all pages past it."""
    pages, inside = len(memory) // PAGE, len(base) // PAGE
    return bytes(memory[at:at + PAGE].tobytes() != base[at:at + PAGE].tobytes()
                 for at in range(0, inside * PAGE, PAGE)) + b"\x01" * (pages - inside)


def _runs(memory: memoryview, address: int, base: memoryview, empty: bytes
          ) -> list[tuple[int, int, int]]:
    """Runs of written pages as (first, count, over free memory): `empty` flags the image's
    zero pages, and every page past its end counts as free."""
    pages = len(memory) // PAGE
    written = _written(address, len(memory)) or _compared(memory, base)
    free = empty[:pages] + b"\x01" * (pages - len(empty))
    # Each byte is 0 or 1, so the AND of the two numbers is their AND page by page, and
    # adding it marks written free pages 2 without a carry.
    w = int.from_bytes(written, "little")
    kinds = (w + (w & int.from_bytes(free, "little"))).to_bytes(pages, "little")
    return [(m.start(), m.end() - m.start(), m.group()[0] - 1) for m in _KINDS.finditer(kinds)]


def zero_pages(base: memoryview) -> bytes:
    """One byte per page of `base`: 1 where the page is all zeros (free memory in the image:
    what the guest writes there is new data, kept as it is)."""
    empty = bytes(PAGE)
    return bytes(base[at:at + PAGE].tobytes() == empty for at in range(0, len(base), PAGE))


def _xor(a: memoryview | bytes, b: memoryview | bytes, n: int) -> bytes:
    return (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).to_bytes(n, "little")


def _differing(memory: memoryview, base: memoryview, first: int, count: int
               ) -> list[tuple[int, int, int]]:
    """The runs of pages in [first, first + count) that differ from the image: a page that
    was written back as it was (a count up and down again) costs nothing to leave out."""
    out: list[tuple[int, int, int]] = []
    for page in range(first, first + count):
        at = page * PAGE
        if memory[at:at + PAGE].tobytes() != base[at:at + PAGE].tobytes():
            if out and out[-1][0] + out[-1][1] == page:
                out[-1] = (out[-1][0], out[-1][1] + 1, XOR)
            else:
                out.append((page, 1, XOR))
    return out


def take(address: int, size: int, base: memoryview, empty: bytes, xor_limit: int) -> Delta:
    """The delta of the memory at `address` (between turns) against the image `base`, whose
    zero pages `empty` flags. Written pages over data in the image are XORed with it until
    `xor_limit` bytes; past that, XORing costs more time than the bytes it saves."""
    memory = _view(address, size)  # not released: `new` holds views into it
    kept: list[tuple[int, int, int]] = []
    xor: list[bytes] = []
    new: list[memoryview] = []
    budget = xor_limit
    for first, count, raw in _runs(memory, address, base, empty):
        runs = [(first, count, AS_IS)] if raw or budget <= 0 else \
            _differing(memory, base, first, count)
        for first, count, kind in runs:
            start, end = first * PAGE, (first + count) * PAGE
            if kind == XOR:
                diff = _xor(memory[start:end], base[start:end], end - start)
                sample = diff[::_STRIDE]  # every 61st byte tells well enough, and fast
                if sample.count(0) >= len(sample) * SPARSE:
                    kept.append((first, count, XOR))
                    xor.append(diff)
                    budget -= end - start
                    continue
            kept.append((first, count, AS_IS))  # new data: its XOR would not compress
            new.append(memory[start:end])
    return Delta(size, b"".join(_RUN.pack(*r) for r in kept), xor, new)


def apply(delta: Delta, address: int, size: int, base: memoryview) -> None:
    """Write `delta` into the memory at `address`, which holds the image `base` and zeros
    past it and is `size` bytes long. ValueError when the delta does not fit."""
    if len(delta.runs) % _RUN.size or delta.size > size or delta.size % PAGE:
        raise ValueError("the memory delta is damaged")
    memory = _view(address, size)
    try:
        at = [0, 0]
        for first, count, kind in _RUN.iter_unpack(delta.runs):
            start, end = first * PAGE, (first + count) * PAGE
            if end > delta.size or kind not in (XOR, AS_IS) or (kind == XOR and end > len(base)):
                raise ValueError("the memory delta is damaged")
            source = delta.xor if kind == XOR else delta.new
            chunk = source[at[kind]:at[kind] + end - start]
            if len(chunk) != end - start:
                raise ValueError("the memory delta is cut short")
            at[kind] += end - start
            memory[start:end] = _xor(chunk, base[start:end], end - start) if kind == XOR \
                else chunk
        if at != [len(delta.xor), len(delta.new)]:
            raise ValueError("the memory delta is damaged")
    finally:
        memory.release()


def zero(address: int, size: int) -> None:
    """Make [address, address + size) fresh zero pages (page-aligned; linear memory only)."""
    if size <= 0:
        return
    if _mmap(address, size, _PROT_READ_WRITE, _MAP_PRIVATE | _MAP_FIXED | _MAP_ANONYMOUS, -1,
             0) != address:
        raise OSError(ctypes.get_errno(), "could not clear the memory")
