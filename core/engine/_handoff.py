"""Handing the guest's blocking calls of async tools to an event loop, and the values back.

`asyncio.run_coroutine_threadsafe` would make a task, a future and two chained callbacks per
call; the loop would be woken through its self-pipe and take three turns to run it. Here one
task, made at the cell's first async call, serves the cell's calls from a queue. After each
call it waits a moment, blocking the loop, for the guest's next call (see `LINGER_S`).

While it waits so, the loop runs nothing else: it is parked. A call made then does not wake
the loop's thread at all (two thread wake-ups, more than the rest of a small call costs):
the calling thread borrows the parked loop and takes the call's first step itself, as the
loop's, in the serving task's place. Most async tools finish in that step, never having
suspended. One that suspends is handed over, part-run, to the serving task, which runs its
other steps on the loop's thread as it would have run them all. The `_parked` lock makes
the two threads take turns: the loop's thread holds it whenever it runs anything, and lets
go of it only while it waits parked. The loop is given back to its other tasks at least
every `SLICE_S`, when the guest makes no call within `LINGER_S` (once borrowed calls come,
the wait is checked only at the end of the slice: each wake-up of the parked thread costs
more than a call), and as soon as the cell ends (`close`).

Every step of every call runs in one context, copied when the cell's first async call was
made, as a task's steps run in the task's context. What the tools see is the same on
either thread: the loop as the running loop, the serving task as the current task. (The
calling thread keeps the loop set as its running loop from one borrowed step to the next,
since setting it is a system call; `leave` clears it before anything else runs there.)
What a borrowed step cannot hide is the thread itself, so an event loop in debug mode,
which checks the thread of every call made on it, lends nothing. And a first step that
blocks without awaiting holds the calling thread as it would have held the loop's: its call
times out when it returns, not before.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import queue
import threading
import time
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any

__all__ = ["LoopHandoff", "LINGER_S", "SLICE_S", "run_in"]

LINGER_S = 0.0002
"""How long the serving task waits, blocking its loop, for the guest's next call."""
SLICE_S = 0.002
"""The longest the serving task keeps the loop from its other tasks."""
_CANCELLED = -1
"""Sequence number of the reply that wakes a guest whose cell was cancelled."""
_WAKE: tuple[int, Any, Any] = (0, None, None)
"""A request that only ends a parked wait (see `close`)."""
_IDLE, _BUSY = object(), object()
"""What the serving task's wait ends with when no request came: the guest made no call for
`LINGER_S`, or its time slice ended while calls went on (borrowed steps)."""

_set_running_loop = asyncio._set_running_loop
Call = Callable[[Any], Awaitable[Any] | Any]
"""A call's function: what it returns is awaited when it is awaitable."""


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
        self._parked = threading.Lock()
        self._parked.acquire()  # free only while the serving task waits with the loop parked
        self._lend = not loop.get_debug()
        self._borrowed = 0
        """Calls run on the parked loop so far: tells the waiting serving task they go on."""
        self._busy = False
        """Borrowed calls came in the last wait: wait a whole slice before looking again."""
        self._context = contextvars.copy_context()
        self._lent_to: int | None = None
        """The thread that has the loop set as its running loop, for borrowed steps: left
        set between them (setting it costs a system call) until `leave` clears it."""
        self._seq = 0
        self._running = 0
        self._dropped: set[int] = set()
        """Calls whose waiter gave up (timed out) before or while they ran."""
        self._closed = False
        self._waiting = False
        """The serving task waits for a request, the loop parked: a request wakes it."""

    # -- the waiting thread -------------------------------------------------------------

    def call(self, fn: Call, argument: Any, deadline: float | None) -> Any:
        """`await fn(argument)` on the loop; its value, or what it raised. Raises
        `TimeoutError` at `deadline` (on the monotonic clock; the call is cancelled) and
        `asyncio.CancelledError` when `cancel` was called."""
        self._seq = seq = self._seq + 1
        if self._parked.acquire(blocking=False):
            # Written out here, not called: this is every async tool call's path.
            try:
                self._borrowed += 1
                if self._lent_to is None:  # this thread runs no loop of its own
                    _set_running_loop(self.loop)
                    self._lent_to = threading.get_ident()
                coro = fn(argument)
                if type(coro) is not types.CoroutineType:
                    coro = _await(coro)
                try:
                    yielded = self._context.run(coro.send, None)
                except StopIteration as stop:  # the common case: done without suspending
                    if deadline is not None and time.monotonic() > deadline:
                        raise TimeoutError from None  # as the waiter would have said
                    return stop.value
                # It suspended: the loop's thread runs the rest. The parked serving task
                # takes it from the queue unkicked, since it cannot stop waiting until we
                # let go of the loop.
                self._requests.put((seq, _STARTED, (coro, yielded)))
            finally:
                self._parked.release()
        else:
            self._requests.put((seq, fn, argument))
            if not self._listening:
                self.loop.call_soon_threadsafe(self._kick)
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

    def expect(self) -> None:
        """On the loop's thread: serve now, for a call the guest is about to make (a paused
        cell handed its decisions goes on with the approved call). The serving task then
        waits for it with the loop parked (`LINGER_S`), so the call runs in the guest's own
        step instead of waking the loop, and its answer wakes nobody either."""
        self._kick()

    def leave(self) -> None:
        """The calling thread is about to run other code (a sync tool, the cell's end): it
        no longer runs as the loop's. A no-op on any other thread."""
        if self._lent_to is not None and self._lent_to == threading.get_ident():
            self._lent_to = None
            _set_running_loop(None)

    # -- any thread ---------------------------------------------------------------------

    def cancel(self) -> None:
        """Wake the waiting thread with `CancelledError` and stop the serving task."""
        self._replies.put((_CANCELLED, False, None))
        self.close()

    def close(self) -> None:
        """No more calls: the serving task ends (cancelling a call still running). Called
        when the cell ends, it also ends the wait of a serving task parked for more calls,
        which would otherwise hold up the loop (and the cell's result) for the rest of its
        time slice."""
        self.leave()
        if not self._closed:
            self._closed = True
            self._requests.put(_WAKE)
            if not self._waiting:
                # Parked, the serving task wakes on that request and ends by itself: the
                # loop's self-pipe is written (a system call, and a wake-up) only otherwise.
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
                seq, fn, argument = self._requests.get_nowait()
            except queue.Empty:
                break
            if seq == _WAKE[0]:
                continue
            if fn is _STARTED:
                argument[0].close()
            self._replies.put((seq, False, asyncio.CancelledError()))

    def _next(self, until: float) -> Any:
        """The next request, waiting for it with the loop parked (see the module's
        docstring): `_IDLE` when the guest made no call for `LINGER_S`, `_BUSY` when the time
        slice that ends at `until` is used up."""
        borrowed = self._borrowed
        wait = SLICE_S if self._busy else LINGER_S
        if self._lend:
            self._parked.release()
        self._waiting = True
        try:
            while True:
                left = until - time.monotonic()
                try:
                    item = self._requests.get(timeout=max(0.0, min(wait, left)))
                    return _BUSY if item is _WAKE else item
                except queue.Empty:
                    self._busy = self._borrowed != borrowed
                    if not self._busy:
                        return _IDLE
                    if time.monotonic() >= until:
                        return _BUSY
                    borrowed = self._borrowed
                    wait = SLICE_S
        finally:
            self._waiting = False
            if self._lend:
                self._parked.acquire()  # waits while a borrowed step runs

    async def _serve(self) -> None:
        self._listening = True
        until = time.monotonic() + SLICE_S
        try:
            while not self._closed:
                item = self._next(until)
                if item is _IDLE:
                    self._listening = False
                    if self._requests.empty():  # a put after this sees the flag and kicks
                        self._wakeup = self.loop.create_future()
                        await self._wakeup
                    self._listening = True
                    until = time.monotonic() + SLICE_S
                    continue
                if item is not _BUSY:
                    await self._run(*item)
                if time.monotonic() >= until:  # give the loop's other tasks their turn
                    await asyncio.sleep(0)  # and come back unkicked: still listening
                    until = time.monotonic() + SLICE_S
        except asyncio.CancelledError:
            pass
        finally:
            self._listening = False

    async def _run(self, seq: int, fn: Call, argument: Any) -> None:
        if seq in self._dropped:
            if fn is _STARTED:
                argument[0].close()
            return
        self._running = seq
        try:
            coro, yielded = argument if fn is _STARTED else (_coroutine(fn(argument)), _FRESH)
            value = await run_in(self._context, coro, yielded)
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

_STARTED: Any = object()
"""In a request's place of the function: the call's first step was taken on the waiting
thread, and the argument is (its coroutine, what that step yielded)."""
_FRESH = object()
"""In place of what a call's first step yielded: no step was taken yet."""


@types.coroutine
def run_in(context: contextvars.Context, coro: Any,
           yielded: Any = _FRESH) -> Generator[Any, Any, Any]:
    """Await `coro` with each of its steps run in `context`, as a task runs its steps in its
    own, but on the awaiting task: a call that never suspends stays a plain call (a task
    would suspend every one). `yielded` is what its first step yielded, when that step was
    taken elsewhere. Give each coroutine its own context: one cannot be entered twice.

    The serving task runs every call so. A framework adapter does too, to give an inner
    call the context variables of its code tool's call (the current span, say), which the
    calls' own context, copied on the guest's thread, does not have."""
    run, send, throw = context.run, coro.send, coro.throw
    step: Any
    value: Any
    step, value = (send, None) if yielded is _FRESH else (None, None)
    while True:
        if step is not None:
            try:
                yielded = run(step, value)
            except StopIteration as stop:
                return stop.value
        try:
            value = yield yielded
            step = send
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - thrown in (cancelled): pass it on
            step, value = throw, exc


def _coroutine(value: Any) -> Any:
    """What a call's function returned, as a coroutine to be stepped with `send`."""
    return value if type(value) is types.CoroutineType else _await(value)


async def _await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
