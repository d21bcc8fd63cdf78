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

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._armed == 0:
                    self._cond.wait()
            time.sleep(self.period)
            self._engine.increment_epoch()
