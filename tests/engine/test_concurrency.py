"""Many sessions, threads, and releasing everything on close."""

from __future__ import annotations

import gc
import threading
import time

from tooliscode import Session


def _stamp() -> float:
    """Host time now."""
    return time.monotonic()


def test_two_sessions_run_in_parallel_threads():
    spin = "t0 = stamp()\nn = 0\nfor i in range(1_000_000):\n    n += i\nt1 = stamp()\n(t0, t1)"
    results = {}
    with Session([_stamp]) as a, Session([_stamp]) as b:
        for s in (a, b):
            s.run("stamp = _stamp")

        def go(name, s):
            results[name] = s.run(spin)

        threads = [threading.Thread(target=go, args=(n, s)) for n, s in (("a", a), ("b", b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    spans = [eval(results[k].value) for k in ("a", "b")]
    overlap = min(spans[0][1], spans[1][1]) - max(spans[0][0], spans[1][0])
    shortest = min(e - s for s, e in spans)
    assert overlap > 0.5 * shortest, (spans, "the two cells did not run at the same time")


def test_twenty_sessions_alive_at_once():
    sessions = [Session([]) for _ in range(20)]
    try:
        for i, s in enumerate(sessions):
            assert s.run(f"mine = {i}").ok
        for i, s in enumerate(sessions):
            assert s.run("mine * 2").value == str(i * 2)
        folders = {s.workdir for s in sessions}
        assert len(folders) == 20
    finally:
        for s in sessions:
            s.close()


def test_sessions_do_not_share_state_or_files():
    with Session([]) as a, Session([]) as b:
        a.run("secret = 'a'\nopen('a.txt', 'w').write('a')")
        assert not b.run("secret").ok
        assert not b.run("open('a.txt').read()").ok


def _guest_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "tooliscode-guest")


def test_close_releases_threads():
    gc.collect()
    before = _guest_threads()
    sessions = [Session([]) for _ in range(5)]
    for s in sessions:
        s.run("x = 1")
    for s in sessions:
        s.close()
    deadline = time.monotonic() + 5
    while _guest_threads() > before + 2 and time.monotonic() < deadline:  # +2: the warm pool
        time.sleep(0.05)
    assert _guest_threads() <= before + 2


def test_dropping_a_session_without_close_releases_it():
    s = Session([])
    folder = s.workdir
    s.run("x = 1")
    del s
    gc.collect()
    deadline = time.monotonic() + 10
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not folder.exists()
