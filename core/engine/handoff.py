"""Handing the guest's blocking calls of async tools to an event loop, and the values back.

`asyncio.run_coroutine_threadsafe` would make a task, a future and two chained callbacks per
call; the loop would be woken through its self-pipe and take three turns to run it. Here one
task, made at the cell's first async call, serves the cell's calls from a queue. After each
call it waits a moment, blocking the loop, for the guest's next call: in a loop of tool calls
that next call comes within microseconds, and then the hand-off costs two thread wake-ups
and nothing else. The loop is given back to its other tasks at least every `SLICE_S`, and
whenever the guest does not call again within `LINGER_S`.
"""

from __future__ import annotations

import asyncio
import queue
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["LoopHandoff", "LINGER_S", "SLICE_S"]

LINGER_S = 0.0002
"""How long the serving task waits, blocking its loop, for the guest's next call."""
SLICE_S = 0.002
"""The longest the serving task keeps the loop from its other tasks."""
_CANCELLED = -1
"""Sequence number of the reply that wakes a guest whose cell was cancelled."""

Call = Callable[[Any], Awaitable[Any]]


class LoopHandoff:
    """Runs awaitables on `loop`, one at a time, for a thread that blocks until each is done."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._requests: queue.SimpleQueue[tuple[int, Call, Any]] = queue.SimpleQueue()
        self._replies: queue.SimpleQueue[tuple[int, bool, Any]] = queue.SimpleQueue()
        self._task: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Future[None] | None = None
        self._listening = False
        """The serving task is taking requests without being woken (see `LINGER_S`)."""
        self._seq = 0
        self._running = 0
        self._dropped: set[int] = set()
        """Calls whose waiter gave up (timed out) before or while they ran."""
        self._closed = False

    # -- the waiting thread -------------------------------------------------------------

    def call(self, fn: Call, argument: Any, timeout: float | None) -> Any:
        """`await fn(argument)` on the loop; its value, or what it raised. Raises
        `TimeoutError` after `timeout` seconds (the call is cancelled) and
        `asyncio.CancelledError` when `cancel` was called."""
        self._seq += 1
        seq = self._seq
        self._requests.put((seq, fn, argument))
        if not self._listening:
            self.loop.call_soon_threadsafe(self._kick)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                got, ok, value = self._replies.get(
                    timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._dropped.add(seq)
                self._post(self._give_up, seq)
                raise TimeoutError from None
            if got == seq:
                break
            if got == _CANCELLED:
                raise asyncio.CancelledError
            # else: the late reply of a call whose waiter timed out; not ours
        if ok:
            return value
        raise value

    # -- any thread ---------------------------------------------------------------------

    def cancel(self) -> None:
        """Wake the waiting thread with `CancelledError` and stop the serving task."""
        self._replies.put((_CANCELLED, False, None))
        self.close()

    def close(self) -> None:
        """No more calls: the serving task ends (cancelling a call still running)."""
        if not self._closed:
            self._closed = True
            self._post(self._stop)

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nothing runs on it any more
            pass

    # -- the loop's thread --------------------------------------------------------------

    def _kick(self) -> None:
        if self._task is None:
            if not self._closed:
                self._task = self.loop.create_task(self._serve())
        elif self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _give_up(self, seq: int) -> None:
        if self._running == seq and self._task is not None:
            self._task.cancel()

    def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        while True:  # calls that never started: their waiters hear it
            try:
                seq, _, _ = self._requests.get_nowait()
            except queue.Empty:
                break
            self._replies.put((seq, False, asyncio.CancelledError()))

    def _next(self, until: float) -> tuple[int, Call, Any] | None:
        """The next request, waiting for it (and blocking the loop) at most `LINGER_S`, and
        not at all once the time slice that ends at `until` is used up."""
        try:
            return self._requests.get(timeout=LINGER_S if time.monotonic() < until else 0.0)
        except queue.Empty:
            return None

    async def _serve(self) -> None:
        self._listening = True
        until = time.monotonic() + SLICE_S
        try:
            while not self._closed:
                item = self._next(until)
                if item is None:
                    self._listening = False
                    if self._requests.empty():  # a put after this sees the flag and kicks
                        self._wakeup = self.loop.create_future()
                        await self._wakeup
                    self._listening = True
                    until = time.monotonic() + SLICE_S
                    continue
                await self._run(*item)
                if time.monotonic() >= until:  # give the loop's other tasks their turn
                    self._listening = False
                    await asyncio.sleep(0)
                    self._listening = True
                    until = time.monotonic() + SLICE_S
        except asyncio.CancelledError:
            pass
        finally:
            self._listening = False

    async def _run(self, seq: int, fn: Call, argument: Any) -> None:
        if seq in self._dropped:
            return
        self._running = seq
        try:
            value = await fn(argument)
        except asyncio.CancelledError as exc:
            self._replies.put((seq, False, exc))
            if seq not in self._dropped or self._closed:
                raise
            uncancel = getattr(self._task, "uncancel", None)  # 3.11+: count it undone
            if uncancel is not None:
                uncancel()
        except BaseException as exc:  # noqa: BLE001 - every failure goes to the waiter
            self._replies.put((seq, False, exc))
        else:
            self._replies.put((seq, True, value))
        finally:
            self._running = 0
