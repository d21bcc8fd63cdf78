"""The default runtime: CPython for WASI under wasmtime, in this process.

The channel: the guest calls `recv_into` on a reserved socket descriptor. That reaches WASI's
`sock_recv`, which we shadow completely: the guest is given no sockets, so the real function
could only ever fail, and every other descriptor gets that same "bad descriptor" answer. One
crossing carries the request in (it sits in the guest's buffer) and the answer out (written
into the same buffer), about 10 us.

The imports that can grow the session folder are shadowed too, checked against its quota and
handed on to the real WASI functions (see `shadow.py`).
"""

from __future__ import annotations

import contextlib
import logging
import struct
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import wasmtime

from ._capi import Memory, i32, i64, set_i32
from ._hostfuncs import DEADLINE_CB, NO_FINALIZER, guarded, host_function, sleep, tls
from .base import GUEST_DIR, GuestSpec, GuestTrap, Instance, Runtime, TrapReason
from .cache import load_module
from .epoch import EpochTicker
from .locate import WasmFile, locate_python_wasm
from .quota import DiskQuota
from .shadow import FORWARDED, GUARDED, Passthrough, define_shadow, passthrough_module
from .stack import GuestStack, export_stack_pointer

__all__ = ["WasmtimeRuntime", "CHANNEL_FD"]

log = logging.getLogger("tooliscode")

CHANNEL_FD = 1000
_MORE = 0xFFFFFFFF
_EBADF, _EINVAL = 8, 28
_O_CREAT, _O_TRUNC = 1, 8
_U32 = struct.Struct("<I")
_FLAGS = struct.Struct("<H")
_SOCK_RECV_ARGS = struct.Struct("<I12xI12xI12xI12xI12xI12x")  # six wasmtime_val_raw_t
_IOVEC = struct.Struct("<II")
_ctypes = wasmtime._ffi.ctypes
WASM_STACK = 2 << 20
"""wasmtime's own stack for wasm frames (its default is 512 KiB; 2 MiB is as far as it goes
without async stacks): recursion CPython does not count, such as hashing a deeply nested
tuple, goes as deep as natively before it traps. The guest's thread gets four times that."""
_ENGINE_FLAGS = "epoch_interruption,max_wasm_stack=2MiB,stack_pointer_export"

_TRANSPORT = f'''
import _socket, struct as _struct
_sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, {CHANNEL_FD})
_buf = bytearray(1 << 16)

def exchange(request):
    """One round trip to the host: `request` bytes in, the answer's bytes out."""
    global _buf
    need = 4 + len(request)
    if need > len(_buf):
        _buf = bytearray(need)
    buf = _buf
    _struct.pack_into("<I", buf, 0, len(request))
    buf[4:need] = request
    n = _sock.recv_into(buf)
    total = _struct.unpack_from("<I", buf, 0)[0]
    if n == 4 + total:
        out = bytes(memoryview(buf)[4:n])
    else:
        big = bytearray(4 + total)
        _struct.pack_into("<I", big, 0, {_MORE})
        n = _sock.recv_into(big)
        out = memoryview(big)[4:n]
    if len(_buf) > (1 << 20):
        _buf = bytearray(1 << 16)
    return out
'''


def _channel(inst: WasmtimeInstance, caller: int, args: int, nargs: int) -> int:
    set_i32(args, inst._channel(caller, args))
    return 0



class WasmtimeInstance(Instance):
    """One CPython guest in its own wasmtime store."""

    fds: set[int] | None = None
    """The descriptors the guest opened and has not closed, where they are kept count of."""
    stack: GuestStack | None = None
    """The guest's C stack, where it was moved to a region of its own (see `stack.py`)."""

    def track(self, name: str, fd: int, other: int = 0) -> None:
        """A descriptor was opened (`path_open`), closed or moved (see `_hostfuncs.tracked`)."""

    def __init__(self, runtime: WasmtimeRuntime, spec: GuestSpec):
        self.handler = None
        self.output = None
        self._rt = runtime
        self._pending: bytes | None = None
        self._deadline: float | None = None
        self._armed = False
        self._stop_reason: TrapReason | None = None
        self._stop_released = False
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

    def _wasi_config(self, spec: GuestSpec) -> wasmtime.WasiConfig:
        wasi = wasmtime.WasiConfig()
        wasi.argv = ["python", "-I", "-S", "-c", spec.boot_source]
        env = dict(spec.extra_env)
        if self._rt.wasm.lib_dir is not None:
            env.setdefault("PYTHONHOME", "/")
        wasi.env = list(env.items())
        wasi.preopen_dir(str(spec.workdir), GUEST_DIR)
        if self._rt.wasm.lib_dir is not None:
            wasi.preopen_dir(str(self._rt.wasm.lib_dir), "/lib", fs_mutable=False)
        return wasi

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

    # -- the guest's thread -------------------------------------------------------------

    def run(self) -> None:
        self._call(self._instance.exports(self._store)["_start"])

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
            if self._stop_reason is not None and not self._stop_released:
                self._stop_released = True  # `stop` held the ticker once: let it go once
                self._rt.ticker.release()

    def _classify(self, exc: Exception) -> TrapReason:
        code = getattr(exc, "trap_code", None)
        if code == wasmtime.TrapCode.STACK_OVERFLOW or "stack" in str(exc).lower() \
                or self.overran_stack():  # its C stack ran into the memory below it
            return "stack"
        if code == wasmtime.TrapCode.INTERRUPT:
            return "timeout"
        return "crash"

    def _channel(self, caller: int, args: int) -> int:
        fd, iovs, count, _flags, ro_len, ro_flags = _SOCK_RECV_ARGS.unpack(
            _ctypes.string_at(args, _SOCK_RECV_ARGS.size))
        if fd != CHANNEL_FD:
            return _EBADF
        if count < 1:
            return _EINVAL
        mem = Memory(caller, self._memory)
        ptr, length = _IOVEC.unpack(mem.read(iovs, 8))
        mem.check(ro_len, 4), mem.check(ro_flags, 2), mem.check(ptr, length)
        if length < 4:
            return _EINVAL
        view = mem.view
        declared = _U32.unpack_from(view, ptr)[0]
        if declared == _MORE:
            payload, self._pending = self._pending or b"", None
        elif declared > length - 4:
            return _EINVAL
        else:
            handler = self.handler
            payload = handler(view[ptr + 4:ptr + 4 + declared]) if handler is not None else b""
        n = 4 + len(payload)
        if n <= length:
            mem.write(ptr, _U32.pack(len(payload)) + payload)
        else:
            mem.write(ptr, _U32.pack(len(payload)))
            self._pending, n = payload, 4
        _U32.pack_into(view, ro_len, n)
        _FLAGS.pack_into(view, ro_flags, 0)
        return 0

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
        if not self._armed:
            self._armed = True
            self._rt.ticker.acquire()
        self._store.set_epoch_deadline(1)

    def disarm(self) -> None:
        self._deadline = None
        if self._armed:
            self._armed = False
            self._rt.ticker.release()

    def configure(self, memory_bytes: int, disk_bytes: int | None,
                  disk_entries: int | None) -> None:
        self._store.set_limits(memory_size=memory_bytes)
        self._quota.max_bytes, self._quota.max_entries = disk_bytes, disk_entries

    def overran_stack(self) -> bool:
        return self.stack is not None and self._store is not None and self.stack.overran()

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
            self._rt.ticker.acquire()

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


class WasmtimeRuntime(Runtime):
    """CPython on WASI under wasmtime. Create one per process (see `default_runtime`)."""

    name = "wasmtime-wasi"
    thread_stack = 4 * WASM_STACK
    _gate = threading.Lock()
    """Guards `_making` and `_closed` (of every runtime: it is held for a moment)."""
    _making = 0
    """Instances being made now: `close` frees nothing under them."""
    _closed = False

    def __init__(self, wasm: str | Path | WasmFile | None = None, *,
                 expected_sha256: str | None = None, tick_s: float = 0.005):
        self.wasm = wasm if isinstance(wasm, WasmFile) else locate_python_wasm(wasm, expected_sha256)
        config = wasmtime.Config()
        config.epoch_interruption = True
        config.max_wasm_stack = WASM_STACK
        self.engine = wasmtime.Engine(config)
        self.module = load_module(self.engine, self.wasm, flags=_ENGINE_FLAGS,
                                  transform=export_stack_pointer)
        self.forwarded = FORWARDED
        self.passthrough = passthrough_module(self.engine, self.module, FORWARDED)
        self.linker = wasmtime.Linker(self.engine)
        self.linker.define_wasi()
        self.linker.allow_shadowing = True
        shadows = {"sock_recv": _channel, "poll_oneoff": sleep,
                   **{name: guarded(name) for name in GUARDED}}
        self._callbacks = [define_shadow(self.linker, self.module, name, host_function(name, body))
                           for name, body in shadows.items()]
        self.ticker = EpochTicker(self.engine, tick_s)
        self._live: weakref.WeakSet[WasmtimeInstance] = weakref.WeakSet()

    @property
    def transport_source(self) -> str:
        return _TRANSPORT

    @property
    def fingerprint(self) -> str:
        """What guest-side caches (precompiled guest modules) are keyed by."""
        return f"{self.name}:{self.wasm.sha256}"

    def instantiate(self, spec: GuestSpec) -> WasmtimeInstance:
        with self.making():
            instance = self._make(spec)
            self._live.add(instance)
        return instance

    def _make(self, spec: GuestSpec) -> WasmtimeInstance:
        instance = WasmtimeInstance(self, spec)
        instance.stack = GuestStack.move(instance._store, instance._instance.exports(instance._store))
        return instance

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
