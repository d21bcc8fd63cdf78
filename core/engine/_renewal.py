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

from ._session import Session

__all__ = ["Renewal"]

log = logging.getLogger("tooliscode")
_RENEW_TIMEOUT_S = 10.0


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

    def renew(self) -> bool:
        """Make the session as new for another run. False when it cannot be (a cell still
        runs, the guest died or grew, ...): close it then."""
        session = self.session
        if session.closed or not self.baseline.done() or self.baseline.exception() is not None \
                or not self.baseline.result() or not session._turn.acquire(blocking=False):
            return False
        try:
            worker = session._state.worker
            if worker is None or not worker.alive:
                return False
            renew = functools.partial(worker.renewed, limits=session.limits)
            if not worker.between_turns(renew, _RENEW_TIMEOUT_S, forgets=True):
                return False
            session._forget_cells()
            return True
        except Exception:  # noqa: BLE001 - a guest that cannot be renewed is closed instead
            log.debug("tooliscode: renewing a session failed", exc_info=True)
            return False
        finally:
            session._turn.release()
