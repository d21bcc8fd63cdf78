"""A ticker that advances an engine's epoch when a watched guest has to check whether to stop.

Epoch interruption is how a runaway cell is stopped: at each tick, every running guest calls
its deadline callback, and the one whose check says so traps. The ticker ticks only when some
guest is due, at the earliest deadline among the watched guests or at once for one told to
stop, and then every `period` while a due guest goes on (one in a host call checks when it
is back in wasm). A cell that ends within its time is never interrupted: ticking every few
milliseconds throughout cost each running cell thread wake-ups and GIL hand-offs, about a
millisecond per cell on a busy loop. With nobody watched the thread sleeps, so idle sessions
cost no CPU.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Hashable

import wasmtime

__all__ = ["EpochTicker"]

log = logging.getLogger("tooliscode")


class EpochTicker:
    """Advances the epoch of `engine` (and of any `add`ed later: a runtime's compiles each
    have an engine of their own) when a watched guest is due (see the module's docstring)."""

    def __init__(self, engine: wasmtime.Engine, period: float = 0.005):
        self._engines = [engine]
        self.period = period
        self._due: dict[Hashable, float] = {}
        self._until = math.inf
        """When the thread is to wake next (it is woken only for an earlier time)."""
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, engine: wasmtime.Engine) -> None:
        """Tick `engine` too (from now on)."""
        with self._cond:
            self._engines = [*self._engines, engine]

    def remove(self, engine: wasmtime.Engine) -> None:
        """Tick `engine` no more: once this returns it is never ticked again (it may be
        freed)."""
        with self._cond:
            self._engines = [e for e in self._engines if e is not engine]

    @property
    def armed(self) -> int:
        """How many guests (and stop requests) it watches now."""
        return len(self._due)

    def watch(self, key: Hashable, deadline: float | None) -> None:
        """Watch `key`'s guest until `unwatch`: it is due at `deadline` (`time.monotonic()`;
        None: never, unless told to stop; 0: now)."""
        due = math.inf if deadline is None else deadline
        with self._cond:
            self._due[key] = due
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="tooliscode-epoch",
                                                daemon=True)
                self._thread.start()
            if due < self._until:  # else it wakes in time anyway: no thread wake-up per cell
                self._cond.notify()

    def unwatch(self, key: Hashable) -> None:
        with self._cond:
            self._due.pop(key, None)

    def close(self) -> None:
        """Stop ticking for good (before the engine is freed), even if a guest that was told
        to stop never ran again to let go of its watch."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    self._until = min(self._due.values(), default=math.inf)
                    left = self._until - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(None if self._until == math.inf else left)
                self._until = -math.inf  # ticking: nothing to wake it for
                if self._closed:
                    return
                for engine in self._engines:  # under the lock: none is freed meanwhile
                    try:
                        engine.increment_epoch()
                    except Exception:  # noqa: BLE001 - one engine freed by mistake must not
                        # end the ticks, and with them every other guest's time limit
                        log.exception("tooliscode: an engine could not be ticked; dropped")
                        self._engines = [e for e in self._engines if e is not engine]
            time.sleep(self.period)  # a due guest that goes on is asked again a period later
