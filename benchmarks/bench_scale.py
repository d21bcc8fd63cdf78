"""Scale: 200 live sessions in one process (memory per session, cell latency p50 and p99 while
two threads drive them).

Run: python benchmarks/bench_scale.py
"""

from __future__ import annotations

import gc
import random
import statistics
import threading
import time

from _util import Row, machine, rss_bytes, table
from tooliscode import Limits, Session

SESSIONS = 200
CELLS_PER_THREAD = 1_000


def lookup(key: str) -> dict:
    """A small tool result."""
    return {"key": key, "value": len(key)}


def _drive(sessions: list[Session], seed: int, out: list[float]) -> None:
    rnd = random.Random(seed)
    for i in range(CELLS_PER_THREAD):
        s = rnd.choice(sessions)
        start = time.perf_counter()
        r = s.run(f"n = lookup(key='k{i}')['value']\nn")
        out.append(time.perf_counter() - start)
        assert r.ok, r.error


def rows() -> list[Row]:
    gc.collect()
    time.sleep(1)
    before = rss_bytes()
    start = time.perf_counter()
    sessions = [Session([lookup], limits=Limits(timeout_s=60)) for _ in range(SESSIONS)]
    for s in sessions:
        s.run("x = 1")
    created = time.perf_counter() - start
    time.sleep(2)  # let the pool settle
    per_session = (rss_bytes() - before) / SESSIONS
    latencies: list[float] = []
    threads = [threading.Thread(target=_drive, args=(sessions[k::2], k, latencies))
               for k in range(2)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    for s in sessions:
        s.close()
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[int(len(latencies) * 0.99)]
    return [
        Row(f"{SESSIONS} live sessions: start (each to its first cell)", f"{created:.1f} s",
            "-", "info"),
        Row(f"{SESSIONS} live sessions: RSS per session", f"{per_session / 2**20:.1f} MB",
            "<= 10 MB", "ok" if per_session <= 10 * 2**20 else "over"),
        Row(f"{SESSIONS} live sessions, 2 threads driving: cell with a tool call, p50 / p99",
            f"{p50 * 1e3:.2f} ms / {p99 * 1e3:.2f} ms "
            f"({len(latencies) / wall:.0f} cells/s)", "-", "info"),
    ]


def main() -> None:
    print(f"machine: {machine()}\n")
    print(table(rows()))


if __name__ == "__main__":
    main()
