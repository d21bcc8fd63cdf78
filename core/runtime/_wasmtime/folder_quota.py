"""A size and entry-count quota for the session folder.

WASI gives the guest a real host folder, so nothing but us stops it from filling the disk.
Writes and creations are checked against an estimate (usage at the last scan plus what was
written since); only when the estimate crosses the limit is the folder scanned again, so a
guest far from its quota pays nothing but an addition per write.
"""

from __future__ import annotations

import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..._folders import walk

__all__ = ["DiskQuota", "folder_usage"]

_RESCAN_EVERY_S = 0.05


def folder_usage(root: Path) -> tuple[int, int]:
    """(bytes in regular files, number of entries) under `root`, without following links."""
    total = entries = 0
    for _path, entry in walk(root):
        entries += 1
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            total += st.st_size
    return total, entries


@dataclass
class DiskQuota:
    root: Path
    max_bytes: int | None
    max_entries: int | None
    hit: bool = False
    """Set when something was refused; the session turns it into a notice."""
    _bytes: int = 0
    _entries: int = 0
    _scanned_at: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.rescan()

    def rescan(self) -> None:
        self._bytes, self._entries = folder_usage(self.root)
        self._scanned_at = time.monotonic()

    def emptied(self) -> None:
        """The folder was just emptied: nothing is used, no scan needed."""
        with self._lock:
            self._bytes = self._entries = 0
            self._scanned_at = time.monotonic()

    def stale(self) -> None:
        """Files may have been deleted since the last scan: allow a rescan right away."""
        self._scanned_at = 0.0

    def _fits(self) -> bool:
        return ((self.max_bytes is None or self._bytes <= self.max_bytes)
                and (self.max_entries is None or self._entries <= self.max_entries))

    def allow(self, nbytes: int = 0, entries: int = 0) -> bool:
        """Account for a write of `nbytes` or the creation of `entries`; False refuses it."""
        with self._lock:
            self._bytes += max(0, nbytes)
            self._entries += entries
            if self._fits():
                return True
            if time.monotonic() - self._scanned_at >= _RESCAN_EVERY_S:
                self.rescan()
                self._bytes += max(0, nbytes)
                self._entries += entries
                if self._fits():
                    return True
            self._bytes -= max(0, nbytes)
            self._entries -= entries
            self.hit = True
            return False
