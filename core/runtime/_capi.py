"""Raw wasmtime C-API prototypes for the hot paths, and bounds-checked guest memory.

These are private `ctypes` prototypes made from wasmtime-py's loaded library with plain
`c_void_p` arguments: about ten times cheaper per call than going through wasmtime-py's
wrappers, and wasmtime-py's own prototypes stay untouched.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any

from wasmtime import _ffi as ffi

__all__ = ["Memory", "caller_context", "define_unchecked", "call_unchecked", "UNCHECKED_CB",
           "NO_FINALIZER", "i32", "i64", "set_i32"]


def _raw(name: str, restype: Any, *argtypes: Any) -> Any:
    fn = ffi.dll[name]  # __getitem__ makes a fresh function object: ours alone
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


UNCHECKED_CB = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_void_p, ctypes.c_size_t)
"""wasmtime_func_unchecked_callback_t: (env, caller, args_and_results, n) -> wasm_trap_t*."""
_FINALIZER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
NO_FINALIZER = _FINALIZER(lambda _p: None)

caller_context = _raw("wasmtime_caller_context", ctypes.c_void_p, ctypes.c_void_p)
_memory_data = _raw("wasmtime_memory_data", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_memory_size = _raw("wasmtime_memory_data_size", ctypes.c_size_t, ctypes.c_void_p,
                    ctypes.c_void_p)
define_unchecked = _raw("wasmtime_linker_define_func_unchecked", ctypes.c_void_p,
                        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                        ctypes.c_size_t, ctypes.c_void_p, UNCHECKED_CB, ctypes.c_void_p,
                        _FINALIZER)
call_unchecked = _raw("wasmtime_func_call_unchecked", ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)

_VAL = 16  # sizeof(wasmtime_val_raw_t)


def i32(args: int, index: int) -> int:
    """Argument `index` of an unchecked call, as an unsigned 32-bit value."""
    return ctypes.c_uint32.from_address(args + _VAL * index).value


def i64(args: int, index: int) -> int:
    return ctypes.c_int64.from_address(args + _VAL * index).value


def set_i32(args: int, value: int) -> None:
    """Store the (first) i32 result of an unchecked call."""
    ctypes.c_int32.from_address(args).value = value


_views: dict[int, Any] = {}
_IOVEC = struct.Struct("<II")


class Memory:
    """The calling guest's linear memory. Every pointer the guest hands over is untrusted."""

    __slots__ = ("base", "size", "view")

    def __init__(self, caller: int, memory: int) -> None:
        ctx = caller_context(caller)
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

    def iovecs(self, iovs: int, count: int) -> list[tuple[int, int]]:
        """The (ptr, len) pairs at `iovs`."""
        if count > 1024:
            raise ValueError("too many iovecs")
        raw = self.read(iovs, 8 * count)
        return [_IOVEC.unpack_from(raw, 8 * i) for i in range(count)]

    def iovec_total(self, iovs: int, count: int) -> int:
        """Bytes described by `count` (ptr, len) pairs at `iovs`."""
        return sum(n for _, n in self.iovecs(iovs, count))

    def gather(self, iovs: int, count: int) -> bytes:
        """The bytes the iovecs at `iovs` point to, joined."""
        return b"".join(self.read(ptr, n) for ptr, n in self.iovecs(iovs, count))
