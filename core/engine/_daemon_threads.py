"""A thread pool whose threads never hold the process at exit.

`ThreadPoolExecutor` joins its threads when the interpreter exits, so a single call that never
returns keeps the process alive for good. Tool calls can do that: a sync tool past its timeout
is given up on by its cell, but its thread cannot be stopped and still runs it. Their threads
are daemons instead; exit stops the guests that could be waiting on them (`Session`'s exit
hook) and does not wait for the calls.
"""

from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["DaemonThreads"]


class DaemonThreads:
    """Runs `submit`ted calls on up to `max_workers` daemon threads, made as they are needed
    (an idle thread takes the next call first)."""

    def __init__(self, max_workers: int, name: str):
        self.max_workers = max_workers
        self.name = name
        self._calls: queue.SimpleQueue[tuple[cf.Future, Callable[..., Any], tuple[Any, ...]]] \
            = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._threads = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> cf.Future:
        future: cf.Future = cf.Future()
        self._calls.put((future, fn, args))
        if not self._idle.acquire(blocking=False):
            with self._lock:
                if self._threads < self.max_workers:
                    self._threads += 1
                    threading.Thread(target=self._work, name=f"{self.name}_{self._threads}",
                                     daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            try:
                future, fn, args = self._calls.get_nowait()
            except queue.Empty:
                self._idle.release()  # a submit finding this thread idle starts no other
                future, fn, args = self._calls.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # noqa: BLE001 - the caller gets it
                    future.set_exception(exc)
            del future, fn, args  # an idle thread holds nothing of its last call
