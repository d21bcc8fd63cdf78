"""Which pages of a mapping this process has written: the kernel's page map.

A guest's linear memory starts as a copy-on-write mapping of a start image, so a page it
never wrote is still the file's page, and one it wrote is private to us. /proc/self/pagemap
tells the two apart in one read of 8 bytes per 4 KiB page; its PAGEMAP_SCAN ioctl (Linux 6.7
and later) lists the runs of such pages in one walk of the page tables, however large the
memory. Linux only; elsewhere `written` answers None and callers compare contents instead.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

__all__ = ["PAGE", "PAGE_IS_FILE", "PAGE_IS_PRESENT", "PAGE_IS_WRITTEN", "Regions", "ioctl", "private_regions", "runs", "scan",
           "scan_fd", "written", "written_regions"]

PAGE = 4096
_PAGEMAP = "/proc/self/pagemap"
_WRITTEN = bytes(1 if (b & 0x20) == 0 and (b & 0xC0) else 0 for b in range(256))
"""Top byte of a page-map entry -> 1 when the page is private to us (present and not a file
page, or swapped out): written since the image was mapped, or new."""
_SWAPPED = bytes(1 if (b & 0xC0) == 0x40 else 0 for b in range(256))
_MARKER_TYPE = bytes(1 if (b & 0x1F) == 0x1F else 0 for b in range(256))
"""Low byte -> 1 for swap type 31: not a swapped-out page but a marker the kernel leaves
where write tracking (`_written.py`) protects a page never touched. Such a page is not
written."""


def written(address: int, size: int) -> bytes | None:
    """One byte per 4 KiB page of [address, address + size): 1 when the page was written."""
    entries = _entries(address // PAGE * 8, size // PAGE * 8)
    if entries is None or len(entries) != size // PAGE * 8:
        return None
    flags = entries[7::8].translate(_WRITTEN)
    swapped = entries[7::8].translate(_SWAPPED)
    if swapped.count(1):  # flags are 0 or 1 per byte: mask out the markers as integers, in C
        markers = int.from_bytes(swapped, "little") & \
            int.from_bytes(entries[0::8].translate(_MARKER_TYPE), "little")
        flags = (int.from_bytes(flags, "little") & ~markers).to_bytes(len(flags), "little")
    return flags


def _entries(offset: int, length: int) -> bytes | None:
    """`length` bytes of the page map from `offset`: read with the interpreter lock kept
    (see `_libc`), from the descriptor opened once, where it can be."""
    fd = scan_fd()
    if fd is not None and _libc is not None:
        if length > _KEEP_LOCK_BYTES:  # a big memory's: long enough to let the others run
            try:
                return os.pread(fd, length, offset)
            except OSError:
                return None
        out = ctypes.create_string_buffer(length)
        got = _pread(fd, out, length, offset)
        return out.raw[:got] if got >= 0 else None
    try:
        with open(_PAGEMAP, "rb", buffering=0) as f:
            f.seek(offset)
            return f.read(length)
    except OSError:
        return None


def runs(flags: bytes) -> list[tuple[int, int]]:
    """[first, end) of each run of 1s in `flags` (one byte per page, 0 or 1). bytes.find
    jumps between runs at memchr's speed, a tenth of what a regular expression takes to walk
    the 20,000 pages of an idle guest."""
    out, at = [], 0
    while (first := flags.find(1, at)) >= 0:
        end = flags.find(0, first)
        end = len(flags) if end < 0 else end
        out.append((first, end))
        at = end
    return out


_PAGEMAP_SCAN = 0xC0606610
PAGE_IS_WRITTEN, PAGE_IS_FILE, PAGE_IS_PRESENT, _PAGE_IS_SWAPPED = 1 << 1, 1 << 2, 1 << 3, 1 << 4
"""PAGEMAP_SCAN's page categories (written: not write-protected by a userfaultfd)."""
MAX_REGIONS = 4096
Regions = ctypes.c_uint64 * (3 * MAX_REGIONS)
"""Where a scan puts the regions it finds: (start, end, categories) each."""

# PyDLL: an ioctl here returns at once, and one that gave the GIL up would wait to take it
# back from the caller's thread, which may be busy (a cell's result, the next run).
_libc = ctypes.PyDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_libc_released = ctypes.CDLL(None, use_errno=True) if _libc is not None else None
"""The same calls giving the GIL up, for a scan with another thread's work to overlap (see
`scan`)."""
if _libc is not None:
    _pread = _libc.pread
    _pread.restype = ctypes.c_ssize_t
    _pread.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64]
_KEEP_LOCK_BYTES = 1 << 20
"""The most page map read with the lock kept: the entries of 512 MiB of memory."""
_lock = threading.Lock()
_pagemap: int | None = None
_pagemap_pid = 0
"""The process `_pagemap` was opened in: a forked child's inherited one is its parent's."""
_scan_works: bool | None = None


def ioctl(fd: int, request: int, arg: ctypes.Array, lets_others_run: bool = False) -> int:
    lib = _libc_released if lets_others_run else _libc
    assert lib is not None
    return int(lib.ioctl(fd, ctypes.c_ulong(request), ctypes.c_void_p(ctypes.addressof(arg))))


def scan_fd() -> int | None:
    """/proc/self/pagemap, opened once per process (None where there is none)."""
    global _pagemap, _pagemap_pid
    with _lock:
        if _pagemap is None or _pagemap_pid != os.getpid():
            _pagemap_pid = os.getpid()
            try:
                _pagemap = os.open(_PAGEMAP, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                _pagemap = -1
        return _pagemap if _pagemap >= 0 else None


def scan(address: int, size: int, out: ctypes.Array, flags: int = 0, inverted: int = 0,
         mask: int = 0, anyof: int = 0, returned: int = 0,
         lets_others_run: bool = False,
         kinds: list[int] | None = None) -> list[tuple[int, int]] | None:
    """PAGEMAP_SCAN over [address, address + size): the [start, end) byte offsets of the
    regions of pages whose categories, with `inverted` flipped, have all of `mask` and one
    of `anyof` (`out`: a `Regions`). None where the kernel cannot. Each region's categories
    among `returned` go into `kinds`, when given (pages that differ in them are apart).

    A walk of a large memory's page tables takes some 70 us: `lets_others_run` gives the
    GIL up meanwhile, for a caller whose thread is the only one to wait for what follows
    (a commit: the cell's caller reads its result meanwhile)."""
    pagemap = scan_fd()
    if pagemap is None or _libc is None:
        return None
    regions: list[tuple[int, int]] = []
    start, end = address, address + size
    words = memoryview(out).cast("B").cast("Q")  # read in C, not element by element
    while start < end:
        arg = (ctypes.c_uint64 * 12)(96, flags, start, end, 0, ctypes.addressof(out),
                                     MAX_REGIONS, 0, inverted, mask, anyof, returned)
        found = ioctl(pagemap, _PAGEMAP_SCAN, arg, lets_others_run)
        if found < 0:
            return None
        regions += zip([x - address for x in words[0:3 * found:3].tolist()],
                       [x - address for x in words[1:3 * found:3].tolist()])
        if kinds is not None:
            kinds += words[2:3 * found:3].tolist()
        walked = arg[4]  # walk_end: where the scan stopped (the out array was full)
        if found < MAX_REGIONS or walked >= end:
            break
        start = walked
    return regions


def private_regions(address: int, size: int,
                    out: ctypes.Array) -> list[tuple[int, int]] | None:
    """`runs(written(address, size))` as [start, end) byte offsets, in one walk of the page
    tables where the kernel has PAGEMAP_SCAN (less than reading the page map takes): pages
    present (or swapped out) and not the file's. The scan cannot tell an entry
    that is not present (swapped out, under migration) from a write-tracking marker (a page
    never touched, in a memory a commit protects: `data/_written.py`): where it finds any,
    the page map is read after all."""
    global _scan_works
    if _scan_works is not False:
        kinds: list[int] = []
        found = scan(address, size, out, inverted=PAGE_IS_FILE, mask=PAGE_IS_FILE,
                     anyof=PAGE_IS_PRESENT | _PAGE_IS_SWAPPED, returned=_PAGE_IS_SWAPPED,
                     kinds=kinds)
        if found is not None:
            _scan_works = True
            if not any(kinds):
                return found
        elif _scan_works is None:
            _scan_works = False  # an older kernel: read the page map from now on
        else:
            return None
    return written_regions(address, size)


def written_regions(address: int, size: int) -> list[tuple[int, int]] | None:
    """`runs(written(address, size))` as [start, end) byte offsets, read from the page map."""
    flags = written(address, size)
    return None if flags is None else [(first * PAGE, end * PAGE) for first, end in runs(flags)]
