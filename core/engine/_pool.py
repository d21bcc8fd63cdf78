"""A few guests booted ahead of time, so a new session does not wait for CPython to start.

A pooled guest has booted, imported asyncio and parked; it owns a fresh temporary folder,
which becomes the session folder of whoever takes it. Sessions that bring their own folder
start a guest of their own instead (a guest's folder is fixed when it is created).

Where guests can be renewed, a pooled guest keeps its memory as it was when pooled, and a
session that closes gives it back: renewed (memory written back, folder emptied), it is the
next session's, for a fraction of a new guest's CPU (an instance, a thread, a boot and a
warm-up). So that sessions opened and closed one after another never pay for a new guest,
the refill waits a moment for a guest to come back before it starts one.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import logging
import shutil
import threading
import weakref
from pathlib import Path
from typing import Any

from .._temp_folders import new_folder
from ..runtime import Runtime
from . import _warmup as warmup
from ._limits import Limits
from ._worker import Worker

__all__ = ["WarmPool", "new_workdir"]

log = logging.getLogger("tooliscode")
_REFILL_AFTER_S = 0.1
"""How long the refill waits for a closed session's guest to come back before it starts a
new one."""
_RETURN_WAIT_S = 0.05
"""How long a new session waits for a guest being renewed for it (a renewal takes about a
millisecond; a new guest, several)."""


def new_workdir() -> Path:
    """A new session folder (see `tempfolders`: it does not outlive this process)."""
    return new_folder("session")


class WarmPool:
    """Keeps up to `size` parked guests for `runtime` (default limits; an adopting session
    applies its own with `Worker.configure`)."""

    def __init__(self, runtime: Runtime, size: int | None = None):
        self.runtime = runtime
        self.size = runtime.pool_size if size is None else size
        self._ready: list[Worker] = []
        self._lock = threading.Lock()
        self._filling = False
        self._filler: threading.Thread | None = None
        self._booting: Worker | None = None
        """The guest the refill is booting, until it is booted (a caller may adopt it)."""
        self._made: weakref.WeakSet[Worker] = weakref.WeakSet()
        """The guests it started: only those come back to it."""
        self._returning = 0
        """Guests given back whose renewal is under way."""
        self._drained = False
        """The last session found no guest ready and started its own: refill at once."""
        self._changed = threading.Condition(self._lock)
        """Notified when a guest comes back (or fails to), and on closing."""
        self._closed = False

    def start_worker(self, workdir: Path, limits: Limits | None = None, *,
                     ahead: bool = False) -> Worker:
        return Worker(self.runtime, workdir, limits or Limits(), ahead=ahead)

    def acquire(self, limits: Limits | None = None, *, ahead: bool = False) -> Worker:
        """A parked guest with its own new folder: a ready one, else the one the refill is
        booting (further along than a new one, and no second boot competes for the CPU),
        else one started now (with `limits`; `ahead`: for a session made ahead of need). A
        guest being given back is waited for, a moment."""
        with self._lock:
            worker = None
            stale = []
            if not self._ready and self._returning:  # sooner than any new guest
                self._changed.wait_for(lambda: self._ready or not self._returning,
                                       _RETURN_WAIT_S)
            while self._ready and worker is None:
                candidate = self._ready.pop()
                worker = candidate if _usable(candidate) else None
                if worker is None:
                    stale.append(candidate)
            if worker is None and self._booting is not None and _usable(self._booting):
                worker, self._booting = self._booting, None
            self._drained = worker is None
            if self._drained:  # a refill waiting for a guest to come back starts one now
                self._changed.notify_all()
        for old in stale:  # dead, or on a compile a better one replaced (`Instance.outdated`)
            _discard(old)
        if worker is None:
            worker = self.start_worker(new_workdir(), limits, ahead=ahead)
        self.refill()
        return worker

    def idle(self) -> tuple[Worker, ...]:
        """The guests it keeps for sessions to come (ready, or booting)."""
        with self._lock:
            return (*self._ready, *((self._booting,) if self._booting is not None else ()))

    def refill(self) -> None:
        with self._lock:
            if self._filling or self._closed or len(self._ready) >= self.size:
                return
            self._filling = True
            self._filler = threading.Thread(target=self._fill, name="tooliscode-pool",
                                            daemon=True)
            self._filler.start()

    def give_back(self, worker: Worker) -> cf.Future | None:
        """Take back the guest of a closed session that took it from this pool, idle: it is
        renewed to what it was when pooled (on its own thread) and kept for the next session,
        or else closed, its folder removed. None, with nothing done, when it cannot come back
        (no pool baseline, or the pool has enough): the caller closes it then. The future is
        done once it is back (True) or closed (False)."""
        baseline = worker.pool_baseline
        if baseline is None or not baseline.done() or baseline.exception() is not None \
                or not baseline.result() or not worker.alive or worker not in self._made:
            return None
        with self._lock:
            if self._closed or len(self._ready) + self._returning >= self.size:
                return None
            self._returning += 1
        renewed = worker.after_turn(functools.partial(_renew, worker), forgets=True)
        back: cf.Future = cf.Future()
        renewed.add_done_callback(lambda done: self._came_back(worker, done, back))
        return back

    def _came_back(self, worker: Worker, renewed: cf.Future, back: cf.Future) -> None:
        ok = not renewed.cancelled() and renewed.exception() is None and renewed.result()
        with self._lock:
            self._returning -= 1
            kept = bool(ok) and not self._closed and worker.alive \
                and len(self._ready) < self.size
            if kept:
                self._ready.append(worker)
            self._changed.notify_all()
        if not kept:
            _discard(worker)
        back.set_result(kept)

    def _fill(self) -> None:
        try:
            with self._lock:  # a guest given back meanwhile saves starting one
                self._changed.wait_for(lambda: self._closed or self._drained
                                       or len(self._ready) >= self.size, _REFILL_AFTER_S)
            while True:
                with self._lock:
                    if self._closed or len(self._ready) >= self.size:
                        return
                try:
                    workdir = new_workdir()
                except (OSError, RuntimeError):  # no temp space, or the process is ending
                    return
                try:
                    worker = self.start_worker(workdir, ahead=True)
                    with self._lock:  # (a caller may adopt it as soon as it is `_booting`)
                        closed = self._closed
                        if not closed:
                            self._booting = worker
                    if closed:  # closed meanwhile: not booted at all
                        _discard(worker)
                        return
                    worker.booted.wait()
                    with self._lock:
                        adopted = self._booting is not worker
                        self._booting = None
                    if adopted:  # a caller took it while it booted
                        continue
                    # Not offered during the warm-up: a caller would wait for it.
                    warmed = worker.call({"op": "warm", "rehearse": warmup.rehearsal()})
                    if not warmed.get("ok"):  # still a good guest: only colder
                        log.warning("tooliscode: a pooled guest's warm-up failed: %s",
                                    warmed.get("error"))
                    if worker.turn_based:  # before any command of a caller's (they are in order)
                        worker.after_turn(lambda instance: instance.warmed())
                        if self.runtime.renews:
                            self._made.add(worker)
                            worker.pool_baseline = worker.after_turn(
                                lambda instance: instance.keep_baseline(grow=False))
                except Exception:  # noqa: BLE001 - a failed warm-up must not kill the pool
                    if not self._closed:  # (closing stops the guest it was booting)
                        log.exception("tooliscode: could not start a pooled guest")
                    shutil.rmtree(workdir, ignore_errors=True)
                    return
                with self._lock:
                    if self._closed:
                        closing = worker
                    else:
                        self._ready.append(worker)
                        closing = None
                if closing is not None:
                    _discard(closing)
                    return
        finally:
            with self._lock:
                self._filling = False

    def close(self, wait_s: float = 0.0) -> None:
        """Close its guests. `wait_s`: wait that long for a refill under way to end (at exit,
        before the runtime goes: a guest started meanwhile would outlive it)."""
        with self._lock:
            self._closed = True
            self._changed.notify_all()
            workers, self._ready = self._ready, []
            if self._booting is not None:
                workers.append(self._booting)
                self._booting = None
            filler = self._filler if self._filling else None
        for worker in workers:
            _discard(worker)
        if wait_s and filler is not None and filler is not threading.current_thread():
            filler.join(wait_s)


def _renew(worker: Worker, instance: Any) -> bool:
    """On the guest's thread: as it was when pooled, with nothing of its session's left (its
    tools, limits and rollback point included); False when it cannot be."""
    worker.ops = None
    return worker.renewed(instance, Limits(), restart=False)


def _discard(worker: Worker) -> None:
    worker.shutdown(functools.partial(shutil.rmtree, worker.workdir, ignore_errors=True),
                    quick=True)


def _usable(worker: Worker) -> bool:
    return worker.alive and not worker.instance.outdated
