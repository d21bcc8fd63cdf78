"""A few guests booted ahead of time, so a new session does not wait for CPython to start.

A pooled guest has booted, imported asyncio and parked; it owns a fresh temporary folder,
which becomes the session folder of whoever takes it. Sessions that bring their own folder
start a guest of their own instead (a guest's folder is fixed when it is created).
"""

from __future__ import annotations

import functools
import logging
import shutil
import threading
from pathlib import Path

from .._temp_folders import new_folder
from ..runtime import Runtime
from . import _warmup as warmup
from ._limits import Limits
from ._worker import Worker

__all__ = ["WarmPool", "new_workdir"]

log = logging.getLogger("tooliscode")


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
        self._booting: Worker | None = None
        """The guest the refill is booting, until it is booted (a caller may adopt it)."""
        self._closed = False

    def start_worker(self, workdir: Path, limits: Limits | None = None) -> Worker:
        return Worker(self.runtime, workdir, limits or Limits())

    def acquire(self, limits: Limits | None = None) -> Worker:
        """A parked guest with its own new folder: a ready one, else the one the refill is
        booting (further along than a new one, and no second boot competes for the CPU),
        else one started now (with `limits`)."""
        with self._lock:
            worker = None
            stale = []
            while self._ready and worker is None:
                candidate = self._ready.pop()
                worker = candidate if _usable(candidate) else None
                if worker is None:
                    stale.append(candidate)
            if worker is None and self._booting is not None and _usable(self._booting):
                worker, self._booting = self._booting, None
        for old in stale:  # dead, or on a compile a better one replaced (`Instance.outdated`)
            _discard(old)
        if worker is None:
            worker = self.start_worker(new_workdir(), limits)
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
        threading.Thread(target=self._fill, name="tooliscode-pool", daemon=True).start()

    def _fill(self) -> None:
        try:
            while True:
                with self._lock:
                    if self._closed or len(self._ready) >= self.size:
                        return
                try:
                    workdir = new_workdir()
                except (OSError, RuntimeError):  # no temp space, or the process is ending
                    return
                try:
                    worker = self.start_worker(workdir)
                    with self._lock:
                        self._booting = worker
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

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._ready = self._ready, []
            if self._booting is not None:
                workers.append(self._booting)
                self._booting = None
        for worker in workers:
            _discard(worker)


def _discard(worker: Worker) -> None:
    worker.shutdown(functools.partial(shutil.rmtree, worker.workdir, ignore_errors=True),
                    quick=True)


def _usable(worker: Worker) -> bool:
    return worker.alive and not worker.instance.outdated
