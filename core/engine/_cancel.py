"""`Cancel`: stops the cells of one call from outside, from any thread.

A framework's time limit, a client that went away, a graph run asked to drain: each decides,
somewhere else, that the code it started must stop. `Session.cancel()` stops whatever cell is
running; a `Cancel` stops only the cells it was given to (`Session.run(cancel=...)`), even
when it fires before its cell has started (the cell then never runs, and the session is left
as it is) or while the session runs another caller's cell (which it leaves alone). Once fired
it stays fired.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["CANCELLED", "Cancel"]

CANCELLED = "the cell was cancelled"
"""What a cancel that gives no reason says."""

_Stopper = Callable[[str], object]
"""Stops one running cell, giving the reason (`_running.stop_cell`, bound to its command)."""


class Cancel:
    """Call it (`cancel(why)`) to stop the cell it was given to; `why` goes into the result."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._why: str | None = None
        self._stop: _Stopper | None = None

    @property
    def why(self) -> str | None:
        """Why it fired (the first reason given), or None while it has not."""
        return self._why

    def __call__(self, why: str = CANCELLED) -> None:
        with self._lock:
            if self._why is None:
                self._why = why
            why, stop = self._why, self._stop
        if stop is not None:
            stop(why)

    def _attach(self, stop: _Stopper) -> None:
        """A cell given this cancel is running now: `stop` stops it (at once if fired)."""
        with self._lock:  # either this sees `_why`, or `__call__` sees `_stop`
            self._stop = stop
            why = self._why
        if why is not None:
            stop(why)

    def _detach(self) -> None:
        """The cell ended (or paused): nothing of it is left to stop."""
        with self._lock:
            self._stop = None
