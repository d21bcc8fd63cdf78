"""Load and soak: many sessions, many cells, tool calls from a thread pool; nothing leaks."""

from __future__ import annotations

import gc
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tooliscode import Limits, Session

# Sized to find leaks, not to load the machine. A leak per session (a thread, a descriptor, a
# guest's memory of 32 MiB or more) shows 20 times over in the second round, past the slack
# allowed below (1 thread, 2 descriptors, 64 MB); a leak per cell or per tool call shows 2,000
# times over in the count of live Python objects, which is exact where RSS is noisy (it does
# not move at all from one round to the next when nothing leaks). 20 sessions on 8 threads
# still run many at once. More sessions or cells only make the same growth larger, and cost
# minutes on a two-core machine (starting a session is the expensive part).
SESSIONS = 20
CELLS = 100


def lookup(key: str, n: int) -> dict:
    """A small tool result."""
    return {"key": key, "n": n, "items": list(range(n % 7))}


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _threads() -> int:
    return threading.active_count()


def _drive(index: int, session: Session) -> None:
    me = f"s{index}"
    r = session.run(f"mine = {me!r}\nopen('owner.txt', 'w').write({me!r})\ntotal = 0")
    assert r.ok, r.error
    for cell in range(CELLS - 2):
        r = session.run(f"total += lookup(key=mine, n={cell})['n']\nassert mine == {me!r}")
        assert r.ok, r.error
    r = session.run("(mine, open('owner.txt').read(), total)")
    assert r.value == f"({me!r}, {me!r}, {sum(range(CELLS - 2))})", r.value


def _round() -> float:
    sessions = [Session([lookup], limits=Limits(timeout_s=30)) for _ in range(SESSIONS)]
    start = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(_drive, range(SESSIONS), sessions))
        # no leakage: nobody sees another session's variable or file
        for s in sessions[:10]:
            left = s.run("[k for k in globals() if k.startswith('s') and k[1:].isdigit()]")
            assert left.value == "[]"
        assert len({s.workdir for s in sessions}) == SESSIONS
        return time.perf_counter() - start
    finally:
        for s in sessions:
            s.close()


def _settle(threads_before: int) -> None:
    deadline = time.monotonic() + 20
    while _threads() > threads_before + 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    gc.collect()


def _objects() -> int:
    return len(gc.get_objects())


def test_twenty_sessions_a_hundred_cells_each_leave_nothing_behind():
    threads0, fds0 = _threads(), _fds()
    first = _round()  # also warms caches, the pool and the allocator
    _settle(threads0)
    rss1, threads1, fds1, objects1 = _rss_mb(), _threads(), _fds(), _objects()
    second = _round()
    _settle(threads0)
    rss2, threads2, fds2, objects2 = _rss_mb(), _threads(), _fds(), _objects()
    cells = SESSIONS * CELLS
    print(f"\nsoak: {SESSIONS} sessions x {CELLS} cells with tool calls, twice: "
          f"{first:.1f} s then {second:.1f} s ({cells / second:.0f} cells/s); "
          f"RSS {rss1:.0f} -> {rss2:.0f} MB; threads {threads0} -> {threads1} -> {threads2}; "
          f"fds {fds0} -> {fds1} -> {fds2}; objects {objects1} -> {objects2}")
    assert threads2 <= threads1 + 1 and threads2 <= threads0 + 6
    assert fds2 <= fds1 + 2
    assert rss2 <= rss1 * 1.15 + 64, "memory grew from one round to the next"
    assert objects2 - objects1 < SESSIONS * CELLS // 4, "Python objects piled up per cell"


def test_cells_leave_nothing_behind_in_the_interpreter():
    """Per cell, the interpreter keeps the cell's source (for its tracebacks) and no object
    the collector tracks. (On `data`, the reactor kept each turn's source in linecache: two
    such objects a cell, once rollback points end a turn per cell.)"""
    count = "import gc\ngc.collect()\nlen(gc.get_objects())"
    with Session([lookup]) as session:
        for cell in range(20):
            assert session.run(f"total = lookup(key='k', n={cell})['n']").ok
        before = int(session.run(count).value)
        for cell in range(300):
            r = session.run(f"total = lookup(key='k', n={cell})['n']")
            assert r.ok, r.error
        after = int(session.run(count).value)
    assert after - before < 60, f"{after - before} objects piled up in 300 cells"
