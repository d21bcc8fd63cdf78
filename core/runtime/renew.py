"""Renewing a data-runtime guest for another run instead of closing it and starting a new one.

A guest mapped from the start image that has just been given its tools is worth keeping: its
memory at that moment (the baseline) is what any new guest with those tools would have. After
a run, writing the baseline back makes the guest that new guest again, with no new instance,
thread or folder, and with its pages already in place (a new guest pays a copy-on-write fault
for each page its first cell writes).

Only the pages the guest wrote can differ from the baseline, and the kernel's page map names
them (`pagemap.py`): each is set back to its baseline copy, or to the image's page. The rest
of what a run could leave behind is checked by the instance (`DataInstance.renew`): the files
it opened, the folder's contents, a memory grown past the baseline.
"""

from __future__ import annotations

import ctypes
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import pagemap
from .pagemap import PAGE

__all__ = ["Baseline", "capture", "empty_folder", "restore"]

_ZERO = bytes(PAGE)
_char = ctypes.c_char


@dataclass(frozen=True)
class Baseline:
    """A guest's memory right after setup, as the pages it had written by then."""

    size: int
    pages: dict[int, bytes]
    """Page number -> its bytes; every other page is the image's (or zeros past it)."""
    kept_fds: frozenset[int]
    """Descriptors open at that moment, which its memory may refer to."""


def capture(address: int, size: int, kept_fds: frozenset[int]) -> Baseline | None:
    """The baseline of the memory at `address` (between turns); None without a page map."""
    written = pagemap.written(address, size)
    if written is None:
        return None
    memory = (_char * size).from_address(address)
    pages = {}
    at = 0
    while (first := written.find(1, at)) >= 0:
        end = written.find(0, first)
        end = len(written) if end < 0 else end
        for page in range(first, end):
            pages[page] = memory[page * PAGE:(page + 1) * PAGE]
        at = end
    return Baseline(size, pages, kept_fds)


def restore(address: int, size: int, baseline: Baseline, image: memoryview) -> bool:
    """Write `baseline` back over the memory at `address` (between turns): False, having
    changed nothing, when that cannot make it the baseline (it grew, or no page map)."""
    if size != baseline.size:
        return False
    written = pagemap.written(address, size)
    if written is None:
        return False
    memory = memoryview((_char * size).from_address(address)).cast("B")
    saved, inside = baseline.pages, len(image) // PAGE
    try:
        at = 0
        while (first := written.find(1, at)) >= 0:
            end = written.find(0, first)
            end = len(written) if end < 0 else end
            for page in range(first, end):
                start = page * PAGE
                source = saved.get(page)
                if source is None:
                    source = image[start:start + PAGE] if page < inside else _ZERO
                memory[start:start + PAGE] = source
            at = end
    finally:
        memory.release()
    return True


def empty_folder(folder: Path) -> bool:
    """Remove everything inside `folder` (never following links); False if something stays."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:
        return False

