"""Renewing a guest for another run by writing its memory back, instead of starting a new one.

A guest that has just been given its tools is worth keeping: its memory at that moment (the
baseline) is what any new guest with those tools would have. After a run, writing the
baseline back makes the guest that new guest again, with no new instance, thread or folder,
and with its pages already in place (a new guest pays a copy-on-write fault for each page
its first cell writes).

Only the pages the guest wrote can differ from the baseline, and the kernel's page map names
them (`page_map.py`): each is set back to its baseline copy, or to the image's page (zeros
outside the image). The rest of what a run could leave behind is checked by each runtime's
instance: the files it opened, the folder's contents, a memory grown past the baseline.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from . import page_map as pagemap
from .page_map import PAGE

__all__ = ["Baseline", "Image", "capture", "restore"]


@dataclass(frozen=True)
class Image:
    """What a guest's memory held when it was mapped: `content` from byte `start` on, and
    zeros around it."""

    content: memoryview
    start: int = 0


@dataclass(frozen=True)
class Baseline:
    """A guest's memory right after setup, as the pages it had written by then."""

    size: int
    saved: bytes
    """One byte per page: 1 for a page kept in `blob`; every other page is the image's (or
    zeros outside it)."""
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


def restore(address: int, size: int, baseline: Baseline, image: Image) -> bool:
    """Write `baseline` back over the memory at `address` (between turns): False, having
    changed nothing, when that cannot make it the baseline (it grew, or no page map)."""
    if size != baseline.size:
        return False
    written = pagemap.written(address, size)
    if written is None:
        return False
    memory = memoryview((ctypes.c_char * size).from_address(address)).cast("B")
    saved, blob = baseline.saved, baseline.blob
    lo, hi = image.start // PAGE, (image.start + len(image.content)) // PAGE
    rank = counted = 0  # saved pages before page `counted`: where its copy lies in blob
    try:
        # A page written now is set back to its baseline copy or to the image's page; runs of
        # either go in one copy each (the pages of a run of saved pages lie in order in blob).
        for first, end in pagemap.runs(written):
            at = first
            while at < end:
                kind = saved[at]
                cut = saved.find(1 - kind, at, end)
                cut = end if cut < 0 else cut
                if kind:
                    rank += saved.count(1, counted, at)
                    counted = at
                    memory[at * PAGE:cut * PAGE] = blob[rank * PAGE:(rank + cut - at) * PAGE]
                else:
                    _from_image(address, memory, at, cut, lo, hi, image.content)
                at = cut
    finally:
        memory.release()
    return True


def _from_image(address: int, memory: memoryview, first: int, end: int, lo: int, hi: int,
                content: memoryview) -> None:
    """Pages [first, end) as the image had them: its pages [lo, hi), zeros elsewhere."""
    inside_from, inside_to = min(max(first, lo), end), max(min(end, hi), first)
    if inside_from > first:
        ctypes.memset(address + first * PAGE, 0, (inside_from - first) * PAGE)
    if inside_to > inside_from:
        memory[inside_from * PAGE:inside_to * PAGE] = \
            content[(inside_from - lo) * PAGE:(inside_to - lo) * PAGE]
    tail = max(inside_to, inside_from)
    if end > tail:
        ctypes.memset(address + tail * PAGE, 0, (end - tail) * PAGE)
