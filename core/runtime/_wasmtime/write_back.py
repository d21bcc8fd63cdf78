"""Renewing a guest for another run by writing its memory back, instead of starting a new one.

A guest that has just been given its tools is worth keeping: its memory at that moment (the
baseline) is what any new guest with those tools would have. After a run, writing the
baseline back makes the guest that new guest again, with no new instance, thread or folder,
and with its pages already in place (a new guest pays a copy-on-write fault for each page
its first cell writes).

Only the pages the guest wrote can differ from the baseline, and the kernel's page map names
them (`page_map.py`): each is set back to its baseline copy, or to the image's page. The rest
of what a run could leave behind is checked by each runtime's instance: the files it opened,
the folder's contents, a memory grown past the baseline.

Two forms of the baseline: the pages written by then, in one blob (`capture`, `restore`: the
data runtime), or a `Mirror`, a mapping of the whole memory as it was, which the written
pages are copied back from one run at a time (the default runtime's scattered pages).
"""

from __future__ import annotations

import ctypes
import mmap
import sys
import threading
import weakref
from dataclasses import dataclass

from . import memory_ops, userfault
from . import page_map as pagemap
from .page_map import PAGE

__all__ = ["Baseline", "ImageFile", "Mirror", "capture", "restore"]

_MAP_FIXED = 0x10  # Linux
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
# PyDLL: a page's copy takes a microsecond; one that gave the interpreter lock up would wait
# to take it back, each time, from a caller's thread that is busy (the next run's).
_copy = memory_ops.copy if _libc is not None else None
_release = ctypes.PyDLL(None).madvise if _libc is not None else None
_MADV_DONTNEED = 4
if _libc is not None and _release is not None:
    _libc.mmap.restype = ctypes.c_void_p
    _libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                           ctypes.c_int, ctypes.c_long]
    _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    _release.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


_scans = threading.local()
"""Each thread's buffer for a page-table scan's regions (`restore`)."""


@dataclass(frozen=True)
class Baseline:
    """A guest's memory right after setup, as the pages it had written by then."""

    size: int
    saved: bytes
    """One byte per page: 1 for a page kept in `blob`; every other page is the image's (or
    zeros past it)."""
    blob: bytes
    """The kept pages, in order."""
    kept_fds: frozenset[int]
    """Descriptors open at that moment, which its memory may refer to."""


def capture(address: int, size: int, kept_fds: frozenset[int]) -> Baseline | None:
    """The baseline of the memory at `address` (between turns); None without a page map."""
    written = pagemap.written(address, size)
    if written is None:
        return None
    blob = b"".join(ctypes.string_at(address + first * PAGE, (end - first) * PAGE)
                    for first, end in pagemap.runs(written))
    return Baseline(size, written, blob, kept_fds)


def restore(address: int, size: int, baseline: Baseline, image: memoryview,
            scan: bool = True) -> bool:
    """Write `baseline` back over the memory at `address` (between turns): False, having
    changed nothing, when that cannot make it the baseline (it grew, or no page map).

    The pages written are found with one walk of the page tables (`scan`), or by reading
    the page map where the memory has been write-protected (a commit's tracking): the walk
    would find its markers and read the page map after all (`private_regions`)."""
    if size != baseline.size:
        return False
    if scan:
        out = getattr(_scans, "out", None)
        if out is None:
            out = _scans.out = pagemap.Regions()
        written = pagemap.private_regions(address, size, out)
    else:
        written = pagemap.written_regions(address, size)
    if written is None:
        return False
    memory = memoryview((ctypes.c_char * size).from_address(address)).cast("B")
    saved, blob, inside = baseline.saved, baseline.blob, len(image) // PAGE
    rank = counted = 0  # saved pages before page `counted`: where its copy lies in blob
    try:
        # A page written now is set back to its baseline copy or to the image's page; runs of
        # either go in one copy each (the pages of a run of saved pages lie in order in blob).
        for start, stop in written:
            at, end = start // PAGE, stop // PAGE
            while at < end:
                kind = saved[at]
                cut = saved.find(1 - kind, at, end)
                cut = end if cut < 0 else cut
                if kind:
                    rank += saved.count(1, counted, at)
                    counted = at
                    memory[at * PAGE:cut * PAGE] = blob[rank * PAGE:(rank + cut - at) * PAGE]
                else:
                    edge = max(at, min(cut, inside))
                    memory[at * PAGE:edge * PAGE] = image[at * PAGE:edge * PAGE]
                    memory_ops.zero(address + edge * PAGE, (cut - edge) * PAGE)
                at = cut
    finally:
        memory.release()
    return True


@dataclass(frozen=True)
class ImageFile:
    """A start image as a file's pages: `length` bytes at `offset` of descriptor `fd`, which
    a memory maps from its byte `start` on (zeros around them)."""

    fd: int
    offset: int
    length: int
    start: int


class Mirror:
    """A baseline kept as a mapping of the whole memory as it was: the image's pages mapped
    from its file (shared with the page cache), every page written by then copied in. A
    write-back is then one copy per run of pages written since, wherever the run falls.
    Past the image and the pages written by then, all is zeros: pages written there are let
    go instead (anonymous memory reads as zeros again), so a run's garbage is not kept
    resident."""

    def __init__(self, address: int, size: int, past_image: int, saved: bytes):
        self.address, self.size = address, size
        self._past_image, self._saved = past_image, saved
        self._unmap = weakref.finalize(self, _unmap, address, size)
        # Not at exit: the finalizers run then, before our exit hook has stopped the guests,
        # and a guest's thread copying into its mirror (a baseline) would fault on it. The
        # process's end unmaps it anyway.
        self._unmap.atexit = False
        self._out = pagemap.Regions()

    @classmethod
    def capture(cls, address: int, size: int, image: ImageFile) -> Mirror | None:
        """The memory at `address` (between turns), mapped from `image`; None where it
        cannot be (no page map, not Linux)."""
        written = pagemap.written(address, size)
        if _libc is None or written is None:
            return None
        private = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        rw = mmap.PROT_READ | mmap.PROT_WRITE
        mirror = _libc.mmap(None, size, rw, private, -1, 0)
        if mirror in (None, ctypes.c_void_p(-1).value):
            return None
        made = cls(mirror, size, image.start + image.length, written)
        if image.length:
            at = mirror + image.start
            if _libc.mmap(at, image.length, rw, mmap.MAP_PRIVATE | _MAP_FIXED,
                          image.fd, image.offset) != at:
                made.close()
                return None
            userfault.register_only(at, image.length)  # a restore reads only what it copies
        for first, end in pagemap.runs(written):
            ctypes.memmove(mirror + first * PAGE, address + first * PAGE, (end - first) * PAGE)
        return made

    def restore(self, address: int, size: int) -> bool:
        """Copy back each page written since (between turns): False, having changed nothing,
        when that cannot make it the baseline (it grew, or no page map)."""
        if size != self.size or not self._unmap.alive:
            return False
        written = pagemap.private_regions(address, size, self._out)
        if written is None:
            return False
        move, source, past = _copy, self.address, self._past_image
        assert move is not None
        for start, end in written:
            if end <= past:
                move(address + start, source + start, end - start)
                continue
            if start < past:
                move(address + start, source + start, past - start)
                start = past
            self._past(address, start // PAGE, end // PAGE)
        return True

    def _past(self, address: int, first: int, end: int) -> None:
        """Pages [first, end) past the image: the ones written by the baseline copied back,
        the others (zeros then) let go."""
        assert _copy is not None and _release is not None
        saved, source = self._saved, self.address
        while first < end:
            kind = saved[first]
            cut = saved.find(1 - kind, first, end)
            cut = end if cut < 0 else cut
            at, length = first * PAGE, (cut - first) * PAGE
            if kind:
                _copy(address + at, source + at, length)
            elif _release(address + at, length, _MADV_DONTNEED) != 0:
                memory_ops.zero(address + at, length)
            first = cut

    def close(self) -> None:
        self._unmap()


def _unmap(address: int, size: int) -> None:
    assert _libc is not None
    _libc.munmap(address, size)
