"""One guest interpreter on its own thread, taking commands one at a time.

The guest asks for work by sending a "ready" (or "done", carrying the last result) frame;
the handler then blocks in the host until a command arrives. So between commands the
guest's thread sleeps inside the host and costs no CPU.

A turn-based runtime never parks inside the guest: the thread waits for a command out here
and then runs one turn, in which the guest asks for the command, runs it, reports "done" and
is told to "yield".
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import marshal
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..runtime import GuestSpec, GuestTrap, Runtime, spare_spinner
from ._boot import BAKED_BOOT, BOOT_SOURCE, SERVE, SERVE_ANSWERED, boot_answer, boot_reply
from ._command import Command, NotStarted, OpsHandler, settle
from ._frames import EMPTY_ANSWER, EMPTY_FRAME, parse_frame
from ._guest_code import guest_code
from ._handover import Handover
from ._limits import Limits
from ._points import POINT_WAIT_S, Points

__all__ = ["Worker", "join_all"]

log = logging.getLogger("tooliscode")

MEMORY_GRACE_BYTES = 16 * 1024 * 1024
"""How far past `Limits.memory_bytes` a guest may grow after hitting it, once."""
IDLE_AFTER_S = 0.1
"""How long a guest waits for a command before its idle work is done (see `_wait`)."""
_BETWEEN = "between-turns"
"""A command the host runs itself, on the guest's thread, outside any turn (`between_turns`)."""
_HURRY = "hurry"
"""A command that only ends a quiet wait (`hurry`)."""
QUIET_S = 0.05
"""How long an action asked for with `after_turn(quiet=True)` waits, unless hurried, for the
thread that asked for it to be done with its own work (see `_wait_for_quiet`)."""
STACK_OVERRUN = ("The code recursed so deeply that the interpreter's C stack ran past its end, "
                 "so its memory may be damaged: it is replaced before the next cell.")


def check_memory(runtime: Runtime, limits: Limits) -> None:
    if limits.memory_bytes < runtime.min_memory_bytes:
        raise ValueError(
            f"the {runtime.name!r} runtime needs Limits.memory_bytes of at least "
            f"{runtime.min_memory_bytes // (1 << 20)} MiB to start a guest; "
            f"{limits.memory_bytes // (1 << 20)} MiB was asked")


_running: set[Worker] = set()
"""Guests whose threads have not ended: exit waits for them (see `join_all`)."""


def join_all(timeout: float) -> None:
    """Shut down every guest and wait, `timeout` seconds in all, for their threads: each one
    frees its instance and runs its clean-up (its folder) before the interpreter goes."""
    import time

    deadline = time.monotonic() + timeout
    for worker in list(_running):
        worker.shutdown(quick=True)
    for worker in list(_running):
        worker.join(max(0.05, deadline - time.monotonic()))


class _Booted(threading.Event):
    """`Worker.booted`: waiting for it starts a guest that waits for its first command."""

    def __init__(self, worker: Worker):
        super().__init__()
        self._worker = worker

    def wait(self, timeout: float | None = None) -> bool:
        worker = self._worker
        with worker._lock:
            worker._start_thread()
        return super().wait(timeout)


class Worker:
    """Owns one guest instance and the thread that runs it."""

    def __init__(self, runtime: Runtime, workdir: Path, limits: Limits):
        self.workdir = workdir
        self._runtime = runtime
        self.limits = limits
        self._grace_given = False
        self.ops: OpsHandler | None = None
        self.death: GuestTrap | None = None
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self.handover = Handover()
        """How commands and results cross between a caller and this guest's thread: a
        caller that waits for a cell's result submits it unrung and spins for the result
        (`Handover.spin_for_result`)."""
        self._current: Command | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._held: Command | None = None
        self._finished: tuple[Command, dict[str, Any]] | None = None
        """A turn-based guest's command that reported, until its turn has ended (see
        `_deliver`)."""
        self._exiting = False
        self._ready: dict[str, Any] | None = None
        """The answer to the guest's "ready" taken before its turn (see `_turn`)."""
        self._turns = runtime.turn_based
        self._baked = runtime.baked_guest
        check_memory(runtime, limits)
        self._code = None if self._baked else guest_code(runtime)
        self._ended = False
        self.booted: threading.Event = _Booted(self)
        """Set once the guest first waits for a command (or has died trying)."""
        self._then: list[Callable[[], None]] = []
        boot = BAKED_BOOT if self._baked else runtime.transport_source + BOOT_SOURCE
        spec = GuestSpec(workdir=workdir, memory_bytes=limits.memory_bytes, boot_source=boot,
                         disk_bytes=limits.disk_bytes, disk_entries=limits.disk_entries,
                         boot_reply=boot_reply(self._code, True) if self._turns else None)
        self.instance = runtime.instantiate(spec)
        self.points = Points(self.instance, lambda: self.limits)
        """The state a stopped cell's session comes back to (see `_points.py`)."""
        self.instance.handler = self._handle
        self.instance.output = self._output
        self.instance.on_change = self._changing
        self.pool_baseline: cf.Future | None = None
        """Set by the pool that made this guest: whether it took a baseline (`keep_baseline`)
        that a session's closing may renew it back to, for the pool (`WarmPool.give_back`).
        None once anything else took one (a run's renewal) or none can be taken."""
        self.thread = threading.Thread(target=self._main, name="tooliscode-guest", daemon=True)
        self._started = False
        _running.add(self)
        if not self._turns:  # CPython boots now, ahead of the first command
            with self._lock:
                self._start_thread()

    @property
    def runtime(self) -> Runtime:
        return self._runtime

    @property
    def alive(self) -> bool:
        return self.death is None and not self._closed

    @property
    def turn_based(self) -> bool:
        """Its guest runs one turn per command, with moments between (`between_turns`)."""
        return self._turns

    # -- any thread ---------------------------------------------------------------------

    def submit(self, command: Command, *, ring: bool = True) -> cf.Future:
        """Queue `command` for the guest. `ring=False` leaves the guest's bell to
        `handover.spin_for_result`, which the caller calls next."""
        with self._lock:
            if not self.alive:
                command.future.set_exception(NotStarted("the guest is gone"))
                return command.future
            self._commands.put(command)
            self.handover.queued()
            self._start_thread()
        if ring:
            self.handover.submitted.ring()
        return command.future

    def drop(self, command: Command) -> bool:
        """From any thread: keep a submitted `command` from ever being handed to the guest.
        False when it already was. A command cancelled while it waits (behind the point the
        last cell keeps, say) thus never stops the guest, nor the point under way."""
        with self._lock:
            if command.started:
                return False
            command.dropped = True
            return True

    def _claim(self, command: Command) -> bool:
        """On the guest's thread, just before handing `command` over: False when it was
        dropped."""
        with self._lock:
            if command.dropped:
                return False
            command.started = True
            return True

    def _start_thread(self) -> None:
        """Start the guest's thread, once (hold `_lock`). A turn-based guest starts at its
        first command: booting it costs next to nothing, and its thread then finds the command
        waiting instead of going to sleep and being woken for it."""
        if self._started:
            return
        self._started = True
        stack = self._runtime.thread_stack
        old_stack = threading.stack_size(stack) if stack else None
        try:
            self.thread.start()
        finally:
            if old_stack is not None:
                threading.stack_size(old_stack)

    def call(self, message: dict[str, Any], timeout: float | None = 60.0) -> Any:
        """Submit a command and wait for its result (for setup and housekeeping)."""
        return self.submit(Command(message)).result(timeout)

    def between_turns(self, action: Callable[[Any], Any], timeout: float | None = 60.0, *,
                      forgets: bool = False) -> Any:
        """Run `action(instance)` on the guest's thread between two turns of a turn-based
        guest, and return what it returns: no wasm stack is live then, so the guest's linear
        memory is its whole state (a snapshot reads it, a restore writes it). `forgets`: the
        action drops the session's state (a renewal), so no rollback point is made for it."""
        return self.after_turn(action, forgets=forgets).result(timeout)

    def after_turn(self, action: Callable[[Any], Any], *, forgets: bool = False,
                   quiet: bool = False) -> cf.Future:
        """`between_turns`, without waiting: the future holds what `action` returns. `quiet`:
        the action waits for `QUIET_S` first, unless a command comes or `hurry` is called."""
        if not self._turns:
            raise RuntimeError("only a turn-based guest has a moment between turns")
        return self.submit(Command({"op": _BETWEEN, "action": action, "forgets": forgets,
                                    "quiet": quiet}))

    def hurry(self) -> None:
        """From any thread: a quiet action waiting (`after_turn(quiet=True)`) runs now."""
        self.submit(Command({"op": _HURRY}))

    def _run_between(self, command: Command) -> None:
        try:
            command.future.set_result(command.message["action"](self.instance))
        except BaseException as exc:  # noqa: BLE001 - the caller gets it; the guest lives on
            command.future.set_exception(exc)

    def configure(self, limits: Limits) -> Callable[[], None]:
        """A `Command.before` hook that gives this guest `limits` (for adopted pool guests)."""
        check_memory(self._runtime, limits)

        def apply() -> None:
            self.limits, self._grace_given = limits, False
            self.instance.configure(limits.memory_bytes, limits.disk_bytes, limits.disk_entries)

        return apply

    def renewed(self, instance: Any, limits: Limits, restart: bool = True) -> bool:
        """An `after_turn` action: the guest made as new for another run or session
        (`Instance.renew`, in this guest's folder), with no rollback point of the last one
        (nothing to come back to) and `limits` as given (a memory error raised them once).
        False when it cannot be: close it then."""
        if not instance.renew(self.workdir, restart):
            return False
        self.points.forget()
        self.configure(limits)()
        return True

    def _after_memory_error(self) -> None:
        """Once the guest has hit its memory limit, raise the limit a little, once: variables
        may hold all of it, and without room the guest could not even run `del big`."""
        if not self._grace_given:
            self._grace_given = True
            limits = self.limits
            self.instance.configure(limits.memory_bytes + MEMORY_GRACE_BYTES, limits.disk_bytes,
                                    limits.disk_entries)

    def stop(self, reason: str) -> None:
        """Make a running guest trap; it will take no more commands."""
        self.instance.stop(reason)  # type: ignore[arg-type]
        if self._turns:  # it may have yielded just now: then its thread waits out here
            self._commands.put(Command({"op": "exit"}))
            with self._lock:
                self._start_thread()

    def shutdown(self, then: Callable[[], None] | None = None, *, quick: bool = False) -> None:
        """Ask the guest to exit, without waiting: its thread frees the instance and then
        runs `then` (removing the session folder, say) once the guest is really gone.

        `quick` stops the guest instead of letting CPython finalize, which would only flush
        files into a folder that `then` deletes anyway."""
        with self._lock:
            if then is not None:
                self._then.append(then)
            if not self._closed:
                self._closed = True
                self._commands.put(Command({"op": "exit"}, before=(
                    (lambda: self.instance.stop("abandoned")) if quick else None)))
                if self._current is not None or self._held is not None:
                    self.instance.stop("abandoned")  # a running cell ends now, not after
                self._start_thread()  # even a guest never used frees its instance there
            ended = self._ended
        if ended:
            self._run_then()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the guest's thread has ended (after `shutdown`); stop it if it has not
        by then. True when it ended."""
        with self._lock:
            if not self._started:  # never given a command, nor shut down
                return False
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout)
            if self.thread.is_alive():
                self.instance.stop("abandoned")
                self.thread.join(timeout)
        return not self.thread.is_alive()

    def _run_then(self) -> None:
        with self._lock:
            actions, self._then = self._then, []
        for action in actions:
            try:
                action()
            except Exception:  # noqa: BLE001
                log.exception("tooliscode: cleaning up after a guest failed")

    # -- the guest's thread -------------------------------------------------------------

    def _main(self) -> None:
        try:
            if self._turns:
                self._serve_turns()
            else:
                self.instance.run()
            self.death = GuestTrap("exit", "the interpreter exited")
        except GuestTrap as trap:
            self.death = trap
        except BaseException as exc:  # noqa: BLE001
            log.exception("tooliscode: guest thread failed")
            self.death = GuestTrap("crash", f"the guest failed: {exc}")
        finally:
            self._deliver()
            with self._lock:
                self._closed = True
                current, self._current = self._current, None
                held, self._held = self._held, None
            try:
                self.instance.close()
            except Exception:  # noqa: BLE001
                log.exception("tooliscode: closing the instance failed")
            self.booted.set()
            with self._lock:
                self._ended = True
            _running.discard(self)
            self._run_then()  # before the waiters hear of the end: the folder is gone by then
            if current is not None:
                settle(current.future, error=self.death)
            if held is not None:
                settle(held.future, error=NotStarted("the guest died first"))
            while True:
                try:
                    pending = self._commands.get_nowait()
                except queue.Empty:
                    break
                settle(pending.future, error=NotStarted("the guest died first"))

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
            if op == _BETWEEN:
                if command.message.get("quiet") and self._held is None:
                    self._wait_for_quiet()
                self._run_between(command)
                continue
            if op == _HURRY or command.dropped:  # dropped: cancelled while it waited (no
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
        if command.message.get("op") == _HURRY:
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
        if message.get("op") == "exit" or (message.get("op") == _BETWEEN
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
                if op == _HURRY:  # nothing waits quietly in a turn
                    continue
                if op == "exit":
                    self._exiting = True
                    return None
                if op == _BETWEEN:  # runs once this turn has ended
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
        if current is not None and not given_up:
            follow = self.points.after(current.message.get("op"), current.blob, result)
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
            self.instance.arm(command.timeout_s)
        return command.message
