"""memmove and memset that keep the interpreter lock, for the guest's thread.

`ctypes.memmove` and `ctypes.memset` give the lock up for the call. Between a guest's turns
the caller's thread is often busy with Python of its own (a run's result, the next run), and
taking the lock back then waits for it: up to a switch interval (5 ms by default) each time,
for a copy of a few microseconds. These keep it: for copies of pages and of a turn's source
(`copy`), and fills of up to a mebibyte (`zero`).
"""

from __future__ import annotations

import ctypes

__all__ = ["KEEP_LOCK_BYTES", "copy", "zero"]

_libc = ctypes.PyDLL(None)
copy = _libc.memmove
copy.restype = ctypes.c_void_p
copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
_memset = _libc.memset
_memset.restype = ctypes.c_void_p
_memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]


KEEP_LOCK_BYTES = 1 << 20
"""Past this, a fill gives the lock up after all: it takes long enough for the wait to
matter less than the other threads' standing still."""


def zero(address: int, length: int) -> None:
    """Set `length` bytes at `address` to 0."""
    if length > KEEP_LOCK_BYTES:
        ctypes.memset(address, 0, length)
    else:
        _memset(address, 0, length)
