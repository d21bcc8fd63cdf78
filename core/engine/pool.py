"""A few guests booted ahead of time, so a new session does not wait for CPython to start.

A pooled guest has booted, imported asyncio and parked; it owns a fresh temporary folder,
which becomes the session folder of whoever takes it. Sessions that bring their own folder
start a guest of their own instead (a guest's folder is fixed when it is created).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from pathlib import Path

from ..runtime import Runtime
from .limits import Limits
from .worker import Worker

__all__ = ["WarmPool", "new_workdir"]

log = logging.getLogger("tooliscode")


def new_workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="tooliscode-"))


class WarmPool:
    """Keeps up to `size` parked guests for `runtime` (default limits; an adopting session
    applies its own with `Worker.configure`)."""

    def __init__(self, runtime: Runtime, size: int | None = None):
        self.runtime = runtime
        self.size = runtime.pool_size if size is None else size
        self._ready: list[Worker] = []
        self._lock = threading.Lock()
        self._filling = False
        self._closed = False

    def start_worker(self, workdir: Path, *, warm: bool, limits: Limits | None = None) -> Worker:
        worker = Worker(self.runtime, workdir, limits or Limits())
        if warm:
            worker.call({"op": "warm"})
        return worker

    def acquire(self, limits: Limits | None = None) -> Worker:
        """A parked guest with its own new folder; started now (with `limits`) if none is
        ready."""
        with self._lock:
            worker = None
            while self._ready and worker is None:
                candidate = self._ready.pop()
                worker = candidate if candidate.alive else None
        if worker is None:
            worker = self.start_worker(new_workdir(), warm=False, limits=limits)
        self.refill()
        return worker

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
                workdir = new_workdir()
                try:
                    worker = self.start_worker(workdir, warm=True)
                except Exception:  # noqa: BLE001 - a failed warm-up must not kill the pool
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
        for worker in workers:
            _discard(worker)


def _discard(worker: Worker) -> None:
    worker.shutdown()
    shutil.rmtree(worker.workdir, ignore_errors=True)
