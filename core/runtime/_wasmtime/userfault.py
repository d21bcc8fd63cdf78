"""userfaultfd in its asynchronous write-protect mode (Linux 6.7 and later), for two uses.

- Write tracking (`data/_written.py`): a write to a protected page is let through by the
  kernel itself (no handler thread) and the page is marked written, for PAGEMAP_SCAN to list.
- No fault-around (`register_only`): a read fault on a file mapping normally maps the 16 pages
  around it from the page cache. A guest's start image is such a mapping, so every guest
  kept about 8 MB of image pages resident (counted once per guest in the process's RSS,
  though shared) where it read far fewer. A mapping registered with a userfaultfd for write
  protection gets one page per fault; nothing need be protected for that.

Unprivileged processes may use it for faults in user mode only, which is all a guest makes.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

from . import page_map

__all__ = ["open_fd", "register", "protect", "register_only", "one_page_reads"]

_SYS_USERFAULTFD = {"x86_64": 323, "aarch64": 282}
_UFFD_USER_MODE_ONLY = 1
_UFFD_API = 0xAA
_UFFDIO_API = 0xC018AA3F
_UFFDIO_REGISTER = 0xC020AA00
_UFFDIO_WRITEPROTECT = 0xC018AA06
_MODE_WP = 1 << 1
_WP = 1 << 0
_FEATURES = (1 << 15) | (1 << 13)
"""UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED"""

_MADV_DONTNEED = 4
# PyDLL: see `page_map`.
_libc = ctypes.PyDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_shared: tuple[int, int] | None = None
"""(process, descriptor): a userfaultfd acts on the memory of the process that made it, so a
forked child makes its own."""
_shared_lock = threading.Lock()


def open_fd() -> int | None:
    """A new userfaultfd set up for asynchronous write protection, or None where the kernel
    (or the platform) has none."""
    machine = os.uname().machine
    if _libc is None or machine not in _SYS_USERFAULTFD or page_map.scan_fd() is None:
        return None
    fd = int(_libc.syscall(_SYS_USERFAULTFD[machine], os.O_CLOEXEC | os.O_NONBLOCK
                           | _UFFD_USER_MODE_ONLY))
    if fd < 0:
        return None
    api = (ctypes.c_uint64 * 3)(_UFFD_API, _FEATURES, 0)
    if page_map.ioctl(fd, _UFFDIO_API, api) < 0 or api[1] & _FEATURES != _FEATURES:
        os.close(fd)
        return None
    return fd


def register(fd: int, address: int, size: int) -> bool:
    """Register [address, address + size) with `fd` for write protection (nothing protected
    yet). A mapping made over it later is not registered."""
    if size <= 0:
        return True
    return page_map.ioctl(fd, _UFFDIO_REGISTER,
                          (ctypes.c_uint64 * 4)(address, size, _MODE_WP, 0)) >= 0


def protect(fd: int, address: int, size: int) -> bool:
    """Write-protect [address, address + size): the next write to each page marks it."""
    return page_map.ioctl(fd, _UFFDIO_WRITEPROTECT,
                          (ctypes.c_uint64 * 3)(address, size, _WP)) >= 0


def register_only(address: int, size: int) -> bool:
    """Turn off fault-around for [address, address + size), a private mapping of a file:
    registered with one userfaultfd the process keeps for all such mappings (a mapping's
    registration ends with it). False where it cannot be."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared[0] != os.getpid():
            made = open_fd()
            _shared = (os.getpid(), -1 if made is None else made)
        fd = _shared[1]
    return fd >= 0 and register(fd, address, size)


def one_page_reads(address: int, size: int) -> bool:
    """`register_only`, and the file's pages already mapped there let go: they were mapped
    sixteen at a time, and come back one by one as they are read. Only while nothing writes
    there (a page written meanwhile would be lost). False, having let nothing go, where the
    mapping cannot be registered."""
    if not register_only(address, size):
        return False
    assert _libc is not None
    file_pages = page_map.PAGE_IS_FILE | page_map.PAGE_IS_PRESENT
    for start, end in page_map.scan(address, size, page_map.Regions(), mask=file_pages) or []:
        _libc.madvise(ctypes.c_void_p(address + start), ctypes.c_size_t(end - start),
                      _MADV_DONTNEED)
    return True
