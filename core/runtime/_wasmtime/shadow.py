"""Shadowed WASI imports, and how a shadow hands a call on to the real function.

wasmtime's WASI functions find the guest's memory through their caller's "memory" export, so
a host function cannot simply call them. A tiny passthrough module can: it imports the
guest's memory and re-exports it, imports the real WASI functions, and exports one function
per shadowed import that just calls the real one. It is instantiated in the guest's store
right after the guest, so the shadow (a host function) forwards to it with the same raw
arguments and the real function sees a caller whose "memory" is the guest's.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, cast

import wasmtime

from .capi import NO_FINALIZER, UNCHECKED_CB, call_unchecked, caller_context, define_unchecked

__all__ = ["WASI", "GUARDED", "FORWARDED", "passthrough_module", "Passthrough", "define_shadow"]

WASI = "wasi_snapshot_preview1"
GUARDED = ("fd_write", "fd_pwrite", "fd_allocate", "fd_filestat_set_size", "path_open",
           "path_create_directory", "path_symlink", "path_link", "path_rename")
"""The imports that can change the session folder: checked against its quota and watched for
the first change in a cell."""
FORWARDED = (*GUARDED, "poll_oneoff", "clock_time_get")
"""What the passthrough module exports: the guarded imports, sleeping, and a clock."""


def _import_type(module: wasmtime.Module, name: str) -> wasmtime.FuncType:
    for imp in module.imports:
        if imp.module == WASI and imp.name == name:
            return imp.type  # type: ignore[return-value]
    raise LookupError(f"the guest does not import {WASI}.{name}")


def passthrough_module(engine: wasmtime.Engine, guest: wasmtime.Module,
                       names: tuple[str, ...]) -> wasmtime.Module:
    imports = ['  (import "env" "memory" (memory 0))']
    funcs = ['  (export "memory" (memory 0))']
    for name in names:
        ty = _import_type(guest, name)
        params = " ".join(str(p) for p in ty.params)
        results = " ".join(str(r) for r in ty.results)
        sig = f"(param {params}) (result {results})"
        imports.append(f'  (import "{WASI}" "{name}" (func ${name} {sig}))')
        body = " ".join(f"local.get {i}" for i in range(len(ty.params)))
        funcs.append(f'  (func (export "{name}") {sig} {body} call ${name})')
    lines = ["(module", *imports, *funcs, ")"]
    return wasmtime.Module(engine, bytes(wasmtime.wat2wasm("\n".join(lines))))


class Passthrough:
    """The passthrough instance of one guest: real WASI calls on the guest's memory."""

    def __init__(self, engine: wasmtime.Engine, module: wasmtime.Module, store: wasmtime.Store,
                 memory: wasmtime.Memory, names: tuple[str, ...]):
        # Instantiated on first use (a third of a new guest's start, and most cells never
        # open a file or sleep).
        self._parts: tuple[Any, ...] | None = (engine, module, store, memory, names)
        self._funcs: dict[str, wasmtime.Func] = {}
        self._addr: dict[str, int] = {}

    def _instantiate(self) -> None:
        assert self._parts is not None
        engine, module, store, memory, names = self._parts
        linker = wasmtime.Linker(engine)
        linker.define_wasi()
        linker.define(store, "env", "memory", memory)
        exports = linker.instantiate(store, module).exports(store)
        self._funcs = {name: cast(wasmtime.Func, exports[name])  # keeps the handles alive
                       for name in names}
        self._addr = {name: ctypes.addressof(f._func) for name, f in self._funcs.items()}
        self._parts = None

    def call(self, name: str, caller: int, args: int, nargs: int) -> int:
        """Run the real function; returns a trap pointer to propagate, or 0."""
        return self.call_in(caller_context(caller), name, args, nargs)

    def call_in(self, context: int, name: str, args: int, nargs: int) -> int:
        """`call` in the store `context` (from a host function's caller, or the store's own
        between turns)."""
        if self._parts is not None:
            self._instantiate()
        trap = ctypes.c_void_p()
        err = call_unchecked(context, self._addr[name], args, nargs, ctypes.byref(trap))
        if err:
            wasmtime._ffi.wasmtime_error_delete(  # the guest's stop (see host_function)
                ctypes.cast(err, ctypes.POINTER(wasmtime._ffi.wasmtime_error_t)))
            raise RuntimeError(f"forwarding {name} failed")
        return trap.value or 0


HostCallback = Callable[[int, int, int, int], int]


def define_shadow(linker: wasmtime.Linker, guest: wasmtime.Module, name: str,
                  callback: HostCallback) -> Any:
    """Define `callback` in place of WASI's `name`; returns the C callback to keep alive."""
    ty = _import_type(guest, name)
    c_callback = UNCHECKED_CB(callback)
    module, func = WASI.encode(), name.encode()
    err = define_unchecked(linker.ptr(), module, len(module), func, len(func), ty.ptr(),
                           c_callback, None, NO_FINALIZER)
    if err:
        raise wasmtime.WasmtimeError._from_ptr(
            ctypes.cast(err, ctypes.POINTER(wasmtime._ffi.wasmtime_error_t)))
    return c_callback
