"""Which pages of a guest's memory were written since we last asked: userfaultfd's asynchronous
write protection and the page map's PAGEMAP_SCAN (Linux 6.7 and later).

The memory is registered with a userfaultfd for write protection in its asynchronous mode:
a write to a protected page is let through by the kernel itself (no handler thread) and the
page is marked written. PAGEMAP_SCAN then lists the written pages of a range and protects
them again, in one call that walks the page tables: a cell's commit copies only the pages
that cell wrote, however large the memory. The pages every cell writes are left unprotected
and copied each time, which costs less than their faults (`_hot`). Soft-dirty bits would do
the same, but clearing them is process-wide, which several guests in one process cannot
share.

Where the kernel lacks either (`Tracker.start` returns None), commits compare whole pages.
"""

from __future__ import annotations

import os

from .._wasmtime import page_map as pagemap
from .._wasmtime import userfault
from .._wasmtime.page_map import PAGE
from ._hot import Hot

__all__ = ["Tracker", "Region"]

_PM_SCAN_WP_MATTERING, _PM_SCAN_CHECK_WPASYNC = 1, 2

Region = tuple[int, int]
"""[start, end) byte offsets into the memory."""


class Tracker:
    """Write tracking for one guest's memory at `address`."""

    def __init__(self, fd: int, address: int, size: int):
        self._fd, self.address, self.size = fd, address, size
        self._out = pagemap.Regions()
        self._hot = Hot()

    @classmethod
    def start(cls, address: int, size: int) -> Tracker | None:
        """Track writes to [address, address + size) from now on; None where the kernel
        cannot (every page then counts as written)."""
        fd = userfault.open_fd()
        if fd is None:
            return None
        tracker = cls(fd, address, size)
        if not tracker._register(address, size):
            os.close(fd)
            return None
        return tracker

    def _register(self, address: int, size: int) -> bool:
        return size <= 0 or (userfault.register(self._fd, address, size)
                             and userfault.protect(self._fd, address, size))

    def grown(self, size: int) -> bool:
        """The memory grew to `size`: track the new part too (pages written there before
        this call are not seen: the caller takes that part whole). False when it cannot."""
        ok = size <= self.size or self._register(self.address + self.size, size - self.size)
        self.size = max(self.size, size)
        return ok

    def written(self) -> list[Region] | None:
        """The regions written since the last call (or `start`), with the hot pages, which
        stay unprotected (`_hot`); the others are protected again. None when a scan failed
        (take every page then)."""
        relearn = self._hot.relearn()
        regions = self._scan(protect=relearn)
        if regions is None:
            return None
        runs = [(start // PAGE, end // PAGE) for start, end in regions]
        if relearn:
            self._hot.protected_all(runs)
            return regions
        for first, end in self._hot.settle(runs, self.size // PAGE):
            if not userfault.protect(self._fd, self.address + first * PAGE,
                                     (end - first) * PAGE):
                return None
        return regions

    def _scan(self, protect: bool) -> list[Region] | None:
        """The pages not protected now (written since they were), protected when `protect`.
        The walk gives the GIL up: it is the longest step of a commit, which runs as the
        cell's caller wakes to its result, and that caller's Python runs meanwhile (a tenth
        of a millisecond less per cell run back to back). Nothing else waits for the commit
        but the next command for this guest, which such a caller sends, then waits, freeing
        the GIL again."""
        flags = _PM_SCAN_CHECK_WPASYNC | (_PM_SCAN_WP_MATTERING if protect else 0)
        return pagemap.scan(self.address, self.size, self._out, flags,
                            mask=pagemap.PAGE_IS_WRITTEN, returned=pagemap.PAGE_IS_WRITTEN,
                            lets_others_run=True)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # unregisters the memory
            self._fd = -1
