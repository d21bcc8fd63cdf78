"""The default runtime: the VMware Wasm Labs build of CPython 3.12 for WASI, a `_start` command.

The channel: the guest calls `recv_into` on a reserved socket descriptor. That reaches WASI's
`sock_recv`, which we shadow completely: the guest is given no sockets, so the real function
could only ever fail, and every other descriptor gets that same "bad descriptor" answer. One
crossing carries the request in (it sits in the guest's buffer) and the answer out (written
into the same buffer), about 10 us.
"""

from __future__ import annotations

import struct
from pathlib import Path

import wasmtime

from .._wasmtime.capi import Memory, set_i32
from .._wasmtime.guest import WasmtimeInstance, WasmtimeRuntimeBase
from .._wasmtime.host_functions import guarded, sleep
from .._wasmtime.shadow import FORWARDED, GUARDED
from .._wasmtime.wasm_file import WasmFile
from ..base import GUEST_DIR, GuestSpec, TrapReason
from ._locate import locate_python_wasm
from ._stack import GuestStack, export_stack_pointer

__all__ = ["CHANNEL_FD", "DefaultInstance", "WasmtimeRuntime"]

CHANNEL_FD = 1000
_MORE = 0xFFFFFFFF
_EBADF, _EINVAL = 8, 28
_U32 = struct.Struct("<I")
_FLAGS = struct.Struct("<H")
_SOCK_RECV_ARGS = struct.Struct("<I12xI12xI12xI12xI12xI12x")  # six wasmtime_val_raw_t
_IOVEC = struct.Struct("<II")
_ctypes = wasmtime._ffi.ctypes
WASM_STACK = 2 << 20
"""wasmtime's own stack for wasm frames (its default is 512 KiB; 2 MiB is as far as it goes
without async stacks): recursion CPython does not count, such as hashing a deeply nested
tuple, goes as deep as natively before it traps. The guest's thread gets four times that."""

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


def _channel(inst: DefaultInstance, caller: int, args: int, nargs: int) -> int:
    set_i32(args, inst._channel(caller, args))
    return 0


class DefaultInstance(WasmtimeInstance):
    """One CPython 3.12 guest: `run` is its whole life, parked in host calls between cells."""

    _rt: WasmtimeRuntime
    stack: GuestStack | None = None
    """The guest's C stack, moved to a region of its own (see `_stack.py`)."""

    def overran_stack(self) -> bool:
        return self.stack is not None and self._store is not None and self.stack.overran()

    def _classify(self, exc: Exception) -> TrapReason:
        reason = super()._classify(exc)
        if reason == "crash" and self.overran_stack():  # its C stack ran into the data below
            return "stack"
        return reason

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

    def run(self) -> None:
        self._call(self._instance.exports(self._store)["_start"])

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


def _configure(config: wasmtime.Config) -> None:
    config.epoch_interruption = True
    config.max_wasm_stack = WASM_STACK


class WasmtimeRuntime(WasmtimeRuntimeBase):
    """The default runtime: CPython 3.12 on WASI under wasmtime. Create one per process (see
    `runtime_named`)."""

    name = "wasmtime-wasi"
    thread_stack = 4 * WASM_STACK
    engine_flags = "epoch_interruption,max_wasm_stack=2MiB,stack_pointer_export"
    """What its compiled module depends on besides the wasm file (the cache entry's key)."""

    def __init__(self, wasm: str | Path | WasmFile | None = None, *,
                 expected_sha256: str | None = None, tick_s: float = 0.005):
        self.wasm = wasm if isinstance(wasm, WasmFile) else locate_python_wasm(wasm, expected_sha256)
        self._compile(self.engine_flags, _configure, tick_s,
                      {"cranelift": "a few seconds", "winch": "about a second"},
                      shadows=lambda _module: {"sock_recv": _channel, "poll_oneoff": sleep,
                                               **{name: guarded(name) for name in GUARDED}},
                      forwarded=lambda _module: FORWARDED, transform=export_stack_pointer)

    @property
    def transport_source(self) -> str:
        return _TRANSPORT

    def _make(self, spec: GuestSpec) -> DefaultInstance:
        instance = DefaultInstance(self, spec)
        instance.stack = GuestStack.move(instance._store, instance._instance.exports(instance._store))
        return instance


DefaultRuntime = WasmtimeRuntime
