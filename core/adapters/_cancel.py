"""A framework's own stop signals, made into a `Cancel` for the code tool's call.

Most frameworks stop a tool by cancelling the task that awaits it, which reaches the cell by
itself. Some signal in other ways: a time limit they set on tools but do not enforce on ours
(`cancel_after`), or a flag a running tool is meant to look at, such as LangGraph's request
to drain a run (`cancel_when`). A flag has no callback, so one shared thread looks at the
flags of the cells running now, every `POLL_S`, and ends when none is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

from ..engine import Cancel

__all__ = ["POLL_S", "cancel_after", "cancel_when"]

log = logging.getLogger("tooliscode")

POLL_S = 0.02
"""How often a flag is looked at while a cell runs: a stop reaches the cell this much later,
at most (a cancel then takes a few ms more)."""


@contextlib.contextmanager
def cancel_after(seconds: float | None, why: str) -> Iterator[Cancel | None]:
    """A `Cancel` that fires `seconds` from now on the running event loop (None for no time
    limit), until the block ends."""
    if seconds is None:
        yield None
        return
    cancel = Cancel()
    timer = asyncio.get_running_loop().call_later(seconds, cancel, why)
    try:
        yield cancel
    finally:
        timer.cancel()


@contextlib.contextmanager
def cancel_when(check: Callable[[], str | None]) -> Iterator[Cancel]:
    """A `Cancel` that fires once `check()` gives a reason, looked at every `POLL_S` until the
    block ends. `check` runs on another thread, and must be quick."""
    cancel = Cancel()
    _watched.add(cancel, check)
    try:
        yield cancel
    finally:
        _watched.discard(cancel)


class _Watched:
    """The flags being watched, and the one thread that looks at them while there are any."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checks: dict[Cancel, Callable[[], str | None]] = {}
        self._thread: threading.Thread | None = None

    def add(self, cancel: Cancel, check: Callable[[], str | None]) -> None:
        with self._lock:
            self._checks[cancel] = check
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, daemon=True,
                                                name="tooliscode-stop-signals")
                self._thread.start()

    def discard(self, cancel: Cancel) -> None:
        with self._lock:
            self._checks.pop(cancel, None)

    def _watch(self) -> None:
        while True:
            time.sleep(POLL_S)
            with self._lock:
                if not self._checks:
                    self._thread = None
                    return
                watched = list(self._checks.items())
            for cancel, check in watched:
                try:
                    why = check()
                except Exception:  # noqa: BLE001 - a broken flag stops nothing, and no other
                    log.exception("tooliscode: looking at a stop signal failed")
                    why = None
                if why is not None:
                    self.discard(cancel)
                    cancel(why)


_watched = _Watched()
