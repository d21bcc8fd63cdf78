"""Where a component guest's linear memory lies in this process, so a renewal can write it back.

wasmtime's component API hands out no memory (a component exports none), but its memory is
an ordinary mapping: read-write pages, the start image mapped copy-on-write from the compiled
file (or a memfd) some way in, and nothing readable after its current size. The guest names
an address of its own that holds a random word; of the process's mappings of an image, the
one with that word at that address is this guest's. Linux only: elsewhere nothing is found,
and guests are renewed by starting them again.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from .._wasmtime.write_back import ImageFile

__all__ = ["Memory", "find", "readable"]

# PyDLL: the call returns at once, and one that gave the interpreter lock up would wait to
# take it back from a caller's thread that is busy (the next run's).
_libc = ctypes.PyDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_WINDOW = 64
"""Bytes read from the object's address: its header, then the word."""
_files: dict[tuple[int, int], int] = {}
"""(device, inode) -> a descriptor of an image's file, kept open for the mirrors mapped from
it (`write_back.Mirror`)."""
_files_lock = threading.Lock()


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


@dataclass(frozen=True)
class Memory:
    """A guest's linear memory: `size` bytes at `address`, mapped from `image`."""

    address: int
    size: int
    image: ImageFile


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    perms: str
    offset: int
    device: tuple[int, int]
    inode: int
    path: str


def find(address_of_word: int, word: bytes) -> Memory | None:
    """The memory in which the object at the guest's linear address `address_of_word` holds
    `word` (a random one: it can be nowhere else), or None."""
    if _libc is None:
        return None
    try:
        spans = _spans()
    except OSError:
        return None
    for k, span in enumerate(spans):
        if span.perms != "rw-p" or not span.inode:
            continue  # the image is a private read-write mapping of a file
        start = span.start  # pages before the image are zeros: anonymous, read-write
        if k and spans[k - 1].end == start and spans[k - 1].perms == "rw-p" \
                and not spans[k - 1].inode:
            start = spans[k - 1].start
        end, j = span.end, k + 1
        while j < len(spans) and spans[j].start == end and spans[j].perms == "rw-p" \
                and not spans[j].inode:
            end, j = spans[j].end, j + 1
        at = start + address_of_word
        # Read safely: another guest's memory may be unmapped meanwhile by its closing.
        if at + _WINDOW > end or word not in (_read(at, _WINDOW) or b""):
            continue
        fd = _file(span)
        return None if fd is None else Memory(start, end - start, ImageFile(
            fd, span.offset, span.end - span.start, span.start - start))
    return None


def readable(address: int) -> bool | None:
    """Can this process read the byte at `address`? (Past a memory's end it cannot, until
    the guest grows it.) None when it cannot be told (the call is not allowed here)."""
    if _libc is None:
        return None
    if _read(address, 1) is not None:
        return True
    return False if ctypes.get_errno() == errno.EFAULT else None


def _read(address: int, size: int) -> bytes | None:
    """`size` bytes at `address` of this process, or None (errno says why) where they are
    not all readable: a copy the kernel makes, which fails rather than faults."""
    if _libc is None:
        return None
    buffer = ctypes.create_string_buffer(size)
    local, remote = _IoVec(ctypes.addressof(buffer), size), _IoVec(address, size)
    done = int(_libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1,
                                      ctypes.byref(remote), 1, 0))
    return buffer.raw if done == size else None


def _spans() -> list[_Span]:
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in fields[0].split("-"))
            major, minor = (int(x, 16) for x in fields[3].split(":"))
            out.append(_Span(start, end, fields[1], int(fields[2], 16), (major, minor),
                             int(fields[4]), fields[5].strip() if len(fields) > 5 else ""))
    return out


def _file(span: _Span) -> int | None:
    key = (os.makedev(*span.device), span.inode)
    with _files_lock:
        if key not in _files:
            fd = _open(span)
            if fd is None:
                return None
            _files[key] = fd  # for the process's life: a file per compile of the component
        return _files[key]


def _open(span: _Span) -> int | None:
    """A descriptor of the file `span` maps: by its path, or (a memfd has none) among this
    process's open descriptors."""
    device = os.makedev(*span.device)
    candidates = [span.path] if span.path.startswith("/") else []
    candidates += [str(p) for p in Path("/proc/self/fd").iterdir()]
    for path in candidates:
        try:  # looked at before it is opened: opening a pipe or a device is not harmless
            info = os.stat(path)
            if info.st_ino != span.inode or info.st_dev != device:
                continue
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        if (os.fstat(fd).st_ino, os.fstat(fd).st_dev) == (span.inode, device):
            return fd
        os.close(fd)
    return None
