"""What outlives a call: each session's hold on its guest and folder, the warm pools, and the
release of all of them at exit (wasmtime's threads outlive the interpreter otherwise)."""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import functools
import shutil
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..runtime import Runtime, close_default_runtime
from ._pool import WarmPool
from ._worker import Worker, join_all

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["EXIT_WAIT_S", "GuestHold", "live", "pool_for"]

EXIT_WAIT_S = 3.0
"""How long exit waits for closing guests to end and remove their folders."""
_pools: dict[int, WarmPool] = {}
_pools_lock = threading.Lock()
live: weakref.WeakSet[Session] = weakref.WeakSet()


def pool_for(runtime: Runtime) -> WarmPool:
    """The process's pool of warm guests for `runtime`."""
    with _pools_lock:
        pool = _pools.get(id(runtime))
        if pool is None:
            pool = _pools[id(runtime)] = WarmPool(runtime)
        return pool


@dataclass
class GuestHold:
    """What must be released even if the Session object is simply dropped."""

    worker: Worker | None
    workdir: Path
    owns_workdir: bool

    def release(self, idle: bool = False) -> cf.Future | None:
        """Returns at once: the guest's own thread removes our folder once the guest is gone
        (nothing may write into it after that). A guest the pool lent, `idle` (no cell runs
        nor waits), goes back to it with its folder, to be renewed for the next session:
        the future then says when it is back (or closed)."""
        worker, self.worker = self.worker, None
        if idle and worker is not None and self.owns_workdir:
            back = pool_for(worker.runtime).give_back(worker)
            if back is not None:
                return back
        remove = functools.partial(shutil.rmtree, self.workdir, ignore_errors=True) \
            if self.owns_workdir else None
        if worker is not None:
            worker.shutdown(remove, quick=self.owns_workdir)
        elif remove is not None:
            remove()
        return None


@atexit.register
def _shutdown_all() -> None:
    """Stop every guest before the interpreter goes away (wasmtime's threads outlive it)."""
    for session in list(live):
        try:
            session.close()
        except Exception:  # noqa: BLE001
            pass
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close(EXIT_WAIT_S)
    join_all(EXIT_WAIT_S)
    close_default_runtime()
