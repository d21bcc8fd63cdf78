"""A session given to the next run as new: the guest back to the moment after its setup.

Closing a run's session and starting the next one costs an instance, a thread, a folder and
a setup turn, and the new guest's first cell then pays a page fault for every page it
writes. The same guest is instead renewed (`runtime/_wasmtime/write_back.py`): its memory
written back to what it was right after setup, its open files closed, its folder emptied,
its random generators reseeded. Nothing of the last run is left, and the next run's first
cell finds its pages in place. Where a run left what cannot be written back, the default
runtime starts the guest's component again in the same store's place and replays the boot
and setup turns it took, with the answers it was given (`runtime/component/_runtime.py`).
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import logging
from dataclasses import dataclass
from typing import Any

from ._session import Session
from ._worker import Worker

__all__ = ["Renewal"]

log = logging.getLogger("tooliscode")


@dataclass
class Renewal:
    """What renews one session: the baseline its guest took right after setup."""

    session: Session
    baseline: cf.Future

    @classmethod
    def prepare(cls, session: Session) -> Renewal | None:
        """Have a new session's guest take its baseline once its setup is done (before any
        cell); None where guests cannot be renewed (their runtime cannot, or a folder of the
        caller's, which is never emptied). A runtime that cannot renew its guests says so
        when asked for the baseline (`Instance.keep_baseline`)."""
        worker = session._state.worker
        if worker is None or not session.runtime.renews or not session._state.owns_workdir:
            return None
        worker.pool_baseline = None  # this baseline (with the session's setup) replaces it
        return cls(session, worker.after_turn(lambda instance: instance.keep_baseline()))

    def renew_soon(self) -> cf.Future | None:
        """Make the session as new for another run, on its guest's own thread, between its
        turns, without waiting: the future holds whether it was (False when it cannot be: a
        cell still runs, the guest died or grew, ...: close the session then). None when it
        cannot even be asked (the session is closed, its guest gone, its baseline not taken).

        No other thread takes part. With runs one after another, one that did would wait for
        the interpreter lock, which the next run's busy thread lets go of only now and then:
        a thread that asked for the renewal and waited for it took the lock three times, each
        in the middle of the next run's own Python. The renewal waits a moment for the last
        run's caller to be done (`hurry` ends that wait: the next run has come)."""
        session = self.session
        worker = session._state.worker
        if session.closed or worker is None or not worker.alive or not self.baseline.done() \
                or self.baseline.exception() is not None or not self.baseline.result():
            return None
        return worker.after_turn(functools.partial(self._renew, worker), forgets=True,
                                 quiet=True)

    def hurry(self) -> None:
        """The next run wants the session now: a renewal asked for waits no longer for the
        last run's caller to be done (`_guest_loop.QUIET_S`)."""
        worker = self.session._state.worker
        if worker is not None:
            worker.hurry()

    def _renew(self, worker: Worker, instance: Any) -> bool:
        """On the guest's thread, between turns."""
        session = self.session
        if session.closed or not session._turn.acquire(blocking=False):
            return False
        try:
            if not worker.renewed(instance, limits=session.limits):
                return False
            session._forget_cells()
            return True
        except Exception:  # noqa: BLE001 - a guest that cannot be renewed is closed instead
            log.debug("tooliscode: renewing a session failed", exc_info=True)
            return False
        finally:
            session._turn.release()
