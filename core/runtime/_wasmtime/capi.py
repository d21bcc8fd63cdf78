"""Raw wasmtime C-API prototypes for the hot paths, and bounds-checked guest memory.

These are private `ctypes` prototypes made from wasmtime-py's loaded library with plain
`c_void_p` arguments: about ten times cheaper per call than going through wasmtime-py's
wrappers, and wasmtime-py's own prototypes stay untouched.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any

from wasmtime import FuncType, Trap, ValType, WasmtimeError
from wasmtime import _ffi as ffi
from wasmtime._func import maybe_raise_last_exn

__all__ = ["raw", "set_epoch_deadline", "Memory", "memory_base", "caller_context", "define_unchecked", "call_unchecked",
           "UNCHECKED_CB",
           "NO_FINALIZER", "Export", "check_i32_export", "store_context", "i32", "i64", "set_i32"]


_KEEPS_GIL = ctypes.PyDLL(ffi.dll._name, handle=ffi.dll._handle)
"""The same library, its functions called without releasing the GIL. A plain `ctypes` call
releases it and takes it back: when another thread wants it meanwhile (the epoch ticker, the
caller being woken), taking it back waits for that thread, 20-30 us a call measured on a
warm cell's path. Calls that return at once (no guest code runs) keep it."""


def raw(name: str, restype: Any, *argtypes: Any, runs_wasm: bool = False) -> Any:
    """A private prototype of C-API function `name` (a fresh function object: wasmtime-py's
    own prototypes stay untouched). Only a call that runs guest code (`runs_wasm`), which may
    take long and call back into Python, releases the GIL."""
    fn = (ffi.dll if runs_wasm else _KEEPS_GIL)[name]
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


UNCHECKED_CB = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_void_p, ctypes.c_size_t)
"""wasmtime_func_unchecked_callback_t: (env, caller, args_and_results, n) -> wasm_trap_t*."""
_FINALIZER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
NO_FINALIZER = _FINALIZER(lambda _p: None)

caller_context = raw("wasmtime_caller_context", ctypes.c_void_p, ctypes.c_void_p)
_memory_data = raw("wasmtime_memory_data", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_memory_size = raw("wasmtime_memory_data_size", ctypes.c_size_t, ctypes.c_void_p,
                   ctypes.c_void_p)
define_unchecked = raw("wasmtime_linker_define_func_unchecked", ctypes.c_void_p,
                       ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                       ctypes.c_size_t, ctypes.c_void_p, UNCHECKED_CB, ctypes.c_void_p,
                       _FINALIZER)
call_unchecked = raw("wasmtime_func_call_unchecked", ctypes.c_void_p, ctypes.c_void_p,
                     ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                     runs_wasm=True)

_VAL = 16  # sizeof(wasmtime_val_raw_t)
store_context = raw("wasmtime_store_context", ctypes.c_void_p, ctypes.c_void_p)
set_epoch_deadline = raw("wasmtime_context_set_epoch_deadline", None, ctypes.c_void_p,
                         ctypes.c_uint64)
"""`Store.set_epoch_deadline(ticks)` as `(store_context(store.ptr()), ticks)`, keeping the GIL."""


def check_i32_export(module: Any, name: str, params: int) -> None:
    """Raise unless `module` exports `name` as a function (i32 x `params`) -> i32."""
    i32_type = ValType.i32()
    ty = next((e.type for e in module.exports if e.name == name), None)
    if not isinstance(ty, FuncType) or list(ty.params) != [i32_type] * params \
            or list(ty.results) != [i32_type]:
        raise TypeError(f"the module's {name!r} is not a function (i32 x {params}) -> i32")


class Export:
    """An exported function taking and returning only i32s, called unchecked.

    wasmtime-py's `Func.__call__` looks up the function's type and boxes every value on each
    call: 60-80 us for a turn's two calls into the data runtime's module, against 3 us this
    way. Traps and errors come out as the exceptions wasmtime-py raises."""

    __slots__ = ("_func", "_addr", "_context", "_args", "_at", "_trap", "_trap_ref")

    def __init__(self, store: Any, func: Any, params: int):
        self._func = func  # keeps the handle alive
        self._addr = ctypes.addressof(func._func)
        self._context = store_context(store.ptr())
        self._args = (ctypes.c_uint8 * (_VAL * max(params, 1)))()
        self._at = ctypes.addressof(self._args)
        self._trap = ctypes.c_void_p()
        self._trap_ref = ctypes.byref(self._trap)

    def __call__(self, _store: Any, *args: int) -> int:
        at = self._at
        for i, value in enumerate(args):
            ctypes.c_int32.from_address(at + _VAL * i).value = value
        self._trap.value = None
        error = call_unchecked(self._context, self._addr, at, len(args), self._trap_ref)
        if error:
            maybe_raise_last_exn()
            raise WasmtimeError._from_ptr(ctypes.cast(error, ctypes.POINTER(ffi.wasmtime_error_t)))
        if self._trap.value:
            trap = Trap._from_ptr(ctypes.cast(self._trap.value, ctypes.POINTER(ffi.wasm_trap_t)))
            maybe_raise_last_exn()  # as wasmtime-py does: a host callback's own exception
            raise trap
        return ctypes.c_int32.from_address(at).value


def memory_base(context: int, memory: int) -> int:
    """Where a memory's bytes start in this process (`memory`: the address of its struct)."""
    return _memory_data(context, memory) or 0


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
