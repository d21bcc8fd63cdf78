"""The two libc calls that map and advise linear memory in place (Linux only: elsewhere guests
start from the bare module and nothing here is called)."""

from __future__ import annotations

import ctypes
import sys
from typing import Any

__all__ = ["MADV_POPULATE_WRITE", "MAP_ANONYMOUS", "MAP_FIXED", "MAP_PRIVATE",
           "PROT_READ_WRITE", "SUPPORTED", "madvise", "mmap"]

SUPPORTED = sys.platform.startswith("linux")
MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS, PROT_READ_WRITE = 0x02, 0x10, 0x20, 0x3
MADV_POPULATE_WRITE = 23

mmap: Any
madvise: Any
if SUPPORTED:
    _libc = ctypes.CDLL(None, use_errno=True)
    mmap = _libc.mmap
    mmap.restype = ctypes.c_void_p
    mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                     ctypes.c_long]
    madvise = _libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
else:
    mmap = madvise = None
