"""The guest's thread's half of a `Worker`: the turn loop and the guest's requests.

A turn-based guest never parks inside itself: its thread waits for a command out here, then
runs one turn, in which the guest asks for the command (its "ready" answered with the turn's
source where it fits), runs it, reports "done", and is given the next command or told to
"yield". Everything here runs on that thread only; `Worker` holds what other threads call.
"""

from __future__ import annotations

import marshal
import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from ..runtime import spare_spinner
from ._boot import SERVE, SERVE_ANSWERED, boot_answer
from ._command import Command, OpsHandler, settle
from ._frames import EMPTY_ANSWER, EMPTY_FRAME, parse_frame
from ._points import POINT_WAIT_S

if TYPE_CHECKING:
    from ..runtime import Instance
    from ._handover import Handover
    from ._limits import Limits
    from ._points import Points

__all__ = ["BETWEEN", "HURRY", "IDLE_AFTER_S", "QUIET_S", "GuestLoop"]

MEMORY_GRACE_BYTES = 16 * 1024 * 1024
"""How far past `Limits.memory_bytes` a guest may grow after hitting it, once."""
IDLE_AFTER_S = 0.1
"""How long a guest waits for a command before its idle work is done (see `_wait`)."""
BETWEEN = "between-turns"
"""A command the host runs itself, on the guest's thread, outside any turn
(`Worker.between_turns`)."""
HURRY = "hurry"
"""A command that only ends a quiet wait (`Worker.hurry`)."""
QUIET_S = 0.05
"""How long an action asked for with `Worker.after_turn(quiet=True)` waits, unless hurried,
for the thread that asked for it to be done with its own work (see `_wait_for_quiet`)."""
STACK_OVERRUN = ("The code recursed so deeply that the interpreter's C stack ran past its end, "
                 "so its memory may be damaged: it is replaced before the next cell.")


class GuestLoop:
    """What a `Worker`'s guest thread runs between its start and its end (`Worker._main`).
    The state is the worker's, set up by `Worker.__init__`; `_lock` guards what other
    threads read."""

    instance: Instance
    limits: Limits
    handover: Handover
    points: Points
    ops: OpsHandler | None
    booted: threading.Event
    _commands: queue.SimpleQueue[Command]
    _lock: threading.Lock
    _closed: bool
    _current: Command | None
    _held: Command | None
    _finished: tuple[Command, dict[str, Any]] | None
    _exiting: bool
    _ready: dict[str, Any] | None
    _turns: bool
    _code: bytes | None
    _baked: bool
    _grace_given: bool

    def _claim(self, command: Command) -> bool:
        """`Worker._claim`: False when `command` was dropped."""
        raise NotImplementedError

    def _run_between(self, command: Command) -> None:
        try:
            command.future.set_result(command.message["action"](self.instance))
        except BaseException as exc:  # noqa: BLE001 - the caller gets it; the guest lives on
            command.future.set_exception(exc)

    def _after_memory_error(self) -> None:
        """Once the guest has hit its memory limit, raise the limit a little, once: variables
        may hold all of it, and without room the guest could not even run `del big`."""
        if not self._grace_given:
            self._grace_given = True
            limits = self.limits
            self.instance.configure(limits.memory_bytes + MEMORY_GRACE_BYTES, limits.disk_bytes,
                                    limits.disk_entries)

    def _serve_turns(self) -> None:
        self.instance.run()  # boot: the guest sets up and returns
        self.booted.set()  # it waits for its first command (out here)
        while not self._exiting:
            command, self._held = self._held, None  # one the last turn left for after it
            if command is None:
                command = self._wait()
            op = command.message.get("op")
            if op == "exit":
                return
            if op == BETWEEN:
                if command.message.get("quiet") and self._held is None:
                    self._wait_for_quiet()
                self._run_between(command)
                continue
            if op == HURRY or command.dropped:  # dropped: cancelled while it waited (no
                continue                         # turn for it: `_take` decides)
            self._held = command
            try:
                self._turn()
            finally:
                self._deliver()
                if self.points.due and self._point_wanted():
                    self.points.commit()

    def _wait_for_quiet(self) -> None:
        """Before a quiet action: wait until the thread that asked for it is likely done
        with its own Python (`QUIET_S`), or a command comes, or `hurry`. An action that
        needs the interpreter lock (a renewal, most of a millisecond) would otherwise take
        it from that thread at its first system call: a framework's run that renews its
        sandbox as it ends would end that much later."""
        self._hold_next(QUIET_S)  # served after the action, as it came after it

    def _hold_next(self, timeout: float) -> Command | None:
        """The next command if one comes within `timeout`, held for the loop to serve next
        (`_held`); a `hurry` only ends the wait."""
        try:
            command = self._commands.get(timeout=timeout)
        except queue.Empty:
            return None
        if command.message.get("op") == HURRY:
            return None
        self._held = command
        return command

    def _turn(self) -> None:
        """One turn of the command loop. Where the instance can, the guest's first request
        ("ready") is answered with the turn's source: one crossing fewer per cell."""
        limit = self.instance.first_answer_limit
        if limit:
            ready = self._next(None)  # what "ready" is answered
            try:
                first = marshal.dumps(ready)
            except (ValueError, TypeError):
                first = b""
            if 0 < len(first) <= limit:
                self.instance.turn(SERVE_ANSWERED, first)
                return
            self._ready = ready  # too big to go with the source: it asks for it
        self.instance.turn(SERVE)

    def _wait(self) -> Command:
        """The next command (no wasm stack is live while we wait). Where the instance has
        work for an idle moment (`Instance.idle`), it is done once no command has come for
        `IDLE_AFTER_S`: a command that comes sooner (cells run one after another, a session
        closed at once) does not wait for it. With none waiting, the thread first makes sure
        it will find a store to spin in for commands in later turns (`_soon`)."""
        if self._commands.empty():
            spare_spinner()
        if self.instance.idle_work:
            try:
                return self._commands.get(timeout=IDLE_AFTER_S)
            except queue.Empty:
                self.instance.idle()
        return self._commands.get()

    def _deliver(self, ring: bool = True) -> None:
        """Give the finished command its result. A turn-based guest's is given once its turn
        has ended: its caller then wakes to a free interpreter lock, where during the turn's
        last steps the two threads would hand the lock back and forth. `ring`: ring the
        bell a caller may be spinning on now (`_soon` rings it later, without the GIL)."""
        finished, self._finished = self._finished, None
        if finished is not None:
            self.handover.given()
            settle(finished[0].future, finished[1])
            if ring:
                self.handover.delivered.ring()

    def _point_wanted(self) -> bool:
        """A rollback point is due (its result given): False when it would be the session's
        first and the next command, if it comes within `POINT_WAIT_S`, is an exit. A session
        closed right after its first cell (as a framework's run that makes one code call
        closes its own) then pays for no point; the first is the dearest (the data runtime's
        copies every page written since the guest started). Later points are made at once,
        while the caller reads the result. A cell that comes meanwhile waits for the point;
        cancelled while it waits, it is dropped (`drop`), and the point is kept all the same.
        Nor is a point made, first or not, when the next command forgets the state (a
        renewal)."""
        if not self._turns:
            return True
        command = self._held
        if command is None and self.points.point is None:
            command = self._hold_next(POINT_WAIT_S)
            if command is None:
                return True
        message = command.message if command is not None else {}
        if message.get("op") == "exit" or (message.get("op") == BETWEEN
                                           and message.get("forgets")):
            self.points.due = False  # `_take` then ends the turn, or the guest, for it
            return False
        return True

    def _take(self) -> Command | None:
        """The next command for the guest; None tells a turn-based guest to yield."""
        if self.points.due:  # the commit comes first, between turns
            return None
        while True:
            if not self._turns:
                command: Command | None = self._commands.get()
            else:
                command, self._held = self._held, None
                if command is None:
                    try:
                        command = self._commands.get_nowait()
                    except queue.Empty:
                        command = self._soon()
                        if command is None:
                            return None
                op = command.message.get("op")
                if op == HURRY:  # nothing waits quietly in a turn
                    continue
                if op == "exit":
                    self._exiting = True
                    return None
                if op == BETWEEN:  # runs once this turn has ended
                    self._held = command
                    return None
            assert command is not None
            if self._claim(command):
                return command

    def _soon(self) -> Command | None:
        """The next command, if it comes soon (`Handover.next_command`), with the result given
        first. A caller running cells one after another sends the next within a tenth of a
        millisecond of the last one's result: waiting for it in the turn saves ending the
        turn and starting another (a thread wake-up and the turn's entry, about a third of
        such a cell). Nothing runs meanwhile: the guest is in a host call."""
        since, seen = time.perf_counter(), self.handover.submitted.count
        self._deliver(ring=False)
        return self.handover.next_command(self._commands, since, seen)

    def _changing(self) -> None:
        current = self._current
        if current is not None and current.on_change is not None:
            current.on_change()

    def _output(self, stream: str, data: bytes) -> None:
        current = self._current
        if current is not None:
            current.add_raw(stream, data)

    def _handle(self, frame: bytes) -> bytes:
        if frame == EMPTY_FRAME:  # the bare crossing, measured by the benchmarks
            return EMPTY_ANSWER
        if frame[:1] == b"\0":  # raw bytes: a checkpoint's, taken by its command alone
            current = self._current
            if current is None or current.message.get("op") != "checkpoint":
                return marshal.dumps({"ok": False, "kind": "protocol",
                                      "error": "no command takes bytes now"})
            current.blob = bytes(frame[1:])
            return EMPTY_ANSWER
        try:
            msg = parse_frame(frame)
            if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
                raise ValueError("a request must be a JSON object with a string 'op'")
            reply = self._dispatch(msg)
        except Exception as exc:  # noqa: BLE001 - frames are untrusted input
            reply = {"ok": False, "kind": "protocol", "error": f"bad request to the host: {exc}"}
        try:
            return marshal.dumps(reply)
        except (ValueError, TypeError) as exc:
            return marshal.dumps({"ok": False, "kind": "protocol",
                                  "error": f"the host could not encode its answer: {exc}"})

    def _dispatch(self, msg: dict[str, Any]) -> Any:
        op = msg["op"]
        if op == "ready" and self._ready is not None:
            ready, self._ready = self._ready, None
            return ready
        if op in ("ready", "done"):
            return self._next(msg.get("result") if op == "done" else None)
        if op == "boot":
            return boot_answer(self._code, self._turns, self._baked)
        if self.ops is None:
            return {"ok": False, "kind": "protocol", "error": "no tools are connected"}
        current = self._current
        return self.ops(op, msg, None if current is None else current.context)

    def _next(self, result: Any) -> dict[str, Any]:
        self.booted.set()
        current, self._current = self._current, None
        if isinstance(result, dict) and result.get("error_type") == "MemoryError":
            self._after_memory_error()
        overran = self.instance.overran_stack()
        given_up = current is not None and current.future.done()  # cancelled: nothing kept
        # Before the result is given: a point the result brought (a delta, or "the same")
        # is kept in microseconds, and done before the caller's thread wakes it costs no
        # wait for the interpreter lock on either side.
        follow = self.points.after(current.message.get("op"), current.blob, result) \
            if current is not None and not given_up and not overran else None
        if current is not None and not current.future.done():
            current.notices.extend(self.instance.take_notices())
            if overran:
                current.notices.append(STACK_OVERRUN)
            self._finished = (current, result if isinstance(result, dict) else {})
            if not self._turns:
                self._deliver()
        self.instance.disarm()
        if overran:  # the next command goes to a new guest (`alive` is False from now)
            with self._lock:
                self._closed = True
            self.instance.stop("stack")
            return {"op": "exit"}
        if follow is not None:  # its checkpoint, in this turn, once its result is given
            self._deliver()
            if self._point_wanted():
                self._current = Command(follow)
                self.instance.arm(self.limits.timeout_s)
                return self._current.message
        command = self._take()
        if command is None:
            return {"op": "yield"}
        self._deliver()  # this turn goes on with the next command
        self._current = command
        if command.before is not None:
            command.before()
        if command.message.get("op") == "cell":
            self.points.mark(command.message)
            self.instance.arm(command.seconds_left())
        return command.message
