"""The epoch ticker (`runtime/_wasmtime/epoch_ticker.py`) keeps every guest's time limit: one
engine it cannot tick must not end the ticks of the others."""

from __future__ import annotations

import time

from tooliscode.runtime._wasmtime.epoch_ticker import EpochTicker


class _Engine:
    def __init__(self, broken: bool = False):
        self.broken, self.ticks = broken, 0

    def increment_epoch(self) -> None:
        if self.broken:
            raise ValueError("object has been closed")
        self.ticks += 1


def test_an_engine_that_cannot_be_ticked_is_dropped_and_the_others_go_on() -> None:
    broken, good = _Engine(broken=True), _Engine()
    ticker = EpochTicker(broken, period=0.001)  # type: ignore[arg-type]
    ticker.add(good)  # type: ignore[arg-type]
    try:
        ticker.watch("due", 0)  # due now: it ticks every period
        end = time.monotonic() + 5
        while good.ticks < 3 and time.monotonic() < end:
            time.sleep(0.005)
        assert good.ticks >= 3, "one engine that failed ended the ticks of the others"
        assert ticker._engines == [good]
        ticker.remove(good)  # once removed, never ticked again
        seen = good.ticks
        time.sleep(0.05)
        assert good.ticks == seen
    finally:
        ticker.close()
