"""A new session's guest starts warm: a pooled guest (the default runtime) has rehearsed a
short session of our own and forgotten it, as the data runtime's start image has."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator

import pytest
from tooliscode import Session, SessionClosed
from tooliscode.engine import _pool
from tooliscode.engine._live import pool_for
from tooliscode.engine._pool import WarmPool
from tooliscode.engine._worker import Worker
from tooliscode.runtime import resolve_runtime

_LOOK = ("import sys\nimport tooliscode_guest.plain as plain\n"
         "print([m for m in ('validate', 'plain', 'tracebacks')"
         " if 'tooliscode_guest.' + m not in sys.modules], len(plain._made) > 0,"
         " 'order' in globals(), 'get_order' in globals())")
_WARM = "[] True False False\n"
"""Nothing a first tool call or error needs is left to import, a binder is compiled, and
the rehearsal's variables and tools are gone."""


@contextlib.contextmanager
def _pooled(runtime) -> Iterator[Worker]:
    """A guest of a pool of one, once warmed up; stopped after."""
    pool = WarmPool(runtime, size=1)
    worker = None
    try:
        pool.refill()
        deadline = time.monotonic() + 120
        while not pool._ready and time.monotonic() < deadline:
            time.sleep(0.02)
        worker = pool.acquire()
        yield worker
    finally:
        pool.close()
        if worker is not None:
            worker.shutdown(lambda: shutil.rmtree(worker.workdir, ignore_errors=True),
                            quick=True)


def test_a_new_guest_rehearsed_a_session_and_forgot_it():
    """What a session's first tool call and first error need is imported and compiled before
    the session takes the guest (a first call cost some 3 ms more without it)."""
    runtime = resolve_runtime(None)
    if not runtime.pool_size:  # guests start from a start image, warmed when it was made
        with Session([], runtime=runtime) as session:
            assert session.run(_LOOK).stdout == _WARM
        return
    with _pooled(runtime) as worker:
        result = worker.call({"op": "cell", "code": _LOOK})
        assert result["ok"] and result["stdout"]["text"] == _WARM, result


def test_a_pooled_guest_renewed_for_another_run_does_not_rehearse_again():
    """Its warm-up only warmed pages and caches: a renewal (which takes the guest's turns up
    to its setup again, on the default runtime) that took the warm-up too would pay some
    4 ms of CPU before every run."""
    runtime = resolve_runtime(None)
    if not runtime.pool_size:
        return  # no pooled guests: their runtime renews from a memory image instead
    with _pooled(runtime) as worker:
        turns = worker.between_turns(lambda instance: list(instance.script or ()))
        assert [answers for _source, answers in turns] == [[]], turns  # the boot alone
        assert worker.call({"op": "cell", "code": "print(6 * 7)"})["stdout"]["text"] == "42\n"


def _lent(runtime) -> Session:
    """A session whose guest comes from the process's pool, once a pooled guest is ready
    to be given back (its pool baseline taken)."""
    _pool_ready(runtime)
    return Session([secret])


def _pool_ready(runtime) -> None:
    pool = pool_for(runtime)
    pool.refill()
    deadline = time.monotonic() + 120
    while runtime.pool_size and runtime.renews and time.monotonic() < deadline:
        ready = [w for w in pool.idle() if w.pool_baseline is not None
                 and w.pool_baseline.done() and w.pool_baseline.result()]
        if ready:
            break
        time.sleep(0.02)


def secret(word: str) -> str:
    """The first session's own tool."""
    return word.upper()


def other() -> str:
    """The next session's tool."""
    return "other"


_SPOIL = ("import builtins, os, sys\nprint(secret(word='a'))\nx = 41\nbuiltins.spoiled = True\n"
          "os.environ['K'] = 'v'\nsys.setrecursionlimit(500)\n"
          "open('/session/f.txt', 'w').write('hi')")
_LOOK_AFTER = ("import builtins, os, sys\n"
               "print('x' in globals(), 'secret' in globals(), hasattr(builtins, 'spoiled'),"
               " os.environ.get('K'), sys.getrecursionlimit(), os.listdir('/session'), other())")


@pytest.fixture
def patient_refill(monkeypatch):
    """The refill waits for a guest to come back as long as a test may take (on a loaded
    machine a session can outlast the usual tenth of a second, and the refill's new guest
    would then fill the pool first). The pool is filled first, at the usual pace."""
    _pool_ready(resolve_runtime(None))
    monkeypatch.setattr(_pool, "_REFILL_AFTER_S", 60.0)


def test_a_closed_sessions_guest_serves_the_next_with_nothing_of_it_left(patient_refill):
    """Where guests can be renewed, a session's pooled guest goes back to the pool when the
    session closes: its memory written back to what it was when pooled, its folder emptied.
    The next session finds none of the last one's variables, tools, patched builtins,
    environment, settings or files, and its own tools work."""
    runtime = resolve_runtime(None)
    first = _lent(runtime)
    lent = first._state.worker
    assert first.run(_SPOIL).stdout == "A\n"
    first.close(wait=True)
    with pytest.raises(SessionClosed, match="its folder is gone"):
        first.read_file("f.txt")
    with Session([other]) as second:
        again = second._state.worker is lent
        assert again == bool(runtime.pool_size and runtime.renews)
        r = second.run(_LOOK_AFTER)
        assert r.stdout == "False False False None 1000 [] other\n", (r.stdout, r.error)


def test_a_guest_that_cannot_be_written_back_is_closed_with_its_folder():
    """A file the session left open is nothing a write-back can take back: the guest is
    closed instead, its folder removed, and the pool starts another."""
    runtime = resolve_runtime(None)
    session = _lent(runtime)
    lent, folder = session._state.worker, session.workdir
    assert session.run("kept = open('/session/open.txt', 'w')").ok
    session.close(wait=True)
    lent.thread.join(10)
    assert not lent.thread.is_alive() and not folder.exists()
    with Session([other]) as second:
        assert second._state.worker is not lent
        assert second.run("other()").value == "'other'"


def test_sessions_one_after_another_start_no_new_guest(monkeypatch, patient_refill):
    """Opened and closed one after another, sessions take turns with the pool's guest: no
    instance, boot or warm-up is paid again (a new guest costs some 10 ms of CPU)."""
    runtime = resolve_runtime(None)
    if not (runtime.pool_size and runtime.renews):
        return  # every session's guest is a new one (from a start image)
    _lent(runtime).close(wait=True)
    started = []
    instantiate = runtime.instantiate
    monkeypatch.setattr(runtime, "instantiate",
                        lambda spec: started.append(spec) or instantiate(spec))
    for n in range(10):
        s = Session([other])
        assert s.run(f"print({n} + 1, other())").stdout == f"{n + 1} other\n"
        s.close(wait=True)  # (a loaded machine may otherwise start one beside a slow renewal)
    assert started == [], started
