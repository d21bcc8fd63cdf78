"""Which written pages stay unprotected: the ones every cell writes.

Write tracking costs a fault on the first write to each protected page: about 2 us each on
a virtual machine, and an ordinary cell writes some 200 scattered pages (the reference
counts of the objects the interpreter's own loop touches), the same ones cell after cell.
Copying a page at a commit costs a fraction of that fault. So a page written in two commits
running is left unprotected ("hot"): the scan reports it as written every time, and every
commit copies it, which is always right, whether or not the cell wrote it. Every `RELEARN`
commits all pages are protected again, so a page no longer written stops being copied, and
at most `MOST` pages are hot, so a commit's copying stays small.

Runs are [first, end) page numbers, sorted.
"""

from __future__ import annotations

__all__ = ["Hot", "Run"]

Run = tuple[int, int]

MOST = 1024
"""Pages left unprotected at most (4 MiB copied on each commit)."""
RELEARN = 64
"""Every this many commits, all pages are protected again and the hot set learnt anew."""


class Hot:
    """The hot set of one tracked memory (one flag byte per page)."""

    def __init__(self) -> None:
        self.flags = bytearray()
        self.count = 0
        self._last: list[Run] = []
        """The pages written at the last commit that were not hot then."""
        self._commits = 0

    def relearn(self) -> bool:
        """Whether this commit protects every page again (then call `protected_all`)."""
        self._commits += 1
        return self._commits % RELEARN == 1

    def protected_all(self, written: list[Run]) -> None:
        """The scan protected every page: none is hot, and `written` were written last."""
        self.flags = bytearray(len(self.flags))
        self.count = 0
        self._last = written

    def settle(self, written: list[Run], pages: int) -> list[Run]:
        """`written`: what an unprotecting scan reported (the hot pages and those written
        since). Returns the runs to protect again; the rest are hot from now on."""
        if len(self.flags) < pages:
            self.flags.extend(bytes(pages - len(self.flags)))
        flags, cold = self.flags, []
        for first, end in written:
            if flags.find(0, first, end) >= 0:  # most runs are hot throughout
                cold += _cold(flags, first, end)
        again = _both(cold, self._last)
        hot: list[Run] = []
        for first, end in again:
            take = min(end - first, MOST - self.count)
            if take <= 0:
                break
            hot.append((first, first + take))
            self.flags[first:first + take] = b"\x01" * take
            self.count += take
        self._last = cold
        return _minus(cold, hot)


def _cold(flags: bytearray, first: int, end: int) -> list[Run]:
    """The parts of [first, end) that are not hot."""
    out, at = [], first
    while at < end:
        start = flags.find(0, at, end)
        if start < 0:
            break
        stop = flags.find(1, start, end)
        stop = end if stop < 0 else stop
        out.append((start, stop))
        at = stop
    return out


def _both(a: list[Run], b: list[Run]) -> list[Run]:
    """The pages in both."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        first, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if first < end:
            out.append((first, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _minus(a: list[Run], b: list[Run]) -> list[Run]:
    """The pages of `a` not in `b` (`b` within `a`)."""
    out, j = [], 0
    for first, end in a:
        at = first
        while j < len(b) and b[j][1] <= at:
            j += 1
        k = j
        while k < len(b) and b[k][0] < end:
            if b[k][0] > at:
                out.append((at, b[k][0]))
            at = max(at, b[k][1])
            k += 1
        if at < end:
            out.append((at, end))
    return out
