"""`DaemonThreads`: a pool for tool calls whose threads never hold the process at exit."""

from __future__ import annotations

import threading

import pytest
from tooliscode.engine._daemon_threads import DaemonThreads


def test_calls_give_their_results_and_errors_on_daemon_threads():
    pool = DaemonThreads(2, "test-pool")

    def fail() -> None:
        raise ValueError("no")

    where = pool.submit(lambda: threading.current_thread()).result(30)
    assert where.daemon and where.name == "test-pool_1"
    assert pool.submit(divmod, 7, 2).result(30) == (3, 1)
    with pytest.raises(ValueError, match="no"):
        pool.submit(fail).result(30)


def _threads(name: str) -> int:
    return sum(t.name.startswith(name + "_") for t in threading.enumerate())


def test_at_most_max_workers_threads_and_idle_ones_are_reused():
    pool = DaemonThreads(2, "test-reuse")
    release = threading.Event()
    blocked = [pool.submit(release.wait, 30) for _ in range(3)]  # the third waits its turn
    assert _threads("test-reuse") == 2
    release.set()
    assert [f.result(30) for f in blocked] == [True, True, True]
    for _ in range(5):  # one at a time: the idle threads take them
        pool.submit(int).result(30)
    assert _threads("test-reuse") == 2


def test_a_call_cancelled_before_it_began_never_runs():
    pool = DaemonThreads(1, "test-pool")
    release, ran = threading.Event(), []
    busy = pool.submit(release.wait, 30)
    later = pool.submit(ran.append, 1)
    assert later.cancel()
    release.set()
    busy.result(30)
    pool.submit(int).result(30)  # after the cancelled one, on the same thread
    assert ran == []
