"""The part of a cell's calls that ids, logs, decides and pauses them (mixed into `CellCalls`).

A call with an id (`<outer id>:<n>`) is logged with its outcome; one an earlier run of the cell
logged is answered from the log instead of running, after checking it is the same call; one
with a decision already made follows it; one whose tool paused it waits, parked, for its
decision. See `_pause.py` for the why.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from ..guest import to_json_value
from ..tools import Tool
from ._handoff import LoopHandoff
from ._pause import (
    CallInfo,
    CallPaused,
    CallRecord,
    Decision,
    Parking,
    PendingCall,
    in_call,
    same_call,
)

__all__ = ["ANSWERED", "Started", "Steering", "paused"]


@dataclass
class Started:
    """A call the cell started (to run alongside others), and what became of it."""

    tool: Tool
    arguments: dict[str, Any]
    future: cf.Future
    started: float
    expires: float | None
    n: int = 0
    """Its place among the cell's calls (its id is `<outer id>:<n>`)."""
    answer: dict[str, Any] | None = None
    """Given without running: logged on an earlier run, rejected, or answered."""


class Steering:
    """Ids, the log, decisions and pauses of a cell's calls."""

    outer_id: str | None
    replay: dict[str, CallRecord]
    expected: dict[str, tuple[str, dict[str, Any]]]
    decisions: dict[str, Decision]
    parking: Parking
    on_park: Callable[[], None] | None
    on_unpark: Callable[[float], None] | None
    log: dict[str, CallRecord]
    deadline: float | None
    cancelled: bool
    _made: list[tuple[str, dict[str, Any], float, bool, str | None]]
    _started: dict[int, Started]
    _loop_calls: LoopHandoff | None
    loop: asyncio.AbstractEventLoop | None

    def _invoke(self, tool: Tool, arguments: dict[str, Any]) -> dict[str, Any] | CallPaused:
        raise NotImplementedError

    def _submit(self, tool: Tool, arguments: dict[str, Any], timeout: float | None) -> cf.Future:
        raise NotImplementedError

    def _timeout(self, tool: Tool) -> float | None:
        raise NotImplementedError

    def _outcome(self, tool: Tool, arguments: dict[str, Any], started: float,
                 fn: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _handoff(self) -> LoopHandoff:
        raise NotImplementedError

    def expect_call(self) -> None:
        """On the loop's thread, just before the paused cell is handed its decisions: have
        the loop ready for the call it is about to make (`LoopHandoff.expect`)."""
        if self.loop is not None:
            self._handoff().expect()

    def id_of(self, n: int) -> str:
        """The id of the cell's `n`-th call."""
        return f"{self.outer_id}:{n}" if self.outer_id is not None else str(n)

    def _steer(self, n: int, tool: Tool, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to call `n` when it is not to run as usual: as an earlier run of the
        cell logged it, or as decided before it was made; a stop when it is not the call the
        earlier run made there. None: run it."""
        cid = self.id_of(n)
        earlier = self.replay.get(cid)
        expected = (earlier.tool, earlier.arguments) if earlier is not None \
            else self.expected.get(cid)
        if expected is not None and not same_call(expected, tool.name, arguments):
            self.cancelled = True  # nothing more runs in this cell
            return {"ok": False, "kind": "stop", "tool": tool.name,
                    "error": _diverged(n, tool.name, arguments, *expected)}
        if earlier is not None:
            self._made.append((tool.name, arguments, 0.0, earlier.ok, earlier.error))
            return earlier.reply()
        decision = self.decisions.pop(cid, None)
        return None if decision is None else self._decided(n, tool, arguments, decision)

    def _decided(self, n: int, tool: Tool, arguments: dict[str, Any],
                 decision: Decision) -> dict[str, Any]:
        """Follow the decision for call `n`: run it (approved, maybe with other arguments),
        fail it (rejected) or answer it with the value given."""
        if decision.action == "reject":
            error = decision.message or "the call was not approved"
            self._made.append((tool.name, arguments, 0.0, False, error))
            return {"ok": False, "kind": "rejected", "error": error, "tool": tool.name}
        if decision.action == "respond":
            self._made.append((tool.name, arguments, 0.0, True, None))
            return {"ok": True, "value": to_json_value(decision.value)}
        info = CallInfo(self.id_of(n), approved=True, metadata=decision.metadata)
        reply = self._invoke(in_call(tool, info), decision.arguments or arguments)
        if isinstance(reply, dict):
            return reply
        error = f"{tool.qualified_name}: the tool asked for a decision again after it was approved"
        self._made.append((tool.name, arguments, 0.0, False, error))
        return {"ok": False, "kind": "error", "error": error, "tool": tool.name}

    def _pending(self, n: int, tool: Tool, arguments: dict[str, Any],
                 paused: CallPaused) -> PendingCall:
        return PendingCall(self.id_of(n), tool.name, arguments, paused.kind, paused.metadata)

    def _park(self, pending: list[PendingCall]) -> dict[str, Decision]:
        """Wait, parked on the guest's thread, until each of `pending` is decided; the time it
        waits counts against no deadline."""
        if self._loop_calls is not None:
            # The loop is not held while nobody decides: its serving task, which may be
            # waiting, the loop parked, for more calls (a whole time slice after calls
            # that ran on this thread), ends now, or the pause would reach the loop late.
            # No call is in flight; the next async call makes a new one.
            self._loop_calls.close()
            self._loop_calls = None
        if self.on_park is not None:
            self.on_park()
        began = time.monotonic()
        decisions = self.parking.park(pending)
        waited = time.monotonic() - began
        if self.deadline is not None:
            self.deadline += waited
        for started in self._started.values():
            if started.expires is not None:
                started.expires += waited
        if self.on_unpark is not None:
            self.on_unpark(waited)
        return decisions

    def _logged(self, n: int, tool: Tool, arguments: dict[str, Any],
                reply: dict[str, Any]) -> dict[str, Any]:
        if self.outer_id is not None and reply.get("kind") != "stop":
            self.log[self.id_of(n)] = CallRecord(tool.name, arguments, bool(reply.get("ok")),
                                                 reply.get("value"), reply.get("error"),
                                                 reply.get("kind"))
        return reply

    def _decide_started(self) -> None:
        """Pause at the started calls that wait for decisions, once no other call is in
        flight (one cut short now would run again when the cell is continued elsewhere), and
        follow the decisions."""
        running = [s for s in self._started.values() if s.answer is None and not paused(s)]
        for s in running:
            expires = None if s.expires is None else max(0.0, s.expires - time.monotonic())
            cf.wait([s.future], timeout=expires)
            if s.future.done() and not s.future.cancelled() and s.future.exception() is None:
                s.answer = self._outcome(s.tool, s.arguments, s.started, s.future.result)
                self._logged(s.n, s.tool, s.arguments, s.answer)
        held = [s for s in self._started.values() if paused(s)]
        decisions = self._park([self._pending(s.n, s.tool, s.arguments,
                                              cast(CallPaused, s.future.exception()))
                                for s in held])
        for s in held:
            decision = decisions[self.id_of(s.n)]
            if decision.action == "approve":
                info = CallInfo(self.id_of(s.n), approved=True, metadata=decision.metadata)
                tool = in_call(s.tool, info)
                s.future = self._submit(tool, decision.arguments or s.arguments,
                                        self._timeout(tool))
            else:
                s.answer = self._decided(s.n, s.tool, s.arguments, decision)
        if any(s.answer is not None for s in held):
            self._run_approved([s.future for s in held if s.answer is None])

    def _run_approved(self, pending: list[cf.Future]) -> None:
        """Wait for the approved calls of a batch that also holds a refusal. The refusal is
        answered at once, so it would reach the code first; a `gather` that raises on it
        ends the cell, and the approved calls are cancelled with it, perhaps before they ran.
        A person approved them: they run. Bounded by a cancel and the cell's time limit."""
        while pending and not self.cancelled:
            left = None if self.deadline is None else self.deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            cf.wait(pending, timeout=_APPROVED_POLL_S if left is None else
                    min(_APPROVED_POLL_S, left))
            pending = [f for f in pending if not f.done()]


_APPROVED_POLL_S = 0.05
"""How often waiting for approved calls looks for a cancel of the cell."""
ANSWERED: cf.Future = cf.Future()
ANSWERED.set_result(None)


def paused(started: Started) -> bool:
    """A started call that ended by pausing, and waits for its decision."""
    future = started.future
    return started.answer is None and future.done() and not future.cancelled() and \
        isinstance(future.exception(), CallPaused)


def _diverged(n: int, tool: str, arguments: dict[str, Any], was: str,
              was_arguments: dict[str, Any]) -> str:
    return (f"the cell was stopped: continuing after a pause, its call #{n} is "
            f"{tool}({_args(arguments)}), but before the pause it was {was}({_args(was_arguments)}). "
            "A paused cell must make the same calls in the same order when it goes on (code "
            "that reads the clock or random numbers may not); no call was made. The session "
            "holds what the cell did up to there: run the rest as a new cell.")


def _args(arguments: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return text if len(text) <= 200 else text[:197] + "..."


