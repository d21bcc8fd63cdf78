"""The component's host functions and its `turn` export, through wasmtime's C API directly.

wasmtime-py's component functions look up the function's type and convert every value
through Python objects on each call; a tool call crosses twice, so here each of our three
imports gets a raw callback that reads its arguments from the value array in place, and the
`turn` export is called the same way. A value (`wasmtime_component_val_t`) is 32 bytes: its
kind in the first byte, its payload from byte 8 (a string or list: size, then pointer).

An exception must never escape a callback: it becomes an error, which traps the guest.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi
from wasmtime.component import LinkerInstance

from .._wasmtime.capi import raw as _raw
from .._wasmtime.capi import store_context as _context

__all__ = ["define", "Turn", "Stop", "guard_callback", "call_callback", "console_callback"]

log = logging.getLogger("tooliscode")

_VAL = 32
_STRING, _S64, _S32 = 12, 7, 5
_U64 = ctypes.c_uint64
_I64 = ctypes.c_int64


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)
"""(env, store context, func type, args, nargs, results, nresults) -> wasmtime_error_t*"""
_FINALIZER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_NO_FINALIZER = _FINALIZER(lambda _p: None)
_add_func = _raw("wasmtime_component_linker_instance_add_func", ctypes.c_void_p,
                 ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, _CALLBACK, ctypes.c_void_p,
                 _FINALIZER)
_func_call = _raw("wasmtime_component_func_call", ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                  ctypes.c_size_t, runs_wasm=True)
_post_return = _raw("wasmtime_component_func_post_return", ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.c_void_p, runs_wasm=True)
_vec_new = _raw("wasm_byte_vec_new", None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
_vec_delete = _raw("wasm_byte_vec_delete", None, ctypes.c_void_p)
_error_new = _raw("wasmtime_error_new", ctypes.c_void_p, ctypes.c_char_p)


class Stop(Exception):
    """Raised by a host function whose guest must trap now (it was stopped while waiting)."""


def _error(message: str) -> int:
    return _error_new(message.encode()) or 0


def _read_string(val: int) -> bytes:
    size = _U64.from_address(val + 8).value
    return ctypes.string_at(_U64.from_address(val + 16).value, size) if size else b""


def _write_string(val: int, data: bytes) -> None:
    ctypes.c_uint8.from_address(val).value = _STRING
    _vec_new(val + 8, len(data), data)  # a copy of its own, which wasmtime frees


def define(root: LinkerInstance, name: str, callback: Any) -> None:
    """Define the world's import `name` as the raw `callback` (keep the callback alive)."""
    raw = name.encode()
    error = _add_func(ctypes.cast(root.ptr(), ctypes.c_void_p), raw, len(raw), callback, None,
                      _NO_FINALIZER)
    if error:
        raise wasmtime.WasmtimeError._from_ptr(
            ctypes.cast(error, ctypes.POINTER(ffi.wasmtime_error_t)))


def call_callback(answer: Callable[[bytes], bytes]) -> Any:
    """`host-call(request: string) -> string`. Both strings carry bytes as latin-1 text, so
    an ASCII request or answer (the usual case) crosses as it is."""

    def callback(_env: int, _ctx: int, _ty: int, args: int, _n: int, results: int,
                 _m: int) -> int:
        try:
            request = _read_string(args)
            if not request.isascii():
                request = request.decode("utf-8").encode("latin-1")
            reply = answer(request)
            if not reply.isascii():
                reply = reply.decode("latin-1").encode("utf-8")
            _write_string(results, reply)
            return 0
        except BaseException as exc:  # noqa: BLE001 - would kill the guest
            log.exception("tooliscode: the host call failed")
            return _error(f"tooliscode: the host call failed: {exc}")

    return _CALLBACK(callback)


def guard_callback(verdict: Callable[[int, int, int], int]) -> Any:
    """`guard(op: u32, handle: u32, value: s64) -> s64`: the interposer's question."""

    def callback(_env: int, _ctx: int, _ty: int, args: int, _n: int, results: int,
                 _m: int) -> int:
        try:
            answer = verdict(ctypes.c_uint32.from_address(args + 8).value,
                             ctypes.c_uint32.from_address(args + _VAL + 8).value,
                             _I64.from_address(args + 2 * _VAL + 8).value)
        except Stop as stop:
            return _error(f"tooliscode: guest stopped ({stop})")
        except BaseException:  # noqa: BLE001 - would kill the guest
            log.exception("tooliscode: the guard failed")
            answer = -13  # fail closed: the operation is refused (error-code `io`)
        ctypes.c_uint8.from_address(results).value = _S64
        _I64.from_address(results + 8).value = answer
        return 0

    return _CALLBACK(callback)


def console_callback(write: Callable[[int, bytes], None]) -> Any:
    """`console(fd: u32, data: list<u8>)`: each byte arrives as a value of its own, so the
    payload bytes are picked out of the array with a stride."""

    def callback(_env: int, _ctx: int, _ty: int, args: int, _n: int, _results: int,
                 _m: int) -> int:
        try:
            fd = ctypes.c_uint32.from_address(args + 8).value
            size = _U64.from_address(args + _VAL + 8).value
            data = ctypes.string_at(_U64.from_address(args + _VAL + 16).value, size * _VAL)
            write(fd, data[8::_VAL])
        except BaseException:  # noqa: BLE001 - would kill the guest
            log.exception("tooliscode: console output failed")
        return 0

    return _CALLBACK(callback)


class Turn:
    """The guest's `turn(source: string) -> s32` export, called raw."""

    __slots__ = ("_func", "_addr", "_context", "_params", "_results")

    def __init__(self, store: wasmtime.Store, func: Any):
        self._func = func  # keeps the handle alive
        self._addr = ctypes.addressof(func._func)
        self._context = _context(ctypes.cast(store.ptr(), ctypes.c_void_p))
        self._params = ctypes.create_string_buffer(_VAL)
        self._results = ctypes.create_string_buffer(_VAL)

    def __call__(self, _store: Any, source: str) -> int:
        params = ctypes.addressof(self._params)
        _write_string(params, source.encode())
        try:
            error = _func_call(self._addr, self._context, params, 1, ctypes.addressof(
                self._results), 1)
        finally:
            _vec_delete(params + 8)
        if not error:
            error = _post_return(self._addr, self._context)
        if error:
            from wasmtime.component._enter import maybe_raise_last_exn

            maybe_raise_last_exn()
            raise wasmtime.WasmtimeError._from_ptr(
                ctypes.cast(error, ctypes.POINTER(ffi.wasmtime_error_t)))
        return ctypes.c_int32.from_address(ctypes.addressof(self._results) + 8).value
