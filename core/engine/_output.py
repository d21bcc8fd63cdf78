"""A running cell's output on its way to the caller's `on_output` (see `Session.run`).

The guest sends what the cell printed in "out" requests (batched: see the guest's
`stream.py`); what C code or `os.write` writes straight to a descriptor arrives through the
runtime's console. Both come here on the guest's thread, in the order they were written.

- Under `run`, the callback is called right there, on the guest's thread: the cell waits for
  it, so nothing piles up in the host.
- Under `arun`, chunks are queued for one task on the caller's event loop, which calls the
  callback (awaiting what it returns, when that is awaitable) in order. The guest waits when
  more than `IN_FLIGHT_CHARS` are queued: a slow consumer slows the cell down rather than
  filling the host's memory.

Either way a cell streams `Limits.stream_chars` characters at most; past them one notice says
the rest is in the result. A callback that raises is logged, and is not called again for
that cell: the cell runs on and its result is whole.
"""

from __future__ import annotations

import asyncio
import codecs
import collections
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IN_FLIGHT_CHARS", "OnOutput", "OutputStream", "check_on_output", "cut_notice"]

log = logging.getLogger("tooliscode")

OnOutput = Callable[[str, str], Any]
"""`on_output(stream, text)`: `stream` is "stdout" or "stderr", `text` one chunk of it."""

IN_FLIGHT_CHARS = 1 << 20
"""Characters queued for an `arun` callback before the guest waits for it to catch up."""
_STREAMS = ("stdout", "stderr")
_STOP = {"ok": True, "stop": True}
_GO_ON = {"ok": True}


def cut_notice(limit: int) -> str:
    return (f"\n[tooliscode: the output went past {limit:,} characters; the rest is not "
            "streamed. The cell's result has its head and tail.]\n")


def check_on_output(on_output: OnOutput | None, *, blocking: bool) -> None:
    """A clear error before the cell runs, for a callback that could not be called."""
    if on_output is None:
        return
    if not callable(on_output):
        raise TypeError(f"on_output must be callable, not {type(on_output).__name__}")
    if blocking and inspect.iscoroutinefunction(on_output):
        raise TypeError("run() calls on_output on the guest's thread, where nothing would "
                        "await it: give a plain function, or use arun()")


class OutputStream:
    """One cell's chunks, bounded by `limit` characters (None: no bound), handed to
    `on_output` on the guest's thread or, given `loop`, on that event loop."""

    def __init__(self, on_output: OnOutput, limit: int | None,
                 loop: asyncio.AbstractEventLoop | None = None):
        self._callback = on_output
        self.limit = limit
        self._left = limit
        self._loop = loop
        self._stopped = False
        """Nothing more is taken: the limit was reached, or the callback failed or is closed."""
        self._silenced = False
        """Nothing more is handed to the callback (it failed, or the cell is over)."""
        self._decoders: dict[str, Any] = {}
        self.cancelled: Callable[[], bool] = lambda: False
        """True once the cell is given up on: a guest waiting for a slow consumer goes on."""
        # `arun` only: the queue, its size in characters, and the task that empties it.
        self._queue: collections.deque[tuple[str, str]] = collections.deque()
        self.queued = 0
        self._room = threading.Condition()
        self._wake: asyncio.Event | None = None
        self._pump: asyncio.Task[None] | None = None
        self._drained: list[asyncio.Future[None]] = []
        self._calling = False
        """The pump is in the callback (or awaiting what it returned)."""
        if loop is not None:
            self._wake = asyncio.Event()

    @property
    def guest_limit(self) -> int | None:
        """What the guest is told: characters it may still send."""
        return self._left

    # -- the guest's thread ---------------------------------------------------------------

    def take(self, msg: dict[str, Any]) -> dict[str, Any]:
        """An "out" request: [stream, text] pairs, in the order written (untrusted: the
        cell's code could forge it, so it is checked and bounded here too)."""
        parts = msg.get("parts")
        if not isinstance(parts, list):
            return {"ok": False, "kind": "protocol", "error": "out: parts must be a list"}
        for part in parts:
            if (not isinstance(part, list) or len(part) != 2 or part[0] not in _STREAMS
                    or not isinstance(part[1], str)):
                return {"ok": False, "kind": "protocol",
                        "error": "out: each part must be [stream, text]"}
            self.emit(part[0], part[1])
        return _STOP if self._stopped else _GO_ON

    def raw(self, stream: str, data: bytes) -> None:
        """Bytes written straight to a descriptor (a character may be split across writes)."""
        decoder = self._decoders.get(stream)
        if decoder is None:
            decoder = self._decoders[stream] = codecs.getincrementaldecoder("utf-8")("replace")
        text = decoder.decode(data)
        if text:
            self.emit(stream, text)

    def emit(self, stream: str, text: str) -> None:
        """One chunk for the callback, cut at the limit (where the notice goes instead)."""
        if self._stopped or not text:
            return
        left = self._left
        if left is not None:
            if len(text) > left:
                text = text[:left] + cut_notice(self.limit or 0)
                self._stopped = True
            self._left = max(0, left - len(text))
        if self._loop is None:
            self._call(stream, text)
        else:
            self._enqueue(stream, text)

    def _call(self, stream: str, text: str) -> None:
        try:
            result = self._callback(stream, text)
        except Exception:  # noqa: BLE001 - the caller's bug must not break the cell
            self._failed()
            return
        if inspect.isawaitable(result):  # a sync `run` has nothing to await it with
            close = getattr(result, "close", None)
            if close is not None:
                close()
            log.warning("tooliscode: on_output returned an awaitable under run(), which "
                        "cannot await it; use arun() for an async callback")

    def _failed(self) -> None:
        log.exception("tooliscode: on_output raised; the rest of this cell's output is not "
                      "streamed (its result still has it)")
        self._stopped = self._silenced = True

    def _enqueue(self, stream: str, text: str) -> None:
        loop = self._loop
        assert loop is not None
        with self._room:
            was_empty = not self._queue
            self._queue.append((stream, text))
            self.queued += len(text)
        if was_empty:
            try:
                loop.call_soon_threadsafe(self._kick)
            except RuntimeError:  # the loop is closed: nobody will read it
                self._stopped = True
                return
        with self._room:  # a slow consumer: the guest waits, the host does not fill up
            while (self.queued > IN_FLIGHT_CHARS and not self._stopped
                   and not self.cancelled()):
                self._room.wait(0.05)

    # -- the event loop (`arun`) ----------------------------------------------------------

    def _kick(self) -> None:
        """Chunks are queued: the pump takes them. It is started by a cell's first chunk,
        so a cell that prints nothing makes no task (nor cancels one)."""
        if self._silenced:
            return
        if self._pump is None:
            assert self._loop is not None
            self._pump = self._loop.create_task(self._deliver())
        assert self._wake is not None
        self._wake.set()

    async def _deliver(self) -> None:
        wake = self._wake
        assert wake is not None
        while True:
            await wake.wait()
            wake.clear()
            while True:
                with self._room:
                    if not self._queue:
                        drained, self._drained = self._drained, []
                        break
                    stream, text = self._queue[0]
                if not self._silenced:
                    self._calling = True
                    try:
                        result = self._callback(stream, text)
                        if inspect.isawaitable(result):
                            await result
                    except Exception:  # noqa: BLE001 - the caller's bug must not break the cell
                        self._failed()
                    finally:
                        self._calling = False
                with self._room:
                    self._queue.popleft()
                    self.queued -= len(text)
                    self._room.notify_all()
            for waiter in drained:
                if not waiter.done():
                    waiter.set_result(None)
            if self._silenced:  # closed: the pump ends of itself (see `close`)
                return

    async def drain(self) -> None:
        """Wait until every chunk sent so far has been handed to the callback."""
        loop = self._loop
        assert loop is not None
        with self._room:
            if not self._queue or self._silenced or (self._pump is not None
                                                     and self._pump.done()):
                return
            waiter = loop.create_future()
            self._drained.append(waiter)
        self._kick()
        await waiter

    def close(self) -> None:
        """Deliver nothing more (the cell ended, or was cancelled); from the event loop."""
        self._stopped = self._silenced = True
        with self._room:
            self._room.notify_all()
            drained, self._drained = self._drained, []
        for waiter in drained:
            if not waiter.done():
                waiter.set_result(None)
        pump = self._pump
        if pump is not None and not pump.done():
            # A pump waiting for chunks is woken to end of itself: a cancelled task leaves
            # an exception and its frames in a cycle for the garbage collector, each cell.
            # One held up by the callback is cancelled, or a hung callback would keep it.
            if self._calling:
                pump.cancel()
            else:
                assert self._wake is not None
                self._wake.set()
