"""Host work kept off the caller's path: starting and closing interpreters, taking locks.

A run's interpreter is closed, and the next run's started, on a few shared threads; nobody
needs to wait for either.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["acquire", "submit"]

_executor: cf.ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _background() -> cf.ThreadPoolExecutor:
    """The threads (joined at exit, before the sessions are torn down)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = cf.ThreadPoolExecutor(4, thread_name_prefix="tooliscode-sandbox")
        return _executor


def submit(fn: Callable[..., Any], *args: Any) -> None:
    """Run `fn` in the background; inline once the interpreter is shutting down."""
    try:
        _background().submit(fn, *args)
    except RuntimeError:  # cannot schedule new futures after interpreter shutdown
        fn(*args)


async def acquire(lock: threading.Lock) -> None:
    """Take a thread lock without blocking the loop; if cancelled, release it once taken."""
    if lock.acquire(blocking=False):
        return
    waiter = asyncio.ensure_future(asyncio.to_thread(lock.acquire))
    try:
        await asyncio.shield(waiter)
    except asyncio.CancelledError:
        waiter.add_done_callback(lambda _: lock.release())
        raise
