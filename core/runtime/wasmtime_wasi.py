"""The default runtime: CPython for WASI under wasmtime, in this process.

The channel: the guest calls `socket.recv_into` on a reserved descriptor. That reaches
WASI's `sock_recv`, which we shadow with a raw C-API host function. Shadowing `sock_recv`
is safe to do completely because the guest is given no sockets, so the real function could
only ever fail; every other descriptor gets the same "bad descriptor" answer. One crossing
carries the request in (it sits in the guest's buffer) and the answer out (written into the
same buffer), about 10 us.
"""

from __future__ import annotations

import ctypes
import logging
import struct
import threading
import time
from pathlib import Path
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

from .base import GUEST_DIR, GuestSpec, GuestTrap, Instance, Runtime, TrapReason
from .cache import load_module
from .epoch import EpochTicker
from .locate import WasmFile, locate_python_wasm

__all__ = ["WasmtimeRuntime", "CHANNEL_FD"]

log = logging.getLogger("tooliscode")

CHANNEL_FD = 1000
_MORE = 0xFFFFFFFF
_EBADF, _EINVAL, _EIO = 8, 28, 29
_U32 = struct.Struct("<I")
_IOVEC = struct.Struct("<II")
_MASK = 0xFFFFFFFF
_tls = threading.local()

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


def _raw(name: str, restype: Any, *argtypes: Any) -> Any:
    """A private ctypes prototype of a C-API function (wasmtime-py's own stays untouched)."""
    fn = ffi.dll[name]
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


_caller_context = _raw("wasmtime_caller_context", ctypes.c_void_p, ctypes.c_void_p)
_memory_data = _raw("wasmtime_memory_data", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_memory_size = _raw("wasmtime_memory_data_size", ctypes.c_size_t, ctypes.c_void_p,
                    ctypes.c_void_p)
_ARGS = struct.Struct("<i12xI12xi12xi12xI12xI12x")  # six wasmtime_val_raw_t (16 bytes each)
_views: dict[int, Any] = {}


class _Memory:
    """The guest's linear memory, bounds-checked: every pointer in a frame is untrusted."""

    __slots__ = ("base", "size", "view")

    def __init__(self, ctx: int, memory: int) -> None:
        self.size = _memory_size(ctx, memory)
        self.base = _memory_data(ctx, memory) or 0
        array = _views.get(self.size)
        if array is None:
            array = _views[self.size] = ctypes.c_char * self.size
        self.view = array.from_address(self.base)

    def check(self, ptr: int, n: int) -> int:
        if n < 0 or ptr + n > self.size:
            raise ValueError(f"guest pointer out of bounds: {ptr}+{n}")
        return ptr

    def read(self, ptr: int, n: int) -> bytes:
        self.check(ptr, n)
        return self.view[ptr:ptr + n]

    def write(self, ptr: int, data: bytes) -> None:
        ctypes.memmove(self.base + self.check(ptr, len(data)), data, len(data))


def _sock_recv(env: int, caller: int, args: int, nargs: int) -> int:
    # An exception escaping a host function would kill the instance: answer EIO instead.
    try:
        inst: WasmtimeInstance | None = getattr(_tls, "instance", None)
        errno = inst._sock_recv(caller, args) if inst is not None else _EBADF
    except BaseException:  # noqa: BLE001
        log.exception("tooliscode: channel failure")
        errno = _EIO
    ctypes.c_int32.from_address(args).value = errno
    return 0


def _on_deadline(ctx: int, env: int, delta: ctypes._Pointer, kind: ctypes._Pointer) -> int:
    try:
        inst: WasmtimeInstance | None = getattr(_tls, "instance", None)
        reason = inst._should_stop() if inst is not None else None
        if reason is not None:
            inst._trap_reason = reason
            err = ffi.wasmtime_error_new(f"tooliscode: guest stopped ({reason})".encode())
            return ctypes.cast(err, ctypes.c_void_p).value or 0
    except BaseException:  # noqa: BLE001
        log.exception("tooliscode: deadline check failed")
    delta[0] = 1
    kind[0] = 0  # continue
    return 0


_UNCHECKED_CB = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p, ctypes.c_size_t)
_FINALIZER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_define_unchecked = _raw("wasmtime_linker_define_func_unchecked", ctypes.c_void_p,
                         ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                         ctypes.c_size_t, ctypes.c_void_p, _UNCHECKED_CB, ctypes.c_void_p,
                         _FINALIZER)
_SOCK_RECV_CB = _UNCHECKED_CB(_sock_recv)
_DEADLINE_CB = ctypes.CFUNCTYPE(
    ctypes.c_size_t, ctypes.POINTER(ffi.wasmtime_context_t), ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ffi.wasmtime_update_deadline_kind_t),
)(_on_deadline)
_NO_FINALIZER = _FINALIZER(lambda _p: None)


class WasmtimeInstance(Instance):
    """One CPython guest in its own wasmtime store."""

    def __init__(self, runtime: WasmtimeRuntime, spec: GuestSpec):
        self.handler = None
        self.output = None
        self._rt = runtime
        self._pending: bytes | None = None
        self._deadline: float | None = None
        self._armed = False
        self._stop_reason: TrapReason | None = None
        self._trap_reason: TrapReason | None = None
        self._store = wasmtime.Store(runtime.engine)
        self._store.set_limits(memory_size=spec.memory_bytes)
        self._store.set_epoch_deadline(1)
        ffi.wasmtime_store_epoch_deadline_callback(self._store.ptr(), _DEADLINE_CB, None,
                                                   _NO_FINALIZER)
        self._store.set_wasi(self._wasi_config(spec))
        self._instance = runtime.linker.instantiate(self._store, runtime.module)
        memory = self._instance.exports(self._store)["memory"]
        self._memory_struct = memory._memory  # kept alive: _memory points into it
        self._memory = ctypes.addressof(self._memory_struct)

    def _wasi_config(self, spec: GuestSpec) -> wasmtime.WasiConfig:
        wasi = wasmtime.WasiConfig()
        wasi.argv = ["python", "-I", "-S", "-c", spec.boot_source]
        env = dict(spec.extra_env)
        if self._rt.wasm.lib_dir is not None:
            env.setdefault("PYTHONHOME", "/")
        wasi.env = list(env.items())
        wasi.stdout_custom = lambda data: self._emit("stdout", data)
        wasi.stderr_custom = lambda data: self._emit("stderr", data)
        wasi.preopen_dir(str(spec.workdir), GUEST_DIR)
        if self._rt.wasm.lib_dir is not None:
            wasi.preopen_dir(str(self._rt.wasm.lib_dir), "/lib", fs_mutable=False)
        return wasi

    def _emit(self, stream: str, data: bytes) -> int:
        try:
            if self.output is not None:
                self.output(stream, bytes(data))
        except Exception:  # noqa: BLE001
            log.exception("tooliscode: output sink failed")
        return len(data)

    # -- the guest's thread -------------------------------------------------------------

    def run(self) -> None:
        _tls.instance = self
        try:
            self._instance.exports(self._store)["_start"](self._store)
        except wasmtime.ExitTrap as exc:
            if exc.code != 0 or self._stop_reason is not None:
                raise GuestTrap("exit", f"the interpreter exited with status {exc.code}") from None
        except (wasmtime.Trap, wasmtime.WasmtimeError) as exc:
            reason = self._trap_reason or self._classify(exc)
            raise GuestTrap(reason, _describe(reason, exc)) from None
        finally:
            _tls.instance = None
            self.disarm()
            if self._stop_reason is not None:
                self._rt.ticker.release()

    @staticmethod
    def _classify(exc: Exception) -> TrapReason:
        code = getattr(exc, "trap_code", None)
        if code == wasmtime.TrapCode.STACK_OVERFLOW or "stack" in str(exc).lower():
            return "stack"
        if code == wasmtime.TrapCode.INTERRUPT:
            return "timeout"
        return "crash"

    def _sock_recv(self, caller: int, args: int) -> int:
        fd, iovs, iovs_len, _flags, ro_len, ro_flags = _ARGS.unpack(ctypes.string_at(args, 96))
        if fd != CHANNEL_FD:
            return _EBADF
        if iovs_len < 1:
            return _EINVAL
        mem = _Memory(_caller_context(caller), self._memory)
        ptr, length = _IOVEC.unpack(mem.read(iovs, 8))
        mem.check(ro_len, 4), mem.check(ro_flags, 2), mem.check(ptr, length)
        if length < 4:
            return _EINVAL
        declared = _U32.unpack(mem.read(ptr, 4))[0]
        if declared == _MORE:
            payload, self._pending = self._pending or b"", None
        elif declared > length - 4:
            return _EINVAL
        else:
            handler = self.handler
            payload = handler(mem.read(ptr + 4, declared)) if handler is not None else b""
        if 4 + len(payload) <= length:
            mem.write(ptr, _U32.pack(len(payload)) + payload)
            n = 4 + len(payload)
        else:
            mem.write(ptr, _U32.pack(len(payload)))
            self._pending, n = payload, 4
        mem.write(ro_len, _U32.pack(n))
        mem.write(ro_flags, b"\0\0")
        return 0

    def arm(self, seconds: float | None) -> None:
        self._deadline = None if seconds is None else time.monotonic() + seconds
        if not self._armed:
            self._armed = True
            self._rt.ticker.acquire()
        self._store.set_epoch_deadline(1)

    def disarm(self) -> None:
        self._deadline = None
        if self._armed:
            self._armed = False
            self._rt.ticker.release()

    def set_memory_limit(self, memory_bytes: int) -> None:
        self._store.set_limits(memory_size=memory_bytes)

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
        self.handler = self.output = None
        self._instance = None  # type: ignore[assignment]
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

    def __init__(self, wasm: str | Path | WasmFile | None = None, *,
                 expected_sha256: str | None = None, tick_s: float = 0.005):
        self.wasm = wasm if isinstance(wasm, WasmFile) else locate_python_wasm(wasm, expected_sha256)
        config = wasmtime.Config()
        config.epoch_interruption = True
        self.engine = wasmtime.Engine(config)
        self.module = load_module(self.engine, self.wasm, flags="epoch_interruption")
        self.linker = wasmtime.Linker(self.engine)
        self.linker.define_wasi()
        self.linker.allow_shadowing = True
        ty = wasmtime.FuncType([wasmtime.ValType.i32()] * 6, [wasmtime.ValType.i32()])
        module, name = b"wasi_snapshot_preview1", b"sock_recv"
        err = _define_unchecked(self.linker.ptr(), module, len(module), name, len(name),
                                ty.ptr(), _SOCK_RECV_CB, None, _NO_FINALIZER)
        if err:
            raise wasmtime.WasmtimeError._from_ptr(ctypes.cast(err, ctypes.POINTER(
                ffi.wasmtime_error_t)))
        self.ticker = EpochTicker(self.engine, tick_s)

    @property
    def transport_source(self) -> str:
        return _TRANSPORT

    def instantiate(self, spec: GuestSpec) -> WasmtimeInstance:
        return WasmtimeInstance(self, spec)
