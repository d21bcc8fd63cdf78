"""A ticker that advances an engine's epoch while some guest needs watching.

Epoch interruption is how a runaway cell is stopped: each tick, guests whose deadline
callback says so trap. The thread sleeps on a condition when nobody is armed, so idle
sessions cost no CPU.
"""

from __future__ import annotations

import threading
import time

import wasmtime

__all__ = ["EpochTicker"]


class EpochTicker:
    """Advances `engine`'s epoch every `period` seconds while at least one guest is armed."""

    def __init__(self, engine: wasmtime.Engine, period: float = 0.005):
        self._engine = engine
        self.period = period
        self._armed = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def armed(self) -> int:
        """How many guests it watches now (it ticks only while some are)."""
        return self._armed

    def acquire(self) -> None:
        with self._cond:
            self._armed += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="tooliscode-epoch",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def release(self) -> None:
        with self._cond:
            self._armed = max(0, self._armed - 1)

    def close(self) -> None:
        """Stop ticking for good (before the engine is freed), even if a guest that was told
        to stop never ran again to release its hold."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._armed == 0 and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
            time.sleep(self.period)
            with self._cond:
                if self._closed:
                    return
                self._engine.increment_epoch()
