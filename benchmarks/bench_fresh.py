"""Fresh-interpreter costs on the default runtime: `close()`, the first `await` of a new
session, and new sessions back to back while the pool refills.

Run: python benchmarks/bench_fresh.py
"""

from __future__ import annotations

import statistics
import time

from _util import Row, table
from tooliscode import Session


def ping() -> int:
    """A trivial tool."""
    return 1


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def rows(spaced: int = 12, back_to_back: int = 20) -> list[Row]:
    closes, firsts, laters = [], [], []
    for _ in range(spaced):  # sessions about a second apart, as a server sees them
        time.sleep(1.0)
        s = Session([ping])
        s.run("x = ping()")
        start = time.perf_counter()
        s.run("async def f():\n    return await ping()\nawait f()")
        firsts.append(time.perf_counter() - start)
        start = time.perf_counter()
        s.run("await f()")
        laters.append(time.perf_counter() - start)
        start = time.perf_counter()
        s.close()
        closes.append(time.perf_counter() - start)
    time.sleep(1.0)
    starts = []
    for _ in range(back_to_back):  # faster than the pool can refill
        start = time.perf_counter()
        s = Session([ping])
        s.run("x = ping()")
        starts.append(time.perf_counter() - start)
        s.close()
    close_med = statistics.median(closes)
    extra = statistics.median(firsts) - statistics.median(laters)
    return [
        Row("`Session.close()` (median / p90)", f"{_ms(close_med)} / {_ms(_p(closes, 0.9))}",
            "<= 1 ms", "ok" if close_med <= 1e-3 else "over"),
        Row("first `await` in a new session, more than a later one",
            f"{_ms(extra)} ({_ms(statistics.median(firsts))} vs "
            f"{_ms(statistics.median(laters))})", "<= 30 ms", "ok" if extra <= 0.03 else "over"),
        Row("new session + first cell, back to back, pool drained (median / p90)",
            f"{_ms(statistics.median(starts))} / {_ms(_p(starts, 0.9))}", "reported", "info"),
    ]


if __name__ == "__main__":
    print(table(rows()))
