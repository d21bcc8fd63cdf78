"""A shadow of WASI `poll_oneoff` that makes sleeping guests stoppable.

Epoch interruption only fires while wasm code runs; a guest inside `time.sleep(10**6)` sits in
the host's `poll_oneoff` and would outlive every deadline. When a poll waits only on clocks
(a sleep), we do the waiting here, in short slices, checking between slices whether the guest
must stop, and trap it if so. Polls that involve descriptors go to the real function.
"""

from __future__ import annotations

import ctypes
import struct
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .capi import Memory, i32, raw, set_i32

if TYPE_CHECKING:
    from .shadow import Passthrough

__all__ = ["poll_oneoff"]

_SUB = 48  # sizeof(subscription)
_EVENT = 32  # sizeof(event)
_CLOCK = 0
_ABSTIME = 1
_SLICE_S = 0.02
_SUBSCRIPTION = struct.Struct("<QB7xIxxxxQQH")  # userdata, tag, clock id, timeout, precision, flags
_EVENT_CLOCK = struct.Struct("<QHB21x")  # userdata, error, type (no fd fields for clocks)
_trap_new = raw("wasmtime_trap_new", ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t)


def _guest_now(passthrough: Passthrough, caller: int, memory: int, clock_id: int,
               scratch: int) -> int | None:
    """The guest's own reading of `clock_id` in ns (the real function writes it into the
    guest's memory at `scratch`), or None if the clock is unknown."""
    args = (ctypes.c_byte * 48)()
    base = ctypes.addressof(args)
    ctypes.c_uint32.from_address(base).value = clock_id
    ctypes.c_uint64.from_address(base + 16).value = 1
    ctypes.c_uint32.from_address(base + 32).value = scratch
    passthrough.call("clock_time_get", caller, base, 3)
    if ctypes.c_int32.from_address(base).value != 0:
        return None
    return int.from_bytes(Memory(caller, memory).read(scratch, 8), "little")


def poll_oneoff(passthrough: Passthrough, memory: int, caller: int, args: int, nargs: int,
                should_stop: Callable[[], str | None]) -> int:
    """Returns a trap pointer (the guest must stop) or 0, with the result set in `args`."""
    subs_ptr, out_ptr, count, nevents_ptr = (i32(args, k) for k in range(4))
    mem = Memory(caller, memory)
    if count == 0 or count > 4096:
        set_i32(args, 28)  # EINVAL
        return 0
    raw = mem.read(subs_ptr, _SUB * count)
    mem.check(out_ptr, _EVENT * count), mem.check(nevents_ptr, 4)
    subs = [_SUBSCRIPTION.unpack_from(raw, _SUB * k) for k in range(count)]
    if any(tag != _CLOCK for _, tag, *_ in subs):
        return passthrough.call("poll_oneoff", caller, args, nargs)
    waits = []
    for userdata, _tag, clock_id, timeout, _precision, flags in subs:
        if flags & _ABSTIME:
            now = _guest_now(passthrough, caller, memory, clock_id, out_ptr)
            if now is None:
                set_i32(args, 28)  # EINVAL, as the real function says for an unknown clock
                return 0
            timeout = max(0, timeout - now)
        waits.append((timeout / 1e9, userdata))
    wait = min(w for w, _ in waits)
    until = time.monotonic() + wait
    while True:
        reason = should_stop()
        if reason is not None:
            message = f"tooliscode: guest stopped while sleeping ({reason})".encode()
            return _trap_new(message, len(message)) or 0
        left = until - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(left, _SLICE_S))
    fired = [userdata for w, userdata in waits if w <= wait]
    mem = Memory(caller, memory)
    for k, userdata in enumerate(fired):
        mem.write(out_ptr + _EVENT * k, _EVENT_CLOCK.pack(userdata, 0, _CLOCK))
    mem.write(nevents_ptr, len(fired).to_bytes(4, "little"))
    set_i32(args, 0)
    return 0
