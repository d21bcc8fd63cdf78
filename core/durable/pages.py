"""Linear memory as a delta against the start image a guest was mapped from.

Between two turns a reactor interpreter is its linear memory (its only mutable global, the
stack pointer, is back at its start value). The image is mapped copy-on-write, so a page the
guest never wrote is still the file's page: the kernel's page map (/proc/self/pagemap) tells
which 4 KiB pages were written in one read of a few kilobytes, and only those are looked at.
Where the page map cannot be read, every page counts as written.

Written pages inside the image are kept XORed with the image: a page where a few reference
counts moved becomes nearly all zeros, which compresses to almost nothing and fast. Pages
past the image's end are kept as they are (they are new data, and compressing them costs more
time than sending them). Pages past the end that were never touched are zeros and left out.
"""

from __future__ import annotations

import ctypes
import re
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PAGE", "Delta", "apply", "take", "zero"]

PAGE = 4096
_RUN = struct.Struct("<II")
_PAGEMAP = "/proc/self/pagemap"
_WRITTEN = bytes(1 if (b & 0x20) == 0 and (b & 0xC0) else 0 for b in range(256))
"""Top byte of a page-map entry -> 1 when the page is private to us (present and not a file
page, or swapped out): written since the image was mapped, or new."""
_RUNS = re.compile(b"\x01+")
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
    """(first page, page count) pairs, u32 little-endian, in order."""
    xor: bytes | list[bytes]
    """The runs inside the image, XORed with it (in pieces, as `take` makes them)."""
    new: bytes | memoryview | list[memoryview]
    """The runs past the image's end, as they are (from `take`: views into the memory, valid
    until the guest runs again)."""


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


def _runs(address: int, size: int, base_size: int) -> list[tuple[int, int]]:
    """Runs of written pages, split where the image ends."""
    flags = _written(address, size)
    found = [(0, size // PAGE)] if flags is None else \
        [(m.start(), m.end() - m.start()) for m in _RUNS.finditer(flags)]
    edge = base_size // PAGE
    runs = []
    for first, count in found:
        if first < edge < first + count:
            runs += [(first, edge - first), (edge, first + count - edge)]
        else:
            runs.append((first, count))
    return runs


def _xor(a: Sequence[int] | memoryview | bytes, b: memoryview | bytes, n: int) -> bytes:
    return (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).to_bytes(n, "little")


def _differing(memory: memoryview, base: memoryview, first: int, count: int
               ) -> list[tuple[int, int]]:
    """The runs of pages in [first, first + count) that differ from the image: a page that
    was written back as it was (a count up and down again) costs nothing to leave out."""
    out: list[tuple[int, int]] = []
    for page in range(first, first + count):
        at = page * PAGE
        if memory[at:at + PAGE].tobytes() != base[at:at + PAGE].tobytes():
            if out and out[-1][0] + out[-1][1] == page:
                out[-1] = (out[-1][0], out[-1][1] + 1)
            else:
                out.append((page, 1))
    return out


def take(address: int, size: int, base: memoryview) -> Delta:
    """The delta of the memory at `address` (between turns) against the image `base`."""
    memory = _view(address, size)  # not released: `new` holds views into it
    kept, xor, new = [], [], []
    for first, count in _runs(address, size, len(base)):
        start, end = first * PAGE, (first + count) * PAGE
        if end > len(base):
            kept.append((first, count))
            new.append(memory[start:end])
            continue
        for run in _differing(memory, base, first, count):
            kept.append(run)
            start, end = run[0] * PAGE, (run[0] + run[1]) * PAGE
            xor.append(_xor(memory[start:end], base[start:end], end - start))
    return Delta(size, b"".join(_RUN.pack(*r) for r in kept), xor, new)


def apply(delta: Delta, address: int, size: int, base: memoryview) -> None:
    """Write `delta` into the memory at `address`, which holds the image `base` and zeros
    past it and is `size` bytes long. ValueError when the delta does not fit."""
    if len(delta.runs) % _RUN.size or delta.size > size or delta.size % PAGE:
        raise ValueError("the memory delta is damaged")
    memory = _view(address, size)
    try:
        at = {True: 0, False: 0}
        for first, count in _RUN.iter_unpack(delta.runs):
            start, end = first * PAGE, (first + count) * PAGE
            inside = end <= len(base)
            if end > delta.size or (not inside and start < len(base)):
                raise ValueError("the memory delta is damaged")
            source = delta.xor if inside else delta.new
            chunk = source[at[inside]:at[inside] + end - start]
            if len(chunk) != end - start:
                raise ValueError("the memory delta is cut short")
            at[inside] += end - start
            memory[start:end] = _xor(chunk, base[start:end], end - start) if inside else chunk
        if at[True] != len(delta.xor) or at[False] != len(delta.new):
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
