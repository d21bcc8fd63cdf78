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
from typing import NamedTuple

from .._wasmtime.write_back import ImageFile

__all__ = ["Memory", "find", "grown", "read", "readable"]

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


class _Span(NamedTuple):
    """A line of /proc/self/maps, its numbers read only where they are needed."""

    start: int
    end: int
    perms: str
    offset_hex: str
    device_hex: str
    inode: bool
    line: str

    @property
    def offset(self) -> int:
        return int(self.offset_hex, 16)

    def file(self) -> tuple[int, int, str]:
        """(device, inode, path) of the file it maps."""
        fields = self.line.split(maxsplit=5)
        major, minor = (int(x, 16) for x in self.device_hex.split(":"))
        return os.makedev(major, minor), int(fields[4]), \
            fields[5].strip() if len(fields) > 5 else ""


def find(address_of_word: int, word: bytes) -> Memory | None:
    """The memory in which the object at the guest's linear address `address_of_word` holds
    `word` (a random one: it can be nowhere else), or None, also where two do."""
    if _libc is None:
        return None
    try:
        spans = _spans()
    except OSError:
        return None
    found: tuple[int, int, _Span] | None = None
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
        if at + _WINDOW > end or word not in (read(at, _WINDOW) or b""):
            continue
        if found is not None:
            return None  # the word is the host's and this guest's alone: trust neither
        found = (start, end, span)
    if found is None:
        return None
    start, end, span = found
    fd = _file(span)
    return None if fd is None else Memory(start, end - start, ImageFile(
        fd, span.offset, span.end - span.start, span.start - start))


def grown(memory: Memory, least: int, most: int) -> Memory | None:
    """`memory` once the guest has grown it by `least` to `most` bytes: where it ends now,
    found by asking whether bytes past it can be read (in wasm pages, a dozen asks); None
    where it did not grow so."""
    page, end = 1 << 16, memory.address + memory.size
    low, high = least // page, most // page
    if readable(end + low * page - 1) is not True or readable(end + high * page) is not False:
        return None
    while low < high:  # the last page that can be read, between low and high
        mid = (low + high + 1) // 2
        answer = readable(end + mid * page - 1)
        if answer is None:
            return None
        low, high = (mid, high) if answer else (low, mid - 1)
    return Memory(memory.address, memory.size + low * page, memory.image)


def readable(address: int) -> bool | None:
    """Can this process read the byte at `address`? (Past a memory's end it cannot, until
    the guest grows it.) None when it cannot be told (the call is not allowed here)."""
    if _libc is None:
        return None
    if read(address, 1) is not None:
        return True
    return False if ctypes.get_errno() == errno.EFAULT else None


def read(address: int, size: int) -> bytes | None:
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
        text = f.read()
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        start, _, end = fields[0].partition("-")
        out.append(_Span(int(start, 16), int(end, 16), fields[1], fields[2], fields[3],
                         fields[4] != "0", line))
    return out


def _file(span: _Span) -> int | None:
    device, inode, path = span.file()
    with _files_lock:
        if (device, inode) not in _files:
            fd = _open(device, inode, path)
            if fd is None:
                return None
            _files[device, inode] = fd  # for the process's life: one per compile
        return _files[device, inode]


def _open(device: int, inode: int, path: str) -> int | None:
    """A descriptor of the file (`device`, `inode`) at `path`, or (a memfd has no path) among
    this process's open descriptors."""
    candidates = [path] if path.startswith("/") else []
    candidates += [str(p) for p in Path("/proc/self/fd").iterdir()]
    for candidate in candidates:
        try:  # looked at before it is opened: opening a pipe or a device is not harmless
            info = os.stat(candidate)
            if info.st_ino != inode or info.st_dev != device:
                continue
            fd = os.open(candidate, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        if (os.fstat(fd).st_ino, os.fstat(fd).st_dev) == (inode, device):
            return fd
        os.close(fd)
    return None
