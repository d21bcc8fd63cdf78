"""A session's cell paused at calls that wait for decisions: what the session keeps of it, and
waiting for a running cell to end or to pause.

While a cell is paused its guest's thread stays parked in the host, in the tool call, so
nothing has to be saved or moved: continuing it hands the decisions in and waits again. The
session's turn is free meanwhile; a new cell, or closing the session, first gives the paused
one up (its waiting calls are rejected and it runs to its end).
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import functools
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._cell_report import Cell
from ._command import Command
from ._pause import CellLog, Decision, PendingCall
from ._result import CellResult
from ._worker import Worker

__all__ = ["PAUSED", "Parked", "Waiter", "first_of", "paused_result", "wait_either"]

PAUSED = object()
"""What waiting for a cell gives when it paused instead of ending."""
ABANDONED = ("The cell that was paused waiting for decisions did not go on: a new cell ran "
             "first, so its waiting calls were refused and it ran to its end before this one.")


@dataclass
class Parked:
    """A cell that paused: its command, on the guest that runs it."""

    worker: Worker
    command: Command[Cell]
    code: str

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        signal = self.command.ctx.calls.parking.signal
        return signal.result() if signal.done() else ()

    def log(self, expires_s: float | None) -> CellLog:
        """Everything needed to continue the cell elsewhere (its calls so far and what it
        waits on), for a session store."""
        calls = self.command.ctx.calls
        return CellLog(self.code, calls.outer_id or "", dict(calls.log), list(self.pending),
                       None if expires_s is None else time.time() + expires_s)

    def deliver(self, decisions: Mapping[str, Decision], loop: asyncio.AbstractEventLoop | None
                ) -> cf.Future | None:
        """Hand `decisions` in (async tools now run on `loop`); returns the future that is set
        if the cell pauses again, or None when calls are left undecided (it stays paused)."""
        calls = self.command.ctx.calls
        parking = calls.parking
        if parking.undecided(decisions) and not self.command.future.done():
            parking.deliver(decisions)  # kept for when the rest come
            return None
        calls.rebind(loop)
        calls.expect_call()
        signal = parking.next_signal()
        parking.deliver(decisions)
        return signal

    def give_up(self, message: str) -> None:
        self.command.ctx.calls.parking.give_up(message)

    def remaining_s(self, grace_s: float) -> float | None:
        deadline = self.command.ctx.calls.deadline
        return None if deadline is None else max(0.0, deadline - time.monotonic()) + grace_s


class Waiter:
    """Wakes at the first of a command's end and its cell's pause. Armed before the command
    is handed to the guest, so the waiting thread blocks at once: setting up a wait after
    the hand-over held the interpreter lock just when the guest's thread wanted it. The
    futures' callbacks hold only its lock: holding the waiter, which holds the futures,
    they would make a cycle, garbage for the collector each cell."""

    __slots__ = ("command", "signal", "_lock")

    def __init__(self, command: Command, signal: cf.Future):
        self.command, self.signal = command, signal
        self._lock = threading.Lock()
        self._lock.acquire()
        fire = functools.partial(_release, self._lock)
        command.future.add_done_callback(fire)
        signal.add_done_callback(fire)

    def wait(self, timeout: float | None) -> Any:
        """The cell's outcome, or `PAUSED`; raises what the command raised, or
        `cf.TimeoutError`."""
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise cf.TimeoutError
        if self.command.future.done():
            return self.command.future.result()
        return PAUSED


def _release(lock: threading.Lock, _future: cf.Future) -> None:
    try:
        lock.release()
    except RuntimeError:  # the other future came first
        pass


def wait_either(command: Command, signal: cf.Future, timeout: float | None) -> Any:
    """The cell's outcome, or `PAUSED`; raises what the command raised, or `cf.TimeoutError`."""
    return Waiter(command, signal).wait(timeout)


def first_of(loop: asyncio.AbstractEventLoop, command: Command, signal: cf.Future
             ) -> asyncio.Future:
    """An asyncio future set to the cell's outcome, or `PAUSED` (an exception the command
    raised is raised). One future and two callbacks: `asyncio.wait` would add more per cell.
    Neither callback refers to `signal`, which holds one of them: the two would be a cycle,
    garbage for the collector each cell."""
    waiter = loop.create_future()

    def settle(source: cf.Future, paused: bool) -> None:
        if waiter.done():
            return
        if paused:
            waiter.set_result(PAUSED)
        elif (error := source.exception()) is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(source.result())

    def relay(source: cf.Future, paused: bool) -> None:
        try:
            loop.call_soon_threadsafe(settle, source, paused)
        except RuntimeError:  # that loop is closed: the cell paused, and ends long after
            pass

    command.future.add_done_callback(functools.partial(relay, paused=False))
    signal.add_done_callback(functools.partial(relay, paused=True))
    return waiter


def paused_result(parked: Parked) -> CellResult:
    """What a run gives when its cell paused: the calls it waits on, the calls it made."""
    cell = parked.command.ctx
    waiting = ", ".join(f"{p.tool} ({p.id})" for p in parked.pending)
    return CellResult(ok=False, paused=parked.pending, tool_calls=tuple(cell.calls.records),
                      duration_s=time.perf_counter() - cell.started,
                      error=f"The cell is paused: it waits for decisions on {waiting}.",
                      error_type="Paused", notices=tuple(parked.command.notices))
