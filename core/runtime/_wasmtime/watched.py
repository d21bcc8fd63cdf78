"""What every guest under wasmtime has, whatever its module: its own store with a memory limit,
a deadline kept by epoch interruption, a stop that works from any thread, and the session
folder's quota. A runtime's own instance says how the guest is linked, started and called.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from abc import abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

import wasmtime

from ..base import GuestSpec, GuestTrap, Instance, Runtime, TrapReason
from .capi import set_epoch_deadline, store_context
from .epoch_ticker import EpochTicker
from .folder_quota import DiskQuota
from .host_functions import DEADLINE_CB, NO_FINALIZER, tls
from .tiers import Tier, Tiers

__all__ = ["WatchedGuest", "WatchedRuntime", "describe_trap", "OPEN_FILES"]

log = logging.getLogger("tooliscode")

OPEN_FILES = 1024
"""The most files and folders one guest may hold open: each is a descriptor of the host
process, which all its sessions share (Linux's usual per-process default)."""


class WatchedGuest(Instance):
    """One guest in its own wasmtime store: its limits, its deadline, its folder quota."""

    def __init__(self, runtime: WatchedRuntime, spec: GuestSpec, tier: Tier):
        self.handler = None
        self.output = None
        self._rt = runtime
        self.tier = tier
        """The compile this guest runs (see `tiers.py`)."""
        self._ticker = runtime.ticker
        self._deadline: float | None = None
        self._armed = False
        self._parked = False
        """Waiting in the host for a decision: not watched until `unpark`."""
        self._stop_reason: TrapReason | None = None
        self._trap_reason: TrapReason | None = None
        self.stopping = threading.Event()
        """Set by `stop`: a guest waiting in the host (a sleep) wakes up for it."""
        self._changed = False
        self._quota = DiskQuota(spec.workdir, spec.disk_bytes, spec.disk_entries)
        self.opened: set[int] = set()
        """The guest's open files and folders (the runtime's handles for them)."""
        self._too_many_open = False
        self.memory_bytes = spec.memory_bytes
        """The most memory the guest may have (its store's limit)."""
        self._store = self._new_store(spec.memory_bytes)

    @property
    def outdated(self) -> bool:
        current = self._rt.tiers.current
        return self.tier is not current and self.tier is not current.slots

    def _new_store(self, memory_bytes: int) -> wasmtime.Store:
        """A store for this guest: its memory limit, its deadline check."""
        store = wasmtime.Store(self.tier.engine)
        store.set_limits(memory_size=memory_bytes)
        store.set_epoch_deadline(1)
        wasmtime._ffi.wasmtime_store_epoch_deadline_callback(store.ptr(), DEADLINE_CB, None,
                                                             NO_FINALIZER)
        return store

    # -- the guest's thread -------------------------------------------------------------

    def _call(self, export: Callable[..., Any], *args: Any, exit_ok: bool = True,
              ends: bool = True) -> Any:
        """Call `export(store, *args)` on this thread as the current guest; a trap becomes a
        `GuestTrap` (a clean exit too, unless `exit_ok`). The guest is disarmed after it,
        unless not `ends`: a call that only prepares the next one (a turn's allocation),
        when the deadline armed for a turn must hold through it (one that fails disarms)."""
        tls.instance = self
        kept = False
        try:
            value = export(self._store, *args)
            kept = not ends
            return value
        except wasmtime.ExitTrap as exc:
            if not exit_ok or exc.code != 0 or self._stop_reason is not None:
                raise GuestTrap("exit", f"the interpreter exited with status {exc.code}") from None
            return None
        except (wasmtime.Trap, wasmtime.WasmtimeError) as exc:
            reason = self._trap_reason or self._classify(exc)
            raise GuestTrap(reason, describe_trap(reason, exc)) from None
        finally:
            tls.instance = None
            if not kept:
                self.disarm()
            if self._stop_reason is not None:
                self._ticker.unwatch((self, "stop"))

    def _classify(self, exc: Exception) -> TrapReason:
        code = getattr(exc, "trap_code", None)
        if code == wasmtime.TrapCode.STACK_OVERFLOW or "stack" in str(exc).lower():
            return "stack"
        if code == wasmtime.TrapCode.INTERRUPT:
            return "timeout"
        return "crash"

    def note_change(self) -> None:
        """The guest is about to change the session folder: the first time since `arm`,
        `on_change` hears of it."""
        if not self._changed:
            self._changed = True
            if self.on_change is not None:
                self.on_change()

    def arm(self, seconds: float | None) -> None:
        self._deadline = None if seconds is None else time.monotonic() + seconds
        self._quota.stale()
        self._changed = False
        self._armed = True
        self._ticker.watch(self, self._deadline)
        set_epoch_deadline(store_context(self._store.ptr()), 1)

    def park(self) -> None:
        if self._armed:
            self._armed, self._parked = False, True
            self._ticker.unwatch(self)

    def unpark(self, waited: float) -> None:
        if self._deadline is not None:
            self._deadline += waited
        if self._parked:
            self._parked, self._armed = False, True
            self._ticker.watch(self, self._deadline)
            set_epoch_deadline(store_context(self._store.ptr()), 1)

    def disarm(self) -> None:
        self._deadline, self._parked = None, False
        if self._armed:
            self._armed = False
            self._ticker.unwatch(self)

    def configure(self, memory_bytes: int, disk_bytes: int | None,
                  disk_entries: int | None) -> None:
        self._store.set_limits(memory_size=memory_bytes)
        self.memory_bytes = memory_bytes
        self._quota.max_bytes, self._quota.max_entries = disk_bytes, disk_entries

    def may_open(self) -> bool:
        """May the guest open one more file or folder? (False is noted for the model.)"""
        if len(self.opened) < OPEN_FILES:
            return True
        self._too_many_open = True
        return False

    def take_notices(self) -> list[str]:
        notices = []
        if self._too_many_open:
            self._too_many_open = False
            notices.append(f"The code held {OPEN_FILES:,} files open at once, the most a session "
                           "may: further opens were refused. Close files when done with them "
                           "(`with open(...) as f:`).")
        if self._quota.hit:
            self._quota.hit = False
            q = self._quota
            limits = [f"{q.max_bytes:,} bytes" if q.max_bytes is not None else "",
                      f"{q.max_entries:,} entries" if q.max_entries is not None else ""]
            notices.append(f"The session folder is full (its quota is "
                           f"{' and '.join(x for x in limits if x)}): writes were refused with "
                           "'Disk quota exceeded'. Delete files to make room.")
        return notices

    def after_host_call(self) -> None:
        """From the guest's thread, as a host call that took time returns (a tool call): if
        the guest must stop by now, it checks at once, rather than at the ticker's next tick.
        A call cut short at the cell's deadline then ends the cell as its time limit, not as
        a tool error that the code could catch and go on after."""
        if (self._armed or self._stop_reason is not None) and self._should_stop() is not None:
            set_epoch_deadline(store_context(self._store.ptr()), 0)

    def _poll_stop(self) -> TrapReason | None:
        reason = self._should_stop()
        if reason is not None:
            self._trap_reason = reason
        return reason

    def _should_stop(self) -> TrapReason | None:
        if self._stop_reason is not None:
            return self._stop_reason
        if self._deadline is not None and time.monotonic() >= self._deadline:
            return "timeout"
        return None

    def wait_until(self, until: float) -> TrapReason | None:
        """From the guest's thread, inside a host call: wait until `time.monotonic()` reaches
        `until`, or less if the guest must stop meanwhile (the reason is returned then)."""
        while True:
            reason = self._poll_stop()
            if reason is not None:
                return reason
            now = time.monotonic()
            if now >= until:
                return None
            nearest = until if self._deadline is None else min(until, self._deadline)
            self.stopping.wait(max(0.0, nearest - now))  # `stop` wakes it at once

    # -- any thread ---------------------------------------------------------------------

    def stop(self, reason: TrapReason) -> None:
        if self._stop_reason is None:
            self._stop_reason = reason
            self.stopping.set()
            self._ticker.watch((self, "stop"), 0.0)  # due now, until the guest has stopped

    def close(self) -> None:
        self.handler = self.output = self.on_change = None
        self._release()
        store, self._store = self._store, None  # type: ignore[assignment]
        if store is not None:
            store.close()

    @abstractmethod
    def _release(self) -> None:
        """Drop the handles into the store before it closes."""


def describe_trap(reason: TrapReason, exc: Exception) -> str:
    if reason == "timeout":
        return "the cell ran past its time limit and was stopped"
    if reason == "cancelled":
        return "the cell was cancelled"
    if reason == "stack":
        return "the guest ran out of stack (runaway recursion)"
    if reason == "abandoned":
        return "the guest was abandoned"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"the guest crashed: {first}"


class WatchedRuntime(Runtime):
    """What every runtime under wasmtime shares: its compiles (`tiers`), the epoch ticker,
    the live guests, and closing safely at exit."""

    tiers: Tiers
    _gate = threading.Lock()
    """Guards `_making` and `_closed` (of every runtime: it is held for a moment)."""
    _making = 0
    """Instances being made now: `close` frees nothing under them."""
    _closed = False

    def _start_watching(self) -> None:
        self._live: weakref.WeakSet[WatchedGuest] = weakref.WeakSet()

    @property
    def ticker(self) -> EpochTicker:
        return self.tiers.ticker

    @property
    def engine(self) -> wasmtime.Engine:
        """The engine new guests run on."""
        return self.tiers.current.engine

    def warm_up(self) -> bool:
        return self.tiers.wait()

    def instantiate(self, spec: GuestSpec) -> WatchedGuest:
        with self.making():
            instance = self._make(spec)
            self._live.add(instance)
        return instance

    @abstractmethod
    def _make(self, spec: GuestSpec) -> WatchedGuest:
        """A new instance of this runtime's own kind."""

    @contextlib.contextmanager
    def making(self) -> Iterator[None]:
        """Around making an instance (add it to `_live` inside): a thread may still be
        making one when exit closes the runtime, and the engine freed under it crashes the
        process. Once closed, making one is a clear error."""
        with self._gate:
            if self._closed:
                raise RuntimeError("the sandbox runtime is closed (the process is exiting)")
            self._making += 1
        try:
            yield
        finally:
            with self._gate:
                self._making -= 1

    def close(self) -> None:
        """Free the engine and what hangs on it now rather than during interpreter shutdown,
        when wasmtime-py can no longer call its C library. Skipped while a guest lives or is
        being made."""
        with self._gate:
            if self._making or any(inst._store is not None for inst in self._live):
                return
            self._closed = True
        tiers = self.__dict__.pop("tiers", None)
        if tiers is not None:
            tiers.close()
