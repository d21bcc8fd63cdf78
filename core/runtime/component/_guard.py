"""The host's answers to the interposer (`_interpose.py`), for one guest.

The wrappers only pass on what libc did: which output streams are the console's, which
pollables are timers and when they ring. The guard keeps that by handle and decides: folder
writes against the quota (any stream not the console's counts as a file: fail closed), the
console's bytes to the output sink while the cell still wants them, and sleeps here, where
a stop ends them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ._host import Stop
from ._interpose import QUOTA, TOO_MANY, Op

if TYPE_CHECKING:
    from ._runtime import ComponentInstance

__all__ = ["Guard", "CONSOLE_BYTES"]

CONSOLE_BYTES = 256 * 1024
"""Console bytes passed on per cell (the worker keeps less): past that they are dropped in
the guest, without crossing."""
_CREATE, _TRUNCATE = 1, 8
"""open-flags bits."""
_REFUSE, _GO_ON = -QUOTA, 0


class Guard:
    """What the interposer asks, answered for `instance` (on its thread)."""

    __slots__ = ("_inst", "_console", "_timers", "_polled", "console_left", "made", "dropped_old")

    def __init__(self, instance: ComponentInstance):
        self._inst = instance
        self._console: dict[int, int] = {}
        self._timers: dict[int, float] = {}
        self._polled: list[int] = []
        self.console_left = CONSOLE_BYTES
        self.made: set[int] | None = None
        """Once `track` is called: the handles made since, and not dropped yet."""
        self.dropped_old = False
        """A handle older than `track` was dropped: the memory of that moment names it."""

    def track(self) -> None:
        """From now on, note which handles are made and dropped (see `_in_place.py`: a
        memory written back to this moment must find the handles it names alive, and none
        made since)."""
        self.made, self.dropped_old = set(), False
        self._timers.clear()
        self._polled.clear()

    def _made(self, handle: int) -> None:
        if self.made is not None:
            self.made.add(handle)

    def _dropped(self, handle: int, *, old_matters: bool = True) -> None:
        if self.made is not None:
            if handle in self.made:
                self.made.discard(handle)
            elif old_matters:
                self.dropped_old = True

    def __call__(self, op: int, handle: int, value: int) -> int:
        inst = self._inst
        if op == Op.WRITE:
            fd = self._console.get(handle)
            if fd is not None:
                if self.console_left <= 0:
                    return _GO_ON  # to WASI's own console, which drops it
                self.console_left -= value
                return fd
            return self._allow(nbytes=value)
        if op == Op.TIMER:
            self._timers[handle] = time.monotonic() + max(value, 0) / 1e9
            self._made(handle)
        elif op == Op.BLOCK:
            self._sleep_until(self._timers.get(handle))
        elif op == Op.POLL_ITEM:
            if value == 0:
                self._polled.clear()
            self._polled.append(handle)
        elif op == Op.POLL_WAIT:
            # Any pollable but a timer (a file's stream) is ready at once; only timers wait.
            due = [self._timers.get(h) for h in self._polled]
            self._polled.clear()
            if due and None not in due:
                self._sleep_until(min(d for d in due if d is not None))
        elif op == Op.DROP_POLLABLE:
            self._timers.pop(handle, None)
            # A stream's own pollables are made unseen; none outlives the call that made it.
            self._dropped(handle, old_matters=False)
        elif op in (Op.FILE_STREAM, Op.DROP_STREAM):
            self._console.pop(handle, None)  # a handle may be taken again for another stream
            if op == Op.FILE_STREAM:
                self._made(handle)
            else:
                self._dropped(handle)
        elif op == Op.CONSOLE:
            self._console[handle] = value
            self._made(handle)
        elif op == Op.INPUT_STREAM:
            self._made(handle)
        elif op in (Op.DROP_INPUT, Op.DROP_DESCRIPTOR):
            if op == Op.DROP_DESCRIPTOR:
                inst.opened.discard(handle)
            self._dropped(handle)
        elif op in (Op.WRITE_AT, Op.SET_SIZE):
            return self._allow(nbytes=value)
        elif op == Op.OPEN:
            if not inst.may_open():
                return -TOO_MANY
            if handle & (_CREATE | _TRUNCATE):
                inst.note_change()
            if handle & _CREATE:
                return _GO_ON if inst._quota.allow(entries=1) else _REFUSE
        elif op == Op.OPENED:
            inst.opened.add(handle)
            self._made(handle)
        elif op == Op.ENTRY:
            return self._allow(entries=1)
        elif op == Op.CHANGE:
            inst.note_change()
        else:
            return _REFUSE
        return _GO_ON

    def _allow(self, nbytes: int = 0, entries: int = 0) -> int:
        self._inst.note_change()
        return _GO_ON if self._inst._quota.allow(nbytes=nbytes, entries=entries) else _REFUSE

    def _sleep_until(self, until: float | None) -> None:
        if until is None:
            return  # not a timer: ready at once
        reason = self._inst.wait_until(until)
        if reason is not None:
            raise Stop(reason)
