"""A new session's guest starts warm: a pooled guest (the default runtime) has rehearsed a
short session of our own and forgotten it, as the data runtime's start image has."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator

from tooliscode import Session
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
