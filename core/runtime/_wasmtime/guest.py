"""What both runtimes under wasmtime share: a guest in its own store, with its memory limit,
its deadline (epoch interruption), its console and the session folder's quota.

The imports that can grow the session folder are shadowed, checked against its quota and
handed on to the real WASI functions (see `shadow.py`).
"""

from __future__ import annotations

import contextlib
import logging
import struct
import threading
import time
import weakref
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any

import wasmtime

from ..base import GuestSpec, GuestTrap, Instance, Runtime, TrapReason
from .capi import Memory, i32, i64
from .epoch_ticker import EpochTicker
from .folder_quota import DiskQuota
from .host_functions import DEADLINE_CB, NO_FINALIZER, HostBody, host_function, tls
from .shadow import Passthrough, define_shadow
from .wasm_file import WasmFile

__all__ = ["WasmtimeInstance", "WasmtimeRuntimeBase"]

log = logging.getLogger("tooliscode")

_O_CREAT, _O_TRUNC = 1, 8
_U32 = struct.Struct("<I")
_ctypes = wasmtime._ffi.ctypes


class WasmtimeInstance(Instance):
    """One CPython guest in its own wasmtime store: its limits, deadline, console and folder
    quota. A runtime's own instance says how the guest is configured and started."""

    fds: set[int] | None = None
    """The descriptors the guest opened and has not closed, where they are kept count of."""

    def track(self, name: str, fd: int, other: int = 0) -> None:
        """A descriptor was opened (`path_open`), closed or moved (see `_hostfuncs.tracked`)."""

    def __init__(self, runtime: WasmtimeRuntimeBase, spec: GuestSpec):
        self.handler = None
        self.output = None
        self._rt = runtime
        self._pending: bytes | None = None
        self._deadline: float | None = None
        self._armed = False
        self._parked = False
        """Waiting in the host for a decision: not watched until `unpark`."""
        self._stop_reason: TrapReason | None = None
        self._trap_reason: TrapReason | None = None
        self._changed = False
        self._quota = DiskQuota(spec.workdir, spec.disk_bytes, spec.disk_entries)
        self._store = wasmtime.Store(runtime.engine)
        self._store.set_limits(memory_size=spec.memory_bytes)
        self._store.set_epoch_deadline(1)
        wasmtime._ffi.wasmtime_store_epoch_deadline_callback(self._store.ptr(), DEADLINE_CB,
                                                             None, NO_FINALIZER)
        self._store.set_wasi(self._wasi_config(spec))
        self._instance = runtime.linker.instantiate(self._store, runtime.module)
        memory = self._instance.exports(self._store)["memory"]
        self._memory_handle = memory  # keeps the struct _memory points into alive
        self._memory = _ctypes.addressof(memory._memory)
        self._passthrough = Passthrough(runtime.engine, runtime.passthrough, self._store, memory,
                                        runtime.forwarded)

    def _console(self, caller: int, args: int) -> int:
        """A write to descriptor 1 or 2, handed to `output` here, on the guest's thread.

        wasmtime's own custom stdout runs its Python callback on a runtime thread that can
        outlive the interpreter at exit, so the guest's console never reaches WASI at all."""
        mem = Memory(caller, self._memory)
        data = mem.gather(i32(args, 1), i32(args, 2))
        mem.write(mem.check(i32(args, 3), 4), _U32.pack(len(data)))
        try:
            if self.output is not None:
                self.output("stdout" if i32(args, 0) == 1 else "stderr", data)
        except Exception:  # noqa: BLE001
            log.exception("tooliscode: output sink failed")
        return 0

    @abstractmethod
    def _wasi_config(self, spec: GuestSpec) -> wasmtime.WasiConfig:
        """The guest's arguments, environment and preopened folders."""

    # -- the guest's thread -------------------------------------------------------------

    def _call(self, export: wasmtime.Func, *args: int, exit_ok: bool = True) -> Any:
        """Call `export` on this thread as the current guest; a trap becomes a `GuestTrap`
        (a clean exit too, unless `exit_ok`)."""
        tls.instance = self
        try:
            return export(self._store, *args)
        except wasmtime.ExitTrap as exc:
            if not exit_ok or exc.code != 0 or self._stop_reason is not None:
                raise GuestTrap("exit", f"the interpreter exited with status {exc.code}") from None
            return None
        except (wasmtime.Trap, wasmtime.WasmtimeError) as exc:
            reason = self._trap_reason or self._classify(exc)
            raise GuestTrap(reason, _describe(reason, exc)) from None
        finally:
            tls.instance = None
            self.disarm()
            if self._stop_reason is not None:
                self._rt.ticker.unwatch((self, "stop"))

    @staticmethod
    def _classify(exc: Exception) -> TrapReason:
        code = getattr(exc, "trap_code", None)
        if code == wasmtime.TrapCode.STACK_OVERFLOW or "stack" in str(exc).lower():
            return "stack"
        if code == wasmtime.TrapCode.INTERRUPT:
            return "timeout"
        return "crash"

    def _allowed(self, name: str, caller: int, args: int) -> bool:
        """May this call that could change the session folder go ahead? (It counts against
        the quota; the first change since `arm` is announced to `on_change`.)"""
        if name in ("fd_write", "fd_pwrite") and i32(args, 0) < 3:
            return True  # the console: never the disk
        if name == "path_open" and not i32(args, 4) & (_O_CREAT | _O_TRUNC):
            return True  # opening to read (writes through it are seen at fd_write)
        if not self._changed:
            self._changed = True
            if self.on_change is not None:
                self.on_change()
        quota = self._quota
        if name in ("fd_write", "fd_pwrite"):
            nbytes = Memory(caller, self._memory).iovec_total(i32(args, 1), i32(args, 2))
            return quota.allow(nbytes=nbytes)
        if name == "fd_allocate":
            return quota.allow(nbytes=i64(args, 2))
        if name == "fd_filestat_set_size":
            return quota.allow(nbytes=i64(args, 1))
        if name == "path_rename" or (name == "path_open" and not i32(args, 4) & _O_CREAT):
            return True
        return quota.allow(entries=1)

    def arm(self, seconds: float | None) -> None:
        self._deadline = None if seconds is None else time.monotonic() + seconds
        self._quota.stale()
        self._changed = False
        self._armed = True
        self._rt.ticker.watch(self, self._deadline)
        self._store.set_epoch_deadline(1)

    def park(self) -> None:
        if self._armed:
            self._armed, self._parked = False, True
            self._rt.ticker.unwatch(self)

    def unpark(self, waited: float) -> None:
        if self._deadline is not None:
            self._deadline += waited
        if self._parked:
            self._parked, self._armed = False, True
            self._rt.ticker.watch(self, self._deadline)
            self._store.set_epoch_deadline(1)

    def disarm(self) -> None:
        self._deadline, self._parked = None, False
        if self._armed:
            self._armed = False
            self._rt.ticker.unwatch(self)

    def configure(self, memory_bytes: int, disk_bytes: int | None,
                  disk_entries: int | None) -> None:
        self._store.set_limits(memory_size=memory_bytes)
        self._quota.max_bytes, self._quota.max_entries = disk_bytes, disk_entries

    def take_notices(self) -> list[str]:
        if not self._quota.hit:
            return []
        self._quota.hit = False
        q = self._quota
        limits = [f"{q.max_bytes:,} bytes" if q.max_bytes is not None else "",
                  f"{q.max_entries:,} entries" if q.max_entries is not None else ""]
        return [f"The session folder is full (its quota is {' and '.join(x for x in limits if x)}): "
                "writes were refused with 'Disk quota exceeded'. Delete files to make room."]

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

    # -- any thread ---------------------------------------------------------------------

    def stop(self, reason: TrapReason) -> None:
        if self._stop_reason is None:
            self._stop_reason = reason
            self._rt.ticker.watch((self, "stop"), 0.0)  # due now, until the guest has stopped

    def close(self) -> None:
        self.handler = self.output = self.on_change = None
        self._instance = self._passthrough = self._memory_handle = None  # type: ignore[assignment]
        store, self._store = self._store, None  # type: ignore[assignment]
        if store is not None:
            store.close()


def _describe(reason: TrapReason, exc: Exception) -> str:
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



class WasmtimeRuntimeBase(Runtime):
    """What every runtime under wasmtime shares: its engine, module and linker (set by the
    subclass), the epoch ticker, and closing safely at exit."""

    wasm: WasmFile
    engine: wasmtime.Engine
    module: wasmtime.Module
    linker: wasmtime.Linker
    passthrough: wasmtime.Module
    forwarded: tuple[str, ...]
    ticker: EpochTicker
    _gate = threading.Lock()
    """Guards `_making` and `_closed` (of every runtime: it is held for a moment)."""
    _making = 0
    """Instances being made now: `close` frees nothing under them."""
    _closed = False

    @property
    def fingerprint(self) -> str:  # type: ignore[override]
        """What saved state and guest-side caches (precompiled guest modules) are keyed by."""
        return f"{self.name}:{self.wasm.sha256}"

    def _link(self, shadows: dict[str, HostBody], tick_s: float) -> None:
        """Link WASI with `shadows` in place of the functions they name (where the module
        imports them), and start the epoch ticker: once `engine` and `module` are set."""
        self.linker = wasmtime.Linker(self.engine)
        self.linker.define_wasi()
        self.linker.allow_shadowing = True
        self._callbacks = [define_shadow(self.linker, self.module, name, host_function(name, body))
                           for name, body in shadows.items()]
        self.ticker = EpochTicker(self.engine, tick_s)
        self._live: weakref.WeakSet[WasmtimeInstance] = weakref.WeakSet()

    def instantiate(self, spec: GuestSpec) -> WasmtimeInstance:
        with self.making():
            instance = self._make(spec)
            self._live.add(instance)
        return instance

    @abstractmethod
    def _make(self, spec: GuestSpec) -> WasmtimeInstance:
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
        """Free the engine, module and linker now rather than during interpreter shutdown,
        when wasmtime-py can no longer call its C library. Skipped while a guest lives or is
        being made."""
        with self._gate:
            if self._making or any(inst._store is not None for inst in self._live):
                return
            self._closed = True
        self.ticker.close()
        for name in ("linker", "passthrough", "module", "engine"):
            handle = self.__dict__.pop(name, None)
            if handle is not None:
                handle.close()
