"""The raw host functions a guest's imports call, routed to the guest of the calling thread.

wasmtime calls them through ctypes with the guest's thread holding the GIL; each finds its
instance in a thread-local (set around every call into the guest), so one function serves
every guest of a runtime. An exception escaping one would kill the instance: failures become
error answers instead.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable
from typing import Any

import wasmtime

from .capi import Memory, i32, set_i32
from .poll import poll_oneoff

__all__ = ["DEADLINE_CB", "NO_FINALIZER", "HostBody", "current", "guarded", "host_function",
           "sleep", "tls", "tracked"]

log = logging.getLogger("tooliscode")

EBADF, EDQUOT, EIO, EMFILE = 8, 19, 29, 33
_U32 = struct.Struct("<I")
tls = threading.local()
"""`tls.instance`: the guest the current thread is running."""


def current() -> Any:
    return getattr(tls, "instance", None)


HostBody = Callable[[Any, int, int, int], int]


def host_function(name: str, body: HostBody) -> Callable[[int, int, int, int], int]:
    """A raw host function for the current thread's guest. An exception escaping a host
    function would kill the instance, so every failure becomes an EIO answer instead.
    `body` sets the call's result and returns a trap to raise in the guest, or 0."""

    def callback(env: int, caller: int, args: int, nargs: int) -> int:
        inst = None
        try:
            inst = current()
            if inst is None:
                set_i32(args, EBADF)
                return 0
            return body(inst, caller, args, nargs)
        except BaseException:  # noqa: BLE001
            # A guest being stopped (deadline, close) fails a forwarded call on the way: its
            # deadline check fires inside it. It traps at its next check, so that is no news.
            stopping = inst is not None and inst._should_stop() is not None
            (log.debug if stopping else log.exception)("tooliscode: %s failed", name,
                                                       exc_info=True)
            set_i32(args, EIO)
            return 0

    return callback


def guarded(name: str) -> HostBody:
    def body(inst: Any, caller: int, args: int, nargs: int) -> int:
        if name == "fd_write" and i32(args, 0) in (1, 2):
            set_i32(args, inst._console(caller, args))
            return 0
        if not inst._allowed(name, caller, args):
            set_i32(args, EDQUOT)
            return 0
        if name != "path_open" or not inst.counts_opens:
            return inst._passthrough.call(name, caller, args, nargs)
        if not inst.may_open():
            set_i32(args, EMFILE)
            return 0
        out = i32(args, 8)  # where the new descriptor goes: the results overwrite the args
        trap = inst._passthrough.call(name, caller, args, nargs)
        if not trap and i32(args, 0) == 0:
            fd = _U32.unpack(Memory(caller, inst._memory).read(out, 4))[0]
            inst.opened.add(fd)
            inst.track(name, fd)
        return trap

    return body


def tracked(name: str) -> HostBody:
    """fd_close or fd_renumber, forwarded, for a guest that keeps count of the descriptors
    it opened (`opened`, and `fds` for renewal: a guest is given to another run only once
    they are all closed)."""

    def body(inst: Any, caller: int, args: int, nargs: int) -> int:
        first, second = i32(args, 0), i32(args, 1)
        trap = inst._passthrough.call(name, caller, args, nargs)
        if not trap and i32(args, 0) == 0:
            if first in inst.opened:
                inst.opened.discard(first)
                if name == "fd_renumber":
                    inst.opened.add(second)
            inst.track(name, first, second)
        return trap

    return body


def sleep(inst: Any, caller: int, args: int, nargs: int) -> int:
    return poll_oneoff(inst._passthrough, inst._memory, caller, args, nargs, inst._poll_stop)


def _on_deadline(ctx: int, env: int, delta: object, kind: object) -> int:
    try:
        inst = current()
        reason = inst._should_stop() if inst is not None else None
        if reason is not None:
            inst._trap_reason = reason
            err = wasmtime._ffi.wasmtime_error_new(f"tooliscode: guest stopped ({reason})".encode())
            return wasmtime._ffi.ctypes.cast(err, wasmtime._ffi.ctypes.c_void_p).value or 0
    except BaseException:  # noqa: BLE001
        log.exception("tooliscode: deadline check failed")
    delta[0] = 1  # type: ignore[index]
    kind[0] = 0  # type: ignore[index]  # continue
    return 0


_ctypes = wasmtime._ffi.ctypes
DEADLINE_CB = _ctypes.CFUNCTYPE(
    _ctypes.c_size_t, _ctypes.POINTER(wasmtime._ffi.wasmtime_context_t), _ctypes.c_void_p,
    _ctypes.POINTER(_ctypes.c_uint64), _ctypes.POINTER(wasmtime._ffi.wasmtime_update_deadline_kind_t),
)(_on_deadline)
NO_FINALIZER = _ctypes.CFUNCTYPE(None, _ctypes.c_void_p)(lambda _p: None)
