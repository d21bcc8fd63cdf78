"""One guest interpreter on its own thread, taking commands one at a time.

The guest asks for work by sending a "ready" (or "done", carrying the last result) frame;
the handler then blocks in the host until a command arrives. So between commands the
guest's thread sleeps inside the host and costs no CPU.

A turn-based runtime never parks inside the guest: the thread waits for a command out here
and then runs one turn (`_guest_loop.py`). This module holds what any thread may call, and
the thread's start and end.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..runtime import GuestSpec, GuestTrap, Runtime
from ._boot import BAKED_BOOT, BOOT_SOURCE, boot_reply
from ._command import Command, NotStarted, OpsHandler, settle
from ._guest_code import guest_code
from ._guest_loop import BETWEEN, HURRY, GuestLoop
from ._handover import Handover
from ._limits import Limits
from ._points import Points

__all__ = ["Worker", "join_all"]

log = logging.getLogger("tooliscode")


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


class Worker(GuestLoop):
    """Owns one guest instance and the thread that runs it."""

    def __init__(self, runtime: Runtime, workdir: Path, limits: Limits, *, ahead: bool = False):
        """`ahead`: made ahead of need (a pool's), so not in a slot (`GuestSpec.ahead`)."""
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
                         boot_reply=boot_reply(self._code, True) if self._turns else None,
                         ahead=ahead)
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
        the action waits for `_guest_loop.QUIET_S` first, unless a command comes or `hurry`
        is called."""
        if not self._turns:
            raise RuntimeError("only a turn-based guest has a moment between turns")
        return self.submit(Command({"op": BETWEEN, "action": action, "forgets": forgets,
                                    "quiet": quiet}))

    def hurry(self) -> None:
        """From any thread: a quiet action waiting (`after_turn(quiet=True)`) runs now."""
        self.submit(Command({"op": HURRY}))

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
