"""Running a session's cells: starting one on the guest, waiting for it to end or to pause,
continuing a paused one, and what a result says when the guest timed out or died.

`CellRunner` is the part of `Session` that does it (the session holds the state it uses: its
worker, limits, names and notices), kept apart so each file reads as one concern.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import functools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..runtime import GuestTrap
from ..tools import ToolRegistry
from ._cancel import CANCELLED, Cancel
from ._cell_report import Cell, build_result, dropped_result, trap_result
from ._command import Command, NotStarted, settle
from ._limits import Limits
from ._live import GuestHold
from ._output import OutputStream
from ._parked import ABANDONED, PAUSED, Parked, Waiter, first_of, paused_result, wait_either
from ._pause import CellLog, Decision
from ._result import CellResult
from ._rollback import CameBack
from ._tool_calls import CellCalls
from ._worker import Worker

log = logging.getLogger("tooliscode")

__all__ = ["CellRunner", "Steer", "Stopped", "stop_cell"]

WATCHDOG_GRACE_S = 5.0
DROPPED = ("The last cell was cancelled before it started (the task running it was): none of "
           "it ran, and the session is as it was.")


@dataclass(frozen=True)
class Steer:
    """How a cell's calls are named, and what an earlier run of it left (see `Session.run`)."""

    call_id: str | None = None
    log: CellLog | None = None
    decisions: Mapping[str, Decision] | None = None
    output: OutputStream | None = None
    """Where the cell's output goes as it is printed."""
    cancel: Cancel | None = None
    """Stops the cell from outside (see `Cancel`)."""

    def apply(self, calls: CellCalls, limits: Limits) -> None:
        calls.parking.expire_s = limits.pause_s  # the cell's own, made with it
        log = self.log
        calls.outer_id = self.call_id if self.call_id is not None else (
            log.outer_id if log is not None else None)
        if log is not None:
            calls.replay = dict(log.records)
            calls.expected = {p.id: (p.tool, p.arguments) for p in log.pending}
        if self.decisions:
            calls.decisions = dict(self.decisions)



class CellRunner:
    """Cells on the session's guest (mixed into `Session`)."""

    limits: Limits
    registry: ToolRegistry
    _state: GuestHold
    _names: tuple[str, ...]
    _lost: tuple[str, ...] | None
    _notices: list[str]
    _parked: Parked | None
    _running: tuple[Worker, Command[Cell]] | None

    def _ensure_worker(self, settle: bool = True) -> Worker:
        raise NotImplementedError

    def _replace(self, dead: Worker | None) -> CameBack:
        raise NotImplementedError

    def _given_up(self, worker: Worker, why: str) -> None:
        raise NotImplementedError

    def _settle(self) -> None:
        raise NotImplementedError

    @property
    def workdir(self) -> Path:
        raise NotImplementedError

    def _start(self, code: str, loop: asyncio.AbstractEventLoop | None, steer: Steer,
               worker: Worker) -> Command[Cell]:
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, not {type(code).__name__}")
        timeout = self.limits.timeout_s
        deadline = None if timeout is None else time.monotonic() + timeout
        calls = CellCalls(self.registry, self.limits, loop, deadline, workdir=self.workdir)
        steer.apply(calls, self.limits)
        calls.on_park = worker.instance.park  # no ticker runs while nobody decides
        calls.on_unpark = worker.instance.unpark
        cell = Cell(calls, self.workdir, time.perf_counter(), output=steer.output)
        calls.on_call = cell.changing  # a tool may write into the folder too
        command = Command({"op": "cell", "code": code}, timeout, cell, on_change=cell.changing,
                          deadline=deadline)
        if steer.output is not None:
            command.message["stream"] = steer.output.guest_limit
            command.on_raw = steer.output.raw
            steer.output.cancelled = lambda: calls.cancelled
        command.future.add_done_callback(lambda _: calls.close())  # frees a parked loop at once
        command.notices.extend(self._notices)
        self._notices.clear()
        return command

    def _fired(self, command: Command[Cell], cancel: Cancel | None) -> CellResult | None:
        """A cell whose `cancel` fired before it was sent is not sent."""
        why = cancel.why if cancel is not None else None
        if why is None:
            return None
        command.dropped = True
        command.ctx.calls.close()
        return dropped_result(command, GuestTrap("cancelled", why), self._names)

    def _watchdog(self) -> float | None:
        t = self.limits.timeout_s
        return None if t is None else t + WATCHDOG_GRACE_S

    def _run(self, code: str, loop: asyncio.AbstractEventLoop | None,
             steer: Steer) -> CellResult:
        for _attempt in range(2):
            worker = self._ensure_worker(settle=False)
            command = self._start(code, loop, steer, worker)
            if (fired := self._fired(command, steer.cancel)) is not None:
                return fired
            waiter = Waiter(command, command.ctx.calls.parking.signal)
            seen = worker.handover.results_given
            worker.submit(command, ring=False)
            result = self._wait_cell(worker, command, code, waiter, self._watchdog(),
                                     steer.cancel, seen)
            if result is not None:
                return result
        raise RuntimeError("the guest died twice before running the cell")

    def _wait_cell(self, worker: Worker, command: Command[Cell], code: str, waiter: Waiter,
                   watchdog: float | None, cancel: Cancel | None = None,
                   seen: int | None = None) -> CellResult | None:
        """Wait for the cell to end or pause; None when the guest died before taking it.
        `seen`: the command was submitted unrung (`Handover.spin_for_result`)."""
        calls, paused = command.ctx.calls, False
        self._running = (worker, command)
        if cancel is not None:
            cancel._attach(functools.partial(stop_cell, worker, command))
        try:
            began = None if seen is None else worker.handover.spin_for_result(seen)
            outcome = waiter.wait(watchdog)
            if began is not None:
                worker.handover.answered(began)
            paused = outcome is PAUSED
        except cf.TimeoutError:
            return self._abandon(worker, command, "timeout")
        except NotStarted:
            return None
        except GuestTrap as trap:
            return self._trapped(worker, command, trap)
        finally:
            self._running = None
            if cancel is not None:
                cancel._detach()
            if not paused:
                calls.close()
        if paused:
            self._parked = Parked(worker, command, code)
            return paused_result(self._parked)
        self._settle()  # answered by now: commands run in order
        return self._finish(command, outcome)

    async def _arun(self, code: str, loop: asyncio.AbstractEventLoop,
                    steer: Steer) -> CellResult:
        for _attempt in range(2):
            worker = await asyncio.to_thread(self._ensure_worker) if not self._healthy() \
                else self._state.worker
            assert worker is not None
            command = self._start(code, loop, steer, worker)
            if (fired := self._fired(command, steer.cancel)) is not None:
                return fired
            worker.submit(command)
            result = await self._await_cell(worker, command, code,
                                            command.ctx.calls.parking.signal,
                                            self._watchdog(), loop, steer.cancel)
            if result is not None:
                return result
        raise RuntimeError("the guest died twice before running the cell")

    async def _await_cell(self, worker: Worker, command: Command[Cell], code: str,
                          signal: cf.Future, watchdog: float | None,
                          loop: asyncio.AbstractEventLoop,
                          cancel: Cancel | None = None) -> CellResult | None:
        """`_wait_cell` on the event loop: a timer instead of a blocking wait."""
        waiting, expired, paused = first_of(loop, command, signal), False, False

        def expire() -> None:
            nonlocal expired
            expired = True
            waiting.cancel()

        timer = loop.call_later(watchdog, expire) if watchdog is not None else None
        calls = command.ctx.calls
        self._running = (worker, command)
        if cancel is not None:
            cancel._attach(functools.partial(stop_cell, worker, command))
        try:
            outcome = await waiting
            paused = outcome is PAUSED
        except asyncio.CancelledError:
            if expired:
                return await asyncio.to_thread(self._abandon, worker, command, "timeout")
            stopped = stop_cell(worker, command)  # the task awaiting it was: so is the cell
            if stopped == "stopped":
                self._given_up(worker, "The last cell was cancelled (the task running it was).")
            elif stopped == "dropped":  # it never ran: the next result says so
                self._notices[:0] = [*command.notices, DROPPED]
            raise
        except NotStarted:
            return None
        except GuestTrap as trap:
            return await asyncio.to_thread(self._trapped, worker, command, trap)
        finally:
            self._running = None
            if cancel is not None:
                cancel._detach()
            if not paused:
                calls.close()
            if timer is not None:
                timer.cancel()
        if paused:
            self._parked = Parked(worker, command, code)
            return paused_result(self._parked)
        self._settle()  # answered by now: commands run in order
        return self._finish(command, outcome)

    # -- a paused cell ------------------------------------------------------------------

    def _take_parked(self) -> Parked:
        parked, self._parked = self._parked, None
        if parked is None:
            raise RuntimeError("no cell is paused in this session")
        return parked

    def _continue(self, parked: Parked, decisions: Mapping[str, Decision],
                  loop: asyncio.AbstractEventLoop | None) -> CellResult:
        signal = parked.deliver(decisions, loop)
        if signal is None:
            self._parked = parked
            return paused_result(parked)
        result = self._wait_cell(parked.worker, parked.command, parked.code,
                                 Waiter(parked.command, signal),
                                 parked.remaining_s(WATCHDOG_GRACE_S))
        return result if result is not None else self._trapped(
            parked.worker, parked.command,
            GuestTrap("crash", "the guest ended while the cell was paused"))

    async def _acontinue(self, parked: Parked, decisions: Mapping[str, Decision],
                         loop: asyncio.AbstractEventLoop) -> CellResult:
        signal = parked.deliver(decisions, loop)
        if signal is None:
            self._parked = parked
            return paused_result(parked)
        result = await self._await_cell(parked.worker, parked.command, parked.code, signal,
                                        parked.remaining_s(WATCHDOG_GRACE_S), loop)
        return result if result is not None else await asyncio.to_thread(
            self._trapped, parked.worker, parked.command,
            GuestTrap("crash", "the guest ended while the cell was paused"))

    def _give_up_paused(self) -> None:
        """A new cell comes: the paused one's waiting calls are refused and it runs to its
        end first (its result is dropped; the next result says so)."""
        parked, self._parked = self._parked, None
        if parked is None:
            return
        parked.give_up("the call was not approved: the conversation went on without a decision")
        try:
            wait_either(parked.command, cf.Future(), parked.remaining_s(WATCHDOG_GRACE_S))
        except cf.TimeoutError:
            self._abandon(parked.worker, parked.command, "timeout")
        except Exception:  # noqa: BLE001 - a guest that died is replaced by the next cell
            pass
        finally:
            parked.command.ctx.calls.close()
        self._notices.append(ABANDONED)

    def _forget_cells(self) -> None:
        """The guest was renewed (`_renewal.py`): no cell has run in it."""
        self._names, self._lost = (), None
        self._notices.clear()

    def _healthy(self) -> bool:
        worker = self._state.worker
        return worker is not None and worker.alive

    def _abandon(self, worker: Worker, command: Command, reason: str) -> CellResult:
        if not command.ctx.calls.unfinished():  # no tool call held the guest in the host:
            log.error("tooliscode: a cell ran %.0f s past its time limit and was stopped by "
                      "the watchdog: its own deadline did not stop it", WATCHDOG_GRACE_S)
        trap = GuestTrap("timeout", "a tool call did not return in time")
        dropped = worker.drop(command)  # still waiting (the guest kept a big state)?
        settle(command.future, error=trap)  # first: what the guest does from now on is not kept
        if dropped:  # then the guest is not stopped
            return dropped_result(command, trap, self._names)
        command.ctx.calls.cancel_all()
        worker.stop(reason)
        return self._trapped(worker, command, trap)

    def _trapped(self, worker: Worker, command: Command, trap: GuestTrap) -> CellResult:
        """The cell was stopped: a new guest, with the session's state before the cell."""
        if command.dropped:  # cancelled before it started: the guest and its state are as were
            return dropped_result(command, trap, self._names)
        came = self._replace(worker)
        return trap_result(command, trap, came, self.limits, self.workdir)

    def _finish(self, command: Command, outcome: dict[str, Any]) -> CellResult:
        lost, self._lost = self._lost, None
        result = build_result(command, outcome, lost, self.workdir, self._names)
        self._names = result.names
        return result


Stopped = Literal["ended", "dropped", "stopped"]
"""What `stop_cell` did: nothing (the cell had ended), kept a cell that had not started from
ever starting, or stopped the guest under a running cell."""


def stop_cell(worker: Worker, command: Command, why: str | None = None) -> Stopped:
    """Stop `command`'s cell, from any thread.

    A cell still waiting for the guest (behind the point the last cell keeps, say) is dropped:
    it never runs, and the guest and its state are not touched. A running cell's outcome is
    decided first (what the guest does from now on, such as ending the cell with a cancelled
    tool call's error, is not its result, nor kept), then its tool calls are cancelled (a sync
    tool's thread is left to finish on its own) and the guest stopped. Deciding first
    matters: a cancelled tool call can let the cell end before the guest is stopped, and a
    cell whose outcome is decided is never kept as the point to come back to
    (`Worker._next`). Nothing is touched when the cell had ended, whatever runs now."""
    trap = GuestTrap("cancelled", why or CANCELLED)
    if worker.drop(command):
        return "dropped" if settle(command.future, error=trap) else "ended"
    if not settle(command.future, error=trap):
        return "ended"
    command.ctx.calls.cancel_all()
    worker.stop("cancelled")
    return "stopped"
